"""The one Parquet writer of the job's tables: the same bytes for the same rows on every
filesystem (local, file://, gs://, s3a://, hdfs://), with any cores or executors
(docs/deployment.md "One writer, the same bytes everywhere").

Stage tasks write their rows with `write_sorted` (fixed pyarrow settings, row groups of
exactly ROW_GROUP_ROWS, a temporary name renamed on local disks), putting each row in the
file Spark's hash would give it (`spark_partition`); `finish_table_files` tidies the table.
"""
from __future__ import annotations

import sys
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from extractor.io import atomic, fs

ROW_GROUP_ROWS = 65_536
# Fixed writer settings: the same bytes for the same rows on every machine with this pyarrow.
PARQUET_OPTIONS = dict(compression="snappy", version="2.6", use_dictionary=True, write_statistics=True,
                       data_page_size=1 << 20, store_schema=True)

# Spark's ExternalCatalogUtils.escapePathName: these characters are %XX-escaped in
# partition directory names (corpus=<name>), so that Spark reads the value back unchanged.
_PATH_ESCAPE = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 32)}
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def partition_dir(column: str, value) -> str:
    """The hive-style directory name Spark gives a partition value."""
    if value is None:
        return f"{column}={NULL_PARTITION}"
    value = str(value)
    return column + "=" + "".join(f"%{ord(ch):02X}" if ch in _PATH_ESCAPE else ch for ch in value)


def partition_values(relative_path: str) -> dict[str, str | None]:
    """The hive partition values of a table file from its path relative to the table
    (``corpus=ro%3Awiki/part-0.parquet`` -> ``{"corpus": "ro:wiki"}``): the inverse of
    `partition_dir`."""
    out: dict[str, str | None] = {}
    for part in relative_path.strip("/").split("/")[:-1]:
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = None if v == NULL_PARTITION else unquote(v)
    return out


def _plain_type(t):
    """Arrow types as the table schemas declare them (string, not large_string), so the
    bytes do not depend on Spark's Arrow settings."""
    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_plain_type(t.value_type)))
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_plain_type(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(_plain_type(t.key_type), _plain_type(t.item_type))
    return t


def plain_schema(schema):
    """An Arrow schema with the types the table schemas declare (`_plain_type`)."""
    return pa.schema([f.with_type(_plain_type(f.type)) for f in schema])


class _FileSink:
    """One Parquet file of a task: rows buffered into row groups of exactly
    ROW_GROUP_ROWS (the last one shorter), written through extractor.io.fs; on a local disk
    under a hidden temporary name that is renamed at close."""

    def __init__(self, path: str, schema, attempt: int):
        self.path = path
        self.file = atomic.PendingFile(path, fs.join(fs.parent(path), f".{fs.basename(path)}.tmp-{attempt}"))
        self.tmp = self.file.tmp
        self.stream = fs.open_output(self.tmp)
        self.writer = pq.ParquetWriter(self.stream, schema, **PARQUET_OPTIONS)
        self.pending: list = []
        self.pending_rows = 0
        self.rows = 0

    def add(self, batch) -> None:
        self.pending.append(batch)
        self.pending_rows += batch.num_rows
        while self.pending_rows >= ROW_GROUP_ROWS:
            self._flush(ROW_GROUP_ROWS)

    def _flush(self, n: int) -> None:
        table = pa.Table.from_batches(self.pending).combine_chunks()
        self.writer.write_table(table.slice(0, n), row_group_size=n)
        rest = table.slice(n)
        self.pending = rest.to_batches() if rest.num_rows else []
        self.pending_rows = rest.num_rows
        self.rows += n

    def close(self) -> tuple[str, int, int]:
        if self.pending_rows:
            self._flush(self.pending_rows)
        self.writer.close()
        size = self.stream.tell()
        self.stream.close()
        self.file.finish()
        return self.path, self.rows, int(size)


def write_sorted(batches, table_dir: str, partition_by: list[str], name: str, attempt: int = 0) -> list[tuple]:
    """Write sorted rows (Arrow batches, sorted by `partition_by` first) as `name` in the
    directory of each partition value: `[<col>=<value>/]<name>`, the columns of
    `partition_by` left out of the files. Returns (path, rows, bytes) per file. The tasks
    of stages 2 and 3 write their tables with it."""
    sink, key, written = None, None, []
    data_schema = None
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if data_schema is None:
            data_schema = plain_schema([f for f in batch.schema if f.name not in partition_by])
        keys = list(zip(*[batch.column(batch.schema.get_field_index(c)).to_pylist() for c in partition_by])) \
            if partition_by else None
        data = pa.RecordBatch.from_arrays(
            [batch.column(batch.schema.get_field_index(f.name)).cast(f.type) for f in data_schema],
            schema=data_schema)
        start, n = 0, batch.num_rows
        while start < n:
            end = n
            if keys is not None:
                end = start + 1
                while end < n and keys[end] == keys[start]:
                    end += 1
            this = keys[start] if keys is not None else ()
            if sink is None or this != key:
                if sink is not None:
                    written.append(sink.close())
                key = this
                parts = [partition_dir(c, v) for c, v in zip(partition_by, this)]
                sink = _FileSink(fs.join(table_dir, *parts, name), data_schema, attempt)
            sink.add(data.slice(start, end - start))
            start = end
    if sink is not None:
        written.append(sink.close())
    return written


def task_attempt() -> int:
    """The attempt number of the Spark task this code runs in (it names the temporary file
    of `_FileSink`); 0 outside a Spark task, as in the stages' plain-process runs."""
    # no import: outside Spark there is no task
    context = sys.modules["pyspark"].TaskContext.get() if "pyspark" in sys.modules else None
    return context.attemptNumber() if context else 0


_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix32(h: int, k: int) -> int:
    k = _rotl32((k * 0xCC9E2D51) & _M32, 15) * 0x1B873593 & _M32
    h = _rotl32(h ^ k, 13)
    return (h * 5 + 0xE6546B64) & _M32


def _murmur3_bytes(data: bytes, seed: int) -> int:
    """Spark's Murmur3_x86_32.hashUnsafeBytes (the tail mixed byte by byte, signed)."""
    h, n = seed & _M32, len(data)
    aligned = n - n % 4
    for i in range(0, aligned, 4):
        h = _mix32(h, int.from_bytes(data[i:i + 4], "little"))
    for i in range(aligned, n):
        h = _mix32(h, (data[i] - 256 if data[i] > 127 else data[i]) & _M32)
    h ^= n
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def spark_partition(values, n: int) -> int:
    """The partition Spark's `repartition(n, *columns)` gives a row of string `values`
    (`pmod(hash(columns), n)`, Murmur3 with seed 42; a null leaves the hash as it is), so
    tasks put each row in the file a Spark shuffle by those columns would give it (checked
    against Spark in tests/test_job_output.py)."""
    h = 42
    for v in values:
        if v is not None:
            h = _murmur3_bytes(str(v).encode("utf-8"), h)
    return (h - (1 << 32) if h >= (1 << 31) else h) % n


def finish_table_files(files: list[dict], table_dir: str, schema) -> list[dict]:
    """After the tasks wrote a table's files ({path, rows, bytes} each): temporary files of
    failed task attempts removed; no file at all gives one empty file that carries the
    schema (`schema()`, Arrow), so that readers still see the columns. Returns the files
    sorted by path."""
    _remove_hidden_files(table_dir)
    if not files:
        path = fs.join(table_dir, "part-00000.parquet")
        with fs.open_output(path) as stream:
            pq.ParquetWriter(stream, plain_schema(schema()), **PARQUET_OPTIONS).close()
        files = [{"path": path, "rows": 0, "bytes": fs.size(path)}]
    return sorted(files, key=lambda f: f["path"])


def _remove_hidden_files(directory: str) -> None:
    filesystem, inner = fs.resolve(directory)
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(inner, recursive=True, allow_not_found=True))
    except Exception:
        return
    for info in infos:
        if info.type == pafs.FileType.File and info.base_name.startswith(".") and ".tmp-" in info.base_name:
            filesystem.delete_file(info.path)
