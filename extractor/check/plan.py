"""The check's plan (`CheckPlan`: what its tasks read) and its scratch files (`CheckScratch`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from extractor.engine.scratch import Scratch, unit_name


class CheckScratch(Scratch):
    """The check's scratch folder: every path its rounds write and read."""

    def verdicts(self, unit: int, start: int | None = None) -> str:
        """The verdicts of unit `unit`'s rows (one file per slice, named by its first row, so
        read in row order); with `start`, the file of the slice that begins there."""
        folder = self.kind("verdicts", unit_name(unit).removesuffix(".arrow"))
        return folder if start is None else f"{folder}/rows-{start:09d}.arrow"


@dataclass(frozen=True)
class CheckPlan:
    """Everything the check's tasks read, known before its first round: the pairs table's
    units, the slices the judging round cuts them into, the model's names and settings."""

    units: Sequence[dict]          # the pairs table's work units (`pair_tables.list_units`)
    schema: Any                    # the pairs table's Arrow schema
    slices: Sequence[tuple]        # (unit, first row, row after the last): the judging round's tasks
    scratch: CheckScratch
    encoder: str                   # the encoder's name (`extractor.encoder.cache`)
    head_sha256: str               # the shipped head the tasks load (checked when loaded)
    threshold: float               # a marked pair is dropped below this p(label right)
    neutral_threshold: float       # a neutral pair is dropped at or above this p(related)
    batch: int                     # sentences per embedding batch
    lexicon: Any = None            # the job's lexicon: a pair's marker -> its phrase (`head.Head.phrases`)

    def files(self) -> list[str]:
        """The pairs table's files, in order: the writing round's tasks."""
        return sorted({u["path"] for u in self.units})


@dataclass(frozen=True)
class Output:
    """The writing round's input: the plan, the pairs table's folder and the target folder."""

    plan: CheckPlan
    source: str
    target: str
