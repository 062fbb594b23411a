"""What every Python task of the stages does at its end (`task_done`): collect and freeze
the worker's objects, hand freed memory back, keep an idle worker's exit quiet. Called by
`extractor.spark.session.run_tasks` in the job's Python workers."""
from __future__ import annotations

import ctypes
import ctypes.util
import gc
from typing import Any


def task_done() -> None:
    """The last call of every Python task of the stages: collects what the task left
    behind, then freezes the objects alive in the worker (its imports, loaded models,
    caches) out of the garbage collector's walk. PySpark's daemon runs a full
    `gc.collect()` in a reused worker after every task, which walks every object the
    worker holds, a cost that grows with the libraries and models loaded (docs/pairs.md
    has the figures). Collected first, no
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
    (`malloc_trim`). Without it a reused worker's resident memory grows with the tasks it has
    run, not with what it holds (docs/scale.md has the figures)."""
    # imported here: the stages' options import this module, and the job's --help must not
    # wait for pyarrow (its workers have it loaded by then)
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def quiet_idle_exit() -> None:
    """In a PySpark worker (no-op elsewhere): Spark stops an idle reused worker by closing
    its socket (PythonWorkerFactory, at the session's stop). The worker reads EOF where the
    next task's first message would be, writes a short exception report into the
    buffer of that closed socket and exits; the daemon's flush of the buffer then fails,
    and a `BrokenPipeError` traceback reaches the console after a successful job whenever
    the worker gets there before the daemon's SIGHUP (workers holding spaCy: more often).
    An EOF before a task's first message is no error and has nobody to report to: nothing
    is written, the worker exits as before (the exception of any task is reported as before)."""
    import sys

    # pyspark.worker's attributes are replaced at run time: typed as Any, not as a module.
    w: Any = sys.modules.get("pyspark.worker")
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

    # A marker on the function (read back by getattr above) so a second call wraps nothing.
    handle_worker_exception.idle_exit_quiet = True  # type: ignore[attr-defined]
    w.handle_worker_exception = handle_worker_exception
