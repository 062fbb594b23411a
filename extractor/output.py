"""Runs: all-or-nothing outputs, one Parquet writer, and the `stats.json` accounting.

A run of the job never writes where a reader looks. It stages every table, `stats.json`,
the Punkt parameters and the dataset card under its own directory of the output root, and
publishes them together at the end by swapping one pointer (docs/deployment.md):

    <output>/_runs/<run_id>/           one run: sentences/ pairs/ splits/ stats.json
                                       punkt_params.json manifest.json (staged until published)
    <output>/_lock                     held by the live run (host, pid, run id, start time)
    <output>/current -> _runs/<id>     local disks: the published run, one symlink swapped
                                       atomically (rename(2)); sentences, pairs, splits,
                                       stats.json, ... at the top are fixed links into current/
    <output>/manifest.json             every filesystem: the published run's manifest (on
                                       object stores written last, as the commit point)

A failed, killed or full-disk run leaves the published run as it was; the next run removes
what a dead run staged. Readers that follow `manifest.json` (or the top-level links) see
one complete run, never a mix. The run before the current one is kept, so a reader that
started before a publish finishes reading it.

Every table is written by one writer (`write_table_files`): Spark arranges the rows (hash
into N files by key, sorted within each file), and each task writes its rows with pyarrow
and fixed settings through `extractor.fs`, so the bytes of a table depend only on its rows,
whatever the filesystem (local, file://, gs://, s3a://, hdfs://), cores or executors.
"""
from __future__ import annotations

import errno
import json
import os
import re
import secrets
import signal
import socket
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from extractor import fs
from extractor.errors import UserError
from extractor.progress import PROGRESS, RUN_RECORD, put_record, read_record
from extractor.stage import task_done

RUNS = "_runs"
LOCK = "_lock"
CURRENT = "current"
MANIFEST = "manifest.json"
TABLE_NAMES = ("sentences", "pairs", "splits")
# Top-level names a run publishes (local disks link them to current/<name>).
LEGACY_ENTRIES = ("sentences", "pairs", "splits", "stats.json", "punkt_params.json")
MANIFEST_FORMAT = 1
# A lock on an object store whose heartbeat is older than this belongs to a dead run.
REMOTE_LOCK_STALE_S = int(os.environ.get("NLI_LOCK_STALE_S", "300"))
HEARTBEAT_S = 30


class OutputExistsError(UserError, FileExistsError):
    """The output already holds a table and --overwrite was not given."""


class RunLockedError(UserError, RuntimeError):
    """Another live run is writing the same output."""


class OutputError(UserError, OSError):
    """The output cannot be written (permissions, full disk, read-only filesystem)."""


class ResumeError(UserError, ValueError):
    """--resume found an unfinished run made from other inputs or settings."""


def first_difference(then, now, where: str = ""):
    """(what, then, now) of the first difference of two fingerprints, in their order (a
    missing key counts as None); None when they are the same."""
    if isinstance(then, dict) and isinstance(now, dict):
        for key in list(then) + [k for k in now if k not in then]:
            found = first_difference(then.get(key), now.get(key), f"{where}.{key}" if where else str(key))
            if found:
                return found
        return None
    if isinstance(then, list) and isinstance(now, list) and len(then) == len(now):
        for i, (a, b) in enumerate(zip(then, now)):
            found = first_difference(a, b, f"{where}[{i}]")
            if found:
                return found
        return None
    return None if then == now else (_what(where), then, now)


def _what(where: str) -> str:
    """A fingerprint path as the user knows it: settings.split_ratios -> --split-ratios."""
    if where.startswith("settings."):
        return "--" + where.split(".", 1)[1].replace("_", "-")
    if where.startswith("inputs["):
        return f"input {where}"
    return where.replace("lexicon_sha256", "the lexicon (its sha256)")


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_uri(path: str | Path) -> bool:
    return bool(_SCHEME.match(str(path)))


def path_str(path: str | Path) -> str:
    """A path as Spark/Hadoop wants it: URIs untouched, local paths absolute."""
    text = str(path)
    return text if is_uri(text) else str(Path(text).resolve())


def _log(msg: str) -> None:
    print(f"[run] {msg}", file=sys.stderr, flush=True)


def fault_point(name: str) -> None:
    """Test hook: `NLI_KILL_AT=name` SIGKILLs the job here, `NLI_FAIL_AT=name` raises.
    Points: after:<stage>, before-publish, after-swap."""
    if name in (os.environ.get("NLI_KILL_AT") or "").split(","):
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    if name in (os.environ.get("NLI_FAIL_AT") or "").split(","):
        raise RuntimeError(f"injected fault at {name}")


# --------------------------------------------------------------------------- Parquet writer

ROW_GROUP_ROWS = 65_536
# Fixed writer settings: the same bytes for the same rows on every machine with this pyarrow.
PARQUET_OPTIONS = dict(compression="snappy", version="2.6", use_dictionary=True, write_statistics=True,
                       data_page_size=1 << 20, store_schema=True)
FILE_SCHEMA = "path string, rows long, bytes long"

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
    from urllib.parse import unquote

    out: dict[str, str | None] = {}
    for part in relative_path.strip("/").split("/")[:-1]:
        if "=" in part:
            k, v = part.split("=", 1)
            out[k] = None if v == NULL_PARTITION else unquote(v)
    return out


def _plain_type(t):
    """Arrow types as the table schemas declare them (string, not large_string), so the
    bytes do not depend on Spark's Arrow settings."""
    import pyarrow as pa

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
    import pyarrow as pa

    return pa.schema([f.with_type(_plain_type(f.type)) for f in schema])


class _FileSink:
    """One Parquet file of a task: rows buffered into row groups of exactly
    ROW_GROUP_ROWS (the last one shorter), written through extractor.fs; on a local disk
    under a hidden temporary name that is renamed at close."""

    def __init__(self, path: str, schema, attempt: int):
        import pyarrow.parquet as pq

        self.path = path
        self.tmp = (fs.join(fs.parent(path), f".{fs.basename(path)}.tmp-{attempt}")
                    if fs.is_local(path) else path)
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
        import pyarrow as pa

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
        if self.tmp != self.path:
            fs.move(self.tmp, self.path)
        return self.path, self.rows, int(size)


def write_sorted(batches, table_dir: str, partition_by: list[str], name: str, attempt: int = 0) -> list[tuple]:
    """Write sorted rows (Arrow batches, sorted by `partition_by` first) as `name` in the
    directory of each partition value: `[<col>=<value>/]<name>`, the columns of
    `partition_by` left out of the files. Returns (path, rows, bytes) per file. The Spark
    writer (`_task_writer`) and tasks that write a table themselves share it."""
    import pyarrow as pa

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
    import sys

    context = sys.modules["pyspark"].TaskContext.get() if "pyspark" in sys.modules else None
    return context.attemptNumber() if context else 0


def _task_writer(table_dir: str, partition_by: list[str]):
    """mapInArrow function: write this task's (sorted) rows as part-<task>.parquet, one file
    per partition value; yield one (path, rows, bytes) row per file."""

    def write(batches):
        import pyarrow as pa
        from pyspark import TaskContext  # in a Spark task: pyspark is there

        task = TaskContext.get()
        written = write_sorted(batches, table_dir, partition_by, f"part-{task.partitionId():05d}.parquet",
                               task.attemptNumber())
        yield pa.RecordBatch.from_arrays(
            [pa.array([w[0] for w in written], pa.string()), pa.array([w[1] for w in written], pa.int64()),
             pa.array([w[2] for w in written], pa.int64())], names=["path", "rows", "bytes"])
        task_done()

    return write


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
    tasks can write a table in the files `arrange` would give it (checked against Spark)."""
    h = 42
    for v in values:
        if v is not None:
            h = _murmur3_bytes(str(v).encode("utf-8"), h)
    return (h - (1 << 32) if h >= (1 << 31) else h) % n


def arrange(df, partition_by=None, sort_by=None, num_files: int = 4):
    """`df` arranged for deterministic files: rows hashed into `num_files` Spark partitions by
    their partition columns and first sort column, sorted within each, so the bytes do not
    depend on cores or input partitioning. `sort_by` defaults to every column (give a unique
    key when there is one: it is cheaper)."""
    partition_by = [partition_by] if isinstance(partition_by, str) else list(partition_by or [])
    sortable = [f.name for f in df.schema.fields if f.dataType.typeName() not in ("map",)]
    sort_by = list(sort_by or [c for c in sortable if c not in partition_by])
    return df.repartition(int(num_files), *(partition_by + sort_by[:1])).sortWithinPartitions(*(partition_by + sort_by))


def write_table_files(df, table_dir: str, partition_by=None) -> list[dict]:
    """Write an arranged DataFrame as Parquet files under `table_dir` (which must not hold
    a table yet): `[<col>=<value>/]part-<NNNNN>.parquet`, written by the tasks themselves.
    Returns [{path, rows, bytes}] (one small row per file). An empty DataFrame gives one
    empty file that carries the schema, so that readers still see the columns."""
    partition_by = [partition_by] if isinstance(partition_by, str) else list(partition_by or [])
    table_dir = fs.canonical(table_dir)
    files = [r.asDict() for r in df.mapInArrow(_task_writer(table_dir, partition_by), FILE_SCHEMA).collect()]

    def schema():
        from pyspark.sql.pandas.types import to_arrow_schema

        return to_arrow_schema(df.schema)
    return finish_table_files(files, table_dir, schema)


def finish_table_files(files: list[dict], table_dir: str, schema) -> list[dict]:
    """After the tasks wrote a table's files ({path, rows, bytes} each): temporary files of
    failed task attempts removed; no file at all gives one empty file that carries the
    schema (`schema()`, Arrow), so that readers still see the columns. Returns the files
    sorted by path."""
    import pyarrow.parquet as pq

    _remove_hidden_files(table_dir)
    if not files:
        path = fs.join(table_dir, "part-00000.parquet")
        with fs.open_output(path) as stream:
            pq.ParquetWriter(stream, plain_schema(schema()), **PARQUET_OPTIONS).close()
        files = [{"path": path, "rows": 0, "bytes": fs.size(path)}]
    return sorted(files, key=lambda f: f["path"])


def _remove_hidden_files(directory: str) -> None:
    import pyarrow.fs as pafs

    filesystem, inner = fs.resolve(directory)
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(inner, recursive=True, allow_not_found=True))
    except Exception:
        return
    for info in infos:
        if info.type == pafs.FileType.File and info.base_name.startswith(".") and ".tmp-" in info.base_name:
            filesystem.delete_file(info.path)


def write_parquet(spark, df, directory: str, partition_by=None) -> None:
    """`write_table_files` under the name of the former Spark-writer helper (`df` arranged)."""
    write_table_files(df, directory, partition_by)


# --------------------------------------------------------------------------- Hadoop helpers
# Kept for stage code that still moves directories with Hadoop's FileSystem API (works on
# a run's own staging directory like on any other). New code: extractor.fs.

def _fs(spark, path: str):
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    return hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), hpath


def exists(spark, path: str) -> bool:
    return fs.exists(path)


def delete(spark, path: str) -> None:
    fs.delete(path)


def rename(spark, src: str, dst: str) -> None:
    fs.move(src, dst)


@contextmanager
def atomic_directory(spark, target: str, overwrite: bool = False):
    """Yield a temporary directory `<parent>/_tmp-<name>` to fill, and move it to `target`
    only when the block succeeds. Inside a run, `target` is in the run's staging directory,
    which is itself published all at once."""
    target = fs.canonical(target)
    if fs.exists(target) and not overwrite:
        raise OutputExistsError(f"{target} already exists; pass --overwrite to replace it")
    tmp = fs.join(fs.parent(target), f"_tmp-{fs.basename(target)}")
    fs.delete(tmp)  # leftovers of a crashed run
    try:
        yield tmp
    except BaseException:
        fs.delete(tmp)
        raise
    fs.delete(target)
    if fs.exists(tmp):
        fs.move(tmp, target)
    else:
        fs.makedirs(target)


# --------------------------------------------------------------------------- locks

def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def _describe(holder: dict) -> str:
    return (f"run {holder.get('run_id', '?')} (host {holder.get('host', '?')}, pid {holder.get('pid', '?')}, "
            f"started {holder.get('started', '?')})")


class LocalLock:
    """`<output>/_lock` held with flock(2) for the life of the run: the kernel releases it
    when the process dies, however it dies, so a lock left by a dead run is simply free."""

    def __init__(self, path: str, info: dict):
        self.path, self.info, self.fd = path, info, None
        self.previous: dict | None = None  # what a dead run left in the file

    def acquire(self) -> None:
        import fcntl

        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise OutputError(f"{os.path.dirname(self.path)}: cannot create the lock file "
                                  f"({exc.strerror}); choose a writable --output") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _read_json_fd(fd)
                os.close(fd)
                raise RunLockedError(
                    f"{os.path.dirname(self.path)} is being written by {_describe(holder)}; "
                    f"wait for it to finish or choose another --output") from None
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # released (unlinked) between our open and our flock: try again
                os.close(fd)
                continue
            left = _read_json_fd(fd)
            self.previous = left or None
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(self.info, sort_keys=True).encode() + b"\n", 0)
            os.fsync(fd)
            self.fd = fd
            return

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


def _read_json_fd(fd: int) -> dict:
    try:
        raw = os.pread(fd, 65536, 0)
        return json.loads(raw) if raw.strip() else {}
    except (OSError, ValueError):
        return {}


class RemoteLock:
    """`<output>/_lock` on an object store: a JSON object with a heartbeat that the live run
    refreshes every 30 s. A lock whose heartbeat is older than NLI_LOCK_STALE_S (300 s), or
    whose process is gone on this host, belongs to a dead run and is taken over. Object
    stores have no exclusive create through these clients: two jobs started within the
    same second can both win; the read-back below narrows that window."""

    def __init__(self, path: str, info: dict):
        self.path, self.info = path, info
        self.previous: dict | None = None
        self._stop = threading.Event()
        self._thread = None

    def acquire(self) -> None:
        if fs.exists(self.path):
            try:
                holder = json.loads(fs.read_bytes(self.path))
            except ValueError:
                holder = {}
            if _alive(holder):
                raise RunLockedError(f"{fs.parent(self.path)} is being written by {_describe(holder)}; "
                                     f"wait for it to finish or choose another --output")
            self.previous = holder
        self._write()
        time.sleep(0.5)
        mine = json.loads(fs.read_bytes(self.path))
        if mine.get("run_id") != self.info["run_id"]:
            raise RunLockedError(f"{fs.parent(self.path)} is being written by {_describe(mine)}; "
                                 f"wait for it to finish or choose another --output")
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._thread.start()

    def _write(self) -> None:
        self.info["heartbeat"] = time.time()
        fs.write_bytes(self.path, json.dumps(self.info, sort_keys=True).encode() + b"\n")

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self._write()
            except Exception:
                pass

    def release(self) -> None:
        self._stop.set()
        try:
            fs.delete(self.path)
        except Exception:
            pass


def _alive(holder: dict) -> bool:
    if not holder:
        return False
    if holder.get("host") == socket.gethostname() and holder.get("pid"):
        try:
            os.kill(int(holder["pid"]), 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    return time.time() - float(holder.get("heartbeat") or 0) < REMOTE_LOCK_STALE_S


# --------------------------------------------------------------------------- runs

def _rel(root: str, path: str) -> str:
    root = root.rstrip("/") + "/"
    return path[len(root):] if path.startswith(root) else path


def read_manifest(root: str) -> dict | None:
    """The published run's manifest of an output root, or None (no run published yet)."""
    path = fs.join(fs.canonical(root), MANIFEST)
    try:
        if not fs.exists(path):
            return None
        return json.loads(fs.read_bytes(path))
    except (fs.FsError, ValueError):
        return None


def published_path(root: str, name: str) -> str | None:
    """Where table or file `name` of the published run of `root` lives, or None."""
    manifest = read_manifest(root)
    if manifest is None:
        return None
    entry = manifest.get("tables", {}).get(name) or manifest.get("files", {}).get(name)
    return fs.join(fs.canonical(root), entry["path"]) if entry else None


def fingerprint(path: str) -> dict:
    """size and mtime of an input file, or file count, bytes and newest mtime of a directory."""
    import pyarrow.fs as pafs

    filesystem, inner = fs.resolve(path)
    info = filesystem.get_file_info(inner)
    if info.type == pafs.FileType.Directory:
        infos = [i for i in filesystem.get_file_info(pafs.FileSelector(inner, recursive=True))
                 if i.type == pafs.FileType.File]
        return {"path": path, "files": len(infos), "bytes": sum(i.size for i in infos),
                "mtime": max((i.mtime_ns or 0 for i in infos), default=0) // 1_000_000_000}
    return {"path": path, "bytes": info.size, "mtime": (info.mtime_ns or 0) // 1_000_000_000}


class Run:
    """One run of the job on an output root: the lock, the staging directory, and the
    publish at the end. `Run.open` takes the lock (or refuses in one line), removes what
    dead runs staged and adopts an output written before runs existed."""

    def __init__(self, root: str, command_line: str = ""):
        self.root = fs.canonical(root)
        self.local = fs.local_path(self.root)  # local disks (file:// included): links and flock
        self.run_id = new_run_id()
        self.dir = fs.join(self.root, RUNS, self.run_id)
        self.command_line = command_line
        self.started = _now()
        self.current: dict | None = None     # the published run's manifest when we started
        self.reused: dict = {}               # table name -> manifest entry of an earlier run
        self.lock = None
        self.took_over: dict | None = None
        self.resumed: str | None = None      # the run id this run continues (--resume)

    # ---- life cycle
    @classmethod
    def open(cls, root: str, command_line: str = "", fingerprint: dict | None = None,
             resume: bool = False) -> "Run":
        """Take the lock and start a run. `fingerprint` (inputs, lexicon, settings) is
        recorded in the run so that a later `resume=True` can continue it: then the newest
        unpublished run of `root` is continued when its fingerprint is the same, and a
        one-line `ResumeError` names the first difference otherwise (no unpublished run: a
        new one starts)."""
        run = cls(root, command_line)
        try:
            fs.makedirs(run.root)
        except fs.FsError as exc:
            raise OutputError(f"{exc}; choose a writable --output") from None
        info = {"run_id": run.run_id, "host": socket.gethostname(), "pid": os.getpid(),
                "started": run.started, "command_line": command_line}
        lock_path = fs.join(run.root, LOCK)
        run.lock = LocalLock(fs.local_path(lock_path), info) if run.local else RemoteLock(lock_path, info)
        run.lock.acquire()
        try:
            if run.lock.previous:
                run.took_over = run.lock.previous
                _log(f"the lock of {_describe(run.lock.previous)} was left by a dead run; taken over")
            run._adopt_legacy()
            run.current = read_manifest(run.root)
            if resume:
                run._resume(fingerprint or {})
            run._collect_garbage(keep_manifests=[run.current])
            fs.makedirs(run.dir)
            if run.resumed is None and fingerprint is not None:
                put_record(fs.join(run.dir, PROGRESS, RUN_RECORD),
                           {"fingerprint": fingerprint, "command_line": command_line})
        except BaseException:
            run.lock.release()
            raise
        return run

    def _resume(self, fingerprint: dict) -> None:
        """Continue the newest unpublished run that recorded a fingerprint: the same one, or
        refuse naming the first difference."""
        used = set()
        for manifest in [self.current] if self.current else []:
            used |= {manifest.get("run_id"), manifest.get("previous_run")}
            used |= {e.get("run_id") for e in manifest.get("tables", {}).values()}
        try:
            names = [n for n in _list_dirs(fs.join(self.root, RUNS)) if n not in used and n != self.run_id]
        except fs.FsError:
            names = []
        for name in sorted(names, reverse=True):  # run ids begin with their start time
            record = read_record(fs.join(self.root, RUNS, name, PROGRESS, RUN_RECORD))
            if record is None:
                continue
            where = first_difference(record.get("fingerprint") or {}, fingerprint)
            if where is not None:
                what, then, now = where
                raise ResumeError(f"{self.root}: cannot resume run {name}: {what} differs ({_short(then)} then, "
                                  f"{_short(now)} now); run without --resume to start a new run")
            self.run_id, self.dir = name, fs.join(self.root, RUNS, name)
            self.command_line = record.get("command_line") or self.command_line
            self.resumed = name
            _log(f"resuming run {name} (started by: {self.command_line})")
            return
        _log("--resume: no unfinished run to continue under this output; a new run starts")

    def abort(self) -> None:
        """Remove what this run staged and release the lock; the published run is untouched."""
        try:
            fs.delete(self.dir)
        except Exception:
            pass
        self.release()

    def release(self) -> None:
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    # ---- paths
    def table_path(self, name: str) -> str:
        entry = self.reused.get(name)
        return fs.join(self.root, entry["path"]) if entry else fs.join(self.dir, name)

    def path(self, relative: str) -> str:
        return fs.join(self.dir, relative)

    def published(self, name: str) -> dict | None:
        if self.current is None:
            return None
        return self.current.get("tables", {}).get(name) or self.current.get("files", {}).get(name)

    def reuse(self, name: str) -> str | None:
        """Make table `name` of the published run part of this run (--start-at); None when
        the published run has no such table."""
        entry = self.published(name)
        if entry is None or name not in self.current.get("tables", {}):
            return None
        self.reused[name] = dict(entry, run_id=entry.get("run_id") or self.current.get("run_id"))
        link = os.path.join(fs.local_path(self.dir), name) if self.local else None
        if link and not os.path.lexists(link):  # so that <output>/<name> -> current/<name> resolves in this run too
            target = os.path.relpath(fs.local_path(fs.join(self.root, entry["path"])), fs.local_path(self.dir))
            os.symlink(target, link)
        return self.table_path(name)

    def published_stats(self) -> dict:
        entry = self.published("stats.json")
        if not entry:
            return {}
        try:
            return json.loads(fs.read_bytes(fs.join(self.root, entry["path"])))
        except (fs.FsError, ValueError):
            return {}

    # ---- files
    def put_bytes(self, relative: str, data: bytes) -> str:
        path = self.path(relative)
        fs.write_bytes(path, data)
        return path

    def put_file(self, local_path: str | Path, relative: str) -> str:
        return self.put_bytes(relative, Path(local_path).read_bytes())

    # ---- publish
    def publish(self, extra: dict | None = None) -> dict:
        """Write the run manifest and make this run the published one, in one step."""
        import pyarrow.fs as pafs

        filesystem, inner = fs.resolve(self.dir)
        for info in filesystem.get_file_info(pafs.FileSelector(inner)):
            if info.base_name.startswith(("_", ".")):  # work directories of the stages
                fs.delete(fs.join(self.dir, info.base_name))
        tables, files = {}, {}
        for info in filesystem.get_file_info(pafs.FileSelector(inner)):
            name = info.base_name
            if name in self.reused:
                tables[name] = self.reused[name]
            elif info.type == pafs.FileType.Directory:
                listed = fs.list_files(fs.join(self.dir, name))
                tables[name] = {"path": f"{RUNS}/{self.run_id}/{name}", "run_id": self.run_id,
                                "files": [{"path": _rel(fs.join(self.dir, name), p), "bytes": b} for p, b in listed],
                                "bytes": sum(b for _, b in listed)}
            elif info.type == pafs.FileType.File and name != MANIFEST:
                files[name] = {"path": f"{RUNS}/{self.run_id}/{name}", "bytes": int(info.size)}
        for name, entry in self.reused.items():  # object stores: no link in the run directory
            tables.setdefault(name, entry)
        manifest = {"format": MANIFEST_FORMAT, "run_id": self.run_id, "started": self.started, "finished": _now(),
                    "host": socket.gethostname(), "pid": os.getpid(), "command_line": self.command_line,
                    "previous_run": (self.current or {}).get("run_id"), "tables": tables, "files": files}
        manifest.update(extra or {})
        data = (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode()
        self.put_bytes(MANIFEST, data)
        fault_point("before-publish")
        names = sorted(tables) + sorted(files) + [MANIFEST]
        if self.local:
            self._link_top_level(names)  # fixed links into current/: new ones dangle until the swap
            self._swap_local()
        else:
            fs.write_bytes(fs.join(self.root, MANIFEST), data)  # the commit point
        fault_point("after-swap")
        if self.local:
            self._unlink_stale(names)
        self._collect_garbage(keep_manifests=[manifest, self.current])
        self.release()
        return manifest

    def _swap_local(self) -> None:
        root = self.local
        _fsync_tree(fs.local_path(self.dir))
        tmp = os.path.join(root, f".{CURRENT}.tmp-{self.run_id}")
        os.symlink(f"{RUNS}/{self.run_id}", tmp)
        os.replace(tmp, os.path.join(root, CURRENT))  # the commit point: rename(2) is atomic
        _fsync_dir(root)

    def _link_top_level(self, names: list[str]) -> None:
        root = self.local
        for name in names:
            link = os.path.join(root, name)
            target = f"{CURRENT}/{name}"
            if os.path.islink(link) and os.readlink(link) == target:
                continue
            if os.path.lexists(link) and not os.path.islink(link):
                continue  # a user's own file of that name: leave it
            tmp = os.path.join(root, f".{name}.tmp-{self.run_id}")
            os.symlink(target, tmp)
            os.replace(tmp, link)

    def _unlink_stale(self, names: list[str]) -> None:
        root = self.local
        for entry in os.scandir(root):  # links to what the published run no longer has
            if entry.is_symlink() and os.readlink(entry.path).startswith(f"{CURRENT}/") and entry.name not in names:
                os.unlink(entry.path)

    def _collect_garbage(self, keep_manifests: list) -> None:
        """Remove run directories that neither the given manifests nor the runs they come
        after use: staging areas of dead or failed runs, and runs older than the previous one."""
        keep = set()
        for manifest in [m for m in keep_manifests if m]:
            keep.add(manifest.get("run_id"))
            for entry in manifest.get("tables", {}).values():
                keep.add(entry.get("run_id"))
        runs_dir = fs.join(self.root, RUNS)
        try:
            listed = _list_dirs(runs_dir)
        except fs.FsError:
            return
        for name in listed:
            if name in keep or name == self.run_id:
                continue
            was_published = self.current and name == self.current.get("previous_run")
            try:
                fs.delete(fs.join(runs_dir, name))
            except fs.FsError:
                continue
            if not was_published and not any(name == (m or {}).get("previous_run") for m in keep_manifests):
                _log(f"removed {RUNS}/{name}, staged by a run that did not finish")

    def _adopt_legacy(self) -> None:
        """An output written before runs existed (tables directly under the root, local
        disks): move it into a run of its own and publish that, so that --start-at and
        the links work the same."""
        if not self.local or os.path.lexists(os.path.join(self.local, CURRENT)):
            return
        found = [n for n in LEGACY_ENTRIES
                 if os.path.lexists(os.path.join(self.local, n)) and not os.path.islink(os.path.join(self.local, n))]
        if not found:
            return
        legacy = Run.__new__(Run)
        legacy.__dict__.update(self.__dict__)
        legacy.run_id = "legacy-" + new_run_id()
        legacy.dir = fs.join(self.root, RUNS, legacy.run_id)
        legacy.current, legacy.reused, legacy.command_line = None, {}, "(written before run directories)"
        legacy.lock = None  # keep ours
        fs.makedirs(legacy.dir)
        for name in found:
            os.rename(os.path.join(self.local, name), os.path.join(fs.local_path(legacy.dir), name))
        legacy.publish({"adopted": True})
        _log(f"moved the tables written by an earlier version into {RUNS}/{legacy.run_id}")


def _list_dirs(path: str) -> list[str]:
    import pyarrow.fs as pafs

    filesystem, inner = fs.resolve(path)
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
    except Exception as exc:
        raise fs.FsError(f"{path}: cannot list it ({exc})") from None
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)


def _fsync_path(path: str) -> None:
    """fsync one file or directory; filesystems that refuse it are left as they are."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


_fsync_dir = _fsync_path


def _fsync_tree(path: str) -> None:
    """Flush a run's files and directories before the pointer names it."""
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            _fsync_path(os.path.join(dirpath, name))
        _fsync_path(dirpath)


# --------------------------------------------------------------------------- environment faults

_ENVIRONMENT = (
    ("no space left on device", errno.ENOSPC, "no space left on the device; free space and run again"),
    ("file too large", errno.EFBIG, "a file grew past the size limit (ulimit -f) or the filesystem's; "
                                    "raise the limit or choose another --output"),
    ("read-only file system", errno.EROFS, "the filesystem is read-only; choose a writable --output"),
    ("permission denied", errno.EACCES, "permission denied; choose a writable --output"),
    ("disk quota exceeded", errno.EDQUOT, "disk quota exceeded; free space and run again"),
)


def environment_failure_message(exc: BaseException, output: str, any_error: bool = True) -> str | None:
    """One line for a write that failed because of the output's filesystem (full disk,
    read-only, permissions, size limit), wherever it happened (driver or task); None
    otherwise. The published output is untouched (the run was staged). `any_error=False`:
    an error that may be about an input, where "permission denied" is not the output's."""
    text = str(exc)
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            text += "\n" + str(java.toString())
        except Exception:
            pass
    if isinstance(exc, OSError) and exc.errno:
        for _, code, meaning in _ENVIRONMENT:
            if exc.errno == code:
                return f"{output}: {meaning} (the previous output is unchanged)"
    low = text.lower()
    for needle, code, meaning in _ENVIRONMENT:
        if not any_error and code == errno.EACCES:  # an input file may be the unreadable one
            continue
        if needle in low:
            return f"{output}: {meaning} (the previous output is unchanged)"
    return None


# --------------------------------------------------------------------------- stats.json

def stats_bytes(stats: dict) -> bytes:
    """stats.json (sorted keys, so two runs give the same bytes)."""
    return (json.dumps(stats, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def write_stats(path: str | Path, stats: dict) -> None:
    """Write stats.json to a local path via a temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(stats_bytes(stats))
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
