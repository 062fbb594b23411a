"""JobContext table writes: deterministic bytes, atomic replacement, clear errors."""
from __future__ import annotations

import argparse
import hashlib
import os
import sys

import pytest

from extractor.job import InputError, JobContext
from extractor.run import OutputExistsError, read_stats, summary_table, write_stats

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


def test_write_table_bytes_do_not_depend_on_input_partitioning(spark, tmp_path):
    data = rows()
    a = ctx_for(spark, tmp_path / "a")
    b = ctx_for(spark, tmp_path / "b")
    a.write_table(spark.createDataFrame(data, COLUMNS).repartition(1), "sentences", partition_by=["corpus"])
    b.write_table(spark.createDataFrame(list(reversed(data)), COLUMNS).repartition(7), "sentences",
                  partition_by=["corpus"])
    da, db = digests(tmp_path / "a" / "sentences"), digests(tmp_path / "b" / "sentences")
    assert da == db
    assert any(name.startswith("corpus=c1/part-") for name in da)
    assert not any("-" in name.split("part-")[-1].split(".")[0] for name in da if "part-" in name)  # no uuid
    back = a.read_table("sentences")
    assert back.count() == 500 and set(back.columns) == set(COLUMNS)


def test_spark_partition_is_the_partition_spark_gives_and_tasks_write_the_same_files(spark, tmp_path):
    """`parquet_writer.spark_partition` = Spark's `repartition(n, cols)` (Murmur3, seed 42), on
    strings of every length mod 4, non-ASCII and nulls; and a table written by tasks with
    it and `write_sorted` (`write_table_with`, as stage 2 does) has the bytes of `write_table`."""
    import random

    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    from extractor.run.parquet_writer import finish_table_files, spark_partition, write_sorted

    rng = random.Random(5)
    alphabet = "abcxyzăîșțé漢 0123456789:-"
    values = [("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 23))),
               "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))) for _ in range(2000)]
    values += [(None, "x"), ("contrasting", None), (None, None)]
    df = spark.createDataFrame(values, "a string, b string")
    for n in (3, 4, 7):
        got = df.repartition(n, "a", "b").select("a", "b", F.spark_partition_id().alias("p")).collect()
        assert all(r["p"] == spark_partition((r["a"], r["b"]), n) for r in got)

    data = rows()
    ctx_for(spark, tmp_path / "spark").write_table(spark.createDataFrame(data, COLUMNS), "sentences",
                                                   partition_by=["corpus"], sort_by=["doc_id", "sent_idx"])
    table = spark.createDataFrame(data, COLUMNS).toPandas()
    arrow = pa.Table.from_pandas(table, preserve_index=False)

    def write(directory):
        written = []
        part = pa.array([spark_partition((c, d), 3) for c, d in zip(table["corpus"], table["doc_id"])])
        for p in range(3):
            mine = arrow.filter(pc.equal(part, p))
            mine = mine.take(pc.sort_indices(mine, sort_keys=[("corpus", "ascending"), ("doc_id", "ascending"),
                                                               ("sent_idx", "ascending")]))
            written += [dict(zip(("path", "rows", "bytes"), w)) for w in
                        write_sorted(mine.to_batches(), directory, ["corpus"], f"part-{p:05d}.parquet")]
        return finish_table_files(written, directory, lambda: arrow.schema)
    ctx_for(spark, tmp_path / "tasks").write_table_with("sentences", write)
    assert digests(tmp_path / "spark" / "sentences") == digests(tmp_path / "tasks" / "sentences")


def test_failed_write_keeps_the_old_table_and_leaves_no_temp_dir(spark, tmp_path):
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    ctx = ctx_for(spark, tmp_path, overwrite=True)
    ctx.write_table(spark.createDataFrame(rows(50), COLUMNS), "pairs")
    before = digests(tmp_path / "pairs")

    @F.udf(StringType())
    def explode_on_42(text):
        if "42" in text:
            raise RuntimeError("boom")
        return text

    bad = spark.createDataFrame(rows(100), COLUMNS).withColumn("text", explode_on_42("text"))
    with pytest.raises(Exception):
        ctx.write_table(bad, "pairs")
    assert digests(tmp_path / "pairs") == before
    assert not list(tmp_path.glob("_tmp-*"))


def test_existing_table_needs_overwrite_and_missing_table_is_named(spark, tmp_path):
    ctx = ctx_for(spark, tmp_path)
    df = spark.createDataFrame(rows(10), COLUMNS)
    ctx.write_table(df, "sentences")
    with pytest.raises(OutputExistsError, match="sentences already exists; pass --overwrite"):
        ctx.write_table(df, "sentences")
    with pytest.raises(InputError, match=r"pairs: no such table; run the stage that writes 'pairs' first"):
        ctx.read_table("pairs")


def test_stats_json_round_trip_and_summary(tmp_path):
    stats = {"sentences": {"documents": {"read": 206, "kept": 96}, "documents_dropped": {"redirect": 99},
                           "seconds": {"write": 1.5}, "inputs": {"x": {"partitions": 2}}}}
    write_stats(tmp_path / "stats.json", stats)
    assert read_stats(tmp_path / "stats.json") == stats
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
    import json

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
