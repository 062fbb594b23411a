"""What the driver holds in stages 2 and 3 as a corpus grows: enwiki-sized slim rows, no text.

    .venv/bin/python benchmarks/driver_bounds.py                       # 7 M documents, 2 M pairs
    .venv/bin/python benchmarks/driver_bounds.py --scales 0.1,1        # and a tenth of it: growth

Only the steps that run in the driver (serial time, driver memory) are measured; what the
tasks compute for them (per unit, per bucket) is computed here beforehand, in this process,
from generated slim rows, and handed to each driver step the way the stage hands it (the
scratch files the driver reads, the lists of task results `runner.map` returns). Each
driver step then runs in a fresh Python process that imports what the driver imports,
loads its inputs, and runs the step: printed are its inputs, the step's CPU seconds (all of
them serial: nothing else runs while the driver decides) and the process's peak RSS above
the RSS it had after its imports (`peak above imports`), with the inputs loaded and after.

Stage 3 (extractor/splits/decisions.py, assign.py; the driver part of extractor/splits/stage.py):
  assign     the weights of every document of a corpus (`document_weights` rows of all units,
             read back from scratch) -> `assign_corpus`: every document to a split.
  quotas     the (split, corpus, label) counts and `BINS` histograms of every bucket ->
             `compute_quotas`, `cut_points`.
  thresholds the rows of the bins where a quota ends part-way (`boundary_rows` of every
             bucket) -> `thresholds`.
Stage 2 (extractor/pairs/corpus.py, buckets.py, sentence_passes.py; the driver part of
extractor/pairs/stage.py `build_pairs`, replicated here step for step):
  plan       pass 1's results of every unit (marked counts, edge rows, and the neutral
             candidates' selection-hash histograms: one dense list of `neutral.HIST_SIZE`
             counts per strategy, `buckets.dense_histograms`) and the marked tallies of
             every bucket -> `stage.reduce_pass_one`, `tally_marked`, `plan_cuts`.
  needed     pass 1's "documents" rows (one per document with a neutral candidate, one
             scratch file per unit) -> `stage._needed` itself: read one unit at a time,
             filtered with numpy; None above MAX_NEEDED_DOCUMENTS needed documents (every
             document is read again instead).
  limits     the lowest selection hashes of every bucket per strategy -> `check_limits`;
  draw       the neutral tallies of every bucket -> `tally_neutral`, `final_allocation`,
             `cut_points`; the boundary rows -> `last_taken`.

The generated corpus: one corpus (the worst case: the per-corpus decisions see everything),
`--documents` document ids, `--pairs` pairs (a quarter of each label, neutral pairs lend
their premise and hypothesis from other documents), `--units` units of pass 1 and stage 3
(one per 65,536 pairs in stage 3, as `batches.UNIT_ROWS`), `--buckets` buckets.
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402

LABELS = ("contrasting", "entailment", "neutral", "reasoning")


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak() -> int:
    """The process's peak RSS (VmHWM) since the last `_reset_peak`."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _reset_peak() -> None:
    """Linux: reset VmHWM to the current RSS (so import-time transients do not count)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


# ---------------------------------------------------------------------------- inputs

def _ids(prefix: str, values: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(pa.scalar(prefix), pa.array(values).cast(pa.string()), "")


def _digests(rng, n: int) -> pa.Array:
    raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8).tobytes()
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(16), n, [None, pa.py_buffer(raw)]).cast(pa.binary())


def slim_rows(documents: int, pairs: int, seed: int = 0) -> pa.Table:
    """Stage 3's slim summary rows (`pair_tables.SUMMARY_SCHEMA`) of `pairs` pairs over
    `documents` documents of one corpus."""
    from extractor.splits import pair_tables as sb

    rng = np.random.default_rng(seed)
    label = rng.integers(0, 4, size=pairs)
    doc = rng.integers(0, documents, size=pairs)
    neutral = label == 2
    pdoc = np.where(neutral & (rng.random(pairs) < 0.6), rng.integers(0, documents, size=pairs), doc)
    hdoc = np.where(neutral & (rng.random(pairs) < 0.6), rng.integers(0, documents, size=pairs), doc)
    markers = pa.array([f"marker {i}" for i in range(60)], pa.string())
    sources = pa.array(["marker", "both_random", "first_random", "second_random", "marked_different_paragraphs",
                        "adjacent_unmarked"], pa.string())
    src = np.where(neutral, rng.integers(1, 6, size=pairs), 0)
    unit_rows = sb.UNIT_ROWS
    table = pa.table({
        "_unit": pa.array((np.arange(pairs) // unit_rows).astype(np.int32)),
        "_row": pa.array((np.arange(pairs) % unit_rows).astype(np.int32)),
        "pair_id": _ids("p", rng.permutation(pairs)),
        "corpus": pa.array(["enwiki"] * pairs, pa.string()) if pairs < 1 else pa.repeat(pa.scalar("enwiki"), pairs),
        "doc_id": _ids("d", doc), "_pdoc": _ids("d", pdoc), "_hdoc": _ids("d", hdoc),
        "label": pa.array(np.array(LABELS, dtype=object)[label], pa.string()),
        "marker": pc.if_else(pa.array(neutral), pa.scalar(None, pa.string()),
                             markers.take(pa.array(rng.integers(0, 60, size=pairs)))),
        "source": sources.take(pa.array(src)),
        "_test_only": pa.array(np.zeros(pairs, dtype=bool)),
        "_reject": pa.nulls(pairs, pa.string()),
        "_h": pa.array(rng.integers(0, 2**63 - 1, size=pairs, dtype=np.int64)),
        "_pkey": _digests(rng, pairs), "_skey": _digests(rng, pairs), "_hkey": _digests(rng, pairs)})
    return table.cast(sb.SUMMARY_SCHEMA)


def stage3_inputs(rows: pa.Table, buckets: int, out: Path) -> dict:
    """What the tasks of stage 3 hand its driver, computed here: the weights (scratch), the
    histograms and counts of every bucket, the boundary rows. Returns sizes."""
    from extractor.splits import assign as sp
    from extractor.splits import decisions as dc

    units = sorted(set(rows.column("_unit").to_pylist()))
    weights = pa.concat_tables([dc.document_weights(rows.filter(pc.equal(rows.column("_unit"), u))) for u in units])
    with pa.OSFile(str(out / "weights.arrow"), "wb") as fh, pa.ipc.new_file(fh, weights.schema) as w:
        w.write_table(weights)
    assigned = dc.assign_corpus(weights, sorted(LABELS), (0.8, 0.1, 0.1), 0)
    which = dc.key_buckets(rows.column("_skey"), buckets)
    results, kept_tables = [], []
    for b in range(buckets):
        part = rows.filter(pa.array(which == b))
        ranked = dc.rank_identical(part, assigned)
        kept = ranked.filter(pc.is_null(ranked.column("_why"))).drop_columns(["_why"])
        kept_tables.append(kept)
        results.append({"counts": dc.tally(ranked, ["_why", *dc.GROUP]), "histogram": dc.histogram(kept)})
    (out / "ranked.pickle").write_bytes(pickle.dumps(results))
    counts, _ = dc.ranked_counts(results)
    quotas = sp.compute_quotas(counts, sp.parse_balance(["downsample"]), sorted({k[2] for k in counts}), 15000)
    cuts = dc.cut_points([h for r in results for h in r["histogram"]], quotas)
    edges = [row for t in kept_tables for row in dc.boundary_rows(t, cuts)]
    (out / "edges.pickle").write_bytes(pickle.dumps((edges, cuts)))
    return {"weights_rows": weights.num_rows, "weights_bytes": weights.nbytes, "buckets": buckets,
            "histogram_rows": sum(len(r["histogram"]) for r in results), "boundary_rows": len(edges),
            "assigned_documents": assigned.num_rows}


def stage2_inputs(documents: int, pairs: int, units: int, buckets: int, out: Path, seed: int = 0) -> dict:
    """What the tasks of stage 2 hand its driver, in the shapes of extractor/pairs/stage.py:
    pass 1's results per unit (count rows and dense histograms), the marked tallies per
    bucket, the "documents" scratch files (one per unit), the neutral tallies per bucket,
    the boundary rows of the draw."""
    from extractor.engine import scratch
    from extractor.pairs import buckets as pb
    from extractor.pairs import neutral as nt

    rng = np.random.default_rng(seed + 1)
    nbins = 1 << nt.BIN_BITS
    corpus = "enwiki"
    marked_per_label = pairs // 4
    # pass 1, per unit: "marked" rows per (label, reject), two "edge" rows, and the histogram
    # of each strategy (each unit's documents have candidates in nearly every bin) as the
    # task returns it: `hist_keys` rows summed into one dense list (`dense_histograms`)
    counts, histograms = [], []
    for u in range(units):
        out_u = []
        for label in ("contrasting", "entailment", "reasoning"):
            out_u.append(("marked", corpus, label, None, None, None, marked_per_label // units))
            for reject in ("no_premise", "premise_short", "hypothesis_short"):
                out_u.append(("marked", corpus, label, reject, None, None, 1000))
        per_bin = rng.poisson(max(1.0, 30.0 * documents / units / nbins), size=(len(nt.STRATEGIES), nbins))
        histograms.append(pb.dense_histograms((corpus, s, key, n) for k, s in enumerate(nt.STRATEGIES)
                                              for key, n in nt.hist_keys(per_bin[k])))
        out_u += [("edge", corpus, None, None, None, f"d{u * 1000}", 1), ("edge", corpus, None, None, None,
                                                                            f"d{u * 1000 + 999}", 1)]
        counts.append(out_u)
    # marked tallies per bucket: (corpus, label, phrase, premise_stripped, reject, n, dup, rows, copies)
    tallies = []
    for b in range(buckets):
        rows = []
        for label in ("contrasting", "entailment", "reasoning"):
            for phrase in range(60):
                for ps in (False, True):
                    n = int(marked_per_label / buckets / 120)
                    rows.append((corpus, label, f"phrase {phrase}", ps, None, 1, False, n, n))
                    rows.append((corpus, label, f"phrase {phrase}", ps, "pos_no_predicate", 1, False, n // 20, n // 20))
        tallies.append(rows)
    (out / "plan.pickle").write_bytes(pickle.dumps((counts, tallies, histograms)))
    # "documents" rows: one per document with a neutral candidate (corpus, doc_id, packed
    # lowest bins per strategy, file key)
    nd = documents
    packed = np.zeros(nd, dtype=np.int64)
    for k in range(len(nt.STRATEGIES)):
        packed |= rng.integers(0, nbins, size=nd, dtype=np.int64) << (nt.BIN_BITS * k)
    unit_of = (np.arange(nd) * units // nd).astype(np.int32)
    docs = pa.table({"corpus": pa.repeat(pa.scalar(corpus), nd), "doc_id": _ids("d", np.arange(nd)),
                     "n": pa.array(packed), "bin": pa.array(unit_of)})
    bounds = np.searchsorted(unit_of, np.arange(units + 1))
    for u in range(units):  # the scratch files pass 1's tasks write: work/documents/unit-<k>.arrow
        part = docs.slice(int(bounds[u]), int(bounds[u + 1] - bounds[u]))
        if part.num_rows:
            scratch.write_arrow(part, str(out / "documents" / f"unit-{u:06d}.arrow"))
    # neutral tallies per bucket: (corpus, source, reject, rank or None, bin, rows, verdicts asked)
    # over the candidates under the cuts (a few bins' worth: the oversampled draw)
    neutral = []
    want = pairs // 4
    for b in range(buckets):
        rows = []
        for s in nt.STRATEGIES:
            per = max(1, want // len(nt.STRATEGIES) // buckets)
            top = min(nbins, 64)
            for bn in range(top):
                n = max(1, per // top)
                rows.append((corpus, s, None, 1, bn, n, n))
                rows.append((corpus, s, "pos_no_subject", None, bn, max(1, n // 10), max(1, n // 10)))
        neutral.append(rows)
    boundary = [[corpus, s, int(x), f"p{int(x)}"] for s in nt.STRATEGIES
                for x in rng.integers(0, 2**63 - 1, size=max(1, want // len(nt.STRATEGIES) // 64), dtype=np.int64)]
    (out / "draw.pickle").write_bytes(pickle.dumps((neutral, boundary)))
    # the neutral-limits round's results: per bucket and strategy the lowest selection hashes
    # of its candidates under the cuts (the cut bins hold about 1.3x the candidates checked,
    # spread over the buckets)
    wanted = {(corpus, s): int(want / len(nt.STRATEGIES) * 1.2) + 8 for s in nt.STRATEGIES}
    lowest = [[[corpus, s, np.sort(rng.integers(0, 2**63 - 1, size=int(n * 1.3) // buckets, dtype=np.int64)).tolist()]
               for (_, s), n in wanted.items()] for _ in range(buckets)]
    (out / "limits.pickle").write_bytes(pickle.dumps((lowest, wanted)))
    return {"units": units, "pass1_count_rows": sum(len(c) for c in counts),
            "pass1_histogram_values": sum(len(h[2]) for task in histograms for h in task),
            "marked_tally_rows": sum(len(t) for t in tallies), "documents_rows": nd,
            "neutral_tally_rows": sum(len(t) for t in neutral),
            "draw_boundary_rows": len(boundary),
            "limits_hashes": sum(len(v) for task in lowest for _, _, v in task)}


# ---------------------------------------------------------------------------- driver steps

def step(name: str, work: Path) -> dict:
    """One driver step in this (fresh) process; returns its figures."""
    # imports here, before the peak is reset: the figures are the step's, not the modules'
    from extractor.pairs import sentence_passes as bt  # noqa: F401  (the driver imports it)
    from extractor.pairs import buckets as pb
    from extractor.pairs import corpus as pcorp
    from extractor.pairs import neutral as nt
    from extractor.pairs import stage as pstage
    from extractor.pairs.plan import PairsScratch
    from extractor.splits import assign as sp
    from extractor.splits import decisions as dc

    _reset_peak()
    base = _rss()
    t_load = time.process_time()
    if name == "assign":
        weights = pa.ipc.open_file(str(work / "weights.arrow")).read_all()
        inputs = weights.num_rows
    elif name == "quotas":
        results = pickle.loads((work / "ranked.pickle").read_bytes())
        inputs = sum(len(r["histogram"]) for r in results)
    elif name == "thresholds":
        edges, cuts = pickle.loads((work / "edges.pickle").read_bytes())
        inputs = len(edges)
    elif name == "plan":
        counts_per_unit, tallies_per_bucket, histograms = pickle.loads((work / "plan.pickle").read_bytes())
        inputs = sum(map(len, counts_per_unit)) + sum(map(len, tallies_per_bucket)) + len(histograms)
    elif name == "needed":
        inputs = None
    elif name == "draw":
        neutral_per_bucket, boundary = pickle.loads((work / "draw.pickle").read_bytes())
        inputs = sum(map(len, neutral_per_bucket)) + len(boundary)
    elif name == "limits":
        lowest_per_bucket, wanted = pickle.loads((work / "limits.pickle").read_bytes())
        inputs = sum(len(v) for task in lowest_per_bucket for _, _, v in task)
    load_s = time.process_time() - t_load
    loaded = _rss()
    t0 = time.process_time()
    out: dict = {}
    if name == "assign":
        assigned = dc.assign_corpus(weights, sorted(LABELS), (0.8, 0.1, 0.1), 0)
        out["documents"] = assigned.num_rows
    elif name == "quotas":
        counts, _ = dc.ranked_counts(results)   # extractor/splits/stage.py's rounds, steps 3-4
        quotas = sp.compute_quotas(counts, sp.parse_balance(["downsample"]), sorted({k[2] for k in counts}), 15000)
        cuts = dc.cut_points([h for r in results for h in r["histogram"]], quotas)
        out["groups"] = len(cuts)
    elif name == "thresholds":
        last = dc.thresholds(edges, cuts)
        out["groups_cut_part_way"] = len(last)
    elif name == "plan":   # extractor/pairs/stage.py build_pairs, steps 1-2, as written there
        counts = [tuple(r) for out_u in counts_per_unit for r in out_u]
        tallies = [tuple(r) for out_b in tallies_per_bucket for r in out_b]
        marked_counts, hist, groups, edges = pstage.reduce_pass_one(counts, tallies, histograms)
        duplicates, kept, pos, per_corpus = pcorp.tally_marked(groups, marked_counts, "model")
        checked = sum(pos.values())
        pass_rate = pos.get(None, 0) / checked if checked else None
        targets, available, cuts = pcorp.plan_cuts(per_corpus, hist, 1.0, {s: 1 for s in nt.STRATEGIES}, pass_rate)
        out["cuts"] = {f"{c}|{s}": b for (c, s), b in cuts.items()}
    elif name == "needed":   # extractor/pairs/stage.py _needed itself, over the scratch files
        cuts = {("enwiki", s): 40 for s in nt.STRATEGIES}
        found = pstage._needed(PairsScratch(str(work)), cuts)
        if found is None:
            out["result"] = (f"None: over MAX_NEEDED_DOCUMENTS ({pstage.MAX_NEEDED_DOCUMENTS:,}) needed; "
                             f"pass 2 reads every document")
        else:
            out["result"] = f"{sum(map(len, found.values())):,} documents needed in {len(found)} files"
    elif name == "limits":   # extractor/pairs/stage.py build_pairs, step 4, as written there
        lowest: dict = {}
        for task in lowest_per_bucket:
            for corpus, source, values in task:
                lowest.setdefault((corpus, source), []).extend(values)
        limits = pcorp.check_limits(lowest, wanted)
        out["groups_limited"] = sum(v is not None for v in limits.values())
    elif name == "draw":
        pos_neutral, rejected, dropped, avail2, bins = pcorp.tally_neutral(neutral_per_bucket and
                                                                           [tuple(r) for b in neutral_per_bucket for r in b])
        targets = {"enwiki": sum(avail2["enwiki"].values()) // 2}
        allocated = pcorp.final_allocation(targets, {s: 1 for s in nt.STRATEGIES}, avail2)
        draw = pb.cut_points(bins, {(c, s): n for c, per in allocated.items() for s, n in per.items()})
        last = pb.last_taken(boundary, {k: (v[0], max(1, v[1])) for k, v in draw.items()})
        out["groups"] = len(last)
    cpu = time.process_time() - t0
    return {"step": name, "inputs": inputs, "load_cpu_s": round(load_s, 3), "cpu_s": round(cpu, 3),
            "rss_after_imports": base, "loaded_above_imports": loaded - base, "peak_above_imports": _peak() - base,
            **out}


STEPS = (("assign", "3"), ("quotas", "3"), ("thresholds", "3"), ("plan", "2"), ("needed", "2"), ("limits", "2"),
         ("draw", "2"))


def run_step(name: str, work: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--step", name, "--work", str(work)], capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"step {name} failed: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--documents", type=int, default=7_000_000)
    ap.add_argument("--pairs", type=int, default=2_000_000)
    ap.add_argument("--units", type=int, default=128, help="pass 1 units (2 per core: a 64-core cluster)")
    ap.add_argument("--buckets", type=int, default=128)
    ap.add_argument("--scales", default="1", help="fractions of --documents and --pairs, comma-separated")
    ap.add_argument("--stages", default="2,3", help="the stages whose driver steps run (2, 3 or both); the "
                    "JSON keeps the other stage's figures of an earlier run")
    ap.add_argument("--step", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "driver_bounds.json")
    args = ap.parse_args()
    if args.step:
        print(json.dumps(step(args.step, args.work)))
        return
    stages = set(args.stages.split(","))
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or None
    if commit and subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "extractor"],
                                 capture_output=True, text=True).stdout.strip():
        commit += "+changes"  # the engine's files differ from the commit
    all_results = []
    for scale in (float(s) for s in args.scales.split(",")):
        docs, pairs = int(args.documents * scale), int(args.pairs * scale)
        with tempfile.TemporaryDirectory(prefix="driver-bounds-") as tmp:
            work = Path(tmp)
            t0 = time.time()
            sizes3 = sizes2 = None
            if "3" in stages:
                rows = slim_rows(docs, pairs)
                sizes3 = stage3_inputs(rows, args.buckets, work)
                del rows
            if "2" in stages:
                sizes2 = stage2_inputs(docs, pairs, args.units, args.buckets, work)
            print(f"== {docs:,} documents, {pairs:,} pairs, {args.units} units, {args.buckets} buckets "
                  f"(inputs built in {time.time() - t0:.0f} s): stage 3 {sizes3}; stage 2 {sizes2}", flush=True)
            print(f"   {'step':<11} {'inputs':>10} {'load CPU-s':>10} {'serial CPU-s':>12} {'loaded MiB':>10} "
                  f"{'peak MiB':>9}  (MiB above the process after its imports)")
            for name in [n for n, st in STEPS if st in stages]:
                r = run_step(name, work)
                r.update(documents=docs, pairs=pairs, scale=scale, units=args.units, buckets=args.buckets,
                         commit=commit)
                all_results.append(r)
                extra = {k: v for k, v in r.items() if k not in ("step", "inputs", "load_cpu_s", "cpu_s",
                                                                  "rss_after_imports", "loaded_above_imports",
                                                                  "peak_above_imports", "documents", "pairs", "scale",
                                                                  "units", "buckets", "commit")}
                print(f"   {name:<11} {r['inputs'] if r['inputs'] is not None else '-':>10} {r['load_cpu_s']:>10.2f} "
                      f"{r['cpu_s']:>12.2f} {r['loaded_above_imports'] / 2**20:>10.0f} "
                      f"{r['peak_above_imports'] / 2**20:>9.0f}  {extra}", flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    ran = {(r["step"], r["documents"], r["pairs"]) for r in all_results}
    earlier = json.loads(args.json.read_text()) if args.json.exists() else []
    kept = [r for r in earlier if (r["step"], r["documents"], r["pairs"]) not in ran]
    args.json.write_text(json.dumps(kept + all_results, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
