"""The one contract of the job's stages, and the runner that runs their work units.

A stage is a module of `extractor/documents/`, `extractor/pairs/` or `extractor/splits/`
(`documents.stage`, `pairs.stage`, `splits.stage`) with:

    NAME                      its name (extractor.core.names.STAGES) and the table it writes
    Options                   a dataclass of the flags it reads, defaults declared there once;
                              `Options.from_args(args)` builds it from the parsed arguments
    add_arguments(parser)     its flags (their defaults come from `Options`)
    check(ctx)                settings checked before any stage runs (a bad flag, a missing
                              model): a one-line error now, not after hours of work
    run(ctx, runner)          plans the work units and hands pure per-unit functions to
                              `runner`; global steps (quotas, dedup, split assignment) run in
                              the driver on the units' small results

The stage never imports pyspark: the runner is the engine. Two runners:
`extractor.spark.runner.SparkRunner` (the job: one Spark job of Python tasks per round) and
`InProcessRunner` below (one process; the tests and the engine-overhead benchmarks).

    runner.map(fn, tasks, spread=False, costs=None, name=None, reuse_memory=False)
                              -> [fn(task) for task in tasks]
        a round: `fn` is a picklable function of one task (a unit number, a bucket, ...)
        returning a small JSON-able result; results come back in task order, through JSON.
        `spread`: one engine task each (few tasks of unequal cost); `costs`: each task's
        estimated cost (packed into one engine task per core). `name` names the round for
        the completion records of `--resume` (extractor.progress.RecordingRunner): a named
        round's finished tasks are not run again by a resumed run. `reuse_memory`: an
        engine task that runs several tasks hands the memory they freed back at its end
        only, not after each (`extractor.spark.session.run_tasks`).
    runner.plan(key) -> bool  the stage's plan of work units (JSON-able); True when the
                              finished work of this same plan may be reused (a resumed run),
                              False when the stage starts from scratch (then it removes
                              whatever an earlier attempt left in its folders)
    runner.step(name, fn)     a driver step whose JSON-able result a resumed run reuses
    runner.share(value)       a read-only value for every task (`.value`; `.destroy()`)
    runner.forget()           drop the stage's completion records (called before a stage
                              deletes its folders after a failure)
    runner.slots              parallel task slots (cores); the plans size their rounds on it
    runner.max_buckets        the most buckets a stage should cut rows into (None: no limit)
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import gc
import json


class Shared:
    """A value shared with every task where a broadcast variable would hold it, in one process."""

    def __init__(self, value):
        self.value = value

    def destroy(self) -> None:
        pass


class InProcessRunner:
    """Every round's tasks one after another in this process, results through JSON as the
    engine returns them: the stages without Spark (tests, benchmarks' peers)."""

    slots = 1
    max_buckets = None

    def map(self, fn, tasks: list, spread: bool = False, costs=None, name: str | None = None,
            reuse_memory: bool = False) -> list:
        return [json.loads(json.dumps(fn(task))) for task in tasks]

    def plan(self, key) -> bool:
        return False

    def step(self, name: str, fn):
        return fn()

    def share(self, value) -> Shared:
        return Shared(value)

    def forget(self) -> None:
        pass


def task_done() -> None:
    """The last call of every Python task of the stages: collects what the task left
    behind, then freezes the objects alive in the worker (its imports, loaded models,
    caches) out of the garbage collector's walk. PySpark's daemon runs a full
    `gc.collect()` in a reused worker after every task, which walks every object the
    worker holds: 15 ms of CPU with pyarrow imported, 35-45 ms with pandas and matplotlib,
    160 ms with spaCy (measured), between one task and the next. Collected first, no
    garbage is frozen; this collection and the daemon's then walk only the objects made
    since the last task (a frozen object is still freed when its last reference goes).
    It also makes the worker's exit quiet when Spark stops it idle (`quiet_idle_exit`),
    and hands the memory the task freed back to the system (`release_memory`)."""
    gc.collect()
    gc.freeze()
    release_memory()
    quiet_idle_exit()


_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or None)
_MALLOC_TRIM = getattr(_LIBC, "malloc_trim", None)  # glibc only (not macOS, not musl)


def release_memory() -> None:
    """Free pages back to the system after a task: Arrow's memory pool (mimalloc keeps the
    pages of freed buffers for reuse) and, with glibc, the C heap's free top and holes
    (`malloc_trim`). Without it a reused worker's resident memory grew with the tasks it had
    run, not with what it held: over 60 pass-one tasks of the 4 GB scale dump, 336 -> 388
    MiB with nothing left allocated by Arrow; with it 237 -> 249 MiB, for about 7 ms of CPU
    a task (docs/scale.md)."""
    # imported here: the stages' options import this module, and the job's --help must not
    # wait for pyarrow (its workers have it loaded by then)
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def quiet_idle_exit() -> None:
    """In a PySpark worker (no-op elsewhere): Spark stops an idle reused worker by closing
    its socket (PythonWorkerFactory, at the session's stop). The worker reads EOF where the
    next task's first message would be, writes an exception report (about 1 KB) into the
    buffer of that closed socket and exits; the daemon's flush of the buffer then fails,
    and a `BrokenPipeError` traceback reaches the console after a successful job whenever
    the worker gets there before the daemon's SIGHUP (workers holding spaCy: more often).
    An EOF before a task's first message is no error and has nobody to report to: nothing
    is written, the worker exits as before (the exception of any task is reported as before)."""
    import sys

    w = sys.modules.get("pyspark.worker")
    if w is None or getattr(w.handle_worker_exception, "idle_exit_quiet", False):
        return
    report = w.handle_worker_exception

    def handle_worker_exception(e, outfile, *args, **kwargs):
        if isinstance(e, (EOFError, ConnectionError)):
            tb = e.__traceback__
            while tb is not None:
                if tb.tb_frame.f_code.co_name in ("_do_get_init_message", "get_init_message"):
                    return
                tb = tb.tb_next
        return report(e, outfile, *args, **kwargs)

    handle_worker_exception.idle_exit_quiet = True
    w.handle_worker_exception = handle_worker_exception


def options_from_args(cls, args):
    """A stage's options dataclass from parsed arguments: every field the arguments have;
    the others keep the dataclass's default (a hand-built namespace in a test)."""
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    return cls(**{n: getattr(args, n) for n in names if hasattr(args, n)})


def default(cls, name: str):
    """The default of field `name` of an options dataclass (what `add_arguments` shows)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return f.default
            return f.default_factory()
    raise KeyError(name)


# Flags of the job that more than one stage reads: their defaults, declared once.
MIN_CHARS = 50
SEED = 0
FILES_PER_TABLE = 4
