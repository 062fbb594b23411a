"""The job's stages, in order: the one list that the job (its flags, `--stages`, its run),
`--dry-run`, the cost model and docs/DEVELOPING.md read.

Each entry is a stage's `extractor.engine.stage.StageSpec` (its name, the kind of table it
reads and the table it writes, its options, flags and cost figures), declared in the
stage's package; `StageSpec.stage()` is its `Stage`. A stage reads the latest table before
it of the kind it declares (`input_table`), or the job's inputs: adding one between two
others is its package and one line here (docs/DEVELOPING.md "Adding a stage").
"""
from __future__ import annotations

from extractor.documents import options as documents_options
from extractor.engine.stage import StageSpec
from extractor.pairs import options as pairs_options
from extractor.splits import options as splits_options

STAGES: tuple[StageSpec, ...] = (
    documents_options.SPEC,   # the inputs -> sentences/
    pairs_options.SPEC,       # sentences/ -> pairs/
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


def writer(table: str) -> str:
    """The stage that writes `table`."""
    return next(s.name for s in STAGES if s.writes == table)


for _spec in STAGES:  # every stage's input is written before it: checked once, on import
    input_table(_spec.name)
