"""extractor.spark.session.run_tasks: the Python tasks both stages run their rounds with.
`pack` is pure; the Spark test runs a real local session."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from extractor.spark import session
from extractor.spark.session import pack, run_tasks
from extractor.engine.worker import release_memory


def test_pack_balances_costs_longest_first_and_is_deterministic():
    groups = pack([5, 1, 4, 3, 3, 2, 8], 2)
    assert sorted(i for g in groups for i in g) == list(range(7))  # every task once
    loads = [sum([5, 1, 4, 3, 3, 2, 8][i] for i in g) for g in groups]
    assert loads == [13, 13] and groups == pack([5, 1, 4, 3, 3, 2, 8], 2)
    assert groups[0][0] == 6  # the costliest task starts first
    assert pack([1.0, 1.0], 8) == [[0], [1]]  # never more groups than tasks
    assert pack([2.0, 2.0, 2.0], 1) == [[0, 1, 2]]  # one core: one Spark task, in task order on ties


def test_memory_is_handed_back_between_a_spark_tasks_tasks_not_after_the_last(monkeypatch):
    """`_task_results` (no Spark): a release before each task but the first, none after the
    last (`task_done` releases there, after its collection: once), none with
    ``reuse_memory``; results in the order of the ids, each after its task ran."""
    calls = []
    monkeypatch.setattr(session, "release_memory", lambda: calls.append("release"))

    def fn(t):
        calls.append(t)
        return {"double": 2 * t}

    batches = list(session._task_results(fn, [10, 11, 12], iter([2, 0, 1])))
    assert calls == [12, "release", 10, "release", 11]
    assert [(b.column(0)[0].as_py(), b.column(1)[0].as_py()) for b in batches] == \
        [(2, '{"double": 24}'), (0, '{"double": 20}'), (1, '{"double": 22}')]
    calls.clear()
    assert len(list(session._task_results(fn, [10, 11, 12], iter([0, 1, 2]), reuse_memory=True))) == 3
    assert calls == [10, 11, 12]


@pytest.mark.spark
def test_run_tasks_returns_results_in_task_order_however_tasks_are_grouped(spark):
    tasks = [{"n": n} for n in range(11)]
    costs = [float((n * 7) % 5) for n in range(11)]
    want = [{"square": n * n} for n in range(11)]
    fn = lambda t: {"square": t["n"] ** 2}  # noqa: E731
    assert run_tasks(spark, fn, tasks) == want
    assert run_tasks(spark, fn, tasks, spread=True) == want
    assert run_tasks(spark, fn, tasks, costs=costs) == want
    assert run_tasks(spark, fn, [], costs=[]) == []


@pytest.mark.spark
def test_packed_rounds_share_one_prepared_frame_and_each_runs_its_own_function(spark):
    """Packed rounds run through one DataFrame per task count (planned once); each job
    carries its own function and tasks, and the local property is cleared afterwards."""
    from extractor.spark import session

    first = run_tasks(spark, lambda t: {"v": t + 1}, [1, 2, 3], costs=[1.0, 1.0, 1.0])
    frame = session._PREPARED[spark.sparkContext][2]  # two cores: two Spark tasks
    second = run_tasks(spark, lambda t: {"v": t * 10}, [1, 2, 3], costs=[1.0, 1.0, 1.0])
    assert first == [{"v": 2}, {"v": 3}, {"v": 4}] and second == [{"v": 10}, {"v": 20}, {"v": 30}]
    assert session._PREPARED[spark.sparkContext][2] is frame
    assert spark.sparkContext.getLocalProperty(session.ROUND_PROPERTY) is None


@pytest.mark.spark
def test_every_task_freezes_what_its_worker_holds_so_the_daemons_collection_after_it_is_cheap(spark):
    """PySpark's daemon runs a full `gc.collect()` after every task of a reused worker; each
    kind of round ends with `task_done`, so the next task on that worker finds the earlier
    objects (imports, caches) frozen out of the collector's walk."""
    def probe(_):
        import gc
        import os

        return {"pid": os.getpid(), "frozen": gc.get_freeze_count()}

    by_worker: dict = {}
    for kwargs in ({}, {"spread": True}, {"costs": [1.0, 1.0]}, {"costs": [1.0, 1.0]}, {}):
        for r in run_tasks(spark, probe, [0, 1], **kwargs):
            by_worker.setdefault(r["pid"], []).append(r["frozen"])
    reused = [counts for counts in by_worker.values() if len(counts) > 1]
    assert reused, by_worker  # workers are reused across rounds (Spark's default), so the check below runs
    assert all(n > 0 for counts in reused for n in counts[1:]), by_worker


@pytest.mark.spark
def test_the_session_talks_to_its_python_workers_over_a_unix_socket(spark):
    """Over local TCP every job of Python tasks waited about 36 ms longer; the tasks above
    ran over the Unix domain socket `get_session` asks for."""
    import socket

    from extractor.spark.session import UDS

    if not hasattr(socket, "AF_UNIX"):
        import pytest

        pytest.skip("no Unix domain sockets on this platform")
    assert spark.sparkContext.getConf().get(UDS) == "true"
    assert run_tasks(spark, lambda t: {"t": t}, [1, 2], costs=[1.0, 1.0]) == [{"t": 1}, {"t": 2}]


@pytest.mark.spark
@pytest.mark.slow
def test_a_spark_submit_conf_keeps_its_value_over_the_sessions_default(tmp_path):
    """Under spark-submit the JVM runs before `get_session` builds the session, and the
    builder's settings would override spark-submit's: `--conf
    spark.python.unix.domain.socket.enabled=false` must stay false."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    script = tmp_path / "conf.py"
    script.write_text("import sys\nsys.path.insert(0, %r)\n" % str(Path(__file__).resolve().parents[1])
                      + "from extractor.spark.session import UDS, get_session\n"
                      + "print('UDS=' + get_session(progress=False).sparkContext.getConf().get(UDS, 'unset'))\n")
    env = dict(os.environ, SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run([str(home / "bin" / "spark-submit"), "--master", "local[1]", "--conf",
                           "spark.python.unix.domain.socket.enabled=false", str(script)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert "UDS=false" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]


@pytest.mark.spark
def test_task_done_freezes_no_garbage_so_a_worker_does_not_grow(spark):
    """`task_done` collects before it freezes: a cycle a task leaves behind is freed, not
    frozen for the life of the worker (frozen, each task's 150,000-node cycle would stay:
    about 20 MB a task, measured)."""
    def task(_):
        import os
        import resource

        class Node:
            pass

        nodes = [Node() for _ in range(150_000)]
        for a, b in zip(nodes, nodes[1:] + nodes[:1]):
            a.next = b  # one cycle: only the garbage collector frees it
        return {"pid": os.getpid(), "rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}

    peaks: dict = {}
    for i in range(16):
        r = run_tasks(spark, task, [i], costs=[1.0])[0]
        peaks.setdefault(r["pid"], []).append(r["rss_kb"])
    # MB of peak memory from the second task on (the first task's freed memory is not all
    # reused by the second one's)
    grown = {pid: (kb[-1] - kb[1]) // 1024 for pid, kb in peaks.items() if len(kb) > 3}
    assert grown and all(mb < 40 for mb in grown.values()), (grown, peaks)


def _rss_mib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))


def test_task_done_hands_freed_memory_back_to_the_system():
    """Arrow's pool (mimalloc) keeps the pages of freed buffers: a reused worker's resident
    memory grew with the tasks it had run. `release_memory` (called by `task_done`) hands
    them back."""
    release_memory()
    base = _rss_mib()
    arrays = [pc.add(pa.array(np.arange(20_000, dtype=np.int64)), 1) for _ in range(2000)]  # 2,000 x 160 KB
    held = _rss_mib()
    del arrays
    assert pa.total_allocated_bytes() < 1 << 20 and _rss_mib() > base + 200  # freed, still resident
    release_memory()
    assert _rss_mib() < base + (held - base) // 4, (base, held, _rss_mib())


def _holding_task():
    """A task that holds 200 MB of Arrow arrays, then frees them: its worker's pid and
    resident MiB at its start and while holding them (a closure: pickled by value)."""
    def task(_):
        import os

        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        def rss():
            with open("/proc/self/status") as f:
                return next(int(line.split()[1]) // 1024 for line in f if line.startswith("VmRSS"))

        start = rss()
        arrays = [pc.add(pa.array(np.arange(25_000, dtype=np.int64)), 1) for _ in range(1000)]  # 1,000 x 200 KB
        held = rss()
        del arrays
        return {"pid": os.getpid(), "start": start, "held": held}
    return task


def _per_worker(out: list) -> list[list[dict]]:
    """The results of the workers that ran several tasks in one Spark task, per worker."""
    by_pid: dict = {}
    for r in out:
        by_pid.setdefault(r["pid"], []).append(r)
    runs = [rs for rs in by_pid.values() if len(rs) > 1]
    assert runs, out  # some worker ran several tasks in one Spark task
    return runs


@pytest.mark.spark
def test_each_task_of_a_spark_task_starts_with_the_last_ones_memory_handed_back(spark):
    """A Spark task runs several of a round's tasks (a packed group here: three per core);
    each starts after the memory of the one before was handed back (`_task_results`), not from
    the pages Arrow's pool kept: its resident memory at the start stays near the first
    task's, though each task held 200 MB."""
    for rs in _per_worker(run_tasks(spark, _holding_task(), list(range(6)), costs=[1.0] * 6)):
        assert all(r["held"] > r["start"] + 150 for r in rs), rs
        assert all(later["start"] < rs[0]["start"] + 60 for later in rs[1:]), rs


@pytest.mark.spark
def test_a_round_that_reuses_memory_hands_it_back_at_the_end_of_each_spark_task(spark):
    """With ``reuse_memory`` (stage 3's rounds) the tasks of one Spark task start from the
    pages the one before freed, and reuse them: the worker holds about 200 MB more at the
    start of the later tasks, and no more than that while they hold their own 200 MB. The
    end of the Spark task hands them back: the next round's tasks start low again."""
    for rs in _per_worker(run_tasks(spark, _holding_task(), list(range(6)), costs=[1.0] * 6, reuse_memory=True)):
        assert all(later["start"] > rs[0]["start"] + 150 for later in rs[1:]), rs  # kept
        assert all(later["held"] < rs[0]["held"] + 60 for later in rs[1:]), rs  # and reused
        after = [r for r in run_tasks(spark, _holding_task(), list(range(6)), costs=[1.0] * 6)
                 if r["pid"] == rs[0]["pid"]]
        assert after and after[0]["start"] < rs[0]["start"] + 60, (rs, after)
