"""The semantic check's cost on this CPU: pairs judged per CPU-second and CPU-s per 1,000
pairs (the stage's pure work: `extractor.check.rounds.verdicts` with the shipped head and the
float32 encoder, each distinct sentence embedded once), over a real pairs table; the model's
load once per process is timed apart.

    .venv/bin/python benchmarks/check_cost.py [--table benchmarks/_work/gold-runs/ro-default/pairs] [--threads 1]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import pyarrow.parquet as pq  # noqa: E402

from extractor.check import head as check_head  # noqa: E402
from extractor.check import rounds  # noqa: E402
from extractor.encoder import cache  # noqa: E402
from extractor.lexicon.lexicon import load_lexicon  # noqa: E402
from extractor.pairs.matching import matcher_for  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", type=Path, default=REPO / "benchmarks" / "_work" / "gold-runs" / "ro-default" / "pairs")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (a task's cores)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    import torch  # after the flags: --help answers at once

    from extractor.encoder.embed import Encoder

    torch.set_num_threads(args.threads)
    rows = pq.read_table(str(args.table)).to_pydict()
    t0, c0 = time.time(), time.process_time()
    encoder, found = Encoder(cache.require(cache.NAME), dtype="float32"), check_head.load()
    load = {"wall_s": round(time.time() - t0, 2), "cpu_s": round(time.process_time() - c0, 2)}
    embedded = 0

    def embed(texts):
        nonlocal embedded
        embedded += len(texts)
        return encoder.embed(texts, kind=check_head.KIND, batch_size=args.batch)

    t0, c0 = time.time(), time.process_time()
    matcher = matcher_for(load_lexicon("ro"))
    phrases = [None if m is None else matcher.phrase_of(m) or m for m in rows["marker"]]
    _, reasons = rounds.verdicts(rows["premise"], rows["hypothesis"], rows["label"], phrases, embed, found,
                                 found.threshold, found.neutral_threshold)
    wall, cpu = time.time() - t0, time.process_time() - c0
    n = len(reasons)
    out = {"table": str(args.table.relative_to(REPO)) if args.table.is_relative_to(REPO) else str(args.table),
           "pairs": n, "sentences_embedded": embedded, "threads": args.threads, "batch": args.batch,
           "cpu": os.uname().machine, "model_load": load, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
           "pairs_per_cpu_s": round(n / cpu, 2), "cpu_s_per_1000_pairs": round(1000 * cpu / n, 1),
           "dropped": sum(r is not None for r in reasons)}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
