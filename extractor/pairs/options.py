"""Stage 2's flags and options (`extractor.pairs.stage` does the work): apart, so that the
job's flags are built without numpy and pyarrow (the job's `--help` answers at once)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass

from extractor.engine import contract
from extractor.engine.stage import Cost, StageSpec
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


@dataclass(frozen=True)
class Options(settings.NearDuplicateOptions):
    """The flags the stage reads, with their defaults (declared here once; tests build one
    directly; the near-duplicate flags are `settings.NearDuplicateOptions`', shared with
    stage 3). `neutral_mix` is given as text (the flag) or as weights; it is kept as weights
    (None: every strategy, `neutral.DEFAULT_MIX`; the job gives the lexicon's choice,
    `resolve_neutral_mix`)."""
    min_chars: int = contract.MIN_CHARS
    seed: int = contract.SEED
    spacy_model: str | None = None
    pos_filter: str = "auto"
    pos_words: str = "on"
    neutral_ratio: float = 1.0
    neutral_mix: dict[str, float] | str | None = neutral.DEFAULT_MIX

    def __post_init__(self):
        super().__post_init__()
        # a frozen dataclass: its values normalised once, here (the flag's text as weights)
        for name, kind in (("min_chars", int), ("seed", int), ("neutral_ratio", float)):
            object.__setattr__(self, name, kind(getattr(self, name)))
        mix = neutral.DEFAULT_MIX if self.neutral_mix is None else self.neutral_mix
        object.__setattr__(self, "neutral_mix", neutral.parse_neutral_mix(mix) if isinstance(mix, str) else mix)
        neutral.neutral_target({}, float(self.neutral_ratio))  # validates the ratio

    @classmethod
    def from_args(cls, args, lexicon=None) -> "Options":
        """The options of the parsed flags; with `lexicon`, `--neutral-mix` left out is the
        lexicon's choice (`resolve_neutral_mix`)."""
        mix = getattr(args, "neutral_mix", None)
        return contract.options_from_args(cls, args, neutral_mix=resolve_neutral_mix(mix, lexicon))

    @property
    def mix(self) -> dict[str, float]:
        """The neutral strategies' weights."""
        assert not isinstance(self.neutral_mix, str) and self.neutral_mix is not None  # __post_init__
        return self.neutral_mix

    @property
    def strategies(self) -> list[str]:
        return [s for s in neutral.STRATEGIES if self.mix.get(s, 0) > 0]


def resolve_neutral_mix(flag: str | None, lexicon=None) -> str | None:
    """`--neutral-mix` as given, else the lexicon's measured choice (its
    `label_filters.neutral_mix`), else every strategy (`neutral.DEFAULT_MIX`); None without
    a lexicon (the options' default then)."""
    if flag is not None or lexicon is None:
        return flag
    return lexicon.label_filters.neutral_mix or neutral.DEFAULT_MIX


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


# the stage as the job's list knows it (extractor/job/stages.py); its cost: docs/scale.md "Cost model"
SPEC = StageSpec(name="pairs", reads="sentences", writes="pairs", options=Options, add_arguments=add_arguments,
                 cost=Cost((0.09, 0.46), 0.10, 0.001, 0.15), module="extractor.pairs.stage")
