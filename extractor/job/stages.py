"""The job's stages, in order: the one list that the job (its flags, `--stages`, its run),
`--dry-run`, the cost model and docs/DEVELOPING.md read.

Each entry is a stage's `extractor.engine.stage.StageSpec` (its name, the table it reads
and the one it writes, its options, flags and cost figures), declared in the stage's
package; `StageSpec.stage()` is its `Stage`. A stage reads the table of a stage before it
(or the job's inputs); adding one between two others is its package and one line here.
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


def check_order(stages: tuple[StageSpec, ...] = STAGES) -> None:
    """Each stage reads the job's inputs or a table an earlier stage writes (a bug otherwise)."""
    written: set[str] = set()
    for spec in stages:
        if spec.reads is not None and spec.reads not in written:
            raise TypeError(f"stage {spec.name!r} reads {spec.reads!r}, which no stage before it writes")
        written.add(spec.writes)


check_order()
