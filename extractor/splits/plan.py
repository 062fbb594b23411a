"""Stage 3's plan (`SplitsPlan`: what its tasks read) and its scratch files (`SplitsScratch`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from extractor.engine.scratch import Scratch, bucket_name, corpus_dir, corpus_name, numbered, range_name, unit_name


class SplitsScratch(Scratch):
    """Stage 3's scratch folder: every path its rounds write and read."""

    def summaries(self, b: int, unit: int | None = None) -> str:
        """Slim rows of bucket `b` (of sentence-pair keys); with `unit`, that unit's file."""
        return self.cut("summaries", b) if unit is None else self.cut("summaries", b, unit_name(unit))

    def weights(self, corpus: str, unit: int | None = None) -> str:
        """A corpus's document weights; with `unit`, that unit's file."""
        return self.kind("weights", corpus_dir(corpus)) if unit is None else \
            self.kind("weights", corpus_dir(corpus), unit_name(unit))

    def near_paras(self, unit: int | None = None) -> str:
        """The paragraphs of the near-duplicate hypotheses (for blocks), one file per unit."""
        return self.kind("near-paras") if unit is None else self.kind("near-paras", unit_name(unit))

    def near_texts(self, unit: int) -> str:
        """A unit's near-duplicate texts (premises, shingles and band keys)."""
        return self.kind("near-texts", unit_name(unit))

    def near_bands(self, b: int, unit: int | None = None) -> str:
        """Band rows of band bucket `b`; with `unit`, that unit's file."""
        return self.cut("near-bands", b) if unit is None else self.cut("near-bands", b, unit_name(unit))

    def near_edges(self, b: int | None = None) -> str:
        """The verified near-duplicate pairs' documents, one file per band bucket."""
        return self.kind("near-edges") if b is None else self.kind("near-edges", bucket_name(b))

    def near_groups(self, corpus: str) -> str:
        """A corpus's documents joined by near-duplicates."""
        return self.kind("near-groups", corpus_name(corpus))

    def assigned(self, corpus: str | None = None) -> str:
        """The split of every document (or block), one file per corpus."""
        return self.kind("assigned") if corpus is None else self.kind("assigned", corpus_name(corpus))

    def blocks(self, corpus: str | None = None) -> str:
        """The blocks of the corpora assigned by blocks, one file per corpus."""
        return self.kind("blocks") if corpus is None else self.kind("blocks", corpus_name(corpus))

    def paragraphs(self, corpus: str, b: int | None = None) -> str:
        """A corpus's pairs per paragraph; with `b`, bucket `b`'s file."""
        return self.kind("paragraphs", corpus_dir(corpus)) if b is None else \
            self.kind("paragraphs", corpus_dir(corpus), bucket_name(b))

    def ranked(self, r: int, b: int | None = None) -> str:
        """The rows kept by the rank round of unit range `r`; with `b`, bucket `b`'s file."""
        return self.cut("ranked", r) if b is None else self.cut("ranked", r, bucket_name(b))

    def keys(self, k: int, r: int | None = None) -> str:
        """The leakage keys of keys bucket `k`; with `r`, unit range `r`'s file."""
        return self.cut("keys", k) if r is None else self.cut("keys", k, range_name(r))

    def rows(self, split: str | None = None, bucket: int | None = None) -> str:
        """The kept rows' Arrow files (`pair_tables.shuffle_files`); with `split` and
        `bucket`, the folder of one output file's rows."""
        if split is None:
            return self.kind("rows")
        assert bucket is not None, "an output file's rows are named by split and bucket"
        return self.kind("rows", split, numbered(bucket))

    def statistics(self, split: str, unit: int | None = None) -> str:
        """The card statistics of a split's kept rows, one file per unit."""
        return self.kind("statistics", split) if unit is None else self.kind("statistics", split, unit_name(unit))


@dataclass(frozen=True)
class SplitsPlan:
    """Everything stage 3's tasks read that is known before its first round, shipped with
    every round's function (pickled by Spark): made once from the listed units and the
    settings. What the rounds decide travels in the later rounds' own inputs below
    (`Labelled`, `Short`, `Assigned`, `Cuts`, `Quotas`, `Output`), each made once when it
    is known."""

    units: Sequence[dict]         # the pairs table's work units (`pair_tables.list_units`)
    schema: Any                   # the pairs table's Arrow schema
    seed: int
    scratch: SplitsScratch
    buckets: int                  # buckets of slim rows, band keys and leakage keys
    ratios: Sequence[float]       # train, validation, test
    test_only: frozenset = frozenset()  # corpora whose documents all go to test
    # corpora whose second_random premises are in no other pair (`assign.private_premise_corpora`)
    private_premises: frozenset = frozenset()
    near: Any = None              # near-duplicate settings (`neardup.Settings`); None: off


@dataclass(frozen=True)
class Labelled:
    """After round 1: the labels of the data rows, what assigning documents reads."""

    plan: SplitsPlan
    labels: Sequence[str]


@dataclass(frozen=True)
class Short:
    """The paragraphs round's input: the corpora whose documents leave a split short of a label."""

    plan: SplitsPlan
    short: Sequence[str]


@dataclass(frozen=True)
class Assigned:
    """After the assignment (round 2, blocks included): what rounds 3-6 read beside the plan."""

    plan: SplitsPlan
    # the corpora assigned by blocks of paragraphs, not by documents (docs/splits.md "Blocks")
    block_corpora: Sequence[str]
    # the ranges of units the kept rows are written per (round 3), and each unit's range
    n_ranges: int
    range_of: Sequence[int]


@dataclass(frozen=True)
class Cuts:
    """The boundary round's input: per (split, corpus, label) the quota's cut
    (`decisions.cut_points`)."""

    assigned: Assigned
    cuts: Mapping[Any, Any]


@dataclass(frozen=True)
class Quotas:
    """After round 4: the cuts, the last row taken where a quota ends inside a bin
    (`decisions.thresholds`), the output files per split and the pairs per split and label."""

    assigned: Assigned
    cuts: Mapping[Any, Any]
    last: Mapping[Any, Any]
    n_files: Mapping[str, int]
    chart: Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Decided:
    """What rounds 1-5 decided for round 6: the quotas and the card's other charts' data
    (`card.chart_data`)."""

    quotas: Quotas
    charts: Any


@dataclass(frozen=True)
class Output:
    """Round 6's input: what was decided and the splits' output folder."""

    decided: Decided
    target: str
