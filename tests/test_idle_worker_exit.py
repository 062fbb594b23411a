"""An idle PySpark worker whose socket Spark closes (the session's stop) exits without
writing an exception report into that socket (the daemon's failed flush of it printed a
BrokenPipeError traceback after successful jobs); a task's own exception is still reported."""
import io

import pytest

from extractor.engine.worker import quiet_idle_exit

worker = pytest.importorskip("pyspark.worker")


def _run(data: bytes) -> tuple[int, object]:
    out = io.BytesIO()
    with pytest.raises(SystemExit) as exit_:
        worker.main(io.BufferedReader(io.BytesIO(data)), out)
    return len(out.getvalue()), exit_.value.code


def test_eof_before_a_task_writes_nothing_after_task_done_hook():
    original = worker.handle_worker_exception
    try:
        written, code = _run(b"")
        assert written > 500 and code == -1  # PySpark alone: a report for a closed socket
        quiet_idle_exit()
        quiet_idle_exit()  # installed once
        assert worker.handle_worker_exception.idle_exit_quiet
        written, code = _run(b"")
        assert written == 0 and code == -1
        # a broken message (not an EOF before it) is still reported to the JVM
        written, code = _run(b"\x00\x00\x00\x07garbage")
        assert written > 100
    finally:
        worker.handle_worker_exception = original
