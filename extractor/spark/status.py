"""The job's progress lines: one per round of a stage, from Spark's status tracker.

Each round of a stage is one Spark job of Python tasks (`session.run_tasks`). While it
runs, a thread polls `SparkContext.statusTracker()` for the job's tasks (the job is found
by its job group, set per round) and prints

    [pairs] round 2 marked: 12/16 tasks, 3.1 tasks/s, ETA 0:00:04

to stderr: on a terminal one line updated in place, otherwise a plain line at most every
`interval` seconds; and one closing line when the round ends, with its tasks and seconds.
Spark's own console bars (`spark.ui.showConsoleProgress`) are off unless the job's
`--spark-progress` asks for them: they show Spark's internal stage numbers, not the job's.

A packed round (`run_tasks` with costs) runs its work units in one Spark task per core, so
its count is of those tasks ("16 units in 2 tasks").
"""
from __future__ import annotations

import sys
import threading
import time

GROUP = "nli-round"  # job group prefix of the rounds' Spark jobs
INTERVAL_TTY = 0.5   # seconds between two updates of the line on a terminal
INTERVAL_PLAIN = 10.0  # between two lines elsewhere (a log file)


def eta_text(seconds: float | None) -> str:
    """`0:00:04`; `?` while no task has finished."""
    if seconds is None:
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def progress_line(label: str, done: int, total: int, elapsed: float, units: int | None = None) -> str:
    """One progress line: tasks done of total, rate (tasks per second since the round
    started, per minute below 0.1 a second) and ETA at that rate."""
    rate = done / elapsed if elapsed > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else None
    of_units = f" ({units} units)" if units is not None and units != total else ""
    speed = f"{rate:.1f} tasks/s" if rate >= 0.1 or not done else f"{rate * 60:.1f} tasks/min"
    return f"{label}: {done}/{total} tasks{of_units}, {speed}, ETA {eta_text(eta)}"


class RoundStatus:
    """Prints the progress of the Spark jobs of one round (a context manager around it)."""

    def __init__(self, sc, label: str, units: int | None = None, stream=None,
                 interval: float | None = None):
        self.sc, self.label, self.units = sc, label, units
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval if interval is not None else (INTERVAL_TTY if self.tty else INTERVAL_PLAIN)
        self.group = f"{GROUP}-{id(self)}-{time.monotonic_ns()}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self._shown = ""

    def counts(self) -> tuple[int, int]:
        """(tasks done, tasks in all) of the round's Spark jobs so far."""
        tracker = self.sc.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(self.group):
            job = tracker.getJobInfo(job_id)
            for stage_id in (job.stageIds if job else []):
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        return done, total

    def _write(self, line: str, final: bool = False) -> None:
        if self.tty:
            pad = " " * max(0, len(self._shown) - len(line))
            self.stream.write(f"\r{line}{pad}" + ("\n" if final else ""))
        else:
            self.stream.write(line + "\n")
        self._shown = "" if final else line
        self.stream.flush()

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                done, total = self.counts()
            except Exception:  # the context is stopping: the round's own error tells
                return
            if total:
                self._write(progress_line(self.label, done, total, time.monotonic() - self._started, self.units))

    def __enter__(self) -> "RoundStatus":
        self._started = time.monotonic()
        self.sc.setJobGroup(self.group, self.label, interruptOnCancel=False)
        thread = threading.Thread(target=self._poll, name="nli-progress", daemon=True)
        thread.start()
        self._thread = thread
        return self

    def __exit__(self, kind, exc, tb) -> None:
        self._stop.set()
        assert self._thread is not None  # set by __enter__
        self._thread.join()
        self.sc.setLocalProperty("spark.jobGroup.id", None)
        self.sc.setLocalProperty("spark.job.description", None)
        if kind is not None:
            if self._shown:  # leave the terminal's line, the error comes next
                self._write(self._shown, final=True)
            return
        try:
            done, total = self.counts()
        except Exception:
            done = total = 0
        seconds = time.monotonic() - self._started
        of_units = f" ({self.units} units)" if self.units is not None and self.units != total else ""
        self._write(f"{self.label}: {done}/{total} tasks{of_units} in {seconds:.1f} s", final=True)
