"""The job's error boundary (issue 47): only errors raised on purpose about the user's
input, flags or environment become one `error:` line and exit 2; a bug shows its
traceback and exits 1, and the run stays staged for --resume. A bug is planted inside the
job's process in a driver round, in a task and in the run's writer; each must show its
traceback, whatever words its message holds (a UnicodeDecodeError's "unexpected end of
data" once read as a truncated compressed file; a missing scratch file once read as the
user's)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import traceback

import pytest

from extractor.engine import scratch
from extractor.io import fs
from extractor.runs import run as run_module
from extractor.spark import runner
from tests.conftest import REPO

pytestmark = pytest.mark.spark

INPUT = str(REPO / "samples" / "ro")


def as_script(argv: list[str], capsys) -> tuple[int, str]:
    """`python jobs/extract.py ARGV` in this process: the exit status and stderr, an
    uncaught exception printed and exiting 1 as the interpreter does."""
    from jobs.extract import main

    try:
        code = main(argv)
    except Exception:  # noqa: BLE001 - what the interpreter does with an uncaught exception
        print(traceback.format_exc(), file=sys.stderr)
        code = 1
    return code, capsys.readouterr().err


def assert_bug_shown(code: int, err: str, raised: str, out) -> None:
    assert code == 1, err[-3000:]
    assert "Traceback (most recent call last)" in err and raised in err, err[-3000:]
    assert not [line for line in err.splitlines() if line.startswith("error: ")], err[-3000:]
    assert "the run failed: run " in err and "--resume" in err  # kept for --resume, not discarded
    assert len(os.listdir(out / "_runs")) == 1 and not (out / "sentences").exists()  # staged, nothing published


def test_a_bug_in_a_driver_round_shows_its_traceback(spark, tmp_path, capsys, monkeypatch):
    """A driver round that reads a scratch file of the wrong bucket number: the run's own
    file, so a bug (FsError is no user error), not one line about the output."""
    out = tmp_path / "out"
    real = runner.SparkRunner.map

    def map_then_misread(self, fn, tasks, **kw):
        results = real(self, fn, tasks, **kw)
        (run_dir,) = (out / "_runs").iterdir()
        scratch.read_one(fs.join(str(run_dir), "_work-sentences", "bucket-99999.arrow"))  # the planted bug
        return results

    monkeypatch.setattr(runner.SparkRunner, "map", map_then_misread)
    code, err = as_script(["--lang", "ro", "--input", INPUT, "--output", str(out), "--stages", "sentences"], capsys)
    assert_bug_shown(code, err, "FsError", out)
    assert "bucket-99999.arrow: no such file" in err


def test_a_bug_in_a_task_shows_its_traceback_and_exits_1(tmp_path):
    """A task that raises a UnicodeDecodeError of its own ("unexpected end of data"): not
    the user's file (no task marked it), so the traceback, exit status 1. In a process of
    its own: the job's real exit status."""
    out = tmp_path / "out"
    code = textwrap.dedent(f"""
        import sys
        from extractor.spark import runner
        from jobs.extract import main

        real = runner.run_tasks

        def planted(spark, fn, tasks, **kw):
            def buggy(task):
                return b"\\xe2".decode("utf-8")  # the planted bug: "unexpected end of data"
            return real(spark, buggy, tasks, **kw)

        runner.run_tasks = planted
        sys.exit(main(["--master", "local[1]", "--lang", "ro", "--input", {INPUT!r}, "--output", {str(out)!r},
                       "--stages", "sentences"]))
        """)
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert_bug_shown(proc.returncode, proc.stderr, "UnicodeDecodeError", out)
    assert "unexpected end of data" in proc.stderr and "truncated or corrupt" not in proc.stderr


def test_a_bug_in_the_writer_shows_its_traceback(spark, tmp_path, capsys, monkeypatch):
    """The run's writer moving a staged file that is not there: a bug of ours, never "the
    output cannot be written"."""
    out = tmp_path / "out"

    def publish(self, extra=None):
        fs.move(self.path("sentencs"), self.path("sentences-published"))  # the planted bug: a misspelt name

    monkeypatch.setattr(run_module.Run, "publish", publish)
    code, err = as_script(["--lang", "ro", "--input", INPUT, "--output", str(out), "--stages", "sentences"], capsys)
    assert_bug_shown(code, err, "FsError", out)
    assert "sentencs: cannot move it to" in err


def test_the_users_errors_keep_their_one_line(spark, tmp_path, capsys):
    """The same boundary still turns the user's own mistakes into one line, exit 2 (the
    words of each are checked by tests/test_faults_inputs.py and tests/test_faults_runs.py)."""
    bad = tmp_path / "cut.xml.bz2"
    bad.write_bytes(b"BZh9" + b"\0" * 40)
    code, err = as_script(["--lang", "ro", "--input", str(bad), "--output", str(tmp_path / "o"),
                           "--stages", "sentences"], capsys)
    assert code == 2 and "Traceback" not in err, err[-3000:]
    (line,) = [line for line in err.splitlines() if line.startswith("error: ")]
    assert line.startswith(f"error: {bad}: ")
