"""Throughput of stage 3 (pairs/ -> splits/): pairs per CPU-second under local[1] and
local[2], the 1 -> 2 core speed-up, and the engine overhead against the same pure
functions in one plain Python process; then `trainer stats` against a textbook LCS.

    .venv/bin/python benchmarks/splits_throughput.py --docs 10000      # 100,000 pairs
    .venv/bin/python benchmarks/splits_throughput.py --rounds 3 --skip-stats   # medians of 3 rounds
    .venv/bin/python benchmarks/splits_throughput.py --pairs saved.parquet    # a pairs file built before

Builds a pairs table of real, distinct text under benchmarks/_work/: 10 pairs per document,
premise and hypothesis two consecutive sentences of one real document (pair i: its
sentences i and i + 1), four labels drawn by hash. The text: the sentences table of the
1 GB scale run (benchmarks/_work/scale/out-1000mb/current/sentences, `benchmarks/scale.py
--sizes 1000` builds it: real Romanian prose, stage 1's sentences, `short` ones left out),
its documents in file order; where that run is absent (CI), the 20 Romanian and 20 Spanish
novels of the shared data (`$NLI_SHARED_DATA` or ../shared/data; paragraphs cut into
sentences at . ! ? followed by a capital, those of 50 characters and more, 11 at a time as
one document: about 9,700 documents in all). The first line says which. Near-duplicates
are on, as the job's default, and each run prints the stage's near-duplicate counts
(candidates, verified hypotheses, documents joined): the scale dump repeats its pool of
sentences once per cycle with a tenth of the words replaced, so 100,000 pairs hold each
pool sentence in about two variants at a Jaccard index of 0.6-0.8: many LSH candidates
and few verified near-duplicates, a harder input than one real corpus. (Before, the pairs
were template sentences, near-duplicates of each other: one group of all documents.)
Each Spark run is a child process that starts its session, writes the
input pairs table, then samples the CPU time of its whole process tree (driver, JVM,
Python workers) just before and just after stage 3's `run(ctx, runner)`: the stage's CPU,
with the input written as stage 2 writes its table (the project's writer, 4 files),
without the session start-up, and printed per process kind too, with the largest peak
resident memory of a Python worker (the kernel's mark: the warm-up below included).
Before that, one round of tasks imports stage 2's module in the Python workers: in the
job, stage 3's workers are the ones that ran stage 2 (Spark reuses them) and hold its
imports (numpy, pyarrow, pandas, extractor.neardup, extractor.statistics: seen in a real
job). Until 2026-11-27 the workers imported them inside the measured stage, about 0.45
CPU-s per worker that the job spends in stage 2. The plain run (`--plain`) runs
`splits_in_one_process` (tests/one_process.py) on the pairs table the local[1] run read: the stage's
rounds, each round's tasks one after another in one Python process (the same
functions, scratch files and output writer, without Spark); its CPU is measured the same
way around the work, and its split files are compared byte for byte with the stage's.
Then the stage on 1,000 pairs: its fixed cost, and the speed-up a second core can give at
most when that run's wall time is serial (Amdahl).
Targets: >= 20,000 pairs per CPU-second, >= 1.6x wall speed-up from one core to two,
Spark local[1] CPU <= 1.5x the plain process.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from pairs_throughput import _delta, tree_cpu as cpu_by_kind  # benchmarks/pairs_throughput.py
from rounds import add_rounds_argument, print_medians, run_rounds, same_files  # benchmarks/rounds.py

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "benchmarks" / "_work" / "splits"
SCALE_SENTENCES = REPO / "benchmarks" / "_work" / "scale" / "out-1000mb" / "current" / "sentences"
SHARED = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
NOVELS = ("eltec-rom-20", "eltec-spa-20")
PAIRS_PER_DOC = 10
MIN_CHARS = 50  # stage 1's default minimum: shorter sentences never reach a pair
# a sentence ends at . ! ? or … followed by space and an opening capital, dash or quote
# (the novels' fallback; the scale table is cut by the job's Punkt segmenter)
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[—\-„“\"«(A-ZĂÂÎȘŞȚŢÁÉÍÓÚÑ¿¡])")


def _scale_documents(n_docs: int):
    """Documents of the 1 GB scale run's sentences table (stage 1's output: `short` rows
    left out), in file order: (doc_id, [(section, para_idx, sent_idx, text)]) with at least
    PAIRS_PER_DOC + 1 sentences."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    found = 0
    for f in sorted(SCALE_SENTENCES.rglob("*.parquet")):
        t = pq.read_table(f, columns=["doc_id", "section", "para_idx", "sent_idx", "text", "short"])
        t = t.filter(pc.invert(t.column("short")))
        t = t.take(pc.sort_indices(t, [("doc_id", "ascending"), ("para_idx", "ascending"), ("sent_idx", "ascending")]))
        docs = t.column("doc_id").to_pylist()
        rows = list(zip(t.column("section").to_pylist(), t.column("para_idx").to_pylist(),
                        t.column("sent_idx").to_pylist(), t.column("text").to_pylist()))
        start = 0
        for i in range(1, len(docs) + 1):
            if i == len(docs) or docs[i] != docs[start]:
                if i - start > PAIRS_PER_DOC:
                    yield docs[start], rows[start:i]
                    found += 1
                    if found == n_docs:
                        return
                start = i


def _novel_documents(n_docs: int):
    """Documents cut from the real novels of the shared data (20 Romanian, 20 Spanish):
    each novel's paragraphs (blank-line separated) cut into sentences, those of at least
    MIN_CHARS characters taken PAIRS_PER_DOC + 1 at a time as one document."""
    found = 0
    for name in NOVELS:
        folder = SHARED / "text" / name
        if not folder.is_dir():
            sys.exit(f"error: neither {SCALE_SENTENCES} (benchmarks/scale.py --sizes 1000 builds it) nor {folder} "
                     "found: build the scale run or set NLI_SHARED_DATA to the shared data folder")
        for path in sorted(folder.glob("*.txt")):
            rows = []
            for p, para in enumerate(path.read_text(encoding="utf-8").split("\n\n")):
                for s, sent in enumerate(_SENTENCE_END.split(" ".join(para.split()))):
                    if len(sent.strip()) >= MIN_CHARS:
                        rows.append(("", p, s, sent.strip()))
            for k in range(len(rows) // (PAIRS_PER_DOC + 1)):
                yield f"{name}/{path.stem}:{k}", rows[k * (PAIRS_PER_DOC + 1):(k + 1) * (PAIRS_PER_DOC + 1)]
                found += 1
                if found == n_docs:
                    return


def build_pairs(n_docs: int, out: Path) -> tuple[int, str]:
    """The input pairs table: `n_docs` documents of real text, 10 pairs each, premise and
    hypothesis two consecutive sentences of the document (pair i: sentences i and i + 1, as
    a marker pair pairs a sentence with the one before it), labels drawn by hash as before.
    Returns (pairs, what the text is)."""
    sys.path.insert(0, str(REPO))
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from extractor.core.hashing import stable_hex, stable_unit
    from tests.test_splits_stage import LABELS, MARKERS

    scale = SCALE_SENTENCES.is_dir()
    docs = _scale_documents(n_docs) if scale else _novel_documents(n_docs)
    rows = []
    for doc, sents in docs:
        for i in range(PAIRS_PER_DOC):
            label = LABELS[int(stable_unit(doc, i, "label") * 4)]
            (s0, p0, i0, premise), (s1, p1, i1, hypothesis) = sents[i], sents[i + 1]
            rows.append(dict(pair_id=stable_hex(doc, i), corpus="wiki", genre="wikipedia",
                             lang="es" if doc.startswith("eltec-spa") else "ro", doc_id=doc, premise=premise, hypothesis=hypothesis, label=label,
                             marker=MARKERS[label], source="marker" if MARKERS[label] else "both_random",
                             premise_ref=dict(doc_id=doc, section=s0, para_idx=p0, sent_idx=i0),
                             hypothesis_ref=dict(doc_id=doc, section=s1, para_idx=p1, sent_idx=i1)))
    n_found = len(rows) // PAIRS_PER_DOC
    what = (f"the 1 GB scale run's sentences ({SCALE_SENTENCES.relative_to(REPO)})" if scale
            else f"the shared novels ({', '.join(NOVELS)})")
    if n_found < n_docs:
        print(f"note: {what} hold {n_found:,} documents of {PAIRS_PER_DOC + 1} sentences, not {n_docs:,}")
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), out / "pairs.parquet")
    return len(rows), what


def tree_cpu() -> float:
    """CPU seconds of this process and all its descendants (`pairs_throughput.tree_cpu`,
    summed over the kinds)."""
    return sum(cpu_by_kind().values())


CHILD = """
import argparse, json, sys, time
sys.path.insert(0, {repo!r}); sys.path.insert(0, {bench!r})
from pathlib import Path
from pairs_throughput import _delta, tree_cpu
from extractor.spark.session import get_session
from extractor.job.context import JobContext
from extractor.lexicon.lexicon import load_lexicon
from extractor.engine.stage import run_stage
from extractor.spark.runner import SparkRunner
from extractor.splits import stage as splits_stage
out = Path({out!r})
spark = get_session(master={master!r}, shuffle_partitions=8, progress=False)
spark.sparkContext.setLogLevel("FATAL")
p = argparse.ArgumentParser(); splits_stage.add_arguments(p); args = p.parse_args([])
args.seed, args.overwrite, args.files_per_table = 0, True, 4
ctx = JobContext(spark=spark, args=args, lexicon=load_lexicon("ro"), output=out, corpora=[], command_line="bench")
import pyarrow as pa, pyarrow.compute as pc, pyarrow.parquet as pq
from extractor.io.parquet_writer import finish_table_files, spark_partition, write_sorted
def write_pairs(d):  # as a stage writes its table: 4 files, rows hashed by pair_id as Spark would, sorted
    t = pq.read_table({src!r}); t = t.take(pc.sort_indices(t, [("pair_id", "ascending")]))
    part = pa.array([spark_partition((v,), 4) for v in t.column("pair_id").to_pylist()])
    w = [dict(path=p, rows=n, bytes=b) for f in range(4)
         for p, n, b in write_sorted(t.filter(pc.equal(part, f)).to_batches(), d, [], f"part-{{f:05d}}.parquet")]
    return finish_table_files(w, d, lambda: t.schema)
ctx.write_table_with("pairs", write_pairs)
# the job runs stage 3 after stages 1 and 2 in the same session: the JVM has run jobs of
# Python tasks through the prepared frame before (its first one costs 5-6 CPU-s of class
# loading and compiling, not the stage's), and its Python workers, reused from task to task
# and job to job, have run stage 2's tasks, so they hold the modules stage 2 imports (numpy,
# pyarrow, pandas, extractor.neardup, extractor.statistics...; seen in a real job's stage-3
# workers). One round of tasks that import stage 2's module does the same here.
import importlib
from extractor.spark.session import run_tasks
def as_after_stage_2(_):
    importlib.import_module("extractor.pairs.stage")
    return 0
run_tasks(spark, as_after_stage_2, list(range(4)), costs=[1.0] * 4)
c, t = tree_cpu(), time.time()
run_stage(splits_stage.STAGE, ctx, SparkRunner(spark))
wall, kinds = time.time() - t, _delta(c, tree_cpu())
import psutil
def worker_peak_mib(p):  # a Python worker's high-water mark of resident memory (Linux); else 0
    try:
        if "pyspark" not in " ".join(p.cmdline()):
            return 0
        with open(f"/proc/{{p.pid}}/status") as f:
            return next(int(l.split()[1]) // 1024 for l in f if l.startswith("VmHWM"))
    except (psutil.Error, OSError, StopIteration):  # ended, a zombie, or no /proc
        return 0
print("RESULT", json.dumps({{"wall": wall, "cpu": sum(kinds.values()), "kinds": kinds,
                            "worker_peak_mib": max([worker_peak_mib(p) for p in psutil.Process().children(recursive=True)] or [0]),
                            "splits": ctx.stats["splits"]["splits"], "near": ctx.stats["splits"].get("near_duplicates")}}))
"""


def run_stage(master: str, src: Path, tag: str = "") -> dict:
    out = WORK / f"out-{master.strip('local[]')}{tag}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    code = CHILD.format(repo=str(REPO), bench=str(REPO / "benchmarks"), out=str(out), master=master, src=str(src))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    return json.loads(next(l for l in proc.stdout.splitlines() if l.startswith("RESULT"))[7:])


def run_plain_child(src: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--plain", str(src), str(WORK / "out-plain")],
                          capture_output=True, text=True)
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    return json.loads(next(l for l in proc.stdout.splitlines() if l.startswith("RESULT"))[7:])


def plain(src: str, out: str) -> None:
    sys.path.insert(0, str(REPO))
    from extractor.neardup.settings import Settings
    from tests.one_process import splits_in_one_process

    shutil.rmtree(out, ignore_errors=True)
    c, t = tree_cpu(), time.time()
    result = splits_in_one_process(src, out, seed=0, near=Settings())  # near-duplicates on, as the stage's default
    print("RESULT", json.dumps({"wall": time.time() - t, "cpu": tree_cpu() - c, "splits": result["splits"],
                                "near": {k: v for k, v in (result["near"] or {}).items() if k != "leakage"}}))


def stats_throughput(folder: Path) -> tuple[int, float, float, bool]:
    """`trainer stats` (statistics.dataset_statistics: column-wise batch statistics) against
    the same statistics computed the textbook way, row by row with the per-row functions
    and a dynamic-programming LCS (as the seed papers' scripts do); both give the same numbers."""
    sys.path.insert(0, str(REPO))
    import pandas as pd

    from extractor import statistics as st
    from trainer.data.loading import load_nli

    splits = load_nli(folder)
    n = sum(len(df) for df in splits.values())
    t = time.perf_counter()
    ours = st.dataset_statistics(splits)
    ours_s = time.perf_counter() - t

    def dp_lcs(a, b):
        prev = [0] * (len(b) + 1)
        for x in a:
            cur = [0]
            for j, y in enumerate(b):
                cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
            prev = cur
        return prev[-1]

    def row_by_row(premises, hypotheses, labels, word_table=False):
        rows = []
        for p, h in zip(premises, hypotheses):
            p, h = ("" if p is None else str(p)), ("" if h is None else str(h))
            pn, hn = st.norm_words(p), st.norm_words(h)
            rows.append((st.word_count(p), st.word_count(h), st.overlap_jaccard(p, h),
                         dp_lcs(hn, pn) / len(hn) if hn else 0.0, st.new_token_rate(p, h), st.inner_capital(h),
                         st.overlap_jaccard_raw(p, h)))
        frame = pd.DataFrame.from_records(rows, columns=list(st.ROW_COLUMNS)).astype(st.ROW_DTYPES)
        return frame, {"hypothesis": st.word_counts(hypotheses, labels), "premise": st.word_counts(premises, labels)}

    original = st.batch_statistics
    st.batch_statistics = row_by_row
    try:
        t = time.perf_counter()
        peer = st.dataset_statistics(splits)
        peer_s = time.perf_counter() - t
    finally:
        st.batch_statistics = original
    return n, ours_s, peer_s, ours == peer


def near_line(near: dict | None) -> str:
    """The stage's near-duplicate counts (stats.json `splits.near_duplicates`): how far the
    input is from the degenerate one where every pair is a near-duplicate of every other."""
    if not near:
        return "near-duplicates: off"
    return (f"near-duplicates: {near['candidates']:,} LSH candidates, {near['hypotheses']:,} verified near-duplicate "
            f"hypotheses ({near['pairs']:,} pairs), {near['documents_joined']:,} documents joined in "
            f"{near['groups']:,} groups, {near['hypotheses_across_corpora']:,} across corpora")


def one_round(src: Path, n: int, small: Path, n_small: int) -> dict:
    """local[1], local[2], the stage on 1,000 pairs and the plain process, back to back;
    prints their figures and returns the ratios of this round."""
    runs = {m: run_stage(m, src / "pairs.parquet") for m in ("local[1]", "local[2]")}
    for m, r in runs.items():
        print(f"splits stage {m}: {r['wall']:.1f} s wall, {r['cpu']:.1f} CPU-s = {n / r['cpu']:,.0f} pairs per "
              f"CPU-second (target >= 20,000), {n / r['wall']:,.0f} pairs/s wall; splits {r['splits']}; CPU-s: "
              + ", ".join(f"{k} {v:.2f}" for k, v in r["kinds"].items())
              + f"; Python worker peak RSS {r['worker_peak_mib']} MiB", flush=True)
    print(near_line(runs["local[1]"]["near"]), flush=True)
    speedup = runs["local[1]"]["wall"] / runs["local[2]"]["wall"]
    print(f"speed-up 1 -> 2 cores (wall): {speedup:.2f}x (target >= 1.6x)")
    # Spark's fixed cost: the same stage on 1,000 pairs (Spark jobs, operators, scratch
    # files and the card cost about the same whatever the rows). The wall time of that run
    # is about the serial part of a run, which bounds the speed-up from a second core.
    f = run_stage("local[1]", small / "pairs.parquet", tag="-small")
    t1 = runs["local[1]"]["wall"]
    bound = t1 / (f["wall"] + max(0.0, t1 - f["wall"]) / 2)
    print(f"fixed cost (the stage on {n_small:,} pairs, local[1]): {f['cpu']:.1f} CPU-s, {f['wall']:.1f} s wall; "
          f"{n:,} pairs at 20,000 per CPU-second leave {n / 20000:.1f} CPU-s in all; "
          f"with {f['wall']:.1f} s serial, two cores can give at most {bound:.2f}x")
    p = run_plain_child(WORK / "out-1" / "pairs")
    overhead = runs["local[1]"]["cpu"] / p["cpu"]
    same = same_files(WORK / "out-1" / "splits", WORK / "out-plain")
    print(f"plain Python process, same functions: {p['cpu']:.1f} CPU-s ({n / p['cpu']:,.0f} pairs per CPU-second); "
          f"Spark local[1] / plain = {overhead:.2f}x (target <= 1.5x); splits {p['splits']}; "
          f"split files identical to the stage's: {'yes' if same else 'NO'}; "
          f"same near-duplicate counts: {'yes' if p['near'] == runs['local[1]']['near'] else 'NO'}", flush=True)
    return {"rate1": n / runs["local[1]"]["cpu"], "rate2": n / runs["local[2]"]["cpu"], "speedup": speedup,
            "overhead": overhead, "fixed_cpu": f["cpu"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=10000, help="documents (10 pairs each)")
    ap.add_argument("--skip-stats", action="store_true", help="leave out the trainer stats comparison")
    ap.add_argument("--pairs", type=Path, metavar="FILE",
                    help="this pairs Parquet file (as benchmarks/_work/splits/input/pairs.parquet: build_pairs' "
                         "columns) instead of building one: the same input across runs, checkouts and rebuilt "
                         "scale runs")
    add_rounds_argument(ap, "(local[1], local[2], 1,000 pairs, plain)")
    ap.add_argument("--plain", nargs=2, metavar=("PAIRS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.plain:
        plain(*args.plain)
        return
    src = WORK / "input"
    if args.pairs:  # a pairs file built before (the same input in every run and checkout)
        import pyarrow.parquet as pq

        src.mkdir(parents=True, exist_ok=True)
        if not (src / "pairs.parquet").exists() or not (src / "pairs.parquet").samefile(args.pairs):
            shutil.copyfile(args.pairs, src / "pairs.parquet")  # (the file itself: already there)
        n, what = pq.ParquetFile(src / "pairs.parquet").metadata.num_rows, str(args.pairs)
    else:
        n, what = build_pairs(args.docs, src)
    print(f"pairs: {n:,} from {what}")
    small = WORK / "input-small"
    n_small, _ = build_pairs(100, small)
    rounds = run_rounds(args.rounds, lambda: one_round(src, n, small, n_small))
    if len(rounds) > 1:
        print_medians(len(rounds), [(what, [r[key] for r in rounds], fmt, target) for what, key, fmt, target in (
            ("pairs per CPU-second, local[1]", "rate1", "{:,.0f}", ">= 20,000"),
            ("pairs per CPU-second, local[2]", "rate2", "{:,.0f}", ""),
            ("speed-up 1 -> 2 cores (wall)", "speedup", "{:.2f}x", ">= 1.6x"),
            ("Spark local[1] / plain CPU", "overhead", "{:.2f}x", "<= 1.5x"),
            ("fixed cost (1,000 pairs, local[1])", "fixed_cpu", "{:.1f} CPU-s", ""))])
    if not args.skip_stats:
        rows, ours, peer, same = stats_throughput(WORK / "out-2" / "splits")
        print(f"trainer stats (column-wise, one core): {rows:,} pairs in {ours:.2f} s = {rows / ours:,.0f} pairs/s; "
              f"row by row with a dynamic-programming LCS (peer): {peer:.2f} s; ratio {peer / ours:.2f}x; "
              f"same numbers: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
