"""The check stage: `pairs/` -> `checked/`, the pairs a pair model over the multilingual
encoder finds likely (the stage contract: extractor/engine/stage.py; docs/label-quality.md
"The semantic check"). Off by default (`--semantic-check on`): switched off, the job leaves it
out of its list (`StageSpec.enabled`) and `splits` reads `pairs/`.

Two rounds, handed to the runner:
1. per slice of a unit of the pairs table (`rounds.judge`, recorded for `--resume`): every
   pair's verdict to a scratch file, counts per label and reason to the driver;
2. per file of the pairs table (`rounds.write_file`): its kept rows under the same name.
"""
from __future__ import annotations

from dataclasses import dataclass

from extractor.check import head as check_head
from extractor.check import rounds
from extractor.check.plan import CheckPlan, CheckScratch, Output
from extractor.core.schemas import PAIRS
from extractor.encoder import cache
from extractor.engine.stage import Planned, Stage
from extractor.io import fs
from extractor.io.parquet_writer import finish_table_files
from extractor.splits import pair_tables
# the flags and options live apart (no numpy there: the job's --help); one name each
from extractor.check.options import SPEC, Options, add_arguments  # noqa: F401

WORK_NAME = "_tmp-check-work"
SLICE_ROWS = 4096  # pairs per judging task (the runner packs the tasks into one engine task per core)


def make_plan(ctx, options: Options, table: str, slice_rows: int = SLICE_ROWS) -> CheckPlan:
    """The check's plan over the pairs table at `table`."""
    schema, units = pair_tables.list_units(table)
    found = check_head.load()
    return CheckPlan(units=units, schema=schema, slices=rounds.slices(units, slice_rows),
                     scratch=CheckScratch(ctx.table_path(WORK_NAME)), encoder=found.encoder,
                     head_sha256=found.sha256,
                     threshold=found.threshold if options.check_threshold is None else float(options.check_threshold),
                     neutral_threshold=(found.neutral_threshold if options.check_neutral_threshold is None
                                        else float(options.check_neutral_threshold)),
                     batch=options.batch, lexicon=ctx.lexicon)


def settings(plan: CheckPlan) -> dict:
    """The stats block's `settings` (part of the plan's key for `--resume`)."""
    return {"encoder": plan.encoder, "head_sha256": plan.head_sha256, "threshold": plan.threshold,
            "neutral_threshold": plan.neutral_threshold}


def count(results: list) -> dict:
    """The judging round's counts per label: pairs, kept, dropped by reason."""
    labels = rounds.empty_counts()
    for r in results:
        for label, why, n in r["counts"]:
            entry = labels.setdefault(label, {"pairs": 0, "kept": 0, "dropped": {k: 0 for k in rounds.REASONS}})
            entry["pairs"] += n
            if why is None:
                entry["kept"] += n
            else:
                entry["dropped"][why] += n
    return labels


@dataclass(frozen=True)
class CheckSetup:
    """The plan and where the pairs table is."""
    plan: CheckPlan
    source: str


@dataclass(frozen=True)
class Judged:
    """What the judging round found: counts per label, distinct sentences embedded."""
    labels: dict
    sentences: int


class CheckStage(Stage[Options, CheckSetup, Judged, list]):
    """The check on the stage contract (`extractor.engine.stage.Stage`)."""

    spec = SPEC

    def check(self, ctx, options: Options) -> None:
        """The encoder built and the head readable: a one-line error before stage 1."""
        cache.require(check_head.load().encoder)

    def describe(self, ctx, options: Options) -> list[str]:
        found = check_head.load()
        return [f"[dry-run] semantic check: on (encoder {found.encoder}; head sha256 {found.sha256[:12]})"]

    def plan(self, ctx, runner, options: Options) -> Planned[CheckSetup]:
        table = ctx.table_path(ctx.input_table(SPEC))
        if not fs.exists(table):
            ctx.read_table(ctx.input_table(SPEC))  # its one-line error
        plan = make_plan(ctx, options, table)
        key = {"units": plan.units, "slices": [list(s) for s in plan.slices], "settings": settings(plan)}
        return Planned(CheckSetup(plan, table), key, plan.scratch)

    def decide(self, ctx, runner, plan: CheckSetup, options: Options) -> Judged:
        p = plan.plan
        found = rounds.JUDGE.run(runner, p, p.slices, costs=[stop - start for _, start, stop in p.slices])
        return Judged(count(found), sum(r["sentences"] for r in found))

    def write(self, ctx, runner, plan: CheckSetup, decided: Judged, directory: str) -> list:
        directory = fs.canonical(directory)
        written = [f for out in rounds.FILES.run(runner, Output(plan.plan, plan.source, directory), plan.plan.files())
                   for f in out["files"]]
        return finish_table_files(written, directory, lambda: PAIRS)

    def finish(self, ctx, options: Options, plan: CheckSetup, decided: Judged, written: list) -> dict:
        labels = decided.labels
        kept = sum(f["rows"] for f in written)
        if kept != sum(v["kept"] for v in labels.values()):
            raise RuntimeError(f"check: {kept} rows written, {sum(v['kept'] for v in labels.values())} kept (a bug)")
        return {"settings": settings(plan.plan), "input_pairs": sum(v["pairs"] for v in labels.values()),
                "kept": kept, "dropped": {r: sum(v["dropped"][r] for v in labels.values()) for r in rounds.REASONS},
                "labels": labels, "sentences_embedded": decided.sentences}


STAGE = CheckStage()
