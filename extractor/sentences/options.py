"""Stage 1's flags and options (`extractor.sentences.stage` does the work): apart, so that
the job's flags are built without pyarrow (the job's `--help` answers at once)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from extractor.engine import contract
from extractor.engine.stage import Cost, StageSpec


@dataclass(frozen=True)
class Options:
    """The flags stage 1 reads (defaults declared here once)."""
    min_chars: int = contract.MIN_CHARS
    punkt_params: str | None = None
    punkt_sample_mb: float = 4.0
    unit_mb: float = 8
    text_field: str = "text"
    id_field: str = "id"
    title_field: str = "title"
    genre_field: str = "genre"
    language_check: str = "on"

    @classmethod
    def from_args(cls, args, lexicon=None) -> "Options":
        return contract.options_from_args(cls, args)

    @property
    def unit_bytes(self) -> int:
        return max(1 << 14, int(float(self.unit_mb or 8) * (1 << 20)))


def _unit_mb(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of MB > 0, not {text!r}")
    return value


def add_arguments(parser) -> None:
    d = Options()
    g = parser.add_argument_group("sentences stage")
    g.add_argument("--punkt-params", default=d.punkt_params, metavar="PATH",
                   help="read Punkt parameters from this JSON file instead of training them on the corpus")
    g.add_argument("--punkt-sample-mb", type=float, default=d.punkt_sample_mb,
                   help="MB of cleaned text (from the start of the inputs) that Punkt is trained on")
    g.add_argument("--unit-mb", type=_unit_mb, default=d.unit_mb,
                   help="MB per work unit of an input file (one task reads one unit; smaller: more tasks; "
                        "a fraction such as 0.1 is allowed, at least 16 KB)")
    g.add_argument("--text-field", default=d.text_field, help="JSONL/Parquet: field holding the document text")
    g.add_argument("--id-field", default=d.id_field, help="JSONL/Parquet: field holding the document id")
    g.add_argument("--title-field", default=d.title_field, help="JSONL/Parquet: field holding the title")
    g.add_argument("--genre-field", default=d.genre_field, help="JSONL/Parquet: field holding a per-document genre")
    g.add_argument("--language-check", choices=("on", "off"), default=d.language_check,
                   help="on: a corpus whose sample is in another language than the lexicon's stops the job "
                        "(one line naming the language found), and sentences confidently in another language "
                        "are dropped and counted (stats.json sentences.foreign_sentences); off: neither "
                        "(docs/cleaning.md \"Language check\")")


# the stage as the job's list knows it (extractor/job/stages.py); its cost: docs/scale.md "Cost model"
SPEC = StageSpec(name="sentences", reads=None, writes="sentences", options=Options, add_arguments=add_arguments,
                 cost=Cost((0.21, 0.46), 0.0003, 0.52), module="extractor.sentences.stage")
