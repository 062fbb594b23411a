"""The stage contract: `Stage`, the typed class every stage of the job is, and `run_stage`,
which runs one the same way whatever it does.

A stage is a package (`extractor/sentences/`, `extractor/pairs/`, `extractor/splits/`) whose
`stage.py` holds a subclass of `Stage` and its one instance; the job's ordered list of them
is `extractor/job/stages.py`. Its steps, the same for every stage:

    options(args, lexicon)          its `Options` (a frozen dataclass, `StageSpec.options`)
                                    from the parsed flags, built once before any work
    resolved_flags(args, lexicon)   the flags it fills in from the lexicon (for the run's
                                    fingerprint; none by default)
    check(ctx, options)             settings checked before any stage runs (a missing model)
    describe(ctx, options)          what `--dry-run` prints of it (lines; none by default)
    plan(ctx, runner, options)      a `Planned`: the plan (a frozen dataclass of what its
                                    tasks read, true when made), the key recorded for
                                    `--resume`, its scratch folder
    decide(ctx, runner, plan, options)
                                    the rounds that decide, and the driver's steps between
                                    them: a typed result of what they learned
    write(ctx, runner, plan, decided, directory)
                                    the rounds that write the table into `directory`
    finish(ctx, options, plan, decided, written)
                                    the stats.json block, from what was decided and written

`run_stage` owns what every stage repeats: it records the plan (`runner.plan`), clears an
earlier attempt's scratch folder, writes the table through `ctx.write_table_with`, stores
the stats block, and deletes the scratch folder with the completion records that speak of
it once the table is written (a stage without one keeps its records, which speak of its
table's files, until the run is published); on a `UserError` it forgets the records and
deletes the scratch folder (and a table it had finished) before re-raising; any other
failure keeps them for `--resume`.

`StageSpec` is what the job's flags need of a stage (its name, the tables it reads and
writes, its options and their flags, and whether the flags switch it off: `enabled`): no
pyarrow, no numpy, so `--help` answers at once;
`StageSpec.stage()` imports the stage's module once the flags are parsed.
"""
from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generic, Iterator, Protocol, TypeVar

from extractor.core.errors import UserError
from extractor.io import fs

if TYPE_CHECKING:
    from extractor.engine.runner import Runner
    from extractor.engine.scratch import Scratch

O = TypeVar("O")  # the stage's options
P = TypeVar("P")  # its plan
D = TypeVar("D")  # what its deciding rounds learned
W = TypeVar("W")  # what its writing rounds returned


class StageOptions(Protocol):
    """A stage's options class: a frozen dataclass built from the parsed flags."""

    @classmethod
    def from_args(cls, args: Any, lexicon: Any = None) -> Any: ...


@dataclass(frozen=True)
class Cost:
    """A stage's line of the job's cost model (`extractor/job/cost_model.py`, docs/scale.md
    "Cost model"), per MB of input text: CPU-s (low, high), scratch MB at its peak, MB of
    the table it writes, and the MB the table takes whatever the input's size (its Parquet
    files' own overhead, a card's charts)."""
    cpu_s_per_mb: tuple[float, float]
    scratch_mb_per_mb: float
    output_mb_per_mb: float
    output_mb_fixed: float = 0.0


@dataclass(frozen=True)
class StageSpec:
    """What the job knows of a stage before it runs: its name (one of `--stages`), the kind
    of table it reads (None: the job's inputs; it reads the latest table of that kind that a
    stage before it writes, `extractor.job.stages.input_table`), the table it writes and
    that table's kind (None: the table's own name; a stage that writes a table of another
    stage's schema, e.g. a filter of the pairs, says so: `kind="pairs"`), its options class
    and the function adding their flags to the job's parser, its cost figures, and the
    module whose `STAGE` is its `Stage` instance. `enabled`: a function of the parsed flags,
    False where they switch the stage off (None: always on); the job leaves a switched-off
    stage out of its list before it resolves any stage's input (`stages.switched_on`), so
    it runs nothing, writes no table, and the stage after it reads the table before it."""
    name: str
    reads: str | None
    writes: str
    options: type[StageOptions]
    add_arguments: Callable[[Any], None]
    cost: Cost
    module: str
    kind: str | None = None
    enabled: Callable[[Any], bool] | None = None
    switch: str | None = None  # the flag that switches it on, as the user types it (for messages)

    def is_on(self, args: Any) -> bool:
        """Whether the parsed flags `args` switch this stage on (`enabled`)."""
        return self.enabled is None or bool(self.enabled(args))

    @property
    def writes_kind(self) -> str:
        """The kind of the table it writes."""
        return self.kind or self.writes

    def stage(self) -> "Stage":
        """The stage's instance. Its module is imported here, not where the spec is declared:
        it imports pyarrow and numpy, which the job's `--help` does not wait for."""
        found = importlib.import_module(self.module).STAGE
        if not isinstance(found, Stage) or found.spec is not self:
            raise TypeError(f"{self.module}.STAGE is not the Stage of spec {self.name!r}")
        return found


class StageContext(Protocol):
    """What `run_stage` reaches of the job's context (`extractor.job.context.JobContext`)."""

    stats: dict

    def stage_options(self, name: str, stage: Any) -> Any: ...

    def table_path(self, name: str) -> str: ...

    def write_table_with(self, name: str, write: Callable[[str], None], keep: bool = False) -> str: ...


@dataclass(frozen=True)
class Planned(Generic[P]):
    """A stage's plan, with the key `run_stage` records for `--resume` (`Runner.plan`: the
    work units and settings; a resumed run with the same key reuses the finished tasks) and
    the scratch folder its rounds exchange files in (None: none)."""
    plan: P
    key: Any
    scratch: "Scratch | None" = None


class Stage(ABC, Generic[O, P, D, W]):
    """A stage of the job: its `spec` and its steps (the module docstring). The steps never
    record the plan, clear or delete the scratch folder, or call `ctx.write_table_with`
    themselves: `run_stage` does, the same for every stage."""

    spec: ClassVar[StageSpec]
    # a resumed stage keeps the files of its finished tasks in its table (stage 1: one file
    # per work unit); False: the table is written whole again
    keeps_table: ClassVar[bool] = False

    def options(self, args: Any, lexicon: Any) -> O:
        return self.spec.options.from_args(args, lexicon)

    def resolved_flags(self, args: Any, lexicon: Any) -> dict:
        """The flags this stage fills in from the lexicon where the command line left them
        out, as the flag would give them: what a run's fingerprint records (`--resume`)."""
        return {}

    def check(self, ctx: Any, options: O) -> None:
        """Settings checked before any stage runs: a one-line `UserError` now, not after hours."""

    def describe(self, ctx: Any, options: O) -> list[str]:
        """The lines `--dry-run` prints of this stage (after the job's own)."""
        return []

    @abstractmethod
    def plan(self, ctx: Any, runner: "Runner", options: O) -> Planned[P]: ...

    @abstractmethod
    def decide(self, ctx: Any, runner: "Runner", plan: P, options: O) -> D: ...

    @abstractmethod
    def write(self, ctx: Any, runner: "Runner", plan: P, decided: D, directory: str) -> W: ...

    @abstractmethod
    def finish(self, ctx: Any, options: O, plan: P, decided: D, written: W) -> dict: ...

    def release(self, decided: D) -> None:
        """Let go of what `decide` shared with the tasks (`Runner.share`), after the table."""


@contextmanager
def discarded_on_user_error(runner: "Runner", scratch: "Scratch | None") -> Iterator[None]:
    """On a `UserError` inside: the stage's completion records forgotten (first: they speak
    of the scratch files), its scratch folder deleted, the error re-raised. Any other
    failure (Ctrl-C, a dead JVM) keeps both for `--resume`."""
    try:
        yield
    except UserError:
        forget(runner, scratch)
        raise


def forget(runner: "Runner", scratch: "Scratch | None") -> None:
    """A stage's completion records and scratch folder, gone (its work is done or discarded)."""
    runner.forget()
    if scratch is not None:
        scratch.delete()


def start(runner: "Runner", planned: Planned) -> bool:
    """Record the plan (`Runner.plan`): True when a resumed run reuses the finished tasks of
    this same plan; else what an earlier attempt left in the scratch folder is removed."""
    reuse = runner.plan(planned.key)
    if not reuse and planned.scratch is not None and planned.scratch.exists():
        planned.scratch.delete()
    return reuse


def run_stage(stage: Stage[O, P, D, W], ctx: StageContext, runner: "Runner") -> None:
    """Run `stage` on `runner` into `ctx`: its options (built once by the job), plan, the
    rounds that decide, its table (`ctx.write_table_with`), its stats block (`ctx.stats`)."""
    spec = stage.spec
    options = ctx.stage_options(spec.name, stage)
    planned = stage.plan(ctx, runner, options)
    reuse = start(runner, planned)
    written: list[W] = []
    table: str | None = None
    try:
        with discarded_on_user_error(runner, planned.scratch):
            decided = stage.decide(ctx, runner, planned.plan, options)
            try:
                table = ctx.write_table_with(
                    spec.writes, lambda directory: written.append(stage.write(ctx, runner, planned.plan, decided,
                                                                              directory)),
                    keep=reuse and stage.keeps_table)
            finally:
                stage.release(decided)
            stats = stage.finish(ctx, options, planned.plan, decided, written[0])
    except UserError:
        if table is not None:  # a finished table the stage's own checks refused: not left behind
            fs.delete(table)
        raise
    if planned.scratch is not None:  # the records speak of the scratch files: they go together
        forget(runner, planned.scratch)
    ctx.stats[spec.name] = stats
