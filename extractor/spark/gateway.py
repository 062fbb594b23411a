"""The driver's JVM (the Py4J gateway): whether it still lives, and a way to reach the user
once it has died (docs/deployment.md "What survives what").

Two ways the Python driver and its JVM are joined:

- plain `python jobs/extract.py`: PySpark starts the JVM as a child of the driver
  (`SparkContext._gateway.proc`); the driver's stderr is the user's.
- `spark-submit jobs/extract.py` (and spark-submit.sh, which execs it): the JVM is the
  process the user started, the driver is its child, and the driver's stdout and stderr
  are a pipe the JVM copies to its own. When the JVM dies (`kill -9`, the kernel's
  out-of-memory killer picks the largest process) nothing the driver prints reaches the
  user. `keep_user_stderr()`, called before the JVM can die, opens the JVM's own stderr
  (`/proc/<jvm>/fd/2`: the user's terminal, log file or pipe) so that `say` can still
  write there. `stderr_to_user()` makes that the driver's stderr from the start, so errors,
  warnings and progress go to the user's stderr and the results to stdout, as under plain
  `python`.

Nothing here imports pyspark at import time; Linux `/proc` is used where present and
skipped elsewhere.
"""
from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time

_user_stderr: int | None = None  # the JVM's stderr, opened while it lived (spark-submit only)
_jvm_pid: int | None = None       # the parent JVM under spark-submit
_submit: list[str] | None = None  # its spark-submit options and the job's script
SUBMIT_CLASS = "org.apache.spark.deploy.SparkSubmit"


def launched_by_spark_submit() -> bool:
    """The driver runs under spark-submit: the JVM started it and told it its gateway port."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def keep_user_stderr() -> None:
    """Under spark-submit, open the parent JVM's stderr for `say` (no-op elsewhere or when
    it cannot be opened: a socket, no /proc)."""
    global _user_stderr, _jvm_pid, _submit
    if _user_stderr is not None or not launched_by_spark_submit():
        return
    _jvm_pid = os.getppid()
    _submit = _submit_words(_jvm_pid, sys.argv[1:])
    try:
        _user_stderr = os.open(f"/proc/{os.getppid()}/fd/2", os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
    except OSError:
        _user_stderr = None


def stderr_to_user() -> None:
    """Under spark-submit, make the driver's stderr the JVM's own (`keep_user_stderr`):
    spark-submit merges the Python driver's stderr into its stdout, so without this the
    job's errors, warnings and progress lines would land in the user's stdout, between the
    results. A no-op elsewhere, or when the JVM's stderr cannot be opened."""
    keep_user_stderr()
    if _user_stderr is None:
        return
    sys.stderr.flush()
    os.dup2(_user_stderr, 2)


def _submit_words(pid: int, job_args: list[str]) -> list[str] | None:
    """spark-submit's words of the JVM `pid` (its options and the job's script), read from
    its command line: what follows SparkSubmit's class, less the job's own arguments."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            words = [w.decode("utf-8", "replace") for w in fh.read().split(b"\0") if w]
    except OSError:
        return None
    if SUBMIT_CLASS not in words:
        return None
    after = words[words.index(SUBMIT_CLASS) + 1:]
    if job_args and after[-len(job_args):] != job_args:
        return None
    return ["spark-submit", *after[:len(after) - len(job_args)]]


def submit_command() -> list[str] | None:
    """The spark-submit command (options and script, without the job's arguments) that
    started this driver, or None when it was not started by spark-submit."""
    return list(_submit) if _submit else None


def quiet_lost_gateway(sc) -> None:
    """A dead JVM is reported in one line (jobs/extract.py), not in the tracebacks that two
    parts of the driver print on their own when it dies: PySpark's accumulator server (a
    thread, `sc._accumulatorServer`, a `socketserver`) on the EOFError of its lost
    connection, and Py4J on the lost gateway (`logging.exception("Exception while sending
    command.")` on the root logger, before the call raises). Both are still printed while
    the JVM lives."""
    server = getattr(sc, "_accumulatorServer", None)
    if server is not None:
        shown = server.handle_error

        def handle_error(request, client_address):
            if not isinstance(sys.exc_info()[1], EOFError):
                shown(request, client_address)

        server.handle_error = handle_error
    root = logging.getLogger()
    if not any(isinstance(f, _LostGatewayFilter) for f in root.filters):
        root.addFilter(_LostGatewayFilter())


class _LostGatewayFilter(logging.Filter):
    """Drops Py4J's record of a failed call when the JVM is gone (see quiet_lost_gateway)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (str(record.msg).startswith("Exception while sending command") and not jvm_alive(settle=2.0))


def say(line: str) -> None:
    """Print one line where the user sees it, with or without a live JVM: the JVM's own
    stderr when the driver runs under spark-submit (its stderr goes through the JVM), else
    the driver's stderr."""
    data = (line.rstrip("\n") + "\n").encode("utf-8", "replace")
    if _user_stderr is not None:
        try:
            os.write(_user_stderr, data)
            return
        except OSError:
            pass
    try:
        sys.stderr.write(line.rstrip("\n") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):  # the pipe to a dead JVM, a closed stream: nowhere left to say it
        pass


def jvm_alive(spark=None, settle: float = 0.0) -> bool:
    """Whether the driver's JVM still lives: the child process PySpark started, or (under
    spark-submit, no child) a connection to the gateway's port. True when there is no
    gateway to ask about (no session was started). `settle`: seconds to wait for a JVM
    that looks alive to finish dying (a killed JVM closes its sockets, which is how the
    driver notices, a moment before its process is gone)."""
    try:
        from pyspark import SparkContext
    except ImportError:
        return True
    gateway = getattr(SparkContext, "_gateway", None)
    if spark is not None:
        gateway = getattr(spark.sparkContext, "_gateway", None) or gateway
    if gateway is None:
        return True
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        if proc.poll() is not None:
            return False
        if not settle:
            return True
        try:
            proc.wait(timeout=settle)
        except subprocess.TimeoutExpired:
            return True
        return False
    if _jvm_pid is not None and os.getppid() != _jvm_pid:  # the parent JVM died: we were re-parented
        return False
    params = getattr(gateway, "gateway_parameters", None)
    if params is None:
        return True
    deadline = time.monotonic() + settle
    while True:
        try:
            with socket.create_connection((params.address, params.port), timeout=5):
                pass
        except OSError:
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.1)
