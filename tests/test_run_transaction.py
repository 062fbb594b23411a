"""Runs (extractor/runs/): staged tables published together, the lock, the manifest,
clean-up of dead runs, reuse with --start-at, and the same bytes on local paths and URIs."""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import subprocess
import sys

import pytest

from extractor import runs as out
from extractor.io import fs
from extractor.job.context import JobContext
from extractor.spark.runner import SparkRunner
from tests.task_tables import table_of, write_rows

pytestmark = pytest.mark.spark

COLUMNS = ["corpus", "doc_id", "para_idx", "sent_idx", "text"]


def rows(n=300, tag=""):
    return [(f"c{i % 2}", f"doc{i % 23}", i % 5, i, f"Propoziția {tag}{i}.") for i in range(n)]


def digests(path):
    path = str(path)
    return {os.path.relpath(os.path.join(d, f), path): hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
            for d, _, files in os.walk(path, followlinks=True) for f in files}


def run_ctx(spark, run):
    args = argparse.Namespace(overwrite=True, files_per_table=2)
    return JobContext(spark=spark, args=args, lexicon=None, output=None, corpora=[], run=run)


def publish_one(spark, root, tag="", extra_file=b"{}"):
    run = out.Run.open(str(root), "test")
    ctx = run_ctx(spark, run)
    write_rows(ctx, "sentences", rows(tag=tag), COLUMNS, partition_by="corpus")
    write_rows(ctx, "pairs", rows(50, tag), COLUMNS)
    ctx.put_bytes(extra_file, "stats.json")
    return run, run.publish()


def test_publish_swaps_everything_at_once_and_readers_see_only_published_runs(spark, tmp_path):
    root = tmp_path / "out"
    run1, m1 = publish_one(spark, root, "a", b'{"n": 1}\n')
    assert os.readlink(root / "current") == f"_runs/{m1['run_id']}"
    assert (root / "stats.json").read_bytes() == b'{"n": 1}\n'
    assert set(m1["tables"]) == {"sentences", "pairs"} and set(m1["files"]) == {"stats.json"}
    assert json.loads((root / "manifest.json").read_text())["run_id"] == m1["run_id"]
    old = digests(root / "sentences")
    assert sorted(old) == ["corpus=c0/part-00000.parquet", "corpus=c0/part-00001.parquet",
                           "corpus=c1/part-00000.parquet", "corpus=c1/part-00001.parquet"]
    assert not (root / "_lock").exists()

    run2 = out.Run.open(str(root), "test 2")  # staged, not published: readers still see run 1
    ctx = run_ctx(spark, run2)
    write_rows(ctx, "sentences", rows(tag="b"), COLUMNS, partition_by="corpus")
    ctx.put_bytes(b'{"n": 2}\n', "stats.json")
    assert digests(root / "sentences") == old and (root / "stats.json").read_bytes() == b'{"n": 1}\n'
    assert spark.read.parquet(out.published_path(str(root), "sentences")).count() == 300
    m2 = run2.publish()
    assert digests(root / "sentences") != old and (root / "stats.json").read_bytes() == b'{"n": 2}\n'
    assert not os.path.lexists(root / "pairs")  # not part of run 2: its link is gone
    assert m2["previous_run"] == m1["run_id"]
    assert sorted(os.listdir(root / "_runs")) == sorted([m1["run_id"], m2["run_id"]])  # previous one kept
    run3, m3 = publish_one(spark, root, "c")
    assert sorted(os.listdir(root / "_runs")) == sorted([m2["run_id"], m3["run_id"]])


def test_same_bytes_for_a_local_path_and_a_file_uri_and_any_input_partitioning(spark, tmp_path):
    data = rows(400)
    a = out.Run.open(str(tmp_path / "a"))
    write_rows(run_ctx(spark, a), "t", data, COLUMNS, partition_by="corpus")
    a.publish()
    b = out.Run.open(f"file://{tmp_path / 'b'}")
    assert b.dir.startswith("file://")
    write_rows(run_ctx(spark, b), "t", list(reversed(data)), COLUMNS, partition_by="corpus", chunks=5,
               runner=SparkRunner(spark))
    b.publish()
    assert digests(tmp_path / "a" / "t") == digests(tmp_path / "b" / "t")
    assert (tmp_path / "b" / "manifest.json").is_file()


def test_empty_table_is_readable_with_its_columns(spark, tmp_path):
    run = out.Run.open(str(tmp_path / "o"))
    schema = table_of(rows(1), COLUMNS).schema
    path = write_rows(run_ctx(spark, run), "pairs", [], COLUMNS, chunks=2, schema=schema)
    assert os.listdir(path) == ["part-00000.parquet"]  # no task wrote a file: one empty file, with the schema
    assert spark.read.parquet(path).columns == COLUMNS and spark.read.parquet(path).count() == 0
    run.abort()
    assert not (tmp_path / "o" / "_runs").exists() or not os.listdir(tmp_path / "o" / "_runs")


def test_second_run_is_refused_while_the_first_holds_the_lock(tmp_path):
    root = str(tmp_path / "o")
    first = out.Run.open(root, "jobs/extract.py --lang ro")
    with pytest.raises(out.RunLockedError) as err:
        out.Run.open(root)
    message = str(err.value)
    assert f"is being written by run {first.run_id} (host " in message and f"pid {os.getpid()}" in message
    assert "started " in message and "\n" not in message
    first.abort()
    out.Run.open(root).abort()


def test_lock_of_a_killed_run_is_taken_over_and_its_staging_removed(tmp_path, capfd):
    root = tmp_path / "o"
    code = ("import sys, time; from extractor import runs as out; r = out.Run.open(sys.argv[1]);"
            "open(r.path('junk.txt'), 'w').write('x'); print(r.run_id, flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    dead_id = proc.stdout.readline().strip()
    with pytest.raises(out.RunLockedError, match=dead_id):
        out.Run.open(str(root))
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    run = out.Run.open(str(root))
    assert run.took_over["run_id"] == dead_id
    assert not (root / "_runs" / dead_id).exists()
    err = capfd.readouterr().err
    assert f"run {dead_id}" in err and "taken over" in err and f"removed _runs/{dead_id}" in err
    run.abort()


def test_start_at_reuses_the_published_table_in_the_new_run(spark, tmp_path):
    root = tmp_path / "o"
    _, m1 = publish_one(spark, root, "a", b'{"sentences": {"n": 7}}\n')
    run = out.Run.open(str(root))
    assert run.reuse("sentences") == str(root / "_runs" / m1["run_id"] / "sentences")
    assert run.published_stats() == {"sentences": {"n": 7}}
    ctx = run_ctx(spark, run)
    assert ctx.read_table("sentences").count() == 300
    with pytest.raises(ValueError, match="reused from the published run"):
        write_rows(ctx, "sentences", rows(3), COLUMNS)
    write_rows(ctx, "pairs", rows(10, "x"), COLUMNS)
    m2 = run.publish()
    assert m2["tables"]["sentences"]["run_id"] == m1["run_id"]
    assert spark.read.parquet(str(root / "sentences")).count() == 300
    assert spark.read.parquet(str(root / "pairs")).count() == 10
    publish_one(spark, root, "c")  # run 1 is still used by run 2 (the previous one): kept
    assert (root / "_runs" / m1["run_id"]).is_dir()


def test_environment_failures_are_one_line(tmp_path):
    import errno

    msg = out.environment_failure_message(OSError(errno.ENOSPC, "No space left on device"), "out/ro")
    assert msg == "out/ro: no space left on the device; free space and run again (the previous output is unchanged)"
    assert "read-only" in out.environment_failure_message(OSError(errno.EROFS, "Read-only file system"), "o")
    wrapped = RuntimeError("Job aborted ... pyarrow OSError: [Errno 30] Read-only file system ...\n  at ...")
    assert out.environment_failure_message(wrapped, "o") is None  # by its type and errno, never its words
    assert out.environment_failure_message(RuntimeError("boom"), "o") is None
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(out.OutputError, match="cannot create the directory"):
        out.Run.open(str(blocker / "out"))
    assert fs.is_file(str(blocker))
