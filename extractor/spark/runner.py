"""The Spark runner of the stage contract (`extractor.engine.runner.Runner`): each round of a stage is
one Spark job of Python tasks (`session.run_tasks`); shared values are broadcast variables.
The job (`jobs/extract.py`) runs every stage on one (`extractor.engine.stage.run_stage`):

    run_stage(stage, ctx, progress.runner(name, SparkRunner(ctx.spark, name)))

Given a stage name, the runner prints a progress line per round (`extractor.spark.status`).
"""
from __future__ import annotations

from extractor.engine.runner import RunnerBase
from extractor.spark.session import run_tasks
from extractor.spark.status import RoundStatus


class SparkRunner(RunnerBase):
    """Runs a stage's rounds as Spark jobs of Python tasks on `spark`; with `stage` (its
    name), each round prints its progress (`[pairs] round 2 marked: 12/16 tasks, ...`)."""

    def __init__(self, spark, stage: str | None = None):
        self.spark = spark
        self.stage = stage
        self.rounds = 0

    @property
    def slots(self) -> int:
        return max(1, self.spark.sparkContext.defaultParallelism)

    @property
    def max_buckets(self) -> int:
        return int(self.spark.conf.get("spark.sql.shuffle.partitions"))

    def map(self, fn, tasks: list, spread: bool = False, costs=None, name: str | None = None,
            reuse_memory: bool = False) -> list:
        if self.stage is None or not tasks:
            return run_tasks(self.spark, fn, tasks, spread=spread, costs=costs, reuse_memory=reuse_memory)
        self.rounds += 1
        label = f"[{self.stage}] round {self.rounds}" + (f" {name}" if name else "")
        with RoundStatus(self.spark.sparkContext, label, units=len(tasks)):
            return run_tasks(self.spark, fn, tasks, spread=spread, costs=costs, reuse_memory=reuse_memory)

    def share(self, value):
        return self.spark.sparkContext.broadcast(value)
