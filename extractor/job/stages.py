"""The job's stages, in order: the one list that the job (its flags, `--stages`, its run),
`--dry-run`, the cost model and docs/DEVELOPING.md read.

Each entry is a stage's `extractor.engine.stage.StageSpec` (its name, the kind of table it
reads and the table it writes, its options, flags and cost figures), declared in the
stage's package; `StageSpec.stage()` is its `Stage`. A stage reads the latest table before
it of the kind it declares (`input_table`), or the job's inputs: adding one between two
others is its package and one line here (docs/DEVELOPING.md "Adding a stage").

A stage the flags switch off (`StageSpec.enabled`, e.g. `check` without `--semantic-check
on`) is left out of the list the job runs (`switched_on`) before any input is resolved: it
runs nothing and writes no table, and the stage after it reads the table before it.
"""
from __future__ import annotations

from typing import Any, Sequence

from extractor.check import options as check_options
from extractor.core.errors import UserError
from extractor.sentences import options as sentences_options
from extractor.engine.stage import StageSpec
from extractor.pairs import options as pairs_options
from extractor.splits import options as splits_options

STAGES: tuple[StageSpec, ...] = (
    sentences_options.SPEC,   # the inputs -> sentences/
    pairs_options.SPEC,       # sentences/ -> pairs/
    check_options.SPEC,       # pairs/ -> checked/ (--semantic-check on; off by default)
    splits_options.SPEC,      # pairs/ -> splits/
)
NAMES = tuple(s.name for s in STAGES)
BY_NAME = {s.name: s for s in STAGES}


def input_table(name: str, stages: tuple[StageSpec, ...] = STAGES) -> str | None:
    """The table stage `name` reads: the latest one before it of the kind it declares
    (None: it reads the job's inputs). A stage that reads a kind no stage before it
    writes is a bug (`TypeError`)."""
    at = [s.name for s in stages].index(name)
    spec = stages[at]
    if spec.reads is None:
        return None
    found = [s.writes for s in stages[:at] if s.writes_kind == spec.reads]
    if not found:
        raise TypeError(f"stage {name!r} reads a table of kind {spec.reads!r}, which no stage before it writes")
    return found[-1]


class StageOffError(UserError, ValueError):
    """--stages or --start-at names a stage the flags switch off: one-line message."""


def switched_on(args: Any, stages: tuple[StageSpec, ...] = STAGES) -> tuple[StageSpec, ...]:
    """The stages the parsed flags `args` switch on, in order (`StageSpec.enabled`): the list
    whose `input_table` a run resolves."""
    return tuple(s for s in stages if s.is_on(args))


def selected(args: Any, names: Sequence[str]) -> list[str]:
    """The stages of `names` (--start-at to --stages) the job runs: the switched-off ones
    left out; one named by --stages or --start-at itself is the user's error."""
    on = {s.name for s in switched_on(args)}
    for flag, given in (("--stages", getattr(args, "stages", None)), ("--start-at", getattr(args, "start_at", None))):
        if given in BY_NAME and given not in on:
            raise StageOffError(f"{flag} {given}: stage '{given}' is switched off by its flags (it runs only with "
                                f"{BY_NAME[given].switch or 'its flag'}); name another stage or switch it on")
    return [n for n in names if n in on]


def writer(table: str) -> str:
    """The stage that writes `table`."""
    return next(s.name for s in STAGES if s.writes == table)


for _spec in STAGES:  # every stage's input is written before it: checked once, on import
    input_table(_spec.name)
