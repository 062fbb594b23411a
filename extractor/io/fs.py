"""The one filesystem layer: every read of an input and every file a stage writes goes
through here, whatever the path is.

    local paths, file:///abs/path          pyarrow LocalFileSystem
    gs://bucket/key                         pyarrow GcsFileSystem
    s3://, s3a://, s3n://bucket/key         pyarrow S3FileSystem (s3a/s3n are Hadoop's names for s3)
    hdfs://namenode:port/path               pyarrow HadoopFileSystem (libhdfs, from the Hadoop install)
    any other scheme fsspec knows           fsspec, wrapped as a pyarrow filesystem (memory:// in tests)

Paths are handed around as the user wrote them (a local path or a URI); `resolve` turns
one into (filesystem, path inside it). Filesystem objects are cached per scheme and host,
in each process (driver and Spark workers alike), so a task does not reconnect per file.

Errors are `FsError` (an OSError, with the errno of the failure when it has one) with a
one-line message that names the path. It is not a user error: the callers that read or
write a path the user gave (--input, --output, --manifest, --punkt-params) turn it into
theirs; on the run's own scratch files it is a bug, and shows its traceback.
"""
from __future__ import annotations

import os
import posixpath
import re
import threading
from pathlib import Path

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# Hadoop's connector names for S3; pyarrow knows the bucket as s3://.
_S3_ALIASES = ("s3a", "s3n")


class FsError(OSError):
    """A filesystem failure with a one-line message naming the path (`path`); `errno` is the
    failure's own (a full disk, a read-only filesystem), or None."""

    def __init__(self, message: str, path: str | None = None, cause: BaseException | None = None):
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.errno = getattr(cause, "errno", None)


def scheme(path: str | Path) -> str | None:
    m = _SCHEME.match(str(path))
    return m.group(1).lower() if m else None


def is_uri(path: str | Path) -> bool:
    """Whether `path` is a URI (file:// included)."""
    return scheme(path) is not None


def is_local(path: str | Path) -> bool:
    """A plain local path or a file:// URI."""
    return scheme(path) in (None, "file")


def local_path(path: str | Path) -> str | None:
    """The absolute local path of a local path or file:// URI, else None."""
    s = scheme(path)
    if s is None:
        return os.path.abspath(str(path))
    if s == "file":
        rest = str(path)[len("file://"):]
        return os.path.abspath(rest if rest.startswith("/") else "/" + rest)
    return None


def canonical(path: str | Path) -> str:
    """A path as every process can use it: URIs unchanged, local paths absolute."""
    return str(path) if is_uri(path) else os.path.abspath(str(path))


def join(base: str, *parts: str) -> str:
    """`base/part/...` for local paths and URIs alike (always '/')."""
    out = str(base).rstrip("/")
    for part in parts:
        out = f"{out}/{str(part).strip('/')}"
    return out


def basename(path: str) -> str:
    return posixpath.basename(str(path).rstrip("/"))


def parent(path: str) -> str:
    text = str(path).rstrip("/")
    return text.rsplit("/", 1)[0] if "/" in text else "."


_CACHE: dict = {}
# what pyarrow's and fsspec's filesystems raise about a path: OSError (missing, refused, full,
# read-only; pyarrow's IO errors) or ValueError (pyarrow's ArrowInvalid: a path it cannot use)
_FAILURES = (OSError, ValueError)
_LOCK = threading.Lock()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def resolve(path: str | Path):
    """(pyarrow FileSystem, path inside it) for a local path or a URI."""
    import pyarrow.fs as pafs

    text = str(path)
    s = scheme(text)
    if s in (None, "file"):
        key = ("file", "")
        with _LOCK:
            fs = _CACHE.get(key) or _CACHE.setdefault(key, pafs.LocalFileSystem())
        return fs, local_path(text)
    if s in _S3_ALIASES:
        text = "s3" + text[len(s):]
        s = "s3"
    rest = text[len(s) + 3:]
    host = rest.split("/", 1)[0]
    key = (s, host if s in ("hdfs", "viewfs") else "")
    with _LOCK:
        cached = _CACHE.get(key)
    if cached is not None:
        return cached, _inner_path(s, rest)
    try:
        fs, inner = pafs.FileSystem.from_uri(text)
    except (*_FAILURES, NotImplementedError) as exc:  # not a pyarrow scheme, or pyarrow built without it: fsspec
        fs = _fsspec(s, text, exc)
        inner = _inner_path(s, rest)
    with _LOCK:
        _CACHE.setdefault(key, fs)
    return fs, inner


def _inner_path(s: str, rest: str) -> str:
    if s in ("hdfs", "viewfs"):
        path = rest.split("/", 1)[1] if "/" in rest else ""
        return "/" + path
    return rest.rstrip("/") if rest.endswith("/") and len(rest) > 1 else rest


def _fsspec(s: str, text: str, first_error: BaseException):
    try:
        import fsspec
        from pyarrow.fs import FSSpecHandler, PyFileSystem
    except ImportError:
        raise FsError(f"{text}: cannot open a '{s}://' path ({_one_line(first_error)})", text) from None
    try:
        return PyFileSystem(FSSpecHandler(fsspec.filesystem(s)))
    except (ImportError, ValueError, OSError) as exc:  # no client library, an unknown scheme
        raise FsError(f"{text}: cannot open a '{s}://' path ({_one_line(first_error)}; "
                      f"fsspec: {_one_line(exc)}); install the filesystem's client library", text, exc) from None


def _info(path: str):
    import pyarrow.fs as pafs

    fs, inner = resolve(path)
    try:
        return fs.get_file_info(inner), pafs.FileType
    except _FAILURES as exc:
        raise FsError(f"{path}: cannot read its file information ({_one_line(exc)})", path, exc) from None


def exists(path: str) -> bool:
    info, ft = _info(path)
    return info.type != ft.NotFound


def is_dir(path: str) -> bool:
    info, ft = _info(path)
    return info.type == ft.Directory


def is_file(path: str) -> bool:
    info, ft = _info(path)
    return info.type == ft.File


def size(path: str) -> int:
    """The size of a file in bytes (FsError when it is missing or a directory)."""
    info, ft = _info(path)
    if info.type == ft.NotFound:
        raise FsError(f"{path}: no such file", path)
    if info.type != ft.File:
        raise FsError(f"{path}: not a file", path)
    return int(info.size)


def list_files(path: str, recursive: bool = True) -> list[tuple[str, int]]:
    """(path, size) of the files under a directory, sorted by path; paths are in the
    caller's form (a URI stays a URI, a local path stays local). Names starting with '.'
    or '_' (hidden files, _SUCCESS, _tmp- directories) are left out, as Spark does."""
    import pyarrow.fs as pafs

    fs, inner = resolve(path)
    try:
        infos = fs.get_file_info(pafs.FileSelector(inner, recursive=recursive))
    except FileNotFoundError as exc:
        raise FsError(f"{path}: no such directory", path, exc) from None
    except _FAILURES as exc:
        raise FsError(f"{path}: cannot list it ({_one_line(exc)})", path, exc) from None
    base = canonical(path).rstrip("/")
    root = inner.strip("/")
    out = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        found = info.path.lstrip("/")
        rel = found[len(root):].lstrip("/") if found.startswith(root) else info.base_name
        if any(part.startswith((".", "_")) for part in rel.split("/")):
            continue
        out.append((f"{base}/{rel}", int(info.size)))
    return sorted(out)


def open_input(path: str):
    """A random-access file (pyarrow NativeFile: read_at, seek, read, size)."""
    fs, inner = resolve(path)
    try:
        return fs.open_input_file(inner)
    except FileNotFoundError as exc:
        raise FsError(f"{path}: no such file", path, exc) from None
    except _FAILURES as exc:
        raise FsError(f"{path}: cannot open it for reading ({_one_line(exc)})", path, exc) from None


def read_range(path: str, offset: int, length: int) -> bytes:
    """Bytes [offset, offset+length) of a file (fewer at its end)."""
    with open_input(path) as fh:
        return fh.read_at(length, offset)


def read_bytes(path: str) -> bytes:
    with open_input(path) as fh:
        return fh.read()


def open_stream(path: str):
    """A sequential binary stream of the file, decompressed when the name ends in .bz2 or
    .gz (multistream bz2 included). A Python file object."""
    import bz2
    import gzip

    raw = open_input(path)
    if str(path).endswith(".bz2"):
        return bz2.BZ2File(raw, "rb")
    if str(path).endswith(".gz"):
        return gzip.GzipFile(fileobj=raw, mode="rb")
    return raw


def makedirs(path: str) -> None:
    fs, inner = resolve(path)
    try:
        fs.create_dir(inner, recursive=True)
    except _FAILURES as exc:
        raise FsError(f"{path}: cannot create the directory ({_one_line(exc)})", path, exc) from None


def open_output(path: str):
    """A writable stream of a new file (its directory is created first). Object stores make
    the object visible at close; on a local disk write to a temporary name and `move` it."""
    fs, inner = resolve(path)
    try:
        fs.create_dir(posixpath.dirname(inner) or "/", recursive=True)
        return fs.open_output_stream(inner)
    except _FAILURES as exc:
        raise FsError(f"{path}: cannot write it ({_one_line(exc)})", path, exc) from None


def write_bytes(path: str, data: bytes) -> None:
    with open_output(path) as out:
        out.write(data)


def move(src: str, dst: str) -> None:
    """Rename a file or directory within one filesystem (atomic on local disks and HDFS; a
    copy then delete on object stores)."""
    fs, a = resolve(src)
    _, b = resolve(dst)
    try:
        fs.move(a, b)
    except _FAILURES as exc:
        raise FsError(f"{src}: cannot move it to {dst} ({_one_line(exc)})", src, exc) from None


def delete(path: str) -> None:
    """Delete a file or a directory tree; nothing when it does not exist."""
    import pyarrow.fs as pafs

    fs, inner = resolve(path)
    try:
        info = fs.get_file_info(inner)
        if info.type == pafs.FileType.Directory:
            fs.delete_dir(inner)
        elif info.type != pafs.FileType.NotFound:
            fs.delete_file(inner)
    except _FAILURES as exc:
        raise FsError(f"{path}: cannot delete it ({_one_line(exc)})", path, exc) from None


class FileBytes:
    """A read-only, bytes-like view of a whole file that loads only what is asked for, as
    one window that moves forward: `len()`, `data[i]`, `data[a:b]` and
    `data.find(sub, start, end)` with absolute file offsets. Readers that scan forward
    (bzip2 blocks, byte ranges of XML and JSONL) hold at most `keep` bytes behind the
    furthest point read plus what one call asks for; a step back reloads, so the view is
    always correct. Works the same on every filesystem (ranged reads)."""

    def __init__(self, path: str, chunk: int = 4 << 20, keep: int = 16 << 20):
        self.path = path
        self._fh = open_input(path)
        self._size = self._fh.size()
        self._chunk = chunk
        self._keep = keep
        self._lo = 0
        self._buf = bytearray()

    def close(self) -> None:
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __len__(self) -> int:
        return self._size

    def _ensure(self, a: int, b: int) -> None:
        a, b = max(0, a), min(self._size, b)
        hi = self._lo + len(self._buf)
        if a < self._lo or a > hi:
            self._lo, self._buf = a, bytearray()
            hi = a
        if b > hi:
            want = max(b - hi, min(self._chunk, self._size - hi))
            self._buf += self._fh.read_at(want, hi)
        drop = a - self._lo - self._keep
        if drop > 0:
            del self._buf[:drop]
            self._lo += drop

    def __getitem__(self, key):
        if isinstance(key, slice):
            a, b, step = key.indices(self._size)
            if step != 1:
                raise ValueError("FileBytes slices take no step")
            if b <= a:
                return b""
            self._ensure(a, b)
            return bytes(self._buf[a - self._lo:b - self._lo])
        i = key + self._size if key < 0 else key
        if not 0 <= i < self._size:
            raise IndexError(key)
        self._ensure(i, i + 1)
        return self._buf[i - self._lo]

    def find(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        end = self._size if end is None else min(end, self._size)
        start = max(0, start)
        if end - start < len(sub):
            return -1
        step = max(self._chunk, 4 * len(sub))
        while start < end:  # window by window: memory stays bounded however far it looks
            stop = min(end, start + step)
            self._ensure(start, stop)
            at = self._buf.find(sub, start - self._lo, stop - self._lo)
            if at >= 0:
                return at + self._lo
            if stop >= end:
                return -1
            start = stop - len(sub) + 1
        return -1
