"""Throughput of stage 3 (pairs/ -> splits/) and of `trainer stats`.

    .venv/bin/python benchmarks/splits_throughput.py --docs 10000      # 100,000 pairs

Builds a synthetic pairs table (10 pairs per document, four labels) under
benchmarks/_work/, runs the splits stage with local[1] and local[2] (pairs/s and the
2-core speed-up), then `extractor.statistics.dataset_statistics` (what `trainer stats`
runs) on the written splits, against the peer: the same statistics with a
dynamic-programming LCS (the textbook O(n*m) table) instead of the bit-parallel one.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "benchmarks" / "_work" / "splits"


def build_pairs(n_docs: int, out: Path) -> int:
    sys.path.insert(0, str(REPO))
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.test_splits_stage import LABELS, MARKERS, ref, sentence
    from extractor.hashing import stable_hex, stable_unit

    rows = []
    for d in range(n_docs):
        doc = f"wiki:{d}"
        for i in range(10):
            label = LABELS[int(stable_unit(doc, i, "label") * 4)]
            rows.append(dict(pair_id=stable_hex(doc, i), corpus="wiki", genre="wikipedia", lang="en", doc_id=doc,
                             premise=sentence(doc, 2 * i), hypothesis=sentence(doc, 2 * i + 1), label=label,
                             marker=MARKERS[label], source="marker" if MARKERS[label] else "both_random",
                             premise_ref=ref(doc, 2 * i), hypothesis_ref=ref(doc, 2 * i + 1)))
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), out / "pairs.parquet")
    return len(rows)


CHILD = """
import argparse, sys, time
sys.path.insert(0, {repo!r})
from pathlib import Path
from extractor.spark.session import get_session
from extractor.job import JobContext
from extractor.lexicon import load_lexicon
from extractor.spark import splits_stage
out = Path({out!r})
spark = get_session(master={master!r}, shuffle_partitions=8, progress=False)
spark.read.parquet({src!r}).write.parquet(str(out / "pairs"))
p = argparse.ArgumentParser(); splits_stage.add_arguments(p); args = p.parse_args([])
args.seed, args.overwrite, args.files_per_table = 0, True, 4
ctx = JobContext(spark=spark, args=args, lexicon=load_lexicon("en"), output=out, corpora=[], command_line="bench")
t = time.time(); splits_stage.run(ctx); print("SECONDS", time.time() - t)
"""


def run_stage(master: str, src: Path) -> float:
    out = WORK / f"out-{master.strip('local[]')}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    code = CHILD.format(repo=str(REPO), out=str(out), master=master, src=str(src))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    return float(next(l for l in proc.stdout.splitlines() if l.startswith("SECONDS")).split()[1])


def stats_throughput(folder: Path) -> tuple[int, float, float]:
    sys.path.insert(0, str(REPO))
    from extractor import statistics as st
    from trainer.data import load_nli

    splits = load_nli(folder)
    n = sum(len(df) for df in splits.values())
    t = time.perf_counter()
    st.dataset_statistics(splits)
    ours = time.perf_counter() - t

    def dp_lcs(a, b):
        prev = [0] * (len(b) + 1)
        for x in a:
            cur = [0]
            for j, y in enumerate(b):
                cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
            prev = cur
        return prev[-1]

    original = st.lcs_length
    st.lcs_length = dp_lcs
    try:
        t = time.perf_counter()
        st.dataset_statistics(splits)
        peer = time.perf_counter() - t
    finally:
        st.lcs_length = original
    return n, ours, peer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=10000, help="documents (10 pairs each)")
    args = ap.parse_args()
    src = WORK / "input"
    n = build_pairs(args.docs, src)
    print(f"pairs: {n:,}")
    times = {m: run_stage(m, src / "pairs.parquet") for m in ("local[1]", "local[2]")}
    for m, s in times.items():
        print(f"splits stage {m}: {s:.1f} s, {n / s:,.0f} pairs/s")
    print(f"speed-up 1 -> 2 cores: {times['local[1]'] / times['local[2]']:.2f}x")
    rows, ours, peer = stats_throughput(WORK / "out-2" / "splits")
    print(f"trainer stats (pandas, one core): {rows:,} pairs in {ours:.2f} s = {rows / ours:,.0f} pairs/s; "
          f"with a dynamic-programming LCS (peer): {peer:.2f} s; ratio {peer / ours:.2f}x")


if __name__ == "__main__":
    main()
