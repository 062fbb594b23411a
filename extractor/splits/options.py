"""Stage 3's flags, options and settings parsers (`extractor.splits.stage` and
`extractor.splits.assign` do the work): apart, so that the job's flags are built without
numpy, pandas and pyarrow (the job's `--help` answers at once)."""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from extractor.engine import contract
from extractor.engine.stage import Cost, StageSpec
from extractor.core.errors import UserError
from extractor.neardup import settings

DEFAULT_MAX_EVAL_PER_CORPUS = 15000  # ESNLIR §2.3, Table 1


class SplitsError(UserError, ValueError):
    """Bad split settings: one-line message."""


@dataclass(frozen=True)
class Balance:
    mode: str  # downsample | none | cap
    cap: int | None = None

    def __str__(self) -> str:
        return f"cap {self.cap}" if self.mode == "cap" else self.mode


def parse_ratios(text: str | Sequence[float]) -> tuple[float, float, float]:
    """``"0.8,0.1,0.1"`` -> (train, validation, test); they must be >= 0 and sum to 1."""
    try:
        parts = [float(p) for p in (text.split(",") if isinstance(text, str) else text)]
    except ValueError as exc:
        raise SplitsError(f"--split-ratios {text!r}: expected three numbers like 0.8,0.1,0.1") from exc
    if len(parts) != 3 or any(p < 0 for p in parts):
        raise SplitsError(f"--split-ratios {text!r}: expected three non-negative numbers like 0.8,0.1,0.1")
    if abs(sum(parts) - 1.0) > 1e-6:
        raise SplitsError(f"--split-ratios {text!r}: the three ratios must sum to 1 (they sum to {sum(parts):g})")
    return parts[0], parts[1], parts[2]


def parse_balance(tokens: str | Sequence[str]) -> Balance:
    """``downsample`` | ``none`` | ``cap N`` (also ``cap=N``, ``cap:N``)."""
    if isinstance(tokens, str):
        tokens = [tokens]
    words = " ".join(tokens).replace("=", " ").replace(":", " ").split()
    if words == ["downsample"]:
        return Balance("downsample")
    if words == ["none"]:
        return Balance("none")
    if len(words) == 2 and words[0] == "cap" and words[1].isdigit() and int(words[1]) > 0:
        return Balance("cap", int(words[1]))
    raise SplitsError(f"--balance {' '.join(tokens)!r}: expected downsample, none, or cap N (N > 0)")


# ---------------------------------------------------------------------------- flags

@dataclass(frozen=True)
class Options(settings.NearDuplicateOptions):
    """The flags stage 3 reads (defaults declared here once; the near-duplicate flags are
    `settings.NearDuplicateOptions`', shared with stage 2). `ratios` and `balance_mode` are
    the parsed settings: a bad value fails when the options are built, before any work."""
    split_ratios: str = "0.8,0.1,0.1"
    balance: Sequence[str] = ("downsample",)
    max_eval_per_corpus: int = DEFAULT_MAX_EVAL_PER_CORPUS
    license: str = ""  # "": the inputs' own (`card.corpus_licenses`)
    seed: int = contract.SEED
    files_per_table: int = contract.FILES_PER_TABLE

    def __post_init__(self):
        super().__post_init__()
        parse_ratios(self.split_ratios)  # a bad value fails here, before any work
        parse_balance(self.balance)
        object.__setattr__(self, "seed", int(self.seed or 0))  # frozen: normalised once, here

    @classmethod
    def from_args(cls, args, lexicon=None) -> "Options":
        return contract.options_from_args(cls, args)

    @property
    def ratios(self) -> tuple[float, float, float]:
        return parse_ratios(self.split_ratios)

    @property
    def balance_mode(self) -> Balance:
        return parse_balance(self.balance)

    @property
    def max_eval(self) -> int | None:
        return int(self.max_eval_per_corpus or 0) or None


def _ratios(text: str) -> str:
    """argparse type of --split-ratios: checked when the command line is parsed."""
    try:
        parse_ratios(text)
    except SplitsError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None
    return text


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0 (0 = no limit), not {text!r}")
    return value


def add_arguments(parser) -> None:
    d = Options()
    g = parser.add_argument_group("splits (stage 3)")
    g.add_argument("--split-ratios", default=d.split_ratios, type=_ratios,
                   help="train,validation,test shares of each corpus's pairs, assigned by whole documents "
                        "(or blocks of paragraphs where documents are too few or too large: docs/splits.md)")
    g.add_argument("--balance", nargs="+", default=list(d.balance), metavar="MODE",
                   help="downsample (each split and corpus cut to its smallest class, ESNLIR), "
                        "none (natural distribution, stratified, RoNLI) "
                        "or 'cap N' (at most N pairs per label and split)")
    g.add_argument("--max-eval-per-corpus", type=_non_negative, default=d.max_eval_per_corpus,
                   help="at most this many validation and test pairs per corpus (ESNLIR: 15000; 0 = no limit)")
    g.add_argument("--license", default=d.license, metavar="ID",
                   help="license of the inputs without their own (a manifest entry's 'license' key; the bundled "
                        "sample is apache-2.0): the dataset card's license is the inputs' licenses; default: "
                        "the one a dump's siteinfo names (a Wikimedia project's text: cc-by-sa-4.0), else "
                        "'unknown' (set the one of your sources)")
    settings.add_arguments(g)  # docs/neardup.md; stage 2 reads them too (`settings.NearDuplicateOptions`)


# the stage as the job's list knows it (extractor/job/stages.py); its cost: docs/scale.md "Cost model"
SPEC = StageSpec(name="splits", reads="pairs", writes="splits", options=Options, add_arguments=add_arguments,
                 cost=Cost((0.003, 0.013), 0.010, 0.0002, 0.27), module="extractor.splits.stage")
