"""Runs: all-or-nothing outputs (staging, lock, manifest, publish) and --resume.

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

The tables themselves are written by `extractor.io.parquet_writer`; the lock is
`extractor.runs.locks`. `Run.open(..., resume=True)` continues the newest unpublished run
(extractor/engine/records.py, docs/deployment.md "Resuming a killed run").
"""
from __future__ import annotations

import errno
import json
import os
import signal
import socket
import sys
from contextlib import contextmanager
from pathlib import Path

import pyarrow.fs as pafs

from extractor.engine.records import PROGRESS, RUN_RECORD, put_record, read_record
from extractor.io import atomic, fs
from extractor.runs.errors import OutputError, OutputExistsError, ResumeError
from extractor.runs.locks import LocalLock, RemoteLock, describe_holder, utc_now, new_run_id

RUNS = "_runs"
LOCK = "_lock"
CURRENT = "current"
MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1


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


def path_str(path: str | Path) -> str:
    """A path as Spark/Hadoop wants it: URIs untouched, local paths absolute."""
    text = str(path)
    return text if fs.is_uri(text) else str(Path(text).resolve())


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
    if not fs.exists(tmp):
        fs.makedirs(tmp)  # nothing written: an empty folder
    atomic.swap_folder(tmp, target)


def lock_of(root: str, info: dict) -> LocalLock | RemoteLock:
    """The lock of output root `root` (`info`: what the run writes into it)."""
    lock_path = fs.join(root, LOCK)
    local_lock = fs.local_path(lock_path)
    return LocalLock(local_lock, info) if local_lock is not None else RemoteLock(lock_path, info)


def check_writable(root: str) -> None:
    """Refuse, in the words `Run.open` uses, an output root on a local disk that is a file
    or lies under one, or whose nearest existing folder the job may not write in."""
    local = fs.local_path(fs.canonical(root))
    if local is None:
        return
    here = Path(local)
    try:
        while not here.exists() and here != here.parent:
            here = here.parent
    except PermissionError:  # a folder on the way the job may not enter
        raise OutputError(f"{root}: cannot create the directory ({here}: permission denied); "
                          f"choose a writable --output", errno.EACCES) from None
    if not here.is_dir():
        raise OutputError(f"{root}: cannot create the directory ({here} is a file, not a folder); "
                          f"choose a writable --output", errno.ENOTDIR)
    if not os.access(here, os.W_OK | os.X_OK):
        if os.statvfs(here).f_flag & os.ST_RDONLY:  # root may write anywhere but on a read-only mount
            raise OutputError(f"{root}: cannot create the directory ({here}: the filesystem is read-only); "
                              f"choose a writable --output", errno.EROFS)
        raise OutputError(f"{root}: cannot create the directory ({here}: permission denied); "
                          f"choose a writable --output", errno.EACCES)


def check_output(root: str) -> None:
    """What `Run.open` would refuse about output root `root`, checked without writing a
    byte (`--dry-run`): a file where the folder goes, a folder the job may not write in, a
    live run holding the lock. The messages are the run's own."""
    root = fs.canonical(root)
    check_writable(root)
    if fs.exists(root):
        lock_of(root, {}).check()


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


def input_fingerprint(path: str) -> dict:
    """size and mtime of an input file, or file count, bytes and newest mtime of a directory."""
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
    publish at the end. `Run.open` takes the lock (or refuses in one line) and removes what
    dead runs staged."""

    def __init__(self, root: str, command_line: str = ""):
        self.root = fs.canonical(root)
        self.local = fs.local_path(self.root)  # local disks (file:// included): links and flock
        self.run_id = new_run_id()
        self.dir = fs.join(self.root, RUNS, self.run_id)
        self.command_line = command_line
        self.started = utc_now()
        self.current: dict | None = None     # the published run's manifest when we started
        self.reused: dict = {}               # table name -> manifest entry of an earlier run
        self.lock: LocalLock | RemoteLock | None = None
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
        check_writable(run.root)
        try:
            fs.makedirs(run.root)
        except fs.FsError as exc:
            raise OutputError(f"{exc}; choose a writable --output", exc.errno) from None
        info = {"run_id": run.run_id, "host": socket.gethostname(), "pid": os.getpid(),
                "started": run.started, "command_line": command_line}
        lock = run.lock = lock_of(run.root, info)
        lock.acquire()
        try:
            if lock.previous:
                run.took_over = lock.previous
                _log(f"the lock of {describe_holder(lock.previous)} was left by a dead run; taken over")
            run.current = read_manifest(run.root)
            if resume:
                run._resume(fingerprint or {})
            run._collect_garbage(keep_manifests=[run.current])
            fs.makedirs(run.dir)
            if run.resumed is None and fingerprint is not None:
                put_record(fs.join(run.dir, PROGRESS, RUN_RECORD),
                           {"fingerprint": fingerprint, "command_line": command_line})
        except BaseException:
            lock.release()
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
        entry, current, run_dir = self.published(name), self.current, fs.local_path(self.dir)
        if entry is None or current is None or name not in current.get("tables", {}):
            return None
        self.reused[name] = dict(entry, run_id=entry.get("run_id") or current.get("run_id"))
        link = os.path.join(run_dir, name) if run_dir is not None else None
        if link and not os.path.lexists(link):  # so that <output>/<name> -> current/<name> resolves in this run too
            target = os.path.relpath(str(fs.local_path(fs.join(self.root, entry["path"]))), run_dir)
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
        manifest = {"format": MANIFEST_FORMAT, "run_id": self.run_id, "started": self.started, "finished": utc_now(),
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
        root, run_dir = self.local, fs.local_path(self.dir)
        assert root is not None and run_dir is not None  # local disks only
        _fsync_tree(run_dir)
        # the commit point: rename(2) is atomic
        atomic.replace_link(os.path.join(root, CURRENT), f"{RUNS}/{self.run_id}",
                            os.path.join(root, f".{CURRENT}.tmp-{self.run_id}"))
        _fsync_dir(root)

    def _link_top_level(self, names: list[str]) -> None:
        root = self.local
        assert root is not None  # local disks only
        for name in names:
            link = os.path.join(root, name)
            target = f"{CURRENT}/{name}"
            if os.path.islink(link) and os.readlink(link) == target:
                continue
            if os.path.lexists(link) and not os.path.islink(link):
                continue  # a user's own file of that name: leave it
            atomic.replace_link(link, target, os.path.join(root, f".{name}.tmp-{self.run_id}"))

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


def _list_dirs(path: str) -> list[str]:
    filesystem, inner = fs.resolve(path)
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(inner, allow_not_found=True))
    except OSError as exc:
        raise fs.FsError(f"{path}: cannot list it ({exc})", path, exc) from None
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

_ENVIRONMENT = {
    errno.ENOSPC: "no space left on the device; free space and run again",
    errno.EFBIG: "a file grew past the size limit (ulimit -f) or the filesystem's; raise the limit or choose "
                 "another --output",
    errno.EROFS: "the filesystem is read-only; choose a writable --output",
    errno.EACCES: "permission denied; choose a writable --output",
    errno.EDQUOT: "disk quota exceeded; free space and run again",
}


def environment_failure_message(exc: BaseException, output: str) -> str | None:
    """One line for a write on the driver that the output's filesystem refused (full disk,
    read-only, permissions, size limit): an OSError, known by its errno; None otherwise
    (then it is a bug). The published output is untouched (the run was staged). A task's
    refused write reaches the driver marked (`extractor.core.errors.OUTPUT_FAULT_MARK`) and is
    read by `environment_message`."""
    if isinstance(exc, OSError):
        return environment_message(exc.errno, output)
    return None


def environment_message(code: int | None, output: str) -> str | None:
    """The one line of an output filesystem's refusal with errno `code`, or None."""
    meaning = None if code is None else _ENVIRONMENT.get(code)
    return None if meaning is None else f"{output}: {meaning} (the previous output is unchanged)"
