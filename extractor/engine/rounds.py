"""Named rounds: a stage's steps of work, each a set of tasks and one function of (plan, task).

    ROUND = Round("marked", marked_bucket)           # marked_bucket(plan, b) -> MarkedResult
    results = ROUND.run(runner, plan, buckets)       # [marked_bucket(plan, b) for b in buckets]

A round's function is a module-level function of the stage's `rounds.py`; its first
argument is the stage's plan or the input the driver made from what the rounds before it
learned (frozen dataclasses of the stage's `plan.py`, each made once), shipped with the
function to every task (pickled by Spark), so it holds only what the tasks read. `name` is
the round's name in the completion records of `--resume`
(None: not recorded, a round that writes the table whole). A test runs one round directly:
``Round.run(InProcessRunner(), plan, tasks)``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar

from extractor.engine.runner import Runner

P = TypeVar("P")
R = TypeVar("R")


@dataclass(frozen=True)
class Task(Generic[P, R]):
    """What the runner ships to a round's tasks: the round's function and its plan."""

    fn: Callable[[P, Any], R]
    plan: P

    def __call__(self, task: Any) -> R:
        return self.fn(self.plan, task)


@dataclass(frozen=True)
class Round(Generic[P, R]):
    """A named round of a stage: `fn(plan, task) -> result` for each of its tasks.
    `spread`: one engine task each; `reuse_memory`: see `Runner.map`."""

    name: str | None
    fn: Callable[[P, Any], R]
    spread: bool = False
    reuse_memory: bool = False

    def run(self, runner: Runner, plan: P, tasks: Sequence, costs: Sequence[float] | None = None) -> list[R]:
        """The round's results, in task order."""
        return runner.map(Task(self.fn, plan), list(tasks), spread=self.spread, costs=costs, name=self.name,
                          reuse_memory=self.reuse_memory)
