"""`--dry-run`'s estimate against the measured run, on small and large real inputs (issue 56).

    .venv/bin/python benchmarks/estimate_check.py                    # the bundled sample, two small real dumps
    .venv/bin/python benchmarks/estimate_check.py --dense-mb 1000    # and scale.py's 1 GB dense pool (minutes)

Each input is estimated by the job's own cost model (`extractor.job.cost_model.estimate` on
the MB of text `--dry-run` counts) and then run through `./spark-submit.sh` (local[*], the
job's defaults, a fresh output). Measured: wall time, and the CPU of every process of the run
(the JVM, the driver and the Python workers the JVM forks) from a cpuacct cgroup made for the
run (Linux cgroup v1 `/sys/fs/cgroup/cpuacct`, root); without one, the figure falls back to
the rusage of the reaped children (`os.wait4`), which misses the workers and says so. Prints,
per input, the estimate's range, the measurement and measured / estimate at both ends: the
estimate holds when the measurement lies within 1.5x of the range.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from extractor import runs  # noqa: E402
from extractor.job import cost_model  # noqa: E402
from extractor.job.stages import NAMES, selected  # noqa: E402
from jobs.extract import build_parser  # noqa: E402

SHARED = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
CGROUP = Path("/sys/fs/cgroup/cpuacct")


def news_slice(mb: float, folder: Path) -> Path:
    """The first `mb` MB of whole records of the Romanian news JSONL: a small real input."""
    out = folder / f"ro-news-{mb:g}mb.jsonl"
    with open(SHARED / "text/ro-news/ro-news-realitatea-aleph.jsonl", "rb") as f, open(out, "wb") as w:
        size = 0
        for line in f:
            if size + len(line) > mb * 1e6:
                break
            w.write(line)
            size += len(line)
    return out


def measure(argv: list[str]) -> dict:
    """Run the job; its wall time and CPU (cgroup, else reaped children's rusage)."""
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    cmd = [str(REPO / "spark-submit.sh"), "jobs/extract.py", *argv]
    group = CGROUP / f"nli-estimate-{os.getpid()}"
    try:
        group.mkdir()
        (group / "cpuacct.usage").write_text("0")
    except OSError:
        group = None
    started = time.time()
    if group is not None:  # the child joins the cgroup before it execs the job
        proc = subprocess.Popen(["bash", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "_", *cmd], cwd=REPO,
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    else:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate()
    wall = time.time() - started
    if proc.returncode != 0:
        raise SystemExit(f"the run failed ({proc.returncode}): {err[-2000:]}")
    if group is not None:
        cpu, how = int((group / "cpuacct.usage").read_text()) / 1e9, "cgroup: every process of the run"
        group.rmdir()
    else:
        usage = os.times()
        cpu, how = usage.children_user + usage.children_system, "reaped children only (no cgroup): workers missed"
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "cpu_how": how}


def default_stages() -> list[str]:
    """The stages the job runs at its defaults (a stage switched off by default, the semantic
    check, is left out, as `--dry-run` leaves it out)."""
    return list(selected(build_parser().parse_args(["--lang", "ro"]), NAMES))


def estimated(name: str, mb: float, got: dict) -> dict:
    """A row: the estimate of `mb` MB of text beside the measurement `got`."""
    est = cost_model.estimate(mb, default_stages())
    wall = est.wall_s(cost_model.local_cores("local[*]") or 1)
    row = {"input": name, "text_mb": round(mb, 3), "cpu_estimate_s": [round(x, 1) for x in est.cpu_s],
           "wall_estimate_s": [round(x, 1) for x in wall], **got}
    row["cpu_ratio"] = [round(got["cpu_s"] / x, 2) for x in est.cpu_s]
    row["wall_ratio"] = [round(got["wall_s"] / x, 2) for x in wall]
    row["within_1_5x"] = (est.cpu_s[0] / 1.5 <= got["cpu_s"] <= est.cpu_s[1] * 1.5
                          and wall[0] / 1.5 <= got["wall_s"] <= wall[1] * 1.5)
    return row


def check(name: str, argv: list[str], inputs: list[str], output: Path) -> dict:
    mb = sum(cost_model.text_mb(p, runs.input_fingerprint(p)["bytes"]) for p in inputs)
    return estimated(name, mb, measure([*argv, "--output", str(output), "--overwrite"]))


def show(r: dict) -> None:
    print(f"{r['input']}: {r['text_mb']} MB of text; CPU estimate {r['cpu_estimate_s'][0]}-{r['cpu_estimate_s'][1]} s, "
          f"measured {r['cpu_s']} s ({r['cpu_how']}; measured/estimate {r['cpu_ratio'][1]}-"
          f"{r['cpu_ratio'][0]}); wall estimate {r['wall_estimate_s'][0]}-{r['wall_estimate_s'][1]} s, "
          f"measured {r['wall_s']} s (measured/estimate {r['wall_ratio'][1]}-{r['wall_ratio'][0]}); "
          f"within 1.5x: {r['within_1_5x']}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dense-mb", type=int, default=0, help="also scale.py's dense pool of this size (0: not)")
    ap.add_argument("--out", default=None, help="write the rows as JSON here")
    ap.add_argument("--reestimate", default=None, metavar="JSON",
                    help="no run: the estimates of an earlier --out file's measurements, from today's cost model")
    args = ap.parse_args()
    if args.reestimate:
        keep = ("wall_s", "cpu_s", "cpu_how")
        rows = [estimated(r["input"], r["text_mb"], {k: r[k] for k in keep})
                for r in json.loads(Path(args.reestimate).read_text())]
        for r in rows:
            show(r)
        if args.out:
            Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
        return 0
    with tempfile.TemporaryDirectory(prefix="nli-estimate-") as tmp:
        folder = Path(tmp)
        sample = str(REPO / "samples/ro/rowiki-sample-pages-articles.xml")
        news = str(news_slice(2.0, folder))
        enwiki = str(SHARED / "dumps/enwiki-sample-206pages.xml.bz2")
        cases = [("bundled ro sample", ["--lang", "ro"], [sample]),
                 ("ro news, 2 MB JSONL", ["--lang", "ro", "--input", news], [news]),
                 ("enwiki 206 pages, 1.7 MB bz2", ["--lang", "en", "--input", enwiki], [enwiki])]
        if args.dense_mb:
            dump = REPO / f"benchmarks/_work/scale/dense-unique-{args.dense_mb}mb.xml.bz2"
            if not dump.exists():
                subprocess.run([sys.executable, "benchmarks/scale.py", "--sizes", str(args.dense_mb), "--build-only"],
                               cwd=REPO, check=True)
            cases.append((f"dense pool {args.dense_mb} MB", ["--lang", "ro", "--input", str(dump), "--punkt-params",
                          str(REPO / "benchmarks/_work/scale/punkt_params-dense-v1.json")], [str(dump)]))
        rows = []
        for i, (name, argv, inputs) in enumerate(cases):
            rows.append(check(name, argv, inputs, folder / f"out{i}"))
            show(rows[-1])
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
