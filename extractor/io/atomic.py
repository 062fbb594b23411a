"""Write a folder or a file beside its destination, then swap it in: a reader sees the old
one or the new one, never half of one.

One helper for every command that writes a folder (`WorkFolder`: the trainer's `train`,
`evaluate`, `stress`, `annotate`, `consistency`, `cartography`; the job's run code may use
`pid_alive` and `swap_in` for local disks), and one for every single file (`WorkFile`: the
trainer's JSON, Parquet, Markdown and checkpoint files, `--output FILE`). The vocabulary:
the *work folder* (or work file) is where the output is written until it is finished
(``<out>.inprogress`` or ``<out>.inprogress-<pid>``, beside ``out`` so that the swap is a
rename on one filesystem); *swapping in* replaces ``out`` by the finished work folder.

    with WorkFolder(out) as work:          # a fresh <out>.inprogress-<pid>/
        write(work / "metrics.json")       # an exception: work removed, out left as it was
    # here out is the new folder; the old one was removed only after the new one was in place

    with WorkFile(path) as tmp:            # <path>.inprogress-<pid>, beside path
        tmp.write_text(text)               # an exception: tmp removed, path left as it was
    # here path is the new file (flushed to disk, then renamed over the old one)

A resumable command (``train --resume``) keeps its work folder under a fixed name after a
failure (``WorkFolder(out, work=unfinished_path(out), keep=True, resume=True)``) and
claims it with its pid (`claim`, `live_claim`), so that a second live writer is refused and
a dead one's folder is taken over.

Local paths only: the job's object-store outputs publish through a manifest instead
(extractor/runs/).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import TracebackType

from extractor.io import fs

SUFFIX = ".inprogress"
CLAIM_FILE = ".lock"


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists on this host (a process of another user counts as alive)."""
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def unfinished_path(out: Path | str) -> Path:
    """The fixed work folder of a resumable output: ``<out>.inprogress``."""
    out = Path(out)
    return out.with_name(out.name + SUFFIX)


def work_path(out: Path | str) -> Path:
    """A work folder of this process only: ``<out>.inprogress-<pid>``."""
    out = Path(out)
    return out.with_name(f"{out.name}{SUFFIX}-{os.getpid()}")


def swap_in(work: Path | str, out: Path | str) -> None:
    """Replace `out` by the finished folder `work`: the old `out` is renamed aside, `work`
    renamed to `out`, and only then the old one removed."""
    work, out = Path(work), Path(out)
    (work / CLAIM_FILE).unlink(missing_ok=True)
    old = None
    if out.exists() or out.is_symlink():
        old = out.with_name(f"{out.name}.replaced-{os.getpid()}")
        if old.exists():
            shutil.rmtree(old, ignore_errors=True)
        os.replace(out, old)
    os.replace(work, out)
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old, ignore_errors=True)
        else:
            old.unlink(missing_ok=True)


def discard(work: Path | str) -> None:
    """Remove a work folder (and whatever is in it); no error when it is not there."""
    shutil.rmtree(Path(work), ignore_errors=True)


def claim(work: Path | str) -> None:
    """Mark `work` as written by this process (its pid in ``work/.lock``)."""
    (Path(work) / CLAIM_FILE).write_text(f"{os.getpid()}\n")


def release(work: Path | str) -> None:
    (Path(work) / CLAIM_FILE).unlink(missing_ok=True)


def live_claim(work: Path | str) -> int | None:
    """The pid of another live process that claimed `work`, else None (no claim, an
    unreadable one, our own, or a dead process's)."""
    path = Path(work) / CLAIM_FILE
    if not path.exists():
        return None
    try:
        pid = int(path.read_text().split()[0])
    except (ValueError, IndexError, OSError):
        return None
    if pid > 0 and pid != os.getpid() and pid_alive(pid):
        return pid
    return None


class WorkFolder:
    """``with WorkFolder(out) as work:`` write into `work`; when the block ends `work` is
    swapped in as `out`; on an exception `work` is removed (or kept with ``keep=True``, for
    a resumable command) and `out` is left as it was.

    ``work`` defaults to `work_path(out)`. A work folder already there is emptied first,
    unless ``resume=True`` (then it is continued)."""

    def __init__(self, out: Path | str, *, work: Path | str | None = None, keep: bool = False,
                 resume: bool = False):
        self.out = Path(out)
        self.work = Path(work) if work is not None else work_path(self.out)
        self.keep, self.resume = keep, resume

    def __enter__(self) -> Path:
        if not self.resume:
            discard(self.work)
        self.work.mkdir(parents=True, exist_ok=True)
        return self.work

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is not None:
            if self.keep:
                release(self.work)
            else:
                discard(self.work)
            return
        swap_in(self.work, self.out)


class WorkFile:
    """``with WorkFile(path) as tmp:`` write the file `tmp` (``<path>.inprogress-<pid>``,
    beside `path`, so that the rename stays on one filesystem); when the block ends `tmp` is
    flushed to disk (fsync) and renamed over `path` in one step; on an exception `tmp` is
    removed and `path` is left as it was. The folder of `path` must exist."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        self.work = work_path(self.path)

    def __enter__(self) -> Path:
        self.work.unlink(missing_ok=True)
        return self.work

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is not None:
            self.work.unlink(missing_ok=True)
            return
        try:
            fd = os.open(self.work, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(self.work, self.path)
        except BaseException:
            self.work.unlink(missing_ok=True)
            raise


# ---------------------------------------------------------------------------- the job's files
# The job writes through extractor.io.fs (local disks, file://, gs://, s3a://, hdfs://). On a
# local disk a file or folder is written beside its target and renamed over it; an object
# store's upload appears whole when its stream closes, so a file is written in place there.


def write_file(path: Path | str, data: bytes) -> None:
    """Write `data` as the file `path` (local or a URI, through extractor.io.fs): a reader
    sees the old file or the new one, never part of one. Local parent folders are made."""
    local = fs.local_path(path)
    if local is None:
        fs.write_bytes(str(path), data)
        return
    Path(local).parent.mkdir(parents=True, exist_ok=True)
    with WorkFile(local) as tmp:
        tmp.write_bytes(data)


class PendingFile:
    """A file written through extractor.io.fs over several calls (a stream) that appears
    whole: on a local disk it is written as `tmp` (the name given, beside `path`) and
    `finish` renames it to `path`; elsewhere `tmp` is `path` itself."""

    def __init__(self, path: str, tmp: str):
        self.path = path
        self.tmp = tmp if fs.is_local(path) else path

    def finish(self) -> None:
        if self.tmp != self.path:
            fs.move(self.tmp, self.path)

    def discard(self) -> None:
        fs.delete(self.tmp)


def swap_folder(work: str, out: str) -> None:
    """`swap_in` through extractor.io.fs (any filesystem): the old `out`, if any, is moved
    aside (``_replaced-<name>`` beside it), `work` moved to `out`, and only then the old
    one deleted: there is no moment without `out`."""
    old = None
    if fs.exists(out):
        old = fs.join(fs.parent(out), f"_replaced-{fs.basename(out)}")
        fs.delete(old)  # leftovers of a crashed swap
        fs.move(out, old)
    fs.move(work, out)
    if old is not None:
        fs.delete(old)


def replace_link(link: str, target: str, tmp: str) -> None:
    """Point the local symbolic link `link` at `target` in one step: a new link `tmp`
    beside it, renamed over it (rename(2) is atomic)."""
    os.symlink(target, tmp)
    os.replace(tmp, link)
