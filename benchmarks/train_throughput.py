"""Fine-tuning throughput: our trainer vs the Hugging Face `Trainer`, same model, data, batch, precision.

A BERT model is built from a config (nothing is downloaded) with a WordPiece tokenizer
trained here on the data; SciNLI pairs (``$NLI_SHARED_DATA/nli/``, else synthetic pairs)
are repeated to ``--pairs`` examples and tokenized once for both trainers (same
``--max-length``). Both fine-tune for ``--steps`` optimisation steps of ``--batch-size``
rows with the same schedule (AdamW fused, linear warm-up and decay, clipping at 1.0) and
precision (bf16 autocast on a GPU that has it, fp16 otherwise, fp32 on CPU).

Measured: **real tokens per second** (non-padding tokens of the rows trained, counted
exactly on both sides), over the steps after ``--warmup`` (the clock starts and stops
after a device synchronisation, so compilation and start-up are out), padding share,
and peak GPU memory (``torch.cuda.max_memory_allocated``). ``--rounds`` rounds alternate
which trainer runs first. Then each variant in ``--variants`` runs once: one change at a
time against our default or HF's, to show where the difference comes from; ``--in-rounds``
puts variants in every round instead (``ours_compile``: our trainer with ``--compile``).
Every run also prints its whole wall time, start-up and compilation included.

    # GPU, the issue's setting (an H100 80GB: benchmarks/results/, docs/gpu.md)
    python benchmarks/train_throughput.py --size base --pairs 50000 --steps 400 --warmup 50 --batch-size 32 \
        --rounds 3 --in-rounds ours_compile --variants hf_compile,hf_group_by_length --json results.json
    # CPU smoke run
    python benchmarks/train_throughput.py --size tiny --pairs 2000 --steps 12 --warmup 2 --batch-size 16 --rounds 1
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
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
CUDA = torch.cuda.is_available()

# variant name -> (trainer, settings changed from that trainer's default)
VARIANTS = {
    "ours_no_length_grouping": ("ours", {"group_by_length": False}),
    "ours_pad_to_max_length": ("ours", {"pad_to_max": True}),
    "ours_no_prefetch": ("ours", {"prefetch": 0}),
    "ours_unfused_adamw": ("ours", {"fused": False}),
    "hf_group_by_length": ("hf", {"group_by_length": True}),
    "hf_workers_4": ("hf", {"dataloader_num_workers": 4}),
    "ours_compile": ("ours", {"compile": True}),
    "hf_compile": ("hf", {"torch_compile": True}),
}


def load_pairs(n: int) -> tuple[pd.DataFrame, str]:
    from trainer.data.loading import load_nli

    files = [SHARED / "nli" / "scinli-train-2k-human.jsonl", SHARED / "nli" / "scinli-dev.jsonl"]
    if all(f.exists() for f in files):
        df = pd.concat(load_nli(files, premise="sentence1", hypothesis="sentence2").values(), ignore_index=True)
        source = "SciNLI pairs (train-2k-human + dev)"
    else:
        from tests.trainer_fixtures import synthetic_nli

        df, source = synthetic_nli(4000), "synthetic pairs (shared data not found)"
    distinct = len(df)
    reps = math.ceil(n / len(df))
    df = pd.concat([df] * reps, ignore_index=True).iloc[:n][["premise", "hypothesis", "label"]].copy()
    df["id"] = [f"r{i}" for i in range(len(df))]
    return df, f"{len(df)} rows: {distinct} {source}, repeated"


def build_model_dir(folder: Path, texts: list[str], size: str, max_len: int) -> Path:
    from tests.trainer_fixtures import build_untrained_bert

    hidden, layers, heads, inter = SIZES[size]
    return build_untrained_bert(folder, list(dict.fromkeys(texts)), tokenizer_vocab=30522, config_vocab=30522,
                                hidden=hidden, layers=layers, heads=heads, intermediate=inter,
                                max_positions=max(512, max_len), seed=0)


def _sync():
    if CUDA:
        torch.cuda.synchronize()


def _reset_memory():
    gc.collect()
    if CUDA:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def _peak_gib() -> float | None:
    return round(torch.cuda.max_memory_allocated() / 2 ** 30, 2) if CUDA else None


# ---------------------------------------------------------------------------- ours

def ours(model_dir: Path, df: pd.DataFrame, labels: list[str], args, *, group_by_length=True, pad_to_max=False,
         prefetch=None, fused=True, compile=False) -> dict:
    import trainer.models.loop as loop
    from trainer.models.loop import Callback, default_schedule
    from trainer.models import FitContext
    from trainer.models.transformer import Transformer

    params = {"pretrained": str(model_dir), "batch_size": args.batch_size, "max_length": args.max_length,
              "lr": 2e-5, "epochs": 1, "patience": 0, "progress": False, "group_by_length": group_by_length,
              "prefetch": prefetch, "compile": compile}
    model = Transformer(labels, "pair", params)
    model._build(str(model_dir))
    enc = model.encode(df)
    lengths = enc.lengths
    epochs = math.ceil(args.steps * args.batch_size / len(df))
    schedule = default_schedule(len(df), step_size=args.batch_size, epochs=epochs, seed=0,
                                lengths=lengths if group_by_length else None,
                                group_by_length=group_by_length)[: args.steps]
    pad_multiple = args.max_length if pad_to_max else 8

    class Clock(Callback):
        t_warm = t_end = None

        def on_step_end(self, state):
            if state.global_step in (args.warmup, len(schedule)):
                _sync()
                if state.global_step == args.warmup:
                    self.t_warm = time.perf_counter()
                else:
                    self.t_end = time.perf_counter()

    clock = Clock()
    original_adamw, original_encode = loop.adamw, model.encode
    if not fused:
        def adamw(m, lr, wd):  # the same groups, torch's default (for-each) implementation
            groups = [{"params": g["params"], "weight_decay": g["weight_decay"]}
                      for g in original_adamw(m, lr, wd).param_groups]
            return torch.optim.AdamW(groups, lr=lr, fused=False, foreach=True)
        loop.adamw = adamw

    def encode(frame, with_labels=True):  # padding to max length instead of each batch's longest row
        data = original_encode(frame, with_labels)
        data.pad_multiple = pad_multiple
        return data
    model.encode = encode
    _reset_memory()
    t_start = time.perf_counter()
    try:
        model._build = lambda name: None  # built above: keep that model
        model.fit(df, None, FitContext(seed=0, schedule=schedule, callbacks=[clock]))
    finally:
        loop.adamw = original_adamw
    _sync()
    total = time.perf_counter() - t_start
    timed = schedule[args.warmup:]
    real = int(sum(lengths[s].sum() for s in timed))
    padded = int(sum(len(s) * (-(-int(lengths[s].max()) // pad_multiple) * pad_multiple) for s in timed))
    out = {"seconds": clock.t_end - clock.t_warm, "real_tokens": real, "padded_tokens": padded,
           "samples": sum(len(s) for s in timed), "peak_gib": _peak_gib(), "total_s": total,
           "final_loss": model.state.history[-1]["train_loss"]}
    del model
    _reset_memory()
    return out


# ---------------------------------------------------------------------------- Hugging Face

def hf(model_dir: Path, df: pd.DataFrame, labels: list[str], args, **overrides) -> dict:
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                              TrainerCallback, TrainingArguments)

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    index = {l: i for i, l in enumerate(labels)}
    enc = tok(df["premise"].tolist(), df["hypothesis"].tolist(), truncation=True, max_length=args.max_length)
    y = [index[l] for l in df["label"]]
    rows = [{"input_ids": enc["input_ids"][i], "token_type_ids": enc["token_type_ids"][i],
             "attention_mask": enc["attention_mask"][i], "labels": y[i]} for i in range(len(df))]
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(str(model_dir), num_labels=len(labels))
    bf16 = CUDA and torch.cuda.is_bf16_supported()
    settings = dict(output_dir=tempfile.mkdtemp(), per_device_train_batch_size=args.batch_size,
                    max_steps=args.steps, learning_rate=2e-5, warmup_steps=int(0.1 * args.steps), weight_decay=0.01,
                    lr_scheduler_type="linear", max_grad_norm=1.0, bf16=bf16, fp16=CUDA and not bf16,
                    optim="adamw_torch_fused" if CUDA else "adamw_torch", logging_steps=10 ** 9,
                    save_strategy="no", eval_strategy="no", report_to=[], dataloader_num_workers=0,
                    seed=0, disable_tqdm=True, use_cpu=not CUDA)
    settings.update(overrides)
    fields = {f.name for f in dataclasses.fields(TrainingArguments)}
    if settings.get("group_by_length") and "group_by_length" not in fields:  # transformers 5.x
        settings.pop("group_by_length")
        settings["train_sampling_strategy"] = "group_by_length"
    counter = {"real": torch.zeros((), dtype=torch.long), "padded": 0, "samples": 0, "step": 0}

    class Counting(Trainer):
        """Counts the tokens of every batch trained (in the main process: also with workers)."""

        def compute_loss(self, model, inputs, *a, **kw):
            if counter["step"] >= args.warmup:
                mask = inputs["attention_mask"]
                counter["real"] = counter["real"].to(mask.device) + mask.sum()
                counter["padded"] += mask.numel()
                counter["samples"] += mask.shape[0]
            return super().compute_loss(model, inputs, *a, **kw)

    times = {}

    class Clock(TrainerCallback):
        def on_step_end(self, targs, state, control, **kw):
            counter["step"] = state.global_step
            if state.global_step in (args.warmup, args.steps):
                _sync()
                times[state.global_step] = time.perf_counter()

    _reset_memory()
    trainer = Counting(model=model, args=TrainingArguments(**settings), train_dataset=rows,
                       data_collator=DataCollatorWithPadding(tok, pad_to_multiple_of=8 if CUDA else None),
                       callbacks=[Clock()])
    t_start = time.perf_counter()
    result = trainer.train()
    _sync()
    out = {"seconds": times[args.steps] - times[args.warmup], "real_tokens": int(counter["real"].item()),
           "padded_tokens": counter["padded"], "samples": counter["samples"], "peak_gib": _peak_gib(),
           "total_s": time.perf_counter() - t_start, "final_loss": result.training_loss}
    del trainer, model
    _reset_memory()
    return out


# ---------------------------------------------------------------------------- main

def _finish(r: dict) -> dict:
    r["tokens_per_s"] = r["real_tokens"] / r["seconds"]
    r["samples_per_s"] = r["samples"] / r["seconds"]
    r["padding_share"] = 1 - r["real_tokens"] / max(1, r["padded_tokens"])
    return r


def _tables(header: str, runs: list[dict], contenders: list[str], n_rounds: int) -> tuple[str, list, dict]:
    """The rounds table (each contender's tokens/s and its ratio to HF in the same round),
    medians, and one row per run against HF's and our medians."""
    rounds = []
    for r in range(1, n_rounds + 1):
        got = {x["name"]: x["tokens_per_s"] for x in runs if x["round"] == r and "error" not in x}
        rounds.append({"round": r, **{f"{c}_tokens_per_s": got.get(c) for c in contenders},
                       **{f"{c}_ratio": got[c] / got["hf"] for c in contenders[1:] if c in got}})
    medians = {c: float(np.median(v)) if (v := [x[f"{c}_tokens_per_s"] for x in rounds
                                                  if x[f"{c}_tokens_per_s"] is not None]) else None
               for c in contenders}
    others = contenders[1:]
    lines = [header, "", "| round | " + " | ".join(f"{c} tokens/s" for c in contenders) + " | "
             + " | ".join(f"{c} / hf" for c in others) + " |", "|---" * (1 + len(contenders) + len(others)) + "|"]
    cell = (lambda v, f: f.format(v) if v is not None else "failed")
    for x in rounds:
        lines.append(f"| {x['round']} | " + " | ".join(cell(x[f"{c}_tokens_per_s"], "{:,.0f}") for c in contenders)
                     + " | " + " | ".join(cell(x.get(f"{c}_ratio"), "{:.2f}x") for c in others) + " |")
    ratio = (lambda c: medians[c] / medians["hf"] if medians[c] else None)
    lines.append("| median | " + " | ".join(cell(medians[c], "{:,.0f}") for c in contenders) + " | "
                 + " | ".join(cell(ratio(c), "{:.2f}x") for c in others) + " |")
    lines += ["", "| run | tokens/s | vs HF median | vs ours median | samples/s | padding | peak GiB | whole run s "
              "| final loss |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for x in runs:
        name = f"{x['name']} (round {x['round']})" if x["round"] else x["name"]
        if "error" in x:
            lines.append(f"| {name} | failed: {x['error'].splitlines()[0][:80]} | | | | | | | |")
            continue
        lines.append(f"| {name} | {x['tokens_per_s']:,.0f} | {x['tokens_per_s'] / medians['hf']:.2f}x | "
                     f"{x['tokens_per_s'] / medians['ours']:.2f}x | {x['samples_per_s']:.1f} | "
                     f"{100 * x['padding_share']:.1f}% | {x['peak_gib']} | {x['total_s']:.1f} | {x['final_loss']:.4f} |")
    return "\n".join(lines), rounds, medians


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=sorted(SIZES), default="base" if CUDA else "tiny")
    p.add_argument("--pairs", type=int, default=50000, help="examples (SciNLI repeated)")
    p.add_argument("--steps", type=int, default=600 if CUDA else 12)
    p.add_argument("--warmup", type=int, default=50 if CUDA else 2, help="steps left out of the clock")
    p.add_argument("--batch-size", type=int, default=32 if CUDA else 16)
    p.add_argument("--max-length", type=int, default=128)
    p.add_argument("--rounds", type=int, default=3, help="rounds of HF and ours, alternating which goes first")
    p.add_argument("--variants", default="", help="comma-separated names, or 'all': " + ", ".join(VARIANTS))
    p.add_argument("--in-rounds", default="", help="variants that also run in every round, in the rotation with HF "
                                                   "and ours (comma-separated), e.g. ours_compile,hf_compile")
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args(argv)
    if args.warmup >= args.steps:
        p.error("--warmup must be smaller than --steps")
    variants = list(VARIANTS) if args.variants == "all" else [v for v in args.variants.split(",") if v]
    in_rounds = [v for v in args.in_rounds.split(",") if v]
    variants = [v for v in variants if v not in in_rounds]
    for v in variants + in_rounds:
        if v not in VARIANTS:
            p.error(f"unknown variant {v!r} (known: {', '.join(VARIANTS)})")
    import transformers

    transformers.logging.set_verbosity_error()
    df, source = load_pairs(args.pairs)
    labels = sorted(df["label"].unique())
    device = torch.cuda.get_device_name(0) if CUDA else f"CPU ({torch.get_num_threads()} threads)"
    precision = ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if CUDA else "fp32"
    header = (f"device: {device}; torch {torch.__version__}, transformers {transformers.__version__}\n"
              f"model: BERT-{args.size} {SIZES[args.size]} from a config; data: {source}\n"
              f"steps: {args.steps} (clock over steps {args.warmup}..{args.steps}), batch size: {args.batch_size}, "
              f"max length: {args.max_length}, precision: {precision}")
    print(header, flush=True)
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_model_dir(Path(tmp) / "bert", df["premise"].tolist() + df["hypothesis"].tolist(),
                                    args.size, args.max_length)
        fns = {"hf": hf, "ours": ours}

        def one(name: str) -> dict:
            base, settings = VARIANTS.get(name, (name, {}))
            return _finish(fns[base](model_dir, df, labels, args, **settings))

        def attempt(name: str, round_: int | None) -> None:
            label = f"round {round_} {name:5s}" if round_ else f"variant {name}"
            try:
                res = one(name)
            except Exception as exc:  # a variant that cannot run here is reported, not fatal
                if name in ("hf", "ours"):
                    raise
                print(f"{label}: failed: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}", flush=True)
                runs.append({"round": round_, "name": name, "error": f"{type(exc).__name__}: {exc}"[:500]})
                return
            runs.append({"round": round_, "name": name, **res})
            print(f"{label}: {res['tokens_per_s']:9.0f} tokens/s, {res['samples_per_s']:7.1f} samples/s, padding "
                  f"{100 * res['padding_share']:4.1f}%, peak {res['peak_gib']} GiB, whole run {res['total_s']:.1f} s",
                  flush=True)

        contenders = ["hf", "ours", *in_rounds]
        for r in range(args.rounds):
            k = r % len(contenders)  # each round starts with the next contender
            for name in contenders[k:] + contenders[:k]:
                attempt(name, r + 1)
        print("\n" + _tables(header, runs, contenders, args.rounds)[0], flush=True)  # kept if a variant is cut off
        for v in variants:
            attempt(v, None)

    table, rounds, medians = _tables(header, runs, contenders, args.rounds)
    print("\n" + table)
    result = {"device": device, "precision": precision, "args": {k: str(v) for k, v in vars(args).items()},
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
              "rounds": rounds, "median": {**medians, "ratio": medians["ours"] / medians["hf"]},
              "runs": runs, "table": table}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
