"""Output handling: temp-dir-then-rename table writes with deterministic files, and the
`stats.json` accounting with its printed summary.

Paths may be local or any Hadoop file system URI (gs://, s3a://, hdfs://); renames go
through Hadoop's FileSystem API so that the same code works on a cluster.
"""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
from pathlib import Path


class OutputExistsError(FileExistsError):
    """The output already holds a table and --overwrite was not given."""


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(path: str | Path) -> bool:
    return bool(_SCHEME.match(str(path)))


def path_str(path: str | Path) -> str:
    """A path as Spark/Hadoop wants it: URIs untouched, local paths absolute."""
    text = str(path)
    return text if is_uri(text) else str(Path(text).resolve())


def _fs(spark, path: str):
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hpath


def exists(spark, path: str) -> bool:
    fs, hpath = _fs(spark, path)
    return bool(fs.exists(hpath))


def delete(spark, path: str) -> None:
    fs, hpath = _fs(spark, path)
    if fs.exists(hpath):
        fs.delete(hpath, True)


def rename(spark, src: str, dst: str) -> None:
    fs, hsrc = _fs(spark, src)
    _, hdst = _fs(spark, dst)
    if not fs.rename(hsrc, hdst):
        raise OSError(f"could not move {src} to {dst}")


# Spark names part files part-00003-<random uuid>.c000.snappy.parquet; the uuid changes
# on every run, so two identical runs would not give identical directory listings.
_PART = re.compile(r"^(part-\d+)-[0-9a-f-]{36}(.*)$")


def normalize_part_files(spark, directory: str) -> int:
    """Drop the per-run uuid from part file names and remove checksum side files.
    Returns the number of data files."""
    fs, root = _fs(spark, directory)
    files = fs.listFiles(root, True)
    renames, crcs, count = [], [], 0
    while files.hasNext():
        status = files.next()
        hpath = status.getPath()
        name = hpath.getName()
        if name.endswith(".crc"):
            crcs.append(hpath)
            continue
        match = _PART.match(name)
        if match:
            count += 1
            renames.append((hpath, hpath.getParent(), match.group(1) + match.group(2)))
    for hpath in crcs:  # stale once the data file is renamed; Hadoop re-checks nothing else
        fs.delete(hpath, False)
    jvm = spark.sparkContext._jvm
    for hpath, parent, new_name in renames:
        fs.rename(hpath, jvm.org.apache.hadoop.fs.Path(parent, new_name))
    return count


def _rewrite_files(paths):
    """Rewrite Parquet files with pyarrow, row group by row group (memory: one row group)."""
    import os

    import pyarrow.parquet as pq

    for path in paths:
        pf = pq.ParquetFile(path)
        tmp = path + ".rewrite"
        with pq.ParquetWriter(tmp, pf.schema_arrow, compression="snappy") as writer:
            for i in range(pf.num_row_groups):
                writer.write_table(pf.read_row_group(i))
        pf.close()
        os.replace(tmp, path)
        yield path


def rewrite_deterministically(spark, directory: str) -> None:
    """Spark's Parquet writer (parquet-mr) lists each column's encodings in hash-set order,
    which changes from one JVM to the next, so two identical runs would differ in a few
    footer bytes. Rewriting the files with pyarrow (in Spark tasks, one row group at a
    time) makes the bytes a function of the rows alone. Local outputs only. The checksum
    side files are stale afterwards and are removed (Hadoop reads fine without them)."""
    root = Path(directory)
    files = sorted(str(p) for p in root.rglob("*.parquet"))
    if files:
        spark.sparkContext.parallelize(files, len(files)).mapPartitions(_rewrite_files).count()
    for crc in root.rglob("*.crc"):
        crc.unlink()


@contextmanager
def atomic_directory(spark, target: str, overwrite: bool = False):
    """Yield a temporary directory `<parent>/_tmp-<name>` to fill, and move it to `target`
    only when the block succeeds, so a half-written table never sits where a complete one
    is expected. On failure the temporary directory is removed."""
    target = path_str(target)
    if exists(spark, target) and not overwrite:
        raise OutputExistsError(f"{target} already exists; pass --overwrite to replace it")
    parent, name = target.rstrip("/").rsplit("/", 1)
    tmp = f"{parent}/_tmp-{name}"
    delete(spark, tmp)  # leftovers of a crashed run
    try:
        yield tmp
    except BaseException:
        delete(spark, tmp)
        raise
    if exists(spark, target):
        delete(spark, target)
    rename(spark, tmp, target)


def write_parquet(spark, df, directory: str, partition_by=None) -> None:
    """Spark's Parquet writer into `directory` (replaced), then part files named without
    the per-run uuid and, for local outputs, rewritten for deterministic bytes."""
    writer = df.write.mode("overwrite").option("compression", "snappy")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.parquet(directory)
    normalize_part_files(spark, directory)
    if not is_uri(directory):
        rewrite_deterministically(spark, directory)


def write_parquet_atomically(spark, df, target: str, partition_by=None, overwrite: bool = False) -> str:
    """`write_parquet` through `atomic_directory`."""
    with atomic_directory(spark, target, overwrite) as tmp:
        write_parquet(spark, df, tmp, partition_by)
    return path_str(target)


# Spark's ExternalCatalogUtils.escapePathName: these characters are %XX-escaped in
# partition directory names (corpus=<name>), so that Spark reads the value back unchanged.
_PATH_ESCAPE = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}


def partition_dir(column: str, value: str) -> str:
    """The hive-style directory name Spark gives a partition value."""
    return column + "=" + "".join(f"%{ord(ch):02X}" if ch in _PATH_ESCAPE else ch for ch in value)


# --------------------------------------------------------------------------- stats.json

def write_stats(path: str | Path, stats: dict) -> None:
    """Write stats.json (sorted keys, so two runs give the same bytes), via a temp file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(stats, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n",
                   encoding="utf-8")
    tmp.replace(path)


def read_stats(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def _flatten(prefix: str, value, rows: list) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            _flatten(f"{prefix}.{key}" if prefix else str(key), value[key], rows)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        rows.append((prefix, value))


_NOT_SHOWN = ("inputs", "punkt", "seconds", "min_chars", "job")


def summary_table(stats: dict, sections=None, max_rows: int = 60) -> str:
    """A short two-column table of the numeric counts of stats.json, per stage (details
    such as input partitions and timings stay in stats.json only)."""
    lines = []
    for stage in sections or [k for k in stats if isinstance(stats[k], dict)]:
        if stage not in stats or not isinstance(stats[stage], dict):
            continue
        rows: list = []
        _flatten("", {k: v for k, v in stats[stage].items() if k not in _NOT_SHOWN}, rows)
        if not rows:
            continue
        width = max(len(k) for k, _ in rows[:max_rows])
        lines.append(f"== {stage} ==")
        for key, value in rows[:max_rows]:
            shown = f"{value:,}" if isinstance(value, int) else f"{value:,.3f}"
            lines.append(f"  {key:<{width}}  {shown:>12}")
        if len(rows) > max_rows:
            lines.append(f"  ... {len(rows) - max_rows} more in stats.json")
    return "\n".join(lines)
