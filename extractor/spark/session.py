"""One place that builds the SparkSession, for the job and the tests."""
from __future__ import annotations

import json
import os
import socket
import sys
import weakref

from extractor.core.errors import OUTPUT_FAULT_MARK, OUTPUT_FAULTS
from extractor.spark import gateway
from extractor.spark.jvm import driver_java_options
from extractor.engine.worker import release_memory, task_done  # task_done: the last call of every Python task


def get_session(master: str | None = None, app_name: str = "nli-extract",
                shuffle_partitions: int | None = None, progress: bool = False, conf: dict | None = None,
                jvm_tuning: str = "startup"):
    """The SparkSession. With a local master, the driver JVM (which is then the executor
    too) gets `extractor.spark.jvm.driver_java_options(jvm_tuning)`; under spark-submit the JVM
    already runs and spark-submit.sh passes the same options.

    The JVM and its Python workers talk over Unix domain sockets where the platform has
    them (Spark's `spark.python.unix.domain.socket.enabled`, off by default): over local
    TCP every job of Python tasks waits longer, on the stalls of small writes on a TCP
    socket.
    A `conf` entry or spark-submit's `--conf` overrides it.

    Spark's own console progress bars (`spark.ui.showConsoleProgress`) are off unless
    `progress` (the job's `--spark-progress`) or spark-submit's `--conf` turns them on: the
    job prints its own line per round (`extractor.spark.status`)."""
    # Workers must run this interpreter, or they fail on imports (see README).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:  # under spark-submit the master comes from the command line
        builder = builder.master(master)
    if master and master.startswith("local"):
        options = driver_java_options(jvm_tuning)
        if options:
            builder = builder.config("spark.driver.extraJavaOptions", options)
    if progress or not _submitted_conf(CONSOLE_PROGRESS):
        builder = builder.config(CONSOLE_PROGRESS, "true" if progress else "false")
    builder = builder.config("spark.sql.execution.arrow.pyspark.enabled", "true")
    if hasattr(socket, "AF_UNIX") and not _submitted_conf(UDS):  # JVM <-> Python workers over a Unix socket
        builder = builder.config(UDS, "true")
    if shuffle_partitions:
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle_partitions))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    gateway.quiet_lost_gateway(session.sparkContext)  # a dead JVM is reported in one line (jobs/extract.py)
    return session


UDS = "spark.python.unix.domain.socket.enabled"
CONSOLE_PROGRESS = "spark.ui.showConsoleProgress"


def _submitted_conf(key: str) -> bool:
    """Whether spark-submit (its `--conf` or spark-defaults.conf) set `key`: under
    spark-submit the JVM runs before the session is built, and the builder's settings would
    override its. Outside spark-submit nothing is set yet (and asking would start the JVM
    without the session's options)."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return False
    from pyspark import SparkConf, SparkContext

    SparkContext._ensure_initialized()  # connects to spark-submit's JVM (it starts nothing)
    return SparkConf().contains(key)


def over_ids(spark, n: int):
    """ids 0..n-1 (work units, output files) in contiguous ranges for `mapInArrow`: about
    two tasks per core (few tasks: each reports its own small result), at most one per id."""
    slots = max(1, spark.sparkContext.defaultParallelism)
    return spark.range(0, n, 1, max(1, min(n, 2 * slots)))


def pack(costs: list[float], slots: int) -> list[list[int]]:
    """Task numbers in at most `slots` groups of about equal cost: longest processing time
    first (each task, costliest first, to the group with the least cost so far; ties to the
    lower number). Deterministic."""
    groups: list[list[int]] = [[] for _ in range(max(1, min(slots, len(costs))))]
    load = [0.0] * len(groups)
    for i in sorted(range(len(costs)), key=lambda i: (-costs[i], i)):
        g = min(range(len(groups)), key=lambda g: (load[g], g))
        groups[g].append(i)
        load[g] += costs[i]
    return groups


ROUND_PROPERTY = "nli.round"  # Spark local property: the pickled (fn, tasks, groups) of a packed round
_PREPARED: weakref.WeakKeyDictionary | None = None  # SparkContext -> {Spark tasks: prepared DataFrame}


def _run_packed_round(batches):
    """The Python task of a packed round: its groups' tasks, read from the job's local
    property (`run_tasks` with ``costs``). One module-level function for every round, so
    one DataFrame per task count serves them all and Spark plans it once."""
    import base64
    import pickle

    from pyspark import TaskContext

    context = TaskContext.get()
    assert context is not None  # a Python task of a Spark job
    packed = context.getLocalProperty(ROUND_PROPERTY)
    assert packed is not None  # set by run_tasks for the round
    fn, tasks, groups, reuse_memory = pickle.loads(base64.b64decode(packed))
    ids = (i for batch in batches for g in batch.column(0).to_pylist() for i in groups[g])
    yield from _task_results(fn, tasks, ids, reuse_memory)
    del fn, tasks, groups  # the round's plan: freed now, not frozen
    task_done()


def _task_results(fn, tasks: list, ids, reuse_memory: bool = False):
    """Tasks `ids` of a round, one after another, each result as the batch `run_tasks`
    collects; before each task but the first the memory the one before freed is handed back
    (`release_memory`): a Spark task runs several of a round's tasks (a range, or a packed
    group), and the next one must not start from the pages the last one left (a pairs
    bucket's tagging is tens of MB). After the last, `task_done` hands them back (once, not
    here as well). With `reuse_memory` the next task reuses them, and `task_done` hands them
    back at the end of the Spark task (`run_tasks`)."""
    for n, i in enumerate(ids):
        if n and not reuse_memory:
            release_memory()
        try:
            result = fn(tasks[i])
        except OSError as exc:  # a write the output's filesystem refused: marked for the driver
            if exc.errno not in OUTPUT_FAULTS:
                raise
            raise RuntimeError(f"{OUTPUT_FAULT_MARK}{exc.errno}: {exc}") from exc
        yield _result(i, result)


def _result(i: int, result):
    """A task's result as the one-row batch `run_tasks` collects."""
    import json

    import pyarrow as pa

    return pa.RecordBatch.from_arrays([pa.array([i], pa.int64()), pa.array([json.dumps(result)], pa.string())],
                                      names=["i", "result"])


def _prepared(spark, n: int):
    """The DataFrame of `n` packed-round Spark tasks, built once per session: collecting
    it again reuses its plan instead of planning every round anew."""
    global _PREPARED
    if _PREPARED is None:
        _PREPARED = weakref.WeakKeyDictionary()
    frames = _PREPARED.setdefault(spark.sparkContext, {})
    if n not in frames:
        frames[n] = spark.range(0, n, 1, n).mapInArrow(_run_packed_round, "i long, result string")
    return frames[n]


def run_tasks(spark, fn, tasks: list, spread: bool = False, costs: list[float] | None = None,
              reuse_memory: bool = False) -> list:
    """One Spark job of Python tasks: ``fn(task)`` for every task (a small JSON-able result
    each), the results in task order. Tasks run in contiguous ranges, about two per core
    (`over_ids`); one Spark task each with ``spread`` (few tasks of unequal cost); or, given
    each task's estimated ``costs``, in one Spark task per core, packed to equal cost
    (`pack`: a Spark task's own cost is more than that of many small tasks), the round
    handed to the tasks as a local property of the job so that one prepared DataFrame runs
    every round (`_prepared`). The stages exchange their rows through scratch files
    (`extractor.engine.scratch`), not Spark.

    Between two tasks of a Spark task the memory the first freed is handed back
    (`release_memory`), so that the next does not start from its pages, and after the last
    by `task_done`; with ``reuse_memory`` only at the end of each Spark task: for rounds
    of short tasks of bounded size (stage 3's), where faulting the pages in again costs
    more than keeping them (CPU against peak memory: docs/scale.md)."""
    if not tasks:
        return []
    if costs is not None:
        import base64

        from pyspark import cloudpickle

        groups = pack(costs, spark.sparkContext.defaultParallelism)
        sc = spark.sparkContext
        packed = cloudpickle.dumps((fn, tasks, groups, reuse_memory))
        sc.setLocalProperty(ROUND_PROPERTY, base64.b64encode(packed).decode("ascii"))
        try:
            rows = _prepared(spark, len(groups)).collect()
        finally:
            sc.setLocalProperty(ROUND_PROPERTY, None)
        return _in_task_order(rows, len(tasks))

    def run(batches):
        ids = (i for batch in batches for i in batch.column(0).to_pylist())
        yield from _task_results(fn, tasks, ids, reuse_memory)
        task_done()

    ids = spark.range(0, len(tasks), 1, len(tasks)) if spread else over_ids(spark, len(tasks))
    rows = ids.mapInArrow(run, "i long, result string").collect()
    return _in_task_order(rows, len(tasks))


def _in_task_order(rows, n: int) -> list:
    """The results of a round's `n` tasks in task order. Fewer rows than tasks is a collect
    cut short (a JVM that died while it served the rows ends the stream as if it were
    complete): an error, never a round taken as finished."""
    if sorted(r["i"] for r in rows) != list(range(n)):
        raise RuntimeError(f"a round of {n} tasks came back with {len(rows)} results (the JVM died while it "
                           f"sent them?)")
    return [json.loads(r["result"]) for r in sorted(rows, key=lambda r: r["i"])]


def executor_python(spark) -> str | None:
    """The Python an executor runs (one tiny task): recorded in stats.json, so a cluster run
    shows whether the packed environment (./environment/bin/python) served the executors.
    The task is a one-row `mapInArrow`, the kind of Python task the stages run, so an idle
    worker of theirs answers it; an RDD task would start a second Python daemon and worker
    for it."""
    def where(batches):
        import sys

        import pyarrow as pa

        for _ in batches:
            pass
        yield pa.RecordBatch.from_arrays([pa.array([sys.executable], pa.string())], names=["python"])
        task_done()

    try:
        return spark.range(0, 1, 1, 1).mapInArrow(where, "python string").collect()[0]["python"]
    except Exception:  # the stages will fail with their own message
        return None
