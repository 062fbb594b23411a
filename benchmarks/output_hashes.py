"""sha256 of every output file of the job on fixed inputs: the byte-identity check of a
refactor (issue "One stage contract": the output bytes do not change).

    .venv/bin/python benchmarks/output_hashes.py --record benchmarks/_work/hashes/base.json
    .venv/bin/python benchmarks/output_hashes.py --compare benchmarks/_work/hashes/base.json
    .venv/bin/python benchmarks/output_hashes.py --code /path/to/other/checkout --record old.json

Configurations: the bundled samples (ro, es, en) as they were at commit BASE (extracted
from git, so a newer bundled sample does not change this check), the 200 MB repeated enwiki
benchmark dump (benchmarks/extract_throughput.py builds it), the 250 MB dump of unique pages
from the dense pool of benchmarks/scale.py (`dense250`), and the ELTeC Romanian novels
of ../shared/data. Each runs the whole job (`local[2]`, POS filter as the default: on where
the model is installed). Every file under the published run is hashed except manifest.json
(run id, times); stats.json is hashed without the fields that differ between any two runs
(run id, seconds, command line, versions); in every text file the output folder's path is
replaced by `<OUTPUT>` (the card quotes the command line).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests import run_hashes  # noqa: E402

WORK = REPO / "benchmarks" / "_work"
SHARED = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
BASE = "a12f089"  # the commit whose bundled samples the sample configurations read
SAMPLES = {"ro": "samples/ro/rowiki-sample-pages-articles.xml",
           "es": "samples/es/eswiki-sample-pages-articles.xml",
           "en": "samples/en/en-sample-pages-articles.xml"}
VOLATILE_JOB = (*run_hashes.VOLATILE_JOB, "command_line", "corpora", "versions", "spark_master")


def sample_input(lang: str) -> Path:
    dest = WORK / "hash-inputs" / BASE / Path(SAMPLES[lang]).name
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        data = subprocess.run(["git", "-C", str(REPO), "show", f"{BASE}:{SAMPLES[lang]}"],
                              check=True, capture_output=True).stdout
        dest.write_bytes(data)
    return dest


def configurations(names: list[str]) -> dict[str, list[str]]:
    out = {}
    for name in names:
        if name in SAMPLES:
            out[name] = ["--lang", name, "--input", str(sample_input(name)), "--corpus", f"{name}-sample"]
        elif name == "enwiki200":
            sys.path.insert(0, str(REPO / "benchmarks"))
            from extract_throughput import build_dump  # the benchmark's own dump builder

            dump, _ = build_dump(200)
            out[name] = ["--lang", "en", "--input", str(dump)]
        elif name == "dense250":
            sys.path.insert(0, str(REPO / "benchmarks"))
            from scale import build_dump as build_scale_dump  # the scale benchmark's dense pool

            dump, _ = build_scale_dump(250, os.cpu_count() or 2, kind="dense")
            out[name] = ["--lang", "ro", "--input", str(dump)]
        elif name == "eltec-rom-20":
            out[name] = ["--lang", "ro", "--input", str(SHARED / "text" / "eltec-rom-20")]
        else:
            raise SystemExit(f"error: unknown configuration {name!r}")
    return out


TEXT_SUFFIXES = {".md", ".json", ".txt", ".csv", ".tsv"}


def hash_run(root: Path) -> dict[str, str]:
    """sha256 of every file of the published run under `root`; in text files the output
    root's path (the card and splits/stats.json quote the command line) is replaced by
    `<OUTPUT>` first, so runs written to different folders compare equal."""
    run = root if not (root / "current").exists() else root / "current"
    hashes = run_hashes.published_hashes(run, VOLATILE_JOB, (str(root.absolute()).encode(), b"<OUTPUT>"), TEXT_SUFFIXES)
    if "stats.json" in hashes:
        hashes["stats.json (normalised)"] = hashes.pop("stats.json")  # the name the recorded files use
    return hashes


def run_job(code: Path, name: str, args: list[str], extra: list[str]) -> dict[str, str]:
    out = WORK / "hash-runs" / f"{code.name}-{os.getpid()}" / name  # one folder per invocation: several may run
    env = dict(os.environ, PYTHONPATH=str(code), SPARK_LOCAL_IP="127.0.0.1",
               PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    cmd = [sys.executable, str(code / "jobs" / "extract.py"), *args, "--output", str(out), "--overwrite",
           "--master", "local[2]", *extra]
    t0 = time.time()
    proc = subprocess.run(cmd, env=env, cwd=str(code), capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-5000:])
        raise SystemExit(f"error: {name}: the job exited {proc.returncode}")
    print(f"[{name}] {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    hashes = hash_run(out)
    shutil.rmtree(out, ignore_errors=True)
    return hashes


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", type=Path, default=REPO, help="checkout whose jobs/extract.py and extractor/ run")
    ap.add_argument("--configs", default="ro,es,en,eltec-rom-20,dense250")
    ap.add_argument("--record", type=Path, help="write the hashes to this JSON file")
    ap.add_argument("--compare", type=Path, help="compare with the hashes of this JSON file (exit 1 on a difference)")
    ap.add_argument("--job-arg", action="append", default=[], help="an extra job argument; repeatable")
    ap.add_argument("--hash-only", type=Path, metavar="DIR",
                    help="no job: hash the outputs already under DIR/<config> (one folder per configuration)")
    args = ap.parse_args(argv)
    result = {}
    for name, job_args in configurations(args.configs.split(",")).items():
        if args.hash_only:
            result[name] = hash_run(args.hash_only / name)
        else:
            result[name] = run_job(args.code.resolve(), name, job_args, args.job_arg)
        print(f"[{name}] {len(result[name])} files", flush=True)
    if args.record:
        args.record.parent.mkdir(parents=True, exist_ok=True)
        args.record.write_text(json.dumps(result, indent=1, sort_keys=True))
    if args.compare:
        old = json.loads(args.compare.read_text())
        bad = 0
        for name, hashes in result.items():
            before = old.get(name, {})
            for rel in sorted(set(before) | set(hashes)):
                if before.get(rel) != hashes.get(rel):
                    bad += 1
                    print(f"DIFFERS {name}: {rel} {before.get(rel, 'missing')[:12]} -> {hashes.get(rel, 'missing')[:12]}")
            same = sum(before.get(r) == h for r, h in hashes.items())
            print(f"[{name}] {same} of {len(set(before) | set(hashes))} files identical")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
