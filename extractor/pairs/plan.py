"""Stage 2's plan (`PairsPlan`: what its tasks read) and its scratch files (`PairsScratch`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from extractor.neardup.settings import Settings
from extractor.engine.scratch import Scratch, band_name, bucket_name, unit_name

# the kinds of pair rows cut into buckets of their texts (`PairsScratch.pairs`)
MARKED, EARLY, LATE = "marked", "early", "late"



class PairsScratch(Scratch):
    """Stage 2's scratch folder: every path its rounds write and read."""

    def pairs(self, kind: str, b: int, unit: int | None = None) -> str:
        """Pair rows of `kind` (MARKED, EARLY, LATE) in bucket `b`; with `unit`, pass one's
        (or two's) file of that unit."""
        return self.cut(kind, b) if unit is None else self.cut(kind, b, unit_name(unit))

    def documents(self, unit: int | None = None) -> str:
        """Pass one's "doc" rows (the documents' lowest bins), one file per unit."""
        return self.kind("documents") if unit is None else self.kind("documents", unit_name(unit))

    def verdicts(self, b: int | None = None) -> str:
        """The marked round's POS verdicts, one file per bucket."""
        return self.kind("verdicts") if b is None else self.kind("verdicts", bucket_name(b))

    def kept(self, b: int | None = None, near: bool = False) -> str:
        """The kept marked pairs, one file per bucket; `near`: after the near-duplicate rounds."""
        kind = "kept-near" if near else "kept"
        return self.kind(kind) if b is None else self.kind(kind, bucket_name(b))

    def near_texts(self, b: int) -> str:
        """The hypotheses (with premises and pair ids) of bucket `b`'s kept marked pairs."""
        return self.kind("near-texts", bucket_name(b))

    def near_bands(self, k: int, b: int | None = None) -> str:
        """Band rows of band bucket `k`; with `b`, those of kept-pairs bucket `b`."""
        return self.cut("near-bands", k) if b is None else self.cut("near-bands", k, bucket_name(b))

    def near_rejected(self, b: int, k: int | None = None) -> str:
        """Rejected near-duplicates of kept-pairs bucket `b`; with `k`, those band bucket `k` found."""
        return self.cut("near-rejected", b) if k is None else self.cut("near-rejected", b, band_name(k))

    def pool(self, b: int | None = None) -> str:
        """The neutral candidates that stay, one file per bucket."""
        return self.kind("pool") if b is None else self.kind("pool", bucket_name(b))


@dataclass(frozen=True)
class PairsPlan:
    """Everything stage 2's tasks read that is known before its first round, shipped with
    every round's function (pickled by Spark): made once by `stage.make_plan`. What the
    rounds decide travels in the later rounds' own inputs below (`Candidates`, `PassTwo`,
    `Wanted`, `NeutralCheck`, `TableFiles`), each made once when it is known."""

    lexicon: Any
    units: Sequence[tuple]       # pass one's work units (`sentence_passes.file_units`)
    model: str | None            # the POS filter's model; None: the filter is off
    scratch: PairsScratch
    buckets: int                 # buckets of pair rows (by a hash of their texts)
    seed: int
    strategies: Sequence[str]    # the neutral strategies drawn from
    min_chars: int
    files: int                   # files of the pairs table
    near: Settings | None = None  # near-duplicate pairs' settings; None: off


@dataclass(frozen=True)
class Candidates:
    """The neutral candidates the marked rounds leave (rounds 1-2 and the near-duplicate
    rounds): what every neutral round reads beside the plan."""

    plan: PairsPlan
    # the kept marked pairs are those the near-duplicate rounds left
    # (`PairsScratch.kept(near=True)`); False: the marked round's
    near_applied: bool
    # per (corpus, strategy) the last selection bin whose candidates are kept
    # (`corpus.plan_cuts`; -1: none)
    cuts: Mapping[tuple, int]
    # pass one's early rows hold every candidate under the cuts (no pass two); False: the
    # candidates are pass two's rows
    early: bool


@dataclass(frozen=True)
class PassTwo:
    """The pass-two round's input: the candidates' cuts and the documents it reads."""

    candidates: Candidates
    # the documents pass two reads, per unit (a shared value, `Runner.share`); None: every document
    needed: Any = None


@dataclass(frozen=True)
class Wanted:
    """The neutral-limits round's input: per (corpus, strategy), the candidates the neutral
    round checks in all (`corpus.check_counts`)."""

    candidates: Candidates
    wanted: Mapping[tuple, int]


@dataclass(frozen=True)
class NeutralCheck:
    """The neutral round's input: the candidates, the marked round's verdict files every
    task reads (None: each worker tags what its cache lacks) and the limits of the POS
    check, per (corpus, strategy) the highest selection hash it reaches (`corpus.check_limits`;
    a value None: no limit for that strategy)."""

    candidates: Candidates
    verdicts: Sequence[str] | None
    limits: Mapping[tuple, Any]
    # the POS check covers every candidate under the cuts, whatever `limits` says (a
    # strategy ran short under its limit: the round run once more)
    whole_cuts: bool = False

    def pos_limits(self) -> Mapping[tuple, Any] | None:
        """The limits of the neutral round's POS check (None: every candidate under the cuts)."""
        return None if self.whole_cuts else self.limits


@dataclass(frozen=True)
class Drawn:
    """What rounds 1-4 decided for the files round: which kept marked pairs it writes and
    the exact draw of the neutral ones per (corpus, strategy) (`buckets.cut_points`; None:
    no neutral pair is drawn); `check`: the input of the neutral round that drew them
    (None: no neutral round ran)."""

    near_applied: bool
    draw: Mapping[tuple, Any] | None
    check: NeutralCheck | None = None


@dataclass(frozen=True)
class TableFiles:
    """The files round's input: the plan, what was drawn, the pairs table's folder."""

    plan: PairsPlan
    drawn: Drawn
    target: str
