"""What `--resume` saves: the CPU a killed job costs to finish, against an uninterrupted run.

    .venv/bin/python benchmarks/resume.py [--mb 20] [--kill-at 0.6] [--master local[2]]

1. uninterrupted: the whole job (`jobs/extract.py --lang en`) on an enwiki dump of `--mb` MB
   (benchmarks/extract_throughput.py builds it: real pages repeated under new ids), CPU of
   its whole process tree (driver, JVM, Python workers) sampled with psutil;
2. killed: the same job into another output, SIGKILLed (the driver, from outside, as a
   preempted node or an out-of-memory kill would) once its process tree has spent
   `--kill-at` (0.6) of the uninterrupted run's CPU;
3. resumed: `--resume` on that output, CPU measured the same way.

Prints the three figures, resumed / uninterrupted (goal: <= 0.5 for a kill at 0.6), the work
units the resumed run reused (its manifest), and whether the two published runs are the
same bytes (stats.json without timings and run id). Not a test: figures depend on the
machine and its load.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from extract_throughput import TreeMonitor, build_dump  # noqa: E402  (the benchmark's own helpers)

WORK = REPO / "benchmarks" / "_work" / "resume"


def job(out: Path, dump: Path, master: str, extra: list[str], kill_at_cpu: float | None = None) -> dict:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    cmd = [sys.executable, str(REPO / "jobs" / "extract.py"), "--lang", "en", "--input", str(dump),
           "--output", str(out), "--master", master, *extra]
    log = out.parent / f"{out.name}{'-resume' if '--resume' in extra else ''}.log"
    with open(log, "w") as fh:
        t0 = time.time()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, env=env)
        mon = TreeMonitor(proc.pid).start()
        while proc.poll() is None:
            if kill_at_cpu is not None and mon.cpu_seconds >= kill_at_cpu:
                os.kill(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.1)
        rc = proc.wait()
        wall = time.time() - t0
        mon.stop()
        time.sleep(2)  # the JVM and its workers notice the dead driver and go
    if kill_at_cpu is None and rc != 0:
        sys.exit(f"error: {cmd}: exit {rc}; see {log}")
    return {"rc": rc, "wall": round(wall, 1), "cpu": round(mon.cpu_seconds, 1), "by_kind": mon.cpu_by_kind}


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def published(out: Path) -> dict:
    """sha256 of every published file; stats.json without timings, run id, paths and command line."""
    run = (out / "current").resolve()
    found = {}
    for path in sorted(run.rglob("*")):
        if not path.is_file() or path.name == "manifest.json":
            continue
        rel = path.relative_to(run).as_posix()
        data = path.read_bytes().replace(str(out).encode(), b"<OUT>")
        if rel == "stats.json":
            stats = json.loads(data)
            for key in ("run_id", "seconds", "total_seconds", "executor_python"):
                stats["job"].pop(key, None)
            data = json.dumps(_without_timings(stats), sort_keys=True).encode()
        found[rel] = hashlib.sha256(data).hexdigest()
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=20, help="MB of XML in the dump")
    ap.add_argument("--kill-at", type=float, default=0.6, help="share of the uninterrupted run's CPU spent at the kill")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--unit-mb", default="1", help="--unit-mb of the job (work units of stage 1)")
    args = ap.parse_args(argv)
    dump, _ = build_dump(args.mb)
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    extra = ["--unit-mb", args.unit_mb]
    full = job(WORK / "full", dump, args.master, extra)
    print(f"uninterrupted: {full['cpu']} CPU-s ({full['wall']} s wall) {full['by_kind']}", flush=True)
    # the killed and the resumed run write the same output path, as the uninterrupted one did
    # under its own name: the card quotes the command line, so compare with paths replaced
    killed = job(WORK / "killed", dump, args.master, extra, kill_at_cpu=args.kill_at * full["cpu"])
    print(f"killed at {args.kill_at:.0%} of its CPU: {killed['cpu']} CPU-s ({killed['wall']} s wall, exit "
          f"{killed['rc']})", flush=True)
    resumed = job(WORK / "killed", dump, args.master, extra + ["--resume"])
    print(f"resumed: {resumed['cpu']} CPU-s ({resumed['wall']} s wall) {resumed['by_kind']}", flush=True)
    report = json.loads((WORK / "killed" / "manifest.json").read_text()).get("resumed")
    print(f"resumed run reused: {json.dumps(report)}")
    same = published(WORK / "full") == published(WORK / "killed")
    ratio = resumed["cpu"] / full["cpu"]
    print(f"resumed / uninterrupted CPU: {ratio:.2f} (goal <= 0.50 for a kill at 0.60); killed + resumed / "
          f"uninterrupted: {(killed['cpu'] + resumed['cpu']) / full['cpu']:.2f}; same bytes: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
