"""The runner contract (`Runner`) the stages run their rounds on, and the in-process runner.

Three runners implement it: `extractor.spark.runner.SparkRunner` (the job: one Spark job of
Python tasks per round), `InProcessRunner` below (one process: the tests and the
engine-overhead benchmarks) and `extractor.engine.records.RecordingRunner` (the completion
records of `--resume` around another runner). `RunnerBase` holds what a runner without
completion records does (`plan`, `step`, `forget`), declared once.
"""
from __future__ import annotations

import copy
import json
from typing import Any, Callable, Protocol, Sequence, TypeVar, runtime_checkable

T = TypeVar("T")


@runtime_checkable
class SharedValue(Protocol):
    """A read-only value every task of a round reads (a broadcast variable in Spark)."""

    @property
    def value(self) -> Any: ...

    def destroy(self) -> None: ...


@runtime_checkable
class Runner(Protocol):
    """What a stage asks of the engine.

    map(fn, tasks, spread=False, costs=None, name=None, reuse_memory=False)
        a round: `fn` is a picklable function of one task (a unit number, a bucket, ...)
        returning a small JSON-able result; `[fn(task) for task in tasks]`, results in task
        order, through JSON. `spread`: one engine task each (few tasks of unequal cost);
        `costs`: each task's estimated cost (packed into one engine task per core). `name`
        names the round for the completion records of `--resume`: a named round's finished
        tasks are not run again by a resumed run. `reuse_memory`: an engine task that runs
        several tasks hands the memory they freed back at its end only, not after each.
    plan(key) -> bool
        the stage's plan of work units (JSON-able); True when the finished work of this same
        plan may be reused (a resumed run), False when the stage starts from scratch (then
        it removes whatever an earlier attempt left in its folders)
    step(name, fn)      a driver step whose JSON-able result a resumed run reuses
    share(value)        a read-only value for every task (`.value`; `.destroy()`)
    forget()            drop the stage's completion records (called before a stage deletes
                        its folders after a failure)
    slots               parallel task slots (cores); the plans size their rounds on it
    max_buckets         the most buckets a stage should cut rows into (None: no limit)
    """

    @property
    def slots(self) -> int: ...

    @property
    def max_buckets(self) -> int | None: ...

    def map(self, fn: Callable[[Any], Any], tasks: Sequence, spread: bool = False,
            costs: Sequence[float] | None = None, name: str | None = None,
            reuse_memory: bool = False) -> list: ...

    def plan(self, key: Any) -> bool: ...

    def step(self, name: str, fn: Callable[[], T]) -> T: ...

    def share(self, value: Any) -> SharedValue: ...

    def forget(self) -> None: ...


class RunnerBase:
    """A runner without completion records: nothing is reused, nothing is recorded."""

    def plan(self, key: Any) -> bool:
        return False

    def step(self, name: str, fn: Callable[[], T]) -> T:
        return fn()

    def forget(self) -> None:
        pass


class Shared:
    """A value shared with every task where a broadcast variable would hold it, in one process."""

    def __init__(self, value):
        self.value = value

    def destroy(self) -> None:
        pass


class InProcessRunner(RunnerBase):
    """Every round's tasks one after another in this process, results through JSON as the
    engine returns them: the stages without Spark (tests, benchmarks' peers). A round's
    function and its plan are copied once per round (`copy.deepcopy`), as Spark ships a copy
    to its tasks, so that a task never shares the driver's objects where a Spark task would
    not (functions themselves, a test's closure, are not copied)."""

    slots = 1
    max_buckets = None

    def map(self, fn: Callable[[Any], Any], tasks: Sequence, spread: bool = False,
            costs: Sequence[float] | None = None, name: str | None = None,
            reuse_memory: bool = False) -> list:
        fn = copy.deepcopy(fn)
        return [json.loads(json.dumps(fn(task))) for task in tasks]

    def share(self, value: Any) -> Shared:
        return Shared(value)

