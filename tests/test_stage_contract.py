"""The stage contract (extractor/engine/stage.py) and the job's list of stages
(extractor/job/stages.py): every stage is a typed `Stage` with the same steps, a stage
reads the latest table of its kind before it (so one can be inserted between two), and
`run_stage` does the cleanup every stage shares. No Spark: an in-process runner."""
from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest

from extractor.core.errors import InputError
from extractor.engine import stage as engine_stage
from extractor.engine.records import Progress
from extractor.engine.runner import InProcessRunner
from extractor.engine.scratch import Scratch
from extractor.job import stages
from extractor.job.context import JobContext
from extractor.lexicon.lexicon import load_lexicon
from extractor.pairs import options as pairs_options
from extractor.splits import options as splits_options


def test_the_list_holds_each_stage_once_in_order_each_a_typed_stage_of_its_spec():
    assert stages.NAMES == ("sentences", "pairs", "check", "splits")
    for spec in stages.STAGES:
        stage = spec.stage()
        assert isinstance(stage, engine_stage.Stage) and stage.spec is spec
    assert [stages.input_table(n) for n in stages.NAMES] == [None, "sentences", "pairs", "checked"]


def test_a_stage_inserted_between_pairs_and_splits_is_what_splits_reads():
    spec = stages.BY_NAME["pairs"]
    check = dataclasses.replace(spec, name="check", reads="pairs", writes="checked", kind="pairs")
    listed = (*stages.STAGES[:2], check, stages.BY_NAME["splits"])
    assert stages.input_table("check", listed) == "pairs"
    assert stages.input_table("splits", listed) == "checked"
    with pytest.raises(TypeError, match="no stage before it writes"):
        stages.input_table("pairs", (stages.STAGES[0], dataclasses.replace(check, name="pairs", reads="check")))


def test_options_are_frozen_and_the_near_duplicate_flags_have_one_default():
    parser = argparse.ArgumentParser()
    for spec in stages.STAGES:
        spec.add_arguments(parser)
    args = parser.parse_args([])
    pairs, splits = pairs_options.Options.from_args(args), splits_options.Options.from_args(args)
    assert pairs.near == splits.near is not None  # the job's default: on, for both stages
    assert pairs_options.Options().near_duplicates == splits_options.Options().near_duplicates == args.near_duplicates
    with pytest.raises(dataclasses.FrozenInstanceError):
        pairs.seed = 1  # type: ignore[misc]
    assert set(vars(pairs)) == {f.name for f in dataclasses.fields(pairs)}
    assert set(vars(splits)) == {f.name for f in dataclasses.fields(splits)}  # no attribute beyond the fields
    # `--neutral-mix` left out: the lexicon's choice, as weights
    assert pairs_options.Options.from_args(args, load_lexicon("ro")).strategies == ["second_random"]


@dataclass(frozen=True)
class _Options:
    fail_in: str = ""

    @classmethod
    def from_args(cls, args, lexicon=None):
        return cls(fail_in=getattr(args, "fail_in", ""))


class _Toy(engine_stage.Stage[_Options, str, int, int]):
    """A stage of one named round whose steps can fail with a user error."""

    spec = engine_stage.StageSpec(name="toy", reads=None, writes="toy", options=_Options,
                                  add_arguments=lambda parser: None, cost=engine_stage.Cost((0, 0), 0, 0),
                                  module=__name__)

    def __init__(self, work: str):
        self.work = work

    def plan(self, ctx, runner, options):
        return engine_stage.Planned("p", {"units": [1, 2]}, Scratch(self.work))

    def decide(self, ctx, runner, plan, options):
        Path(self.work).mkdir(parents=True, exist_ok=True)
        (Path(self.work) / "x").write_text("scratch")
        runner.map(lambda t: t, [1, 2], name="round")
        if options.fail_in == "decide":
            raise InputError("bad input")
        return 2

    def write(self, ctx, runner, plan, decided, directory):
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "part").write_text("rows")
        return decided

    def finish(self, ctx, options, plan, decided, written):
        if options.fail_in == "finish":
            raise InputError("a corpus without a sentence")
        return {"rows": written}


@pytest.mark.parametrize("fail_in", ["", "decide", "finish"])
def test_run_stage_stores_the_stats_or_forgets_and_deletes_on_a_user_error(tmp_path, fail_in):
    ctx = JobContext(spark=None, args=argparse.Namespace(fail_in=fail_in, overwrite=True), lexicon=None,
                     output=tmp_path / "out", corpora=[])
    progress = Progress(str(tmp_path / "_progress"))
    runner = progress.runner("toy", InProcessRunner())
    stage = _Toy(str(tmp_path / "work"))
    if fail_in:
        with pytest.raises(InputError):
            engine_stage.run_stage(stage, ctx, runner)
        assert "toy" not in ctx.stats
    else:
        engine_stage.run_stage(stage, ctx, runner)
        assert ctx.stats["toy"] == {"rows": 2} and (tmp_path / "out" / "toy" / "part").exists()
    # the records and the scratch folder they speak of are gone either way; a table refused by
    # the stage's checks too
    assert not (tmp_path / "_progress" / "toy").exists() and not (tmp_path / "work").exists()
    assert (tmp_path / "out" / "toy").exists() == (fail_in == "")


def test_a_stage_without_scratch_keeps_its_records_for_the_units_of_its_table(tmp_path):
    """Stage 1's records speak of its table's files (one per unit): kept after the stage, so
    a run killed before it is published reuses them."""
    class NoScratch(_Toy):
        def plan(self, ctx, runner, options):
            return engine_stage.Planned("p", {"units": [1, 2]})

    ctx = JobContext(spark=None, args=argparse.Namespace(overwrite=True), lexicon=None, output=tmp_path / "out",
                     corpora=[])
    runner = Progress(str(tmp_path / "_progress")).runner("toy", InProcessRunner())
    engine_stage.run_stage(NoScratch(str(tmp_path / "work")), ctx, runner)
    assert len(list((tmp_path / "_progress" / "toy" / "rounds" / "round").iterdir())) == 2
