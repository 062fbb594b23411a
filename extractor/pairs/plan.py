"""Stage 2's plan: the scratch files its rounds exchange (`PairsScratch`)."""
from __future__ import annotations

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
