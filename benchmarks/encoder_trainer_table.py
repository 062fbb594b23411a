"""tfidf-lr, the frozen-encoder baseline (`e5-linear`) and the fine-tuned
`transformer --pretrained multilingual-e5-small` on SciNLI-2k: train on
scinli-train-2k-human.jsonl, score scinli-dev.jsonl (macro-F1, accuracy), CPU and wall
seconds of each `python -m trainer train` process, offline (HF_HUB_OFFLINE=1).

    python benchmarks/encoder_trainer_table.py --epochs 1 --json benchmarks/results/encoder-trainer-table.json \
        --markdown benchmarks/results/encoder-trainer-table.md

The encoder is the set-up's checkpoint (python -m extractor.encoder build). Fine-tuning is
capped (``--epochs``, ``--max-length 128``) for a CPU; no validation file (the last epoch).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
COLUMNS = ["--premise", "sentence1", "--hypothesis", "sentence2"]
SYSTEMS = {"tfidf-lr": ["--model", "tfidf-lr"],
           "e5-linear": ["--model", "e5-linear"],
           "transformer": ["--model", "transformer", "--pretrained", "multilingual-e5-small", "--no-progress",
                           "--max-length", "128"]}


def run(name: str, extra: list[str], args, work: Path) -> dict:
    out = work / name
    cmd = [sys.executable, "-m", "trainer", "train", "--train", str(args.train), "--test", str(args.dev),
           *COLUMNS, "--output", str(out), "--overwrite", *SYSTEMS[name], *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(work / f"{name}.log", "w") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=REPO,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc:
        sys.exit(f"error: {name} failed (exit {rc}); see {work / f'{name}.log'}")
    m = next(iter(json.loads((out / "metrics.json").read_text()).values()))
    config = json.loads((out / "config.json").read_text())
    return {"macro_f1": m["macro_f1"], "accuracy": m["accuracy"], "wall_s": wall,
            "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
            "params": {k: v for k, v in config.get("params", {}).items()
                       if k in ("C", "epochs", "lr", "head_lr", "batch_size", "max_length", "pooling", "encoding")}}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--train", type=Path, default=SHARED / "nli" / "scinli-train-2k-human.jsonl")
    p.add_argument("--dev", type=Path, default=SHARED / "nli" / "scinli-dev.jsonl")
    p.add_argument("--epochs", type=int, default=1, help="fine-tuning epochs of the transformer")
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    p.add_argument("--work", type=Path, default=REPO / "runs" / "encoder-table")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument("--markdown", type=Path, default=None)
    args = p.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.systems:
        extra = ["--epochs", str(args.epochs)] if name == "transformer" else []
        results[name] = run(name, extra, args, args.work)
        r = results[name]
        print(f"{name}: macro-F1 {r['macro_f1']:.4f} accuracy {r['accuracy']:.4f} "
              f"({r['cpu_s']:.0f} CPU-s, {r['wall_s']:.0f} s wall) {r['params']}", flush=True)
    lines = ["| model | settings | macro-F1 | accuracy | CPU s | wall s |", "|---|---|---:|---:|---:|---:|"]
    for name, r in results.items():
        settings = ", ".join(f"{k} {v}" for k, v in r["params"].items())
        lines.append(f"| `{name}` | {settings} | {r['macro_f1']:.3f} | {r['accuracy']:.3f} | "
                     f"{r['cpu_s']:.0f} | {r['wall_s']:.0f} |")
    table = "\n".join(lines)
    print(table)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    if args.markdown:
        args.markdown.write_text(f"SciNLI-2k train -> scinli-dev (2,000 pairs)\n\n{table}\n")


if __name__ == "__main__":
    main()
