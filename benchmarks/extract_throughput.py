"""Throughput of the sentences stage against WikiExtractor, per core, and its scaling.

For stage 1 figures only: the repeated dump copies pages, so nearly every pair of it is an
identical repeat (779 pairs from 534k sentences on 200 MB) and it under-states stages 2 and
3 (pairing, POS filter, splits); benchmarks/scale.py runs the whole job on dumps of unique
pages (docs/scale.md).

    .venv/bin/python benchmarks/extract_throughput.py --sizes 50,200

For each size (MB of uncompressed XML) it builds a dump by repeating the pages of the real
enwiki sample (../shared/data/dumps/enwiki-sample-206pages.xml.bz2) under new page ids and
titles (into benchmarks/_work/, git-ignored), then runs

- `jobs/extract.py --stages sentences` with --master local[2] (every size: worker peak
  memory must stay flat as the dump grows) and local[1] (the largest size: 1 -> 2 core
  speed-up),
- WikiExtractor 3.x `--json --processes 1 --no-templates` on the largest dump,

the largest size in `--rounds` rounds of (ours local[1], WikiExtractor, ours local[2]) back
to back: CPU speed on a shared virtual machine drifts by a third within minutes, so the
peers are compared within each round and the median of the rounds is reported. It prints pages/s and MB/s per core, the 2-core speed-up, and our per-core throughput
divided by WikiExtractor's. CPU time is summed over the whole process tree (JVM, Python
workers; WikiExtractor's own processes) by sampling with psutil, so "per core" means per
CPU-second actually spent. Punkt is trained once beforehand and passed with
--punkt-params, so that every run measures the same work (its training time is printed),
and the JVM's class-data archive (extractor/spark/jvm.py) is created before the first run.
"""
from __future__ import annotations

import argparse
import bz2
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
WORK = REPO / "benchmarks" / "_work"
SHARED = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
SOURCE = SHARED / "dumps" / "enwiki-sample-206pages.xml.bz2"
PY = sys.executable


def build_dump(size_mb: int) -> tuple[Path, dict]:
    """enwiki pages repeated under new ids until `size_mb` MB of XML, bzip2-compressed."""
    path = WORK / f"enwiki-repeat-{size_mb}mb.xml.bz2"
    meta_path = path.with_suffix(".json")
    if path.exists() and meta_path.exists():
        return path, json.loads(meta_path.read_text())
    WORK.mkdir(parents=True, exist_ok=True)
    text = bz2.open(SOURCE).read().decode("utf-8")
    head, rest = text.split("<page>", 1)
    pages = ("<page>" + rest).split("</page>")
    tail = pages.pop()
    pages = [p + "</page>" for p in pages]
    target = size_mb * 1_000_000
    comp = bz2.BZ2Compressor(9)
    written, n_pages, copy = 0, 0, 0
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        def put(s: str):
            nonlocal written
            data = s.encode("utf-8")
            written += len(data)
            fh.write(comp.compress(data))
        put(head)
        while written < target:
            for page in pages:
                new_id = copy * 10_000_000 + int(re.search(r"<id>(\d+)</id>", page).group(1))
                page = re.sub(r"<id>\d+</id>", f"<id>{new_id}</id>", page, count=1)
                if copy:
                    page = re.sub(r"<title>(.*?)</title>", lambda m: f"<title>{m.group(1)} ({copy})</title>", page, count=1)
                put(page)
                n_pages += 1
                if written >= target:
                    break
            copy += 1
        put(tail)
        fh.write(comp.flush())
    tmp.replace(path)
    meta = {"xml_bytes": written, "bz2_bytes": path.stat().st_size, "pages": n_pages}
    meta_path.write_text(json.dumps(meta))
    return path, meta


class TreeMonitor:
    """Samples a process tree: CPU seconds per process (last value seen) and peak RSS."""

    def __init__(self, root_pid: int, interval: float = 0.1):
        self.root = psutil.Process(root_pid)
        self.interval = interval
        self.cpu: dict = {}
        self.kinds: dict = {}
        self.peak_rss: dict = {}   # kind -> bytes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def kind(proc) -> str:
        try:
            cmd = " ".join(proc.cmdline())
        except psutil.Error:
            return "other"
        if "pyspark.daemon" in cmd or "pyspark.worker" in cmd:
            return "python_worker"
        try:
            name = proc.name()
        except psutil.Error:
            return "other"
        if "java" in name:
            return "jvm"
        if "wikiextractor" in cmd.lower() or "WikiExtractor" in cmd:
            return "wikiextractor"
        return "driver"

    def _sample(self) -> list | None:
        """One sample of the tree: each process's CPU seconds (by pid and start time), kind
        and the kinds' peak RSS. Returns (kind, rss) per process sampled; None when the root
        is gone."""
        try:
            procs = [self.root] + self.root.children(recursive=True)
        except psutil.Error:
            return None
        seen = []
        for proc in procs:
            try:
                times = proc.cpu_times()
                rss = proc.memory_info().rss
                key = (proc.pid, proc.create_time())
            except psutil.Error:
                continue
            kind = self.kind(proc)  # not cached: spark-submit's shell script execs java under the same pid
            if kind == "other" and key in self.kinds:   # a process on its way out: its cmdline is gone
                kind = self.kinds[key]
            self.kinds[key] = kind
            self.cpu[key] = times.user + times.system
            self.peak_rss[kind] = max(self.peak_rss.get(kind, 0), rss)
            seen.append((kind, rss))
        return seen

    def _run(self):
        while not self._stop.is_set():
            self._sample()
            time.sleep(self.interval)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._sample()
        self._stop.set()
        self._thread.join()

    @property
    def cpu_seconds(self) -> float:
        return sum(self.cpu.values())

    @property
    def cpu_by_kind(self) -> dict:
        out: dict = {}
        for key, value in self.cpu.items():
            out[self.kinds[key]] = out.get(self.kinds[key], 0.0) + value
        return {k: round(v, 1) for k, v in sorted(out.items())}


def run_monitored(cmd: list[str], log: Path, env: dict | None = None, cwd: Path = REPO) -> tuple[float, TreeMonitor, int]:
    with open(log, "w") as fh:
        t0 = time.time()
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env)
        mon = TreeMonitor(proc.pid).start()
        rc = proc.wait()
        wall = time.time() - t0
        mon.stop()
    return wall, mon, rc


def run_ours(dump: Path, cores: int, params: Path, tag: str, extra: list[str] = (), code: Path | None = None) -> dict:
    """Our job on `dump`; `code`: another checkout of the engine to run instead (its
    extractor/ comes first on the path of the driver and the Python workers)."""
    out = WORK / f"out-{tag}-local{cores}"
    cmd = [PY, str((code or REPO) / "jobs" / "extract.py"), "--lang", "en", "--input", str(dump), "--output",
           str(out), "--stages", "sentences", "--overwrite", "--master", f"local[{cores}]", "--punkt-params",
           str(params), *extra]
    env = dict(os.environ, PYTHONPATH=str(code)) if code else None
    # the workers (python -m pyspark.daemon) put their working directory first on the path
    wall, mon, rc = run_monitored(cmd, WORK / f"log-{tag}-local{cores}.txt", env, code or REPO)
    if rc != 0:
        raise SystemExit(f"our job failed (rc {rc}); see {WORK / f'log-{tag}-local{cores}.txt'}")
    stats = json.loads((out / "stats.json").read_text())
    return {"cores": cores, "wall_s": wall, "stage_s": stats["job"]["seconds"]["sentences"],
            "cpu_s": mon.cpu_seconds, "cpu_by_kind": mon.cpu_by_kind, "peak_rss": mon.peak_rss,
            "sentences": stats["sentences"]["sentences"]["total"], "pages": stats["sentences"]["documents"]["read"]}


def run_wikiextractor(dump: Path) -> dict:
    out = WORK / "out-wikiextractor"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [PY, "-m", "wikiextractor.WikiExtractor", "--json", "--processes", "1", "--no-templates", "-q",
           "-o", str(out), str(dump)]
    wall, mon, rc = run_monitored(cmd, WORK / "log-wikiextractor.txt")
    if rc != 0:
        raise SystemExit(f"WikiExtractor failed (rc {rc}); see {WORK / 'log-wikiextractor.txt'}")
    return {"wall_s": wall, "cpu_s": mon.cpu_seconds, "peak_rss": mon.peak_rss}


def train_params(dump: Path) -> tuple[Path, float]:
    """Punkt parameters trained once by the job itself, on the real sample the dumps are
    built from: trained on a repeated dump, Punkt would learn from the same text twice
    (its --punkt-sample-mb of 4 MB holds 1.6 copies of the sample's 2.5 MB of cleaned
    text) and cut the text into about 10% fewer sentences than on any real dump."""
    params = WORK / "punkt_params-sample.json"
    if params.exists():
        return params, 0.0
    out = WORK / "out-train"
    t0 = time.time()
    subprocess.run([PY, "jobs/extract.py", "--lang", "en", "--input", str(dump), "--output", str(out),
                    "--stages", "sentences", "--overwrite", "--master", "local[2]"], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stats = json.loads((out / "stats.json").read_text())
    shutil.copy(out / "punkt_params.json", params)
    return params, stats["sentences"]["punkt"]["seconds"]


def _summary(runs: list[dict], key: str) -> tuple[float, float]:
    values = sorted(r[key] for r in runs)
    return values[0], statistics.median(values)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50,200", help="dump sizes in MB of XML, comma-separated")
    ap.add_argument("--rounds", "--repeat", dest="repeat", metavar="N", type=int, default=3,
                    help="rounds on the largest dump; each round runs ours local[1], WikiExtractor and ours "
                         "local[2] back to back, so that drifts in machine speed hit all three alike")
    ap.add_argument("--jvm-tuning", choices=("startup", "throughput"), default="startup",
                    help="passed to the job (startup: C1 JIT + class-data archive; see extractor/spark/jvm.py)")
    ap.add_argument("--skip-wikiextractor", action="store_true")
    ap.add_argument("--skip-one-core", action="store_true")
    ap.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                    help="another checkout of the engine (e.g. `git archive COMMIT jobs extractor phrase_lexicons "
                         "| tar -x -C DIR`), run with local[1] in every round just before ours: old against new code")
    args = ap.parse_args()
    if not SOURCE.exists():
        raise SystemExit(f"{SOURCE} not found (set NLI_SHARED_DATA)")
    sizes = sorted(int(s) for s in args.sizes.split(","))
    dumps = {}
    for size in sizes:
        t0 = time.time()
        dumps[size] = build_dump(size)
        m = dumps[size][1]
        print(f"dump {size} MB: {m['xml_bytes'] / 1e6:.1f} MB XML, {m['bz2_bytes'] / 1e6:.1f} MB bz2, "
              f"{m['pages']} pages (built/cached in {time.time() - t0:.0f}s)", flush=True)
    params, train_s = train_params(SOURCE)
    print(f"Punkt parameters: {params} (" + (f"trained once in {train_s:.1f}s on the driver" if train_s else "cached from an earlier run") + "; passed to every run)")
    if args.jvm_tuning == "startup":
        sys.path.insert(0, str(REPO))
        from extractor.spark.jvm import archive_path, create_archive

        existed = archive_path() is not None and archive_path().exists()
        t0 = time.time()
        archive = create_archive(REPO)
        print(f"JVM class-data archive: {archive} (" + ("present" if existed else f"created once in {time.time() - t0:.0f}s") + ")")
    extra = ["--jvm-tuning", args.jvm_tuning]

    results = {"ours": {}, "wikiextractor": [], "machine": {"cpus": os.cpu_count(),
                                                            "load_avg_at_start": os.getloadavg()}}

    def show(r: dict, size: int, meta: dict) -> None:
        mb, cores = r["mb"], r["cores"]
        print(f"ours local[{cores}] {size} MB: stage {r['stage_s']:.1f}s wall (job {r['wall_s']:.1f}s), "
              f"{r['cpu_s']:.1f} CPU-s | per core: {mb / r['cpu_s']:.2f} MB/CPU-s, "
              f"{meta['pages'] / r['cpu_s']:.0f} pages/CPU-s; wall-based {mb / r['stage_s'] / cores:.2f} MB/s/core, "
              f"{meta['pages'] / r['stage_s'] / cores:.0f} pages/s/core | peak RSS python worker "
              f"{r['peak_rss'].get('python_worker', 0) / 2**20:.0f} MiB, JVM {r['peak_rss'].get('jvm', 0) / 2**20:.0f} MiB "
              f"| {r['sentences']} sentences | CPU-s by process: {r['cpu_by_kind']}", flush=True)

    def ours(size: int, cores: int) -> dict:
        dump, meta = dumps[size]
        r = run_ours(dump, cores, params, f"{size}mb", extra)
        r["mb"] = meta["xml_bytes"] / 1e6
        results["ours"].setdefault(f"{size}mb-local{cores}", []).append(r)
        show(r, size, meta)
        return r

    for size in sizes[:-1]:
        ours(size, 2)
    big = sizes[-1]
    mb = dumps[big][1]["xml_bytes"] / 1e6
    rounds = []
    for round_no in range(1, max(1, args.repeat) + 1):
        print(f"-- round {round_no} on the {big} MB dump", flush=True)
        this = {}
        if args.baseline:
            b = run_ours(dumps[big][0], 1, params, f"{big}mb-baseline", extra, code=args.baseline.resolve())
            this["base"] = b
            results["ours"].setdefault(f"{big}mb-baseline-local1", []).append(b)
            print(f"baseline ({args.baseline}) local[1] {big} MB: {b['cpu_s']:.1f} CPU-s, stage {b['stage_s']:.1f}s wall "
                  f"| {b['sentences']} sentences | CPU-s by process: {b['cpu_by_kind']}", flush=True)
        if not args.skip_one_core:
            this["one"] = ours(big, 1)
        if not args.skip_wikiextractor:
            w = this["we"] = run_wikiextractor(dumps[big][0])
            results["wikiextractor"].append(w)
            print(f"WikiExtractor --json --processes 1 --no-templates {big} MB: {w['wall_s']:.1f}s wall, "
                  f"{w['cpu_s']:.1f} CPU-s, {mb / w['cpu_s']:.2f} MB/CPU-s, {mb / w['wall_s']:.2f} MB/s wall, "
                  f"{w['cpu_s'] / w['wall_s']:.2f} CPUs busy", flush=True)
        this["two"] = ours(big, 2)
        ref = this.get("one", this["two"])
        if "one" in this:
            this["speedup"] = this["one"]["stage_s"] / this["two"]["stage_s"]
        if "we" in this:
            this["ratio"] = this["we"]["cpu_s"] / ref["cpu_s"]
            if "base" in this:
                this["baseline_ratio"] = this["we"]["cpu_s"] / this["base"]["cpu_s"]
        print(f"   round {round_no}: " + ", ".join(f"{k} {this[k]:.2f}x" for k in ("ratio", "baseline_ratio", "speedup")
                                                   if k in this), flush=True)
        rounds.append({k: v for k, v in this.items() if k in ("ratio", "baseline_ratio", "speedup")})
    results["rounds"] = rounds

    print(f"== summary, {big} MB dump, {max(1, args.repeat)} rounds (best / median)")
    one, two = results["ours"].get(f"{big}mb-local1"), results["ours"][f"{big}mb-local2"]
    for name, runs in (("local[1]", one), ("local[2]", two)):
        if runs:
            best, med = _summary(runs, "cpu_s")
            print(f"ours {name}: {best:.1f} / {med:.1f} CPU-s = {mb / best:.2f} / {mb / med:.2f} MB per CPU-second")
    if one:
        speedups = [r["speedup"] for r in rounds]
        results["speedup_1_to_2"] = statistics.median(speedups)
        print(f"speed-up local[1] -> local[2] (stage wall time, per round): "
              f"{', '.join(f'{x:.2f}x' for x in speedups)}; median {statistics.median(speedups):.2f}x (target >= 1.7x)")
    if results["wikiextractor"]:
        wbest, wmed = _summary(results["wikiextractor"], "cpu_s")
        print(f"WikiExtractor: {wbest:.1f} / {wmed:.1f} CPU-s = {mb / wbest:.2f} / {mb / wmed:.2f} MB per CPU-second")
        ratios = [r["ratio"] for r in rounds]
        results["ratio_vs_wikiextractor_per_cpu_second"] = statistics.median(ratios)
        print(f"ours (local[{(one or two)[0]['cores']}]) / WikiExtractor, MB per CPU-second, per round: "
              f"{', '.join(f'{x:.2f}x' for x in ratios)}; median {statistics.median(ratios):.2f}x (target >= 1.0x)")
    mems = {k: max(r["peak_rss"].get("python_worker", 0) for r in v) / 2**20
            for k, v in results["ours"].items() if k.endswith("local2")}
    print("python worker peak RSS by dump size (local[2]): " + ", ".join(f"{k.split('-')[0]}: {v:.0f} MiB" for k, v in mems.items()))
    results["machine"]["load_avg_at_end"] = os.getloadavg()
    (WORK / "results.json").write_text(json.dumps(results, indent=2))
    print(f"machine: {os.cpu_count()} CPUs, load average at start {results['machine']['load_avg_at_start'][0]:.1f}, "
          f"at end {results['machine']['load_avg_at_end'][0]:.1f} (other work on the machine skews wall times)")


if __name__ == "__main__":
    main()
