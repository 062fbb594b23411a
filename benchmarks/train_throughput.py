"""Fine-tuning throughput: our trainer vs the Hugging Face `Trainer`, same model, batch and data.

A BERT model is built from a config (nothing is downloaded) with a WordPiece tokenizer
trained here on the data; both trainers fine-tune it for the same number of optimisation
steps with the same batch size, learning-rate schedule and precision (bf16 autocast on a
GPU that has it, fp16 otherwise, fp32 on CPU). Printed: samples/s and real (non-pad)
tokens/s for each, and the ratio ours / HF.

    # GPU, the issue's setting: BERT-base size, a few thousand SciNLI pairs
    python benchmarks/train_throughput.py --size base --steps 200 --batch-size 32
    # CPU smoke run
    python benchmarks/train_throughput.py --size tiny --steps 20 --batch-size 16

Our trainer runs without the per-epoch dynamics pass (HF has none); `--with-dynamics`
adds it to our side to show its cost.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

SIZES = {  # (hidden, layers, heads, intermediate)
    "tiny": (128, 2, 2, 512),
    "small": (256, 4, 4, 1024),
    "base": (768, 12, 12, 3072),
}
SHARED = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))


def load_pairs(n: int) -> pd.DataFrame:
    from trainer.data import load_nli

    files = [SHARED / "nli" / "scinli-train-2k-human.jsonl", SHARED / "nli" / "scinli-dev.jsonl"]
    if all(f.exists() for f in files):
        df = pd.concat(load_nli(files, premise="sentence1", hypothesis="sentence2").values(), ignore_index=True)
        source = "SciNLI (train-2k-human + dev)"
    else:
        from tests.trainer_fixtures import synthetic_nli

        df, source = synthetic_nli(4000), "synthetic pairs (shared data not found)"
    reps = math.ceil(n / len(df))
    df = pd.concat([df] * reps, ignore_index=True).iloc[:n]
    df["id"] = [f"r{i}" for i in range(len(df))]
    return df, source


def build_model_dir(folder: Path, texts: list[str], size: str, max_len: int) -> Path:
    from trainer.models.transformer import build_untrained_bert

    hidden, layers, heads, inter = SIZES[size]
    return build_untrained_bert(folder, texts, tokenizer_vocab=30522, config_vocab=30522, hidden=hidden,
                                layers=layers, heads=heads, intermediate=inter,
                                max_positions=max(512, max_len), seed=0)


def ours(model_dir: Path, df: pd.DataFrame, labels: list[str], args, group_by_length=True, dynamics=False) -> dict:
    from trainer.loop import default_schedule
    from trainer.models import FitContext
    from trainer.models.transformer import Transformer

    params = {"pretrained": str(model_dir), "batch_size": args.batch_size, "max_length": args.max_length,
              "lr": 2e-5, "epochs": 1, "patience": 0, "progress": False, "group_by_length": group_by_length}
    model = Transformer(labels, "pair", params)
    # the same rows in the same number as HF: `steps` batches of the shuffled data
    lengths = None
    if group_by_length:
        model._build(str(model_dir))
        lengths = model.encode(df).lengths
    epochs = math.ceil(args.steps * args.batch_size / len(df))
    schedule = default_schedule(len(df), step_size=args.batch_size, epochs=epochs, seed=0, lengths=lengths,
                                group_by_length=group_by_length)[: args.steps]
    out = Path(tempfile.mkdtemp()) if dynamics else None
    ctx = FitContext(seed=0, schedule=schedule, out_dir=out, dynamics_df=df if dynamics else None)
    t0 = time.perf_counter()
    model.fit(df, None, ctx)
    wall = time.perf_counter() - t0
    train_s = model.state.train_seconds  # the loop's own clock: no tokenization, no model loading
    if dynamics:  # the extra pass runs outside the training clock: add it
        train_s += model.state.extra["dynamics"]["seconds"]
    rows = [i for step in schedule for i in step]
    return {"samples": len(rows), "tokens": int(model.encode(df).lengths[rows].sum()), "seconds": train_s,
            "wall_with_setup": wall}


def hf(model_dir: Path, df: pd.DataFrame, labels: list[str], args) -> dict:
    import datasets
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                              TrainingArguments)

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    index = {l: i for i, l in enumerate(labels)}
    enc = tok(df["premise"].tolist(), df["hypothesis"].tolist(), truncation=True, max_length=args.max_length)
    ds = datasets.Dataset.from_dict({**{k: enc[k] for k in ("input_ids", "token_type_ids", "attention_mask")},
                                     "labels": [index[l] for l in df["label"]]})
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), num_labels=len(labels))
    cuda = torch.cuda.is_available()
    bf16 = cuda and torch.cuda.is_bf16_supported()
    targs = TrainingArguments(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=args.batch_size,
                              max_steps=args.steps, learning_rate=2e-5, warmup_steps=int(0.1 * args.steps), weight_decay=0.01,
                              lr_scheduler_type="linear", max_grad_norm=1.0, bf16=bf16, fp16=cuda and not bf16,
                              logging_steps=10 ** 9, save_strategy="no", eval_strategy="no", report_to=[],
                              dataloader_num_workers=0, seed=0, disable_tqdm=True, use_cpu=not cuda)
    trainer = Trainer(model=model, args=targs, train_dataset=ds,
                      data_collator=DataCollatorWithPadding(tok, pad_to_multiple_of=8 if cuda else None))
    t0 = time.perf_counter()
    result = trainer.train()
    wall = time.perf_counter() - t0
    samples = args.steps * args.batch_size
    mean_tokens = float(np.mean([len(x) for x in enc["input_ids"]]))
    return {"samples": samples, "tokens": int(samples * mean_tokens), "seconds": result.metrics["train_runtime"],
            "wall_with_setup": wall}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=sorted(SIZES), default="base" if torch.cuda.is_available() else "tiny")
    p.add_argument("--pairs", type=int, default=4000)
    p.add_argument("--steps", type=int, default=200 if torch.cuda.is_available() else 20)
    p.add_argument("--batch-size", type=int, default=32 if torch.cuda.is_available() else 16)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--with-dynamics", action="store_true")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args()
    import transformers

    transformers.logging.set_verbosity_error()
    df, source = load_pairs(args.pairs)
    labels = sorted(df["label"].unique())
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU ({torch.get_num_threads()} threads)"
    print(f"device: {device}; model: BERT-{args.size} {SIZES[args.size]} from a config; data: {len(df)} {source}")
    print(f"steps: {args.steps}, batch size: {args.batch_size}, max length: {args.max_length}")
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_model_dir(Path(tmp) / "bert", df["premise"].tolist() + df["hypothesis"].tolist(),
                                    args.size, args.max_length)
        results = {"hf_trainer": hf(model_dir, df, labels, args),
                   "ours": ours(model_dir, df, labels, args),
                   "ours_no_length_grouping": ours(model_dir, df, labels, args, group_by_length=False)}
        if args.with_dynamics:
            results["ours_with_dynamics"] = ours(model_dir, df, labels, args, dynamics=True)
    base = results["hf_trainer"]
    print(f"{'trainer':28s} {'samples/s':>10s} {'tokens/s':>10s} {'train s':>8s} {'vs HF':>6s}")
    for name, r in results.items():
        r["samples_per_s"] = r["samples"] / r["seconds"]
        r["tokens_per_s"] = r["tokens"] / r["seconds"]
        r["ratio_vs_hf"] = r["samples_per_s"] / (base["samples"] / base["seconds"])
        print(f"{name:28s} {r['samples_per_s']:10.1f} {r['tokens_per_s']:10.0f} {r['seconds']:8.2f} "
              f"{r['ratio_vs_hf']:5.2f}x")
    if args.json:
        args.json.write_text(json.dumps({"device": device, "args": vars(args) | {"json": str(args.json)},
                                         "results": results}, indent=2))


if __name__ == "__main__":
    main()
