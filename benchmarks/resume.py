"""What `--resume` saves: the CPU a killed job costs to finish, against an uninterrupted run.

    .venv/bin/python benchmarks/resume.py [--input DUMP --lang ro] [--mb 20] [--kill-at 0.6]

Input: `--input` (default: the 250 MB dump of unique Romanian pages that benchmarks/scale.py
caches, benchmarks/_work/scale/ro-unique-250mb.xml.bz2, when it is there), else an enwiki
dump of `--mb` MB (benchmarks/extract_throughput.py builds it: real pages repeated under new
ids).

1. uninterrupted: the whole job (`jobs/extract.py`, local[2]), CPU of its whole process tree
   (driver, JVM, Python workers) sampled with psutil, and the completion records under its
   run folder (`_runs/<id>/_progress/`, extractor/engine/records.py) counted as they appear: how
   many there were when the run had spent `--kill-at` (0.6) of its CPU;
2. killed: the same job into another output, SIGKILLed (the driver, from outside, as a
   preempted node or an out-of-memory kill would) as soon as it has written that many
   records: the finished work of the uninterrupted run at 60 % of its CPU (so the kill lands
   where the job is 60 % done, after a finished work unit, whatever the machine's speed that
   time); the share of the uninterrupted run's CPU it had spent is printed;
3. resumed: `--resume` on that output, CPU measured the same way.

Prints the three figures, resumed / uninterrupted (goal: <= 0.5 for a kill at 0.6), the
resumed run's CPU per stage (from its log) beside the uninterrupted run's, the work units it
reused (its manifest), and whether the two published runs are the same bytes (stats.json
without timings and run id). `--record FILE` writes the figures as JSON. Not a test: figures
depend on the machine and its load.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]
from extract_throughput import TreeMonitor, build_dump  # noqa: E402  (the benchmark's own helpers)

from tests.run_hashes import published_hashes  # noqa: E402

WORK = REPO / "benchmarks" / "_work" / "resume"
SCALE_DUMP = REPO / "benchmarks" / "_work" / "scale" / "ro-unique-250mb.xml.bz2"


def records(out: Path) -> int:
    """Completion records written so far under the output's staged runs."""
    n = 0
    for progress in out.glob("_runs/*/_progress"):
        for _, _, files in os.walk(progress):
            n += sum(1 for f in files if f.endswith(".json") and not f.startswith("."))
    return n


def job(out: Path, dump: Path, lang: str, master: str, extra: list[str], kill_at_records: int | None = None,
        watch_cpu: float | None = None) -> dict:
    """One run of the job, its process tree's CPU and, with `watch_cpu`, the completion
    records there were when it had spent `watch_cpu` CPU-s; with `kill_at_records`, SIGKILLed
    once that many records are written."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    cmd = [sys.executable, str(REPO / "jobs" / "extract.py"), "--lang", lang, "--input", str(dump),
           "--output", str(out), "--master", master, *extra]
    log = out.parent / f"{out.name}{'-resume' if '--resume' in extra else ''}.log"
    timeline = []  # (cpu, records)
    with open(log, "w") as fh:
        t0 = time.time()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, env=env)
        mon = TreeMonitor(proc.pid).start()
        while proc.poll() is None:
            found = records(out)
            timeline.append((mon.cpu_seconds, found))
            if kill_at_records is not None and found >= kill_at_records:
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.1)
        rc = proc.wait()
        wall = time.time() - t0
        mon.stop()
        time.sleep(2)  # the JVM and its workers notice the dead driver and go
    if kill_at_records is None and rc != 0:
        sys.exit(f"error: {cmd}: exit {rc}; see {log}")
    result = {"rc": rc, "wall": round(wall, 1), "cpu": round(mon.cpu_seconds, 1), "by_kind": mon.cpu_by_kind,
              "records": max((n for _, n in timeline), default=0), "stage_seconds": stage_seconds(log)}
    if watch_cpu is not None:
        result["records_at_cpu"] = {str(share): max([n for cpu, n in timeline if cpu <= share * mon.cpu_seconds],
                                                    default=0) for share in watch_cpu}
    return result


def stage_seconds(log: Path) -> dict:
    """The job's `job.seconds` (wall seconds per stage) from stats.json, when it published."""
    stats = log.parent / log.name.replace("-resume", "").replace(".log", "") / "stats.json"
    try:
        return json.loads(stats.read_text())["job"]["seconds"]
    except (OSError, ValueError, KeyError):
        return {}


def published(out: Path) -> dict:
    """sha256 of every published file; stats.json without timings and run id, the output
    folder's path masked (`published_hashes`, tests/run_hashes.py)."""
    return published_hashes(out / "current", replace=(str(out).encode(), b"<OUT>"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--input", type=Path, help="the dump (default: the cached 250 MB unique-page dump, else "
                                               "an enwiki dump of --mb MB)")
    ap.add_argument("--lang", help="--lang of the job (default: ro for the unique-page dump, en otherwise)")
    ap.add_argument("--mb", type=int, default=20, help="MB of XML in the enwiki dump (without --input)")
    ap.add_argument("--kill-at", type=float, default=0.6,
                    help="kill once the records of this share of the uninterrupted run's CPU are written")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--unit-mb", help="--unit-mb of the job (work units of stage 1; default: the job's)")
    ap.add_argument("--record", type=Path, help="write the figures to this JSON file")
    args = ap.parse_args(argv)
    if args.input is None and SCALE_DUMP.exists():
        args.input, args.lang = SCALE_DUMP, args.lang or "ro"
    dump = args.input or build_dump(args.mb)[0]
    lang = args.lang or "en"
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    extra = ["--unit-mb", args.unit_mb] if args.unit_mb else []
    full = job(WORK / "full", dump, lang, args.master, extra, watch_cpu=[args.kill_at])
    at = full["records_at_cpu"][str(args.kill_at)]
    print(f"input: {dump} ({dump.stat().st_size / 1e6:.1f} MB), --lang {lang}", flush=True)
    print(f"uninterrupted: {full['cpu']} CPU-s ({full['wall']} s wall) {full['by_kind']}; stages (s wall) "
          f"{full['stage_seconds']}; {full['records']} completion records at most, {at} of them written by "
          f"{args.kill_at:.0%} of its CPU", flush=True)
    # the killed and the resumed run write the same output path, as the uninterrupted one did
    # under its own name: the card quotes the command line, so compare with paths replaced
    killed = job(WORK / "killed", dump, lang, args.master, extra, kill_at_records=max(at, 1))
    print(f"killed after {killed['records']} records: {killed['cpu']} CPU-s = {killed['cpu'] / full['cpu']:.2f} of the "
          f"uninterrupted run's ({killed['wall']} s wall, exit {killed['rc']})", flush=True)
    resumed = job(WORK / "killed", dump, lang, args.master, extra + ["--resume"])
    print(f"resumed: {resumed['cpu']} CPU-s ({resumed['wall']} s wall) {resumed['by_kind']}; stages (s wall) "
          f"{resumed['stage_seconds']}", flush=True)
    report = json.loads((WORK / "killed" / "manifest.json").read_text()).get("resumed")
    print(f"resumed run reused: {json.dumps(report)}")
    same = published(WORK / "full") == published(WORK / "killed")
    ratio = resumed["cpu"] / full["cpu"]
    print(f"resumed / uninterrupted CPU: {ratio:.2f} (goal <= 0.50 for a kill at {args.kill_at:.2f}); killed + "
          f"resumed / uninterrupted: {(killed['cpu'] + resumed['cpu']) / full['cpu']:.2f}; same bytes: {same}")
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(json.dumps({
            "input": str(dump.relative_to(REPO) if dump.is_relative_to(REPO) else dump), "lang": lang,
            "master": args.master, "kill_at": args.kill_at, "uninterrupted": full, "killed": killed,
            "resumed": resumed, "reused": report, "resumed_over_uninterrupted": round(ratio, 3),
            "same_bytes": same, "load_average": os.getloadavg()}, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
