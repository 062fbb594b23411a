"""The lock of an output root: one live run at a time (docs/deployment.md "One run at a
time"). `LocalLock`: flock(2), released by the kernel however the process dies;
`RemoteLock`: an object with a heartbeat on object stores."""
from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time

import fcntl

from extractor.io import fs
from extractor.runs.errors import OutputError, RunLockedError

# A lock on an object store whose heartbeat is older than this belongs to a dead run.
REMOTE_LOCK_STALE_S = int(os.environ.get("NLI_LOCK_STALE_S", "300"))
HEARTBEAT_S = 30


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def describe_holder(holder: dict) -> str:
    return (f"run {holder.get('run_id', '?')} (host {holder.get('host', '?')}, pid {holder.get('pid', '?')}, "
            f"started {holder.get('started', '?')})")


class LocalLock:
    """`<output>/_lock` held with flock(2) for the life of the run: the kernel releases it
    when the process dies, however it dies, so a lock left by a dead run is simply free."""

    def __init__(self, path: str, info: dict):
        self.path, self.info = path, info
        self.fd: int | None = None
        self.previous: dict | None = None  # what a dead run left in the file

    def acquire(self) -> None:
        while True:
            fd = self._open(os.O_RDWR | os.O_CREAT, "create")
            self._lock_or_refuse(fd, fcntl.LOCK_EX)
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

    def check(self) -> None:
        """Refuse as `acquire` would when a live run holds the lock, without writing
        anything (`--dry-run`): a shared flock on the file, when there is one, taken and
        given back at once."""
        if not os.path.exists(self.path):
            return
        fd = self._open(os.O_RDONLY, "read")
        self._lock_or_refuse(fd, fcntl.LOCK_SH)
        os.close(fd)

    def _open(self, flags: int, verb: str) -> int:
        try:
            return os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise OutputError(f"{os.path.dirname(self.path)}: cannot {verb} the lock file "
                              f"({exc.strerror}); choose a writable --output", exc.errno) from None

    def _lock_or_refuse(self, fd: int, mode: int) -> None:
        """flock `fd` without waiting; a live run's lock closes `fd` and refuses."""
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_json_fd(fd)
            os.close(fd)
            raise RunLockedError(self.locked_message(holder)) from None

    def locked_message(self, holder: dict) -> str:
        return (f"{os.path.dirname(self.path)} is being written by {describe_holder(holder)}; "
                f"wait for it to finish or choose another --output")

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
        self._thread: threading.Thread | None = None

    def check(self) -> None:
        """Refuse as `acquire` would when a live run holds the lock, writing nothing."""
        self._holder()

    def _holder(self) -> dict | None:
        """What a dead run left in the lock (None: no lock); a live run's lock refuses."""
        if not fs.exists(self.path):
            return None
        try:
            holder = json.loads(fs.read_bytes(self.path))
        except ValueError:
            holder = {}
        if _alive(holder):
            raise RunLockedError(f"{fs.parent(self.path)} is being written by {describe_holder(holder)}; "
                                 f"wait for it to finish or choose another --output")
        return holder

    def acquire(self) -> None:
        holder = self._holder()
        if holder is not None:
            self.previous = holder
        self._write()
        time.sleep(0.5)
        mine = json.loads(fs.read_bytes(self.path))
        if mine.get("run_id") != self.info["run_id"]:
            raise RunLockedError(f"{fs.parent(self.path)} is being written by {describe_holder(mine)}; "
                                 f"wait for it to finish or choose another --output")
        thread = threading.Thread(target=self._beat, daemon=True)
        thread.start()
        self._thread = thread

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
