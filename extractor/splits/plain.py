"""Stage 3 in one plain Python process (no Spark): the stage's six rounds
(`extractor.spark.splits_stage.rounds`) with each round's tasks run one after another in
this process, over the same Parquet files and scratch files in a temporary folder. For the
engine-overhead benchmark (benchmarks/splits_throughput.py): Spark's CPU against the CPU of
exactly the same functions. The tests compare the stage with an independent pandas
reference instead (tests/splits_reference.py).
"""
from __future__ import annotations

import tempfile

from extractor import fs
from extractor.scratch import run_in_process
from extractor.splits import assign as sp
from extractor.splits import batches as bt


def run_plain(pairs_dir: str, out_dir: str, seed: int = 0, ratios=(0.8, 0.1, 0.1), balance: str = "downsample",
              max_eval_per_corpus: int | None = sp.DEFAULT_MAX_EVAL_PER_CORPUS, test_only: set | None = None,
              files_per_table: int = 4, buckets: int = 1) -> dict:
    """The pairs table in `pairs_dir` -> the split files under `out_dir/<split>/`, as the
    stage writes them (no card). Returns the rounds' results (`splits_stage.rounds`) with
    the pairs per split."""
    from extractor.spark import splits_stage

    schema, units = bt.list_units(pairs_dir)
    with tempfile.TemporaryDirectory() as work:
        plan = {"units": units, "schema": schema, "seed": seed, "work": work, "buckets": buckets, "target": out_dir,
                "test_only": frozenset(test_only or ()), "ratios": tuple(ratios)}
        result = splits_stage.rounds(run_in_process, plan, sp.parse_balance(balance), max_eval_per_corpus,
                                     files_per_table, slots=1)
    result["splits"] = {}
    for w in result["written"]:
        split = fs.basename(fs.parent(w["path"]))
        result["splits"][split] = result["splits"].get(split, 0) + int(w["rows"])
    return result

