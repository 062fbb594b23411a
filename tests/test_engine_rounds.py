"""The engine's contract: the three runners are `Runner`s, a round runs directly with the
in-process runner, and a task never shares the driver's plan (as under Spark)."""
from __future__ import annotations

import typing
from dataclasses import dataclass, field, replace

from extractor.engine.records import Progress, RecordingRunner
from extractor.engine.rounds import Round
from extractor.engine.runner import InProcessRunner, Runner, RunnerBase
from extractor.spark.runner import SparkRunner


@dataclass(frozen=True)
class Plan:
    offset: int
    seen: dict = field(default_factory=dict)


def add(plan: Plan, task: int) -> dict:
    plan.seen[task] = True  # a task that (wrongly) writes into its plan
    return {"value": plan.offset + task, "seen": sorted(plan.seen)}


ADD = Round("add", add)


def test_the_three_runners_are_runners(tmp_path):
    members = {name for name in Runner.__dict__ if not name.startswith("_")} - {"register"}
    assert {"map", "plan", "step", "share", "forget", "slots", "max_buckets"} <= members
    for cls in (InProcessRunner, SparkRunner, RecordingRunner):
        assert all(hasattr(cls, name) for name in members), cls
    assert isinstance(InProcessRunner(), Runner)
    recording = Progress(str(tmp_path / "_progress")).runner("pairs", InProcessRunner())
    assert isinstance(recording, Runner)
    # the members a runner without records has are declared once
    assert issubclass(SparkRunner, RunnerBase) and "plan" not in SparkRunner.__dict__
    assert "forget" not in InProcessRunner.__dict__
    assert typing.get_type_hints(Runner.map)["return"] is list


def test_a_round_runs_directly_and_its_tasks_get_a_copy_of_the_plan():
    plan = Plan(offset=10)
    results = ADD.run(InProcessRunner(), plan, [1, 2, 3])
    assert [r["value"] for r in results] == [11, 12, 13]
    assert results[-1]["seen"] == [1, 2, 3]  # the tasks of one round share its copy, as in one Spark task
    assert plan.seen == {}  # the driver's plan is not the tasks'
    assert [r["value"] for r in ADD.run(InProcessRunner(), replace(plan, offset=0), [5])] == [5]


def test_a_recorded_round_keeps_its_results_for_a_resumed_run(tmp_path):
    progress = Progress(str(tmp_path / "_progress"))
    first = progress.runner("pairs", InProcessRunner())
    assert first.plan({"units": 3}) is False
    assert ADD.run(first, Plan(offset=1), [0, 1, 2]) == [{"value": v, "seen": s} for v, s in
                                                        ((1, [0]), (2, [0, 1]), (3, [0, 1, 2]))]
    resumed = Progress(str(tmp_path / "_progress"), resuming=True).runner("pairs", InProcessRunner())
    assert resumed.plan({"units": 3}) is True
    assert [r["value"] for r in ADD.run(resumed, Plan(offset=100), [0, 1, 2])] == [1, 2, 3]  # reused, not rerun
