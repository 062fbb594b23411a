"""Stage 2 in one plain Python process (no Spark): the stage's rounds
(`extractor.spark.pairs_stage.build_pairs`) with each round's tasks run one after another
in this process (`scratch.run_in_process`), over the same sentence files, with scratch
files in a temporary folder and the same writer. For the engine-overhead benchmark
(benchmarks/pairs_throughput.py): Spark's CPU against the CPU of exactly the same
functions. The tests compare the stage with `corpus.run_plain`, an independent
implementation over Python rows, instead.
"""
from __future__ import annotations

import tempfile


def run_plain(table: str, out_dir: str, lexicon, options, files: int = 4) -> tuple[list[dict], dict]:
    """The `sentences/` table at `table` -> the pairs table's files under `out_dir` (as the
    stage writes them). Returns (the files written, the stage's `stats.json` block)."""
    from extractor.scratch import run_in_process
    from extractor.spark.pairs_stage import build_pairs

    with tempfile.TemporaryDirectory() as work:
        write, stats, cleanup = build_pairs(None, table, lexicon, options, work=f"{work}/scratch", files=files,
                                            run=run_in_process)
        try:
            written = write(out_dir)
        finally:
            cleanup()
    return written, stats
