"""Cost of the near-duplicate machinery per sentence, against stage 1's CPU per sentence.

    .venv/bin/python benchmarks/neardup_cost.py [--dump PATH] [--lang ro] [--unit 20000] [--repeat 3]

Peer: stage 1's pure work on the same dump in the same process: reading the pages (bz2 +
XML), `clean_page` and Punkt segmentation (the job's per-page work without Spark and
Parquet, so the ratio printed is an upper bound of the share of the real stage 1).
Default dump: the unique-text scale benchmark's (benchmarks/_work/scale/ro-unique-20mb.xml.bz2,
built by benchmarks/scale.py), else ../shared/data's Romanian pages.

Then, on the distinct sentences stage 1 produced (case-folded: what the stages compare), one
core, `time.process_time()`, best of --repeat:

  shingles     extractor.neardup.shingle_sets   (per work unit of --unit sentences)
  signatures   extractor.neardup.signatures     (per unit)
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
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

import clean_profile  # noqa: E402  (its dump reader)
from extractor import neardup as nd  # noqa: E402
from extractor import statistics as st  # noqa: E402
from extractor.documents.readers import read_head, site_namespaces  # noqa: E402
from extractor.documents.segment import Segmenter, load_params, train_punkt  # noqa: E402
from extractor.documents.wikitext import clean_page, page_skip_reason  # noqa: E402
from extractor.lexicon import load_lexicon  # noqa: E402

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
    ap.add_argument("--threshold", type=float, default=nd.Settings().threshold)
    ap.add_argument("--permutations", type=int, default=nd.Settings().num_perm)
    ap.add_argument("--bands", type=int, default=nd.Settings().bands)
    ap.add_argument("--pairs", type=Path, default=None, help="a pairs table: also time stage 3 on and off")
    args = ap.parse_args(argv)
    if not args.dump.exists():
        print(f"error: {args.dump} not found: build it with benchmarks/scale.py or give --dump", file=sys.stderr)
        return 2
    settings = nd.Settings(threshold=args.threshold, num_perm=args.permutations, bands=args.bands)
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
    texts = list(dict.fromkeys(st.fold_text(s) for s in sentences))
    n = len(texts)
    print(f"dump {args.dump.name}: {len(pages)} pages, {n_all} sentences ({n} distinct after case folding)")
    print(f"stage 1 pure work (read {read_cpu:.2f} + clean/segment {clean_cpu:.2f} CPU-s): "
          f"{1e6 * s1 / n_all:.1f} µs per sentence")
    print(f"settings: {nd.settings_line(settings.as_dict())}; work units of {args.unit} sentences")

    units = [texts[i:i + args.unit] for i in range(0, n, args.unit)]
    starts = list(range(0, n, args.unit))
    cpu = {}
    sh_units, cpu["shingles"] = best(lambda: [nd.shingle_sets(u, settings) for u in units], args.repeat)
    sigs, cpu["signatures"] = best(lambda: [nd.signatures(s, settings) for s in sh_units], args.repeat)

    def bands():
        rows = [nd.band_rows(np.arange(s0, s0 + len(sig)), nd.band_keys(sig, settings)) for s0, sig in zip(starts, sigs)]
        return np.concatenate([r[0] for r in rows]), np.concatenate([r[1] for r in rows])

    (keys, ids), cpu["bands"] = best(bands, args.repeat)
    # the engine hands a bucket its rows in no particular order
    perm = np.random.default_rng(0).permutation(len(keys))
    keys, ids = keys[perm], ids[perm]
    cand, cpu["buckets"] = best(lambda: nd.bucket_pairs(keys, ids, settings.max_bucket), args.repeat)
    whole = nd.shingle_sets(texts, settings)
    whole.lookup()
    jac, cpu["verify"] = best(lambda: nd.pair_jaccard(whole, cand[:, 0], cand[:, 1]), args.repeat)
    pairs = cand[jac >= settings.threshold]
    _, cpu["components"] = best(lambda: nd.components(n, pairs), args.repeat)
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
    import tempfile

    from extractor import stage as contract
    from extractor.splits import assign as sp
    from extractor.splits import batches as bt
    from extractor.splits import stage as splits_stage

    schema, units = bt.list_units(str(pairs))
    n = sum(u["rows"] for u in units)
    cpu = {}
    for name, near in (("off", None), ("on", settings)):
        best_cpu = float("inf")
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as tmp:
                plan = {"units": units, "schema": schema, "seed": 0, "work": f"{tmp}/work", "buckets": 2,
                        "target": f"{tmp}/splits", "test_only": frozenset(), "ratios": (0.8, 0.1, 0.1), "near": near}
                t0 = time.process_time()
                splits_stage.rounds(contract.InProcessRunner(), plan, sp.parse_balance("downsample"), None, 4)
                best_cpu = min(best_cpu, time.process_time() - t0)
        cpu[name] = best_cpu
    print(f"stage 3 in one process on {n:,} pairs: off {cpu['off']:.2f} CPU-s, on {cpu['on']:.2f} CPU-s; "
          f"near-duplicates {1e6 * (cpu['on'] - cpu['off']) / n:.1f} µs per pair "
          f"({100 * (cpu['on'] - cpu['off']) / cpu['off']:.0f} % of the stage)")


if __name__ == "__main__":
    sys.exit(main())
