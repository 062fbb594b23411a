"""Stage 2's flags and options (`extractor.pairs.stage` does the work): apart, so that the
job's flags are built without numpy and pyarrow (the job's `--help` answers at once)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from extractor.engine import contract
from extractor.neardup import settings
from extractor.pairs import neutral
from extractor.pairs import pos_filter


def _neutral_ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, not {text!r}") from None
    try:
        neutral.neutral_target({}, value)
    except neutral.NeutralMixError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _neutral_mix(text: str) -> str:
    try:
        neutral.parse_neutral_mix(text)
    except neutral.NeutralMixError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--neutral-mix: ")) from None
    return text


@dataclass
class Options:
    """The flags the stage reads, with their defaults (declared here once; tests build one
    directly). `neutral_mix` is given as text (the flag) or as weights; it is kept as weights."""
    min_chars: int = contract.MIN_CHARS
    seed: int = contract.SEED
    spacy_model: str | None = None
    pos_filter: str = "auto"
    pos_words: str = "on"
    neutral_ratio: float = 1.0
    neutral_mix: dict | str | None = neutral.DEFAULT_MIX
    # near-duplicate pairs (docs/neardup.md; the flags are stage 3's, read by both stages).
    # Off when the options are built directly (tests, benchmarks); the job's flag says on.
    near_duplicates: str = "off"
    near_duplicate_threshold: float = settings.Settings.threshold
    near_duplicate_shingle: int = settings.Settings.shingle
    near_duplicate_permutations: int = settings.Settings.num_perm
    near_duplicate_bands: int = settings.Settings.bands

    def __post_init__(self):
        self.min_chars = int(self.min_chars)
        self.seed = int(self.seed)
        self.neutral_ratio = float(self.neutral_ratio)
        if self.neutral_mix is None:  # the flag's default when the job did not resolve it from the lexicon
            self.neutral_mix = neutral.DEFAULT_MIX
        if isinstance(self.neutral_mix, str):
            self.neutral_mix = neutral.parse_neutral_mix(self.neutral_mix)
        neutral.neutral_target({}, self.neutral_ratio)  # validates the ratio
        self.near = settings.settings_from_args(self)  # None with "off"

    @classmethod
    def from_args(cls, args) -> "Options":
        return contract.options_from_args(cls, args)

    @property
    def strategies(self) -> list[str]:
        mix = self.neutral_mix
        assert isinstance(mix, dict)  # __post_init__ turned the flag's text into weights
        return [s for s in neutral.STRATEGIES if mix.get(s, 0) > 0]




def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("pairs stage (sentences/ -> pairs/)")
    g.add_argument("--spacy-model", default=contract.default(Options, "spacy_model"),
                   help="spaCy model for the POS completeness filter (default: the lexicon's spacy_model)")
    g.add_argument("--pos-filter", choices=pos_filter.POS_FILTER_MODES, default=contract.default(Options, "pos_filter"),
                   help="auto: filter when the model is installed, else skip with a warning; "
                        "on: a missing model is an error; off: no filter (default auto)")
    g.add_argument("--pos-words", choices=("on", "off"), default=contract.default(Options, "pos_words"),
                   help="on: a sentence holding a word of each of the lexicon's pos_filter.complete_words lists "
                        "is complete without tagging; off: the tagger judges every sentence (default on)")
    g.add_argument("--neutral-ratio", type=_neutral_ratio, default=contract.default(Options, "neutral_ratio"),
                   help="neutral pairs per corpus, relative to its largest marked class (default 1.0)")
    g.add_argument("--neutral-mix", type=_neutral_mix, default=None,
                   help="weights of the neutral strategies (default: the lexicon's label_filters.neutral_mix, "
                        "else all 1), e.g. both_random=1,first_random=1,second_random=1,"
                        "marked_different_paragraphs=1,adjacent_unmarked=1")
