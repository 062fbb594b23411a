"""Cost of the near-duplicate machinery per sentence, against stage 1's CPU per sentence.

    .venv/bin/python benchmarks/neardup_cost.py [--dump PATH] [--lang ro] [--unit 20000] [--repeat 3]

Peer: stage 1's pure work on the same dump in the same process: reading the pages (bz2 +
XML), `clean_page` and Punkt segmentation (the job's per-page work without Spark and
Parquet, so the ratio printed is an upper bound of the share of the real stage 1).
Default dump: the unique-text scale benchmark's (benchmarks/_work/scale/ro-unique-20mb.xml.bz2,
built by benchmarks/scale.py), else ../shared/data's Romanian pages.

Then, on the distinct sentences stage 1 produced (distinct after case folding, what the
stages compare; each as written, capitals included, as the stages hash them), one core,
`time.process_time()`, best of --repeat:

  shingles     extractor.neardup.minhash.shingle_sets   (per work unit of --unit sentences)
  signatures   extractor.neardup.minhash.signatures     (per unit)
  bands        band_keys + band_rows             (per unit: what a task emits)
  buckets      bucket_pairs over all rows        (the engine's group-by band key)
  verify       pair_jaccard of the candidates    (exact Jaccard)
  components   components over the near-duplicate pairs

It prints µs per sentence for each step, the total, and total / stage 1. With --pairs DIR
(a pairs table), it also runs stage 3's rounds in one process (`splits.stage.rounds`,
InProcessRunner, scratch files included) with near-duplicates on and off, and prints the
CPU-s of each and the difference per pair. Stage 2 and 3 run
the machinery on the premises and hypotheses of pairs, not on every sentence: the printed
"per stage-1 sentence" figure assumes every sentence goes through it once (an upper bound
while pairs hold fewer distinct sentences than stage 1 writes).

The job on the scale benchmark (the issue's measure: the machinery's CPU against stage 1's):

    .venv/bin/python benchmarks/neardup_cost.py --job 20      # the 20 MB unique-text dump
    .venv/bin/python benchmarks/neardup_cost.py --job 20 --code DIR   # a fixed checkout's job

runs `jobs/extract.py` on `benchmarks/_work/scale/ro-unique-<N>mb.xml.bz2` twice, with
`--near-duplicates off` then `on`, through benchmarks/scale.py's `run_job` (local[2], POS
filter on, the pool's Punkt parameters; the CPU of the whole process tree sampled with
psutil and split at the job's stage lines), and prints each stage's CPU-s in both runs and
(stage 2 + stage 3 on) - (stage 2 + stage 3 off) against stage 1's CPU-s: the machinery's
cost in the job, Spark's rounds included (a difference of two runs: noisy on a shared
machine). Then, to attribute the cost to the near-duplicate tasks themselves, it runs stages 2
and 3 in one process over the "on" run's `sentences/` (the same rounds and scratch files,
`InProcessRunner`), on and off, and times every round's tasks: the near-duplicate rounds
(stage 2: near-bands, near-pairs, near-apply; stage 3: near-duplicates, near-groups)
and stage 3's per-unit near-duplicate step inside its first round (stage 3's near-leakage
is one task of its last round since 2026-11-27, not counted: 0.002-0.003 CPU-s before). `--sentences
DIR --stage1-cpu S` runs only that part on an existing `sentences/` table (e.g. the 250 MB
run's) against the stage 1 CPU-s measured for it. Figures go to --json (default
benchmarks/results/neardup_cost.json). Goal (issue 32): near-duplicate CPU / stage 1 CPU <= 0.15.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import clean_profile  # noqa: E402  (its dump reader)
import scale  # noqa: E402  (benchmarks/scale.py: the dumps and `run_job`)
from extractor.engine.runner import InProcessRunner  # noqa: E402
from extractor import statistics as st  # noqa: E402
from extractor.sentences.readers import read_head, site_namespaces  # noqa: E402
from extractor.sentences.segment import Segmenter, load_params, train_punkt  # noqa: E402
from extractor.sentences.wikitext import clean_page, page_skip_reason  # noqa: E402
from extractor.lexicon.lexicon import load_lexicon  # noqa: E402
from extractor.neardup import minhash  # noqa: E402
from extractor.neardup.settings import Settings, settings_line  # noqa: E402
from extractor.pairs import stage as pairs_stage  # noqa: E402
from extractor.splits import assign as sp  # noqa: E402
from extractor.splits import pair_tables as bt  # noqa: E402
from extractor.splits import rounds as split_rounds  # noqa: E402
from extractor.splits.plan import SplitsPlan, SplitsScratch  # noqa: E402
from tests import one_process  # noqa: E402

SCALE_DUMP = REPO / "benchmarks" / "_work" / "scale" / "ro-unique-20mb.xml.bz2"
SCALE_PUNKT = REPO / "benchmarks" / "_work" / "scale" / "punkt_params-pool.json"
SHARED_DUMP = REPO.parent / "shared" / "data" / "dumps" / "rowiki-real-3pages.xml"


def read_pages(path: Path):
    """(title, text) of the dump's articles: clean_profile's reader, without the page id."""
    return [(title, text) for _, title, text in clean_profile.read_pages(path)]


def best(func, repeat: int):
    out, cpu = None, float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        out = func()
        cpu = min(cpu, time.process_time() - t0)
    return out, cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dump", type=Path, default=SCALE_DUMP if SCALE_DUMP.exists() else SHARED_DUMP)
    ap.add_argument("--punkt-params", type=Path, default=SCALE_PUNKT if SCALE_PUNKT.exists() else None)
    ap.add_argument("--lang", default="ro")
    ap.add_argument("--unit", type=int, default=20000, help="sentences per work unit (default: 20000)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threshold", type=float, default=Settings().threshold)
    ap.add_argument("--permutations", type=int, default=Settings().num_perm)
    ap.add_argument("--bands", type=int, default=Settings().bands)
    ap.add_argument("--pairs", type=Path, default=None, help="a pairs table: also time stage 3 on and off")
    ap.add_argument("--job", type=int, default=None, metavar="MB",
                    help="run the job on the scale benchmark's N MB unique-text dump with near-duplicates off and on")
    ap.add_argument("--code", type=Path, default=None, help="with --job: the checkout whose job runs")
    ap.add_argument("--sentences", type=Path, default=None,
                    help="a job's sentences/ table: time stages 2 and 3 in one process on it, on and off")
    ap.add_argument("--stage1-cpu", type=float, default=None, help="with --sentences: stage 1's CPU-s for that table")
    ap.add_argument("--no-in-process", action="store_true", help="with --job: only the two job runs")
    ap.add_argument("--only-on", action="store_true",
                    help="in one process: only the run with near-duplicates on (no warm-up, no off run)")
    ap.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "neardup_cost.json")
    args = ap.parse_args(argv)
    if args.job is not None or args.sentences is not None:
        return job_cost(args)
    if not args.dump.exists():
        print(f"error: {args.dump} not found: build it with benchmarks/scale.py or give --dump", file=sys.stderr)
        return 2
    settings = Settings(threshold=args.threshold, num_perm=args.permutations, bands=args.bands)
    lexicon = load_lexicon(args.lang)
    ns = site_namespaces(read_head(str(args.dump)).decode("utf-8", errors="ignore"))
    pages, read_cpu = best(lambda: read_pages(args.dump), 1)
    if args.punkt_params:
        params = load_params(args.punkt_params)
    else:
        params = train_punkt([p for _, text in pages for p in clean_page(text, lexicon, namespaces=ns).paragraphs],
                             lexicon.abbreviations)

    def stage1():
        segmenter = Segmenter(params)
        out = []
        for title, text in pages:
            if page_skip_reason(title, text, lexicon) is None:
                for section in clean_page(text, lexicon, namespaces=ns).sections:
                    for para in section.paragraphs:
                        out += segmenter.split(para)
        return out

    sentences, clean_cpu = best(stage1, args.repeat)
    s1 = read_cpu + clean_cpu
    n_all = len(sentences)
    # the distinct sentences (after case folding, what the stages compare), each as stage 1
    # wrote it (its first occurrence): the stages hash the texts of the pairs as they are
    first: dict[str, str] = {}
    for s in sentences:
        first.setdefault(st.fold_text(s), s)
    texts = list(first.values())
    n = len(texts)
    print(f"dump {args.dump.name}: {len(pages)} pages, {n_all} sentences ({n} distinct after case folding)")
    print(f"stage 1 pure work (read {read_cpu:.2f} + clean/segment {clean_cpu:.2f} CPU-s): "
          f"{1e6 * s1 / n_all:.1f} µs per sentence")
    print(f"settings: {settings_line(settings.as_dict())}; work units of {args.unit} sentences")

    units = [texts[i:i + args.unit] for i in range(0, n, args.unit)]
    starts = list(range(0, n, args.unit))
    cpu = {}
    sh_units, cpu["shingles"] = best(lambda: [minhash.shingle_sets(u, settings) for u in units], args.repeat)
    sigs, cpu["signatures"] = best(lambda: [minhash.signatures(s, settings) for s in sh_units], args.repeat)

    def bands():
        rows = [minhash.band_rows(np.arange(s0, s0 + len(sig)), minhash.band_keys(sig, settings)) for s0, sig in zip(starts, sigs)]
        return np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows])

    (keys, ids), cpu["bands"] = best(bands, args.repeat)
    # the engine hands a bucket its rows in no particular order
    perm = np.random.default_rng(0).permutation(len(keys))
    keys, ids = keys[perm], ids[perm]
    cand, cpu["buckets"] = best(lambda: minhash.bucket_pairs(keys, ids, settings.max_bucket), args.repeat)
    whole = minhash.shingle_sets(texts, settings)
    whole.lookup()
    jac, cpu["verify"] = best(lambda: minhash.pair_jaccard(whole, cand[:, 0], cand[:, 1]), args.repeat)
    pairs = cand[jac >= settings.threshold]
    _, cpu["components"] = best(lambda: minhash.components(n, pairs), args.repeat)
    total = sum(cpu.values())
    for k, v in cpu.items():
        print(f"  {k:<11} {1e6 * v / n:7.2f} µs per sentence")
    print(f"  {'total':<11} {1e6 * total / n:7.2f} µs per sentence; candidates {len(cand) / n:.2f} per sentence, "
          f"near-duplicate pairs {len(pairs)} (Jaccard 1: {int((jac == 1).sum())})")
    print(f"ratio to stage 1's pure work per stage-1 sentence (every distinct sentence through it once): "
          f"{100 * total / s1:.1f} %")
    if args.pairs:
        stage3(args.pairs, settings, args.repeat)
    return 0


def stage3(pairs: Path, settings, repeat: int) -> None:
    """Stage 3's rounds in one process over `pairs`, near-duplicates on against off."""
    schema, units = bt.list_units(str(pairs))
    n = sum(u["rows"] for u in units)
    cpu = {}
    for name, near in (("off", None), ("on", settings)):
        best_cpu = float("inf")
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as tmp:
                plan = SplitsPlan(units=units, schema=schema, seed=0, scratch=SplitsScratch(f"{tmp}/work"), buckets=2,
                                  test_only=frozenset(), ratios=(0.8, 0.1, 0.1), near=near)
                t0 = time.process_time()
                one_process.run_rounds(InProcessRunner(), plan, sp.parse_balance("downsample"), None, 4, f"{tmp}/splits")
                best_cpu = min(best_cpu, time.process_time() - t0)
        cpu[name] = best_cpu
    print(f"stage 3 in one process on {n:,} pairs: off {cpu['off']:.2f} CPU-s, on {cpu['on']:.2f} CPU-s; "
          f"near-duplicates {1e6 * (cpu['on'] - cpu['off']) / n:.1f} µs per pair "
          f"({100 * (cpu['on'] - cpu['off']) / cpu['off']:.0f} % of the stage)")


class TimingRunner:
    """`InProcessRunner` that adds up the process CPU of each named round's tasks."""

    def __init__(self):
        self.inner = InProcessRunner()
        self.cpu: dict[str, float] = {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def map(self, fn, tasks, spread=False, costs=None, name=None, reuse_memory=False):
        t0 = time.process_time()
        try:
            return self.inner.map(fn, tasks, spread=spread, costs=costs, name=name, reuse_memory=reuse_memory)
        finally:
            key = name or "unnamed"
            self.cpu[key] = self.cpu.get(key, 0.0) + time.process_time() - t0


def in_process(sentences: Path, lang: str, settings, only_on: bool = False) -> dict:
    """Stages 2 and 3 in one process over `sentences`, near-duplicates off and on: CPU-s per
    round, and the near-duplicate part of each."""
    lexicon = load_lexicon(lang)
    out: dict = {}
    unit_step = split_rounds.near_unit
    # a first run (on, not counted) loads what both modes load once per process (the POS
    # model, imports, neardup's token rules), so that neither counts it
    # (only_on: one run with near-duplicates on, no warm-up: its first round counts the
    # once-per-process loads too, which over-states the near-duplicate rounds slightly)
    for mode in (("on",) if only_on else ("warm-up", "off", "on")):
        unit_cpu = [0.0]

        def timed_unit(*a, **k):
            t0 = time.process_time()
            try:
                return unit_step(*a, **k)
            finally:
                unit_cpu[0] += time.process_time() - t0

        with tempfile.TemporaryDirectory() as tmp:
            options = pairs_stage.Options(pos_filter="on", near_duplicates="off" if mode == "off" else "on",
                                          near_duplicate_threshold=settings.threshold,
                                          near_duplicate_shingle=settings.shingle,
                                          near_duplicate_permutations=settings.num_perm,
                                          near_duplicate_bands=settings.bands)
            r2 = TimingRunner()
            t0 = time.process_time()
            write, stats2, cleanup = one_process.build_pairs(r2, str(sentences), lexicon, options, work=f"{tmp}/scratch")
            try:
                write(f"{tmp}/pairs")
            finally:
                cleanup()
            cpu2 = time.process_time() - t0
            schema, units = bt.list_units(f"{tmp}/pairs")
            plan = SplitsPlan(units=units, schema=schema, seed=0, scratch=SplitsScratch(f"{tmp}/work"), buckets=2,
                              test_only=frozenset(), ratios=(0.8, 0.1, 0.1),
                              near=None if mode == "off" else settings)
            r3 = TimingRunner()
            split_rounds.near_unit = timed_unit
            t0 = time.process_time()
            try:
                found = one_process.run_rounds(r3, plan, sp.parse_balance("downsample"), None, 4, f"{tmp}/splits")
            finally:
                split_rounds.near_unit = unit_step
            cpu3 = time.process_time() - t0
        near2 = {k: v for k, v in r2.cpu.items() if k.startswith("near")}
        near3 = {k: v for k, v in r3.cpu.items() if k.startswith("near")}
        near3["summaries: per-unit near-duplicate step"] = unit_cpu[0]
        out[mode] = {"stage2_cpu_s": cpu2, "stage3_cpu_s": cpu3, "stage2_rounds": r2.cpu, "stage3_rounds": r3.cpu,
                     "near_rounds_cpu_s": {"stage2": near2, "stage3": near3},
                     "near_cpu_s": sum(near2.values()) + sum(near3.values()),
                     "pairs": stats2.get("total"), "near_stats": {"stage2": stats2.get("near_duplicates"),
                                                                   "stage3": (found.get("near") or {})}}
    out.pop("warm-up", None)
    return out


def job_cost(args) -> int:
    """The issue's measure: the machinery's CPU in the job against stage 1's (module doc)."""
    settings = Settings(threshold=args.threshold, num_perm=args.permutations, bands=args.bands)
    result: dict = {"settings": settings.as_dict(), "load_at_start": os.getloadavg()[0]}
    sentences, stage1 = args.sentences, args.stage1_cpu
    if args.job is not None:
        dump = scale.WORK / f"ro-unique-{args.job}mb.xml.bz2"
        if not dump.exists():
            print(f"error: {dump} not found: build it with benchmarks/scale.py --sizes {args.job} --build-only",
                  file=sys.stderr)
            return 2
        runs = {}
        for mode in ("off", "on"):
            r = scale.run_job(dump, f"neardup-{args.job}mb-{mode}", ["--near-duplicates", mode], code=args.code)
            runs[mode] = {"wall_s": r["wall_s"], "cpu_s": r["cpu_s"], "pairs": r["pairs"], "sentences": r["sentences"],
                          "stages_cpu_s": {k: v["cpu_s"] for k, v in r["stages"].items()},
                          "stages_wall_s": {k: v["wall_s"] for k, v in r["stages"].items()}}
            stats = json.loads((scale.WORK / f"out-neardup-{args.job}mb-{mode}" / "stats.json").read_text())
            runs[mode]["near_stats"] = {"pairs": stats["pairs"].get("near_duplicates"),
                                        "splits": stats["splits"].get("near_duplicates")}
        print(f"job on {dump.name} ({runs['on']['sentences']:,} sentences, {runs['on']['pairs']:,} pairs), "
              f"CPU-s of the process tree per stage:")
        print(f"  {'stage':<10} {'off':>8} {'on':>8}")
        for stage in runs["on"]["stages_cpu_s"]:
            print(f"  {stage:<10} {runs['off']['stages_cpu_s'].get(stage, 0):8.1f} {runs['on']['stages_cpu_s'][stage]:8.1f}")
        s23 = {m: runs[m]["stages_cpu_s"].get("pairs", 0) + runs[m]["stages_cpu_s"].get("splits", 0) for m in runs}
        stage1 = (runs["on"]["stages_cpu_s"]["sentences"] + runs["off"]["stages_cpu_s"]["sentences"]) / 2
        diff = s23["on"] - s23["off"]
        print(f"  stages 2+3: off {s23['off']:.1f}, on {s23['on']:.1f}: near-duplicates {diff:+.1f} CPU-s; "
              f"stage 1 (mean of the two runs) {stage1:.1f} CPU-s: ratio {diff / stage1:.3f} (goal <= 0.15)")
        print(f"  near-duplicate counts (on): {runs['on']['near_stats']}")
        result.update({"dump": dump.name, "job": runs, "stage1_cpu_s": stage1, "job_near_cpu_s": diff,
                       "job_ratio": diff / stage1})
        sentences = None if args.no_in_process else scale.WORK / f"out-neardup-{args.job}mb-on" / "sentences"
    if sentences is not None:
        if stage1 is None:
            print("error: --sentences needs --stage1-cpu (the stage 1 CPU-s of that table's run)", file=sys.stderr)
            return 2
        ip = in_process(sentences, args.lang, settings, only_on=args.only_on)
        print(f"stages 2 and 3 in one process over {sentences} (InProcessRunner), CPU-s:")
        for mode in ip:
            r = ip[mode]
            print(f"  {mode:<3}: stage 2 {r['stage2_cpu_s']:.2f}, stage 3 {r['stage3_cpu_s']:.2f} ({r['pairs']:,} pairs)")
        for st_name, rounds_cpu in ip["on"]["near_rounds_cpu_s"].items():
            for k, v in rounds_cpu.items():
                print(f"    {st_name} {k:<40} {v:.3f}")
        near = ip["on"]["near_cpu_s"]
        diff = ((ip["on"]["stage2_cpu_s"] + ip["on"]["stage3_cpu_s"]) - (ip["off"]["stage2_cpu_s"] + ip["off"]["stage3_cpu_s"])
                if "off" in ip else float("nan"))
        print(f"  near-duplicate tasks {near:.3f} CPU-s (stages 2+3 on - off: {diff:+.2f}); against stage 1's "
              f"{stage1:.1f} CPU-s: ratio {near / stage1:.4f} (goal <= 0.15)")
        print(f"  near-duplicate counts: {ip['on']['near_stats']}")
        result.update({"in_process": ip, "in_process_sentences": str(sentences), "in_process_near_cpu_s": near,
                       "in_process_ratio": near / stage1, "stage1_cpu_s": stage1})
    result["load_at_end"] = os.getloadavg()[0]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {args.json}; load average {result['load_at_start']:.1f} at start, {result['load_at_end']:.1f} at end "
          f"(2 cores, shared)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
