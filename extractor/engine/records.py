"""Completion records of a run: what `jobs/extract.py --resume` reuses (docs/deployment.md
"Resuming a killed run").

Everything lives under the run's staging directory, in `_progress/` (removed before the
run is published, like every `_`-prefixed folder):

    _progress/run.json                      the run's fingerprint: inputs (path, size, mtime),
                                            lexicon hash, every setting; the command line
    _progress/<stage>.json                  a finished stage: its stats.json block and warnings
    _progress/<stage>/plan.json             the stage's plan of work units
    _progress/<stage>/steps/<name>.json     a driver step's result (the Punkt parameters)
    _progress/<stage>/rounds/<round>/<i>.json
                                            task `i` of a round finished: its result. Written by
                                            the task itself after its files are complete, so a
                                            task without a record is redone from scratch (it
                                            rewrites the same files under the same names).

A record is one small JSON file, written under a temporary name and renamed on a local
disk (one PUT on an object store), so it is either whole or absent.
"""
from __future__ import annotations

import json
import os
import signal
from collections import Counter
from typing import Any, Callable, Sequence

from extractor.io import atomic, fs
from extractor.engine.runner import Runner, SharedValue

PROGRESS = "_progress"
RUN_RECORD = "run.json"


def _dumps(value) -> bytes:
    return json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")  # key order kept: the card renders it


def put_record(path: str, value) -> None:
    """One whole record: a temporary name renamed on a local disk, one PUT on a store."""
    pending = atomic.PendingFile(path, fs.join(fs.parent(path), f".{fs.basename(path)}.tmp-{os.getpid()}"))
    fs.write_bytes(pending.tmp, _dumps(value))
    pending.finish()


def read_record(path: str):
    """A record, or None when it is absent or unreadable (then the work is redone)."""
    try:
        return json.loads(fs.read_bytes(path))
    except (fs.FsError, ValueError):
        return None


def _kill_hook(folder: str, where: str) -> None:
    """Test hook of the kill-and-resume tests, from the task that wrote the n-th record of a
    round (an executor process), once `n` tasks of that round have their record:

        NLI_KILL_AT=task:<stage>/<round>:<n>     SIGKILL the driver (`NLI_DRIVER_PID`) and this task
        NLI_KILL_AT=jvm:<stage>/<round>:<n>      SIGKILL the JVM this task runs under (local mode:
                                                 the driver's JVM, spark-submit's process)
        NLI_KILL_AT=worker:<stage>/<round>:<n>   SIGKILL this task's Python worker (an executor death)
    """
    wanted = os.environ.get("NLI_KILL_AT") or ""
    for item in wanted.split(","):
        kind = item.split(":", 1)[0]
        if kind not in ("task", "jvm", "worker") or not item.startswith(f"{kind}:{where}:"):
            continue
        n = int(item.rsplit(":", 1)[1])
        done = [p for p, _ in fs.list_files(folder) if p.endswith(".json")]
        if len(done) < n:
            continue
        if kind == "task":
            if not os.environ.get("NLI_DRIVER_PID"):
                continue
            os.kill(int(os.environ["NLI_DRIVER_PID"]), signal.SIGKILL)
        elif kind == "jvm":
            jvm = _ancestor("java")
            if jvm is None:
                raise RuntimeError("NLI_KILL_AT=jvm:...: no java process above this task")
            os.kill(jvm, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)


def _ancestor(name: str) -> int | None:
    """The nearest ancestor process whose command name is `name` (Linux /proc), or None."""
    pid = os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                stat = fh.read()
        except OSError:
            return None
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        if comm == name:
            return pid
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
    return None


class Progress:
    """The completion records of one run (`folder`: `<run dir>/_progress`), and what a
    resumed run reused of them (`reused`: tasks per stage, `stages`: stages reused whole)."""

    def __init__(self, folder: str, resuming: bool = False):
        self.folder = folder
        self.resuming = resuming
        self.reused: Counter = Counter()
        self.tasks: Counter = Counter()
        self.stages: list[str] = []

    def runner(self, stage: str, inner) -> "RecordingRunner":
        return RecordingRunner(inner, fs.join(self.folder, stage), self, stage)

    def finished_stage(self, stage: str) -> dict | None:
        """The record of a stage a resumed run finished (None: run it)."""
        if not self.resuming:
            return None
        return read_record(fs.join(self.folder, f"{stage}.json"))

    def finish_stage(self, stage: str, record: dict) -> None:
        put_record(fs.join(self.folder, f"{stage}.json"), record)

    def summary(self) -> dict:
        return {"stages_reused": list(self.stages), "tasks_reused": dict(self.reused),
                "tasks": dict(self.tasks)}


class RecordingRunner:
    """A runner (`extractor.engine.runner.Runner`) around another (`inner`, which runs the
    tasks): its named rounds record every finished task and, in a resumed run with the same
    plan, hand back the recorded results instead of running the task again."""

    def __init__(self, inner: Runner, folder: str, progress: Progress, stage: str):
        self.inner, self.folder, self.progress, self.stage = inner, folder, progress, stage
        self.reuse = False

    @property
    def slots(self) -> int:
        return self.inner.slots

    @property
    def max_buckets(self) -> int | None:
        return self.inner.max_buckets

    def share(self, value) -> SharedValue:
        return self.inner.share(value)

    def plan(self, key) -> bool:
        """Record the stage's plan; True when a resumed run finds the same one (its
        finished tasks are reused), False otherwise (the records are cleared)."""
        path = fs.join(self.folder, "plan.json")
        if self.progress.resuming and read_record(path) == json.loads(_dumps(key)):
            self.reuse = True
            return True
        fs.delete(self.folder)
        put_record(path, key)
        self.reuse = False
        return False

    def forget(self) -> None:
        fs.delete(self.folder)
        self.reuse = False

    def step(self, name: str, fn):
        path = fs.join(self.folder, "steps", f"{name}.json")
        if self.reuse:
            found = read_record(path)
            if found is not None:
                return found
        result = json.loads(_dumps(fn()))
        put_record(path, result)
        return result

    def map(self, fn: Callable[[Any], Any], tasks: Sequence, spread: bool = False,
            costs: Sequence[float] | None = None, name: str | None = None, reuse_memory: bool = False) -> list:
        if name is None:
            return self.inner.map(fn, tasks, spread=spread, costs=costs, reuse_memory=reuse_memory)
        rounds = fs.join(self.folder, "rounds", name)
        keys = [json.loads(_dumps(t)) for t in tasks]
        results: dict = {}
        if self.reuse and fs.exists(rounds):
            for path, _ in fs.list_files(rounds):
                if not path.endswith(".json"):
                    continue
                found = read_record(path)
                i = found.get("i") if isinstance(found, dict) else None
                if isinstance(i, int) and 0 <= i < len(tasks) and found.get("task") == keys[i]:
                    results[i] = found["result"]
        todo = [i for i in range(len(tasks)) if i not in results]
        self.progress.reused[self.stage] += len(tasks) - len(todo)
        self.progress.tasks[self.stage] += len(tasks)
        recorded = _Recorded(fn, keys, rounds, f"{self.stage}/{name}")
        done = self.inner.map(recorded, [(i, tasks[i]) for i in todo], spread=spread, name=name,
                              costs=None if costs is None else [costs[i] for i in todo], reuse_memory=reuse_memory)
        results.update(zip(todo, done))
        return [results[i] for i in range(len(tasks))]


class _Recorded:
    """A recorded round's task: `fn(task)`, then its record (`rounds/<i>.json`)."""

    def __init__(self, fn, keys: list, rounds: str, where: str):
        self.fn, self.keys, self.rounds, self.where = fn, keys, rounds, where

    def __call__(self, item):
        i, task = item
        result = self.fn(task)
        put_record(fs.join(self.rounds, f"{i:06d}.json"), {"i": i, "task": self.keys[i], "result": result})
        _kill_hook(self.rounds, self.where)
        return result
