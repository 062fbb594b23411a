"""Stage 2's plan (`PairsPlan`: what its tasks read) and its scratch files (`PairsScratch`)."""
from __future__ import annotations

from dataclasses import dataclass, field
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
    """Everything stage 2's tasks read, shipped with every round's function (pickled by
    Spark): made once by `stage.make_plan`, then advanced by the driver between rounds
    with `dataclasses.replace`, one field group per decision."""

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
    # after the near-duplicate rounds: the kept marked pairs are those they left
    # (`PairsScratch.kept(near=True)`); False: the marked round's
    near_applied: bool = False
    # the neutral cuts: per (corpus, strategy) the last selection bin whose candidates are
    # kept (`corpus.plan_cuts`; -1: none)
    cuts: Mapping[tuple, int] = field(default_factory=dict)
    # pass one's early rows hold every candidate under the cuts (no pass two); False: the
    # candidates are pass two's rows
    early: bool = False
    # the documents pass two reads, per unit (a shared value, `Runner.share`); None: every
    # document. Set for the pass-two round only
    needed: Any = None
    # the marked round's verdict files every neutral task reads; None: each worker tags what
    # its cache lacks
    verdicts: Sequence[str] | None = None
    # per (corpus, strategy), the candidates the neutral round checks in all (`corpus.check_counts`)
    wanted: Mapping[tuple, int] = field(default_factory=dict)
    # per (corpus, strategy), the highest selection hash the POS check reaches
    # (`corpus.check_limits`; a value None: no limit for that strategy)
    limits: Mapping[tuple, Any] = field(default_factory=dict)
    # the POS check covers every candidate under the cuts, whatever `limits` says (a strategy
    # ran short under its limit)
    whole_cuts: bool = False
    # the exact draw per (corpus, strategy) (`buckets.cut_points`); None: no neutral pair is drawn
    draw: Mapping[tuple, Any] | None = None
    target: str | None = None    # the pairs table's folder (the files round)

    def pos_limits(self) -> Mapping[tuple, Any] | None:
        """The limits of the neutral round's POS check (None: every candidate under the cuts)."""
        return None if self.whole_cuts else self.limits
