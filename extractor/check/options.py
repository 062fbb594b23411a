"""The check stage's flags and options (`extractor.check.stage` does the work): apart, so
that the job's flags are built without numpy, torch or pyarrow (the job's `--help`).

Every flag defaults to None, which means the documented default: a run record written before
these flags existed reads them as None (`runs.first_difference`), so it still resumes."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from extractor.core.errors import UserError
from extractor.engine import contract
from extractor.engine.stage import Cost, StageSpec

DEFAULT_BATCH = 64


class CheckError(UserError, ValueError):
    """Bad check settings: one-line message."""


def switched_on(args) -> bool:
    """Whether the parsed flags switch the check on (`--semantic-check on`; off by default)."""
    return getattr(args, "semantic_check", None) == "on"


@dataclass(frozen=True)
class Options:
    """The flags the check reads (defaults declared here once). A threshold left as None is the
    shipped head's own, chosen by cross-validation on the gold sets' tuning parts."""
    semantic_check: str | None = None
    check_threshold: float | None = None
    check_neutral_threshold: float | None = None
    check_batch: int | None = None
    seed: int = contract.SEED

    def __post_init__(self):
        for name in ("check_threshold", "check_neutral_threshold"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= float(value) <= 1.0:
                raise CheckError(f"--{name.replace('_', '-')} {value}: expected a probability between 0 and 1")
        if self.check_batch is not None and int(self.check_batch) < 1:
            raise CheckError(f"--check-batch {self.check_batch}: expected a number >= 1")

    @classmethod
    def from_args(cls, args, lexicon=None) -> "Options":
        return contract.options_from_args(cls, args)

    @property
    def batch(self) -> int:
        return int(self.check_batch or DEFAULT_BATCH)


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability between 0 and 1, not {text!r}")
    return value


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, not {text!r}")
    return value


def add_arguments(parser) -> None:
    g = parser.add_argument_group("check (between pairs and splits; off by default)")
    g.add_argument("--semantic-check", choices=("on", "off"), default=None,
                   help="judge every pair with a pair model over the multilingual encoder and drop the unlikely "
                        "ones (docs/label-quality.md \"The semantic check\"); off: the stage does not run and "
                        "writes nothing (default: off)")
    g.add_argument("--check-threshold", type=_probability, default=None, metavar="P",
                   help="drop a marked pair when the model's probability that its label is right is below P "
                        "(default: the shipped head's, chosen by cross-validation on the gold tuning parts)")
    g.add_argument("--check-neutral-threshold", type=_probability, default=None, metavar="P",
                   help="drop a neutral pair when the model's probability that its sentences are related is P "
                        "or more (default: the shipped head's)")
    g.add_argument("--check-batch", type=_positive, default=None, metavar="N",
                   help=f"sentences embedded per batch (default: {DEFAULT_BATCH})")


# the stage as the job's list knows it (extractor/job/stages.py); its cost per MB of text:
# docs/label-quality.md "The semantic check", benchmarks/check_cost.py
SPEC = StageSpec(name="check", reads="pairs", writes="checked", kind="pairs", options=Options,
                 add_arguments=add_arguments, cost=Cost((1.0, 3.0), 0.0001, 0.001), module="extractor.check.stage",
                 enabled=switched_on, switch="--semantic-check on")
