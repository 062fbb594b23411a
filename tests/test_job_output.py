"""JobContext table writes (`write_table_with`, tables written by tasks as the stages do,
tests/task_tables.py): deterministic bytes, atomic replacement, clear errors."""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

import pytest

from extractor.core.errors import InputError
from extractor.job.context import JobContext
from extractor.runs import OutputExistsError, stats_bytes, summary_table
from extractor.spark.runner import SparkRunner
from tests.task_tables import write_rows, writer

pytestmark = pytest.mark.spark


def ctx_for(spark, root, overwrite=False):
    args = argparse.Namespace(overwrite=overwrite, files_per_table=3)
    return JobContext(spark=spark, args=args, lexicon=None, output=root, corpora=[])


def digests(path):
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def rows(n=500):
    return [(f"c{i % 3}", f"doc{i % 37}", i % 7, i, f"Propoziția numărul {i}.") for i in range(n)]


COLUMNS = ["corpus", "doc_id", "para_idx", "sent_idx", "text"]


def test_table_bytes_do_not_depend_on_input_chunks_order_or_runner(spark, tmp_path):
    """A table written as the stages write theirs (tasks hash rows into files, sort them and
    write them with `write_sorted`, through `ctx.write_table_with`): the same bytes from one
    chunk in order and from seven chunks in reverse order, in-process and as Spark tasks."""
    data = rows()
    a = ctx_for(spark, tmp_path / "a")
    b = ctx_for(spark, tmp_path / "b")
    write_rows(a, "sentences", data, COLUMNS, partition_by=["corpus"])
    write_rows(b, "sentences", list(reversed(data)), COLUMNS, partition_by=["corpus"], chunks=7,
               runner=SparkRunner(spark))
    da, db = digests(tmp_path / "a" / "sentences"), digests(tmp_path / "b" / "sentences")
    assert da == db
    assert sorted(da) == [f"corpus=c{c}/part-{p:05d}.parquet" for c in range(3) for p in range(3)]  # no uuid
    assert not list(tmp_path.glob("*/*-scatter"))  # the scratch files are gone
    back = a.read_table("sentences")
    assert back.count() == 500 and set(back.columns) == set(COLUMNS)
    assert sorted(tuple(r[c] for c in COLUMNS) for r in back.collect()) == sorted(data)


def test_spark_partition_is_the_partition_spark_gives_and_each_file_holds_its_partition_sorted(spark, tmp_path):
    """`parquet_writer.spark_partition` = Spark's `repartition(n, cols)` (Murmur3, seed 42), on
    strings of every length mod 4, non-ASCII and nulls; and a table written by tasks with it
    and `write_sorted` (as stage 2 writes `pairs/`) holds in `part-<p>` exactly the rows
    Spark's `repartition(n, corpus, doc_id)` puts in partition p, sorted."""
    import random

    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    from extractor.io.parquet_writer import spark_partition

    rng = random.Random(5)
    alphabet = "abcxyzăîșțé漢 0123456789:-"
    values = [("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 23))),
               "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))) for _ in range(2000)]
    values += [(None, "x"), ("contrasting", None), (None, None)]
    df = spark.createDataFrame(values, "a string, b string")
    for n in (3, 4, 7):
        got = df.repartition(n, "a", "b").select("a", "b", F.spark_partition_id().alias("p")).collect()
        assert all(r["p"] == spark_partition((r["a"], r["b"]), n) for r in got)

    data = rows(2000)
    path = write_rows(ctx_for(spark, tmp_path), "sentences", data, COLUMNS, partition_by=["corpus"],
                      sort_by=["doc_id", "sent_idx"], chunks=3)
    by_spark = (spark.createDataFrame(data, COLUMNS).repartition(3, "corpus", "doc_id")
                .select("corpus", "doc_id", "sent_idx", F.spark_partition_id().alias("p")).collect())
    want = {}
    for r in by_spark:
        want.setdefault((r["corpus"], r["p"]), []).append((r["doc_id"], r["sent_idx"]))
    for (corpus, p), keys in want.items():
        got = pq.read_table(os.path.join(path, f"corpus={corpus}", f"part-{p:05d}.parquet"),
                            columns=["doc_id", "sent_idx"]).to_pylist()
        assert [(g["doc_id"], g["sent_idx"]) for g in got] == sorted(keys)
    assert len(want) == 9 and sum(len(k) for k in want.values()) == len(data)


def test_failed_write_keeps_the_old_table_and_leaves_no_temp_dir(spark, tmp_path):
    """Without a run (a context made by hand): the table goes through `_tmp-<name>`, moved
    into place only on success; a task that fails after others wrote their files leaves the
    old table as it was."""
    ctx = ctx_for(spark, tmp_path, overwrite=True)
    write_rows(ctx, "pairs", rows(50), COLUMNS)
    before = digests(tmp_path / "pairs")
    write_new = writer(rows(100), COLUMNS, files=3, runner=SparkRunner(spark))

    def explode_on_42(text):
        if "42" in text:
            raise RuntimeError("boom")
        return {}

    def write(directory):
        write_new(directory)  # the new files are there, in the temporary folder
        assert list((tmp_path / "_tmp-pairs").rglob("*.parquet"))
        SparkRunner(spark).map(explode_on_42, [r[4] for r in rows(100)])

    with pytest.raises(Exception, match="boom"):
        ctx.write_table_with("pairs", write)
    assert digests(tmp_path / "pairs") == before
    assert not list(tmp_path.glob("_tmp-*"))


def test_existing_table_needs_overwrite_and_missing_table_is_named(spark, tmp_path):
    ctx = ctx_for(spark, tmp_path)
    write_rows(ctx, "sentences", rows(10), COLUMNS)
    with pytest.raises(OutputExistsError, match="sentences already exists; pass --overwrite"):
        write_rows(ctx, "sentences", rows(10), COLUMNS)
    with pytest.raises(InputError, match=r"pairs: no such table; run the stage that writes 'pairs' first"):
        ctx.read_table("pairs")


def test_stats_json_round_trip_and_summary(tmp_path):
    stats = {"sentences": {"documents": {"read": 206, "kept": 96}, "documents_dropped": {"redirect": 99},
                           "seconds": {"write": 1.5}, "inputs": {"x": {"partitions": 2}}}}
    (tmp_path / "stats.json").write_bytes(stats_bytes(stats))
    assert json.loads((tmp_path / "stats.json").read_text(encoding="utf-8")) == stats
    table = summary_table(stats)
    assert "documents.read" in table and "206" in table and "documents_dropped.redirect" in table
    assert "seconds" not in table and "partitions" not in table


def _parquet_digests(root):
    out = {}
    for table in ("sentences", "pairs", "splits"):  # the published tables, through their links
        for dirpath, _, files in os.walk(root / table, followlinks=True):
            for name in files:
                if name.endswith(".parquet"):
                    path = os.path.join(dirpath, name)
                    out[os.path.relpath(path, root)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


def test_file_uri_output_twice_gives_the_same_bytes_with_stats_and_punkt_params(spark, tmp_path):
    """--output file:///... (the stand-in for gs://, s3a://): the same writer, the same files."""
    from jobs.extract import main

    for name in ("a", "b"):
        assert main(["--lang", "ro", "--output", f"file://{tmp_path / name}"]) == 0
    a, b = tmp_path / "a", tmp_path / "b"
    da = _parquet_digests(a)
    assert da and da == _parquet_digests(b)
    assert {k.split("/")[0] for k in da} == {"sentences", "pairs", "splits"}
    for root in (a, b):
        job = json.loads((root / "stats.json").read_text())["job"]
        assert job["run_id"]
        # asked of an idle worker of the stages (session.executor_python): this interpreter
        assert os.path.realpath(job["executor_python"]) == os.path.realpath(sys.executable)
        assert (root / "punkt_params.json").is_file() and (root / "manifest.json").is_file()
    assert (a / "punkt_params.json").read_bytes() == (b / "punkt_params.json").read_bytes()
