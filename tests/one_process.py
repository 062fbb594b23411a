"""Each stage's rounds run one after another in one plain Python process (no Spark): the
stage's own functions handed to an `InProcessRunner`, over the same files, with scratch
files in a temporary folder and the same writer. The tests check that they write the
Spark stage's files; the engine-overhead benchmarks (benchmarks/pairs_throughput.py,
benchmarks/splits_throughput.py, benchmarks/stage2_*.py) measure them against Spark.
"""
from __future__ import annotations

import functools
import tempfile

from extractor.engine import stage as engine_stage
from extractor.engine.runner import InProcessRunner
from extractor.io import fs
from extractor.neardup.settings import Settings
from extractor.pairs import stage as pairs_stage
from extractor.pairs.options import Options
from extractor.splits import assign as sp
from extractor.splits import pair_tables as bt
from extractor.splits.plan import SplitsPlan, SplitsScratch
from extractor.splits import stage as splits_stage


def build_pairs(runner, table: str, lexicon, options: Options, warn=None, work: str | None = None,
                files: int = 4):
    """Stage 2's steps as `extractor.engine.stage.run_stage` runs them, without a job
    context: the `sentences/` table at `table` (as stage 1 wrote it) -> (write, stats dict,
    cleanup callable): ``write(directory)`` writes the pairs table's `files` files there and
    returns them. Call the cleanup after writing: it forgets the records and deletes the
    scratch folder `work` (default: beside `table`)."""
    model, status = pairs_stage.pos_status(options, lexicon, warn)
    plan = pairs_stage.make_plan(runner, table, pairs_stage.pos_lexicon(options, lexicon), options, model, work, files)
    planned = engine_stage.Planned(plan, pairs_stage.plan_key(plan), plan.scratch)
    engine_stage.start(runner, planned)
    shared: list = []
    with engine_stage.discarded_on_user_error(runner, plan.scratch):
        try:
            decided, stats = pairs_stage.decide(runner, plan, options, status, shared)
        except BaseException:  # what the rounds shared is let go of whatever stops them
            pairs_stage.release(shared)
            raise

    def cleanup():
        pairs_stage.release(shared)
        engine_stage.forget(runner, plan.scratch)

    return functools.partial(pairs_stage.write_table, runner, plan, decided), stats, cleanup


def pairs_in_one_process(table: str, out_dir: str, lexicon, options: Options,
                         files: int = 4) -> tuple[list[dict], dict]:
    """Stage 2 in one plain Python process (no Spark): the same rounds with each round's
    tasks run one after another here (`InProcessRunner`), over the same sentence files, with
    scratch files in a temporary folder and the same writer. For the engine-overhead
    benchmark (benchmarks/pairs_throughput.py): Spark's CPU against the CPU of exactly the
    same functions. The tests also compare the stage with `reference_pairs`
    (tests/pairs_reference.py), an independent implementation over Python rows. Returns
    (the files written, the stage's `stats.json` block)."""
    with tempfile.TemporaryDirectory() as work:
        write, stats, cleanup = build_pairs(InProcessRunner(), table, lexicon, options,
                                            work=f"{work}/scratch", files=files)
        try:
            written = write(out_dir)
        finally:
            cleanup()
    return written, stats


def run_rounds(runner, plan: SplitsPlan, balance, max_eval: int | None, files_per_table: int,
               target: str, earlier_stats: dict | None = None) -> dict:
    """Rounds 1-6 of stage 3 (docs/splits.md) with `runner`: `decide` (rounds 1-5), then
    `write_output` (round 6 into `target`), as the stage calls them. Returns what the card
    and stats need."""
    decided, found = splits_stage.decide(runner, plan, balance, max_eval, files_per_table, earlier_stats)
    return splits_stage.write_output(runner, decided, found, target)


def splits_in_one_process(pairs_dir: str, out_dir: str, seed: int = 0, ratios=(0.8, 0.1, 0.1),
                          balance: str = "downsample", max_eval_per_corpus: int | None = sp.DEFAULT_MAX_EVAL_PER_CORPUS,
                          test_only: set | None = None, files_per_table: int = 4, buckets: int = 1,
                          near: Settings | None = None) -> dict:
    """Stage 3 in one plain Python process (no Spark): its rounds (`rounds`) with each
    round's tasks run one after another here (`InProcessRunner`), over the same Parquet files
    and scratch files in a temporary folder. For the engine-overhead benchmark
    (benchmarks/splits_throughput.py): Spark's CPU against the CPU of exactly the same
    functions (the tests compare the stage with an independent pandas reference,
    tests/splits_reference.py). The pairs table in `pairs_dir` -> the split files under
    `out_dir/<split>/`, as the stage writes them (no card). Returns the rounds' results with
    the pairs per split. `near`: the near-duplicate settings (`Settings()` for the
    stage's default, `--near-duplicates on`); None: off."""
    schema, units = bt.list_units(pairs_dir)
    with tempfile.TemporaryDirectory() as work:
        plan = SplitsPlan(units=units, schema=schema, seed=seed, scratch=SplitsScratch(work), buckets=buckets,
                          ratios=tuple(ratios), test_only=frozenset(test_only or ()), near=near)
        result = run_rounds(InProcessRunner(), plan, sp.parse_balance(balance), max_eval_per_corpus,
                            files_per_table, out_dir)
    result["splits"] = {}
    for w in result["written"]:
        split = fs.basename(fs.parent(w["path"]))
        result["splits"][split] = result["splits"].get(split, 0) + int(w["rows"])
    return result
