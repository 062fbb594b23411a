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
time against our default or HF's, to show where the difference comes from.

    # GPU, the issue's setting (an H100 80GB: benchmarks/results/)
    python benchmarks/train_throughput.py --size base --pairs 50000 --steps 600 --batch-size 32 \
        --rounds 3 --variants all --json results.json
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
    from trainer.data import load_nli

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
    from trainer.models.transformer import build_untrained_bert

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
    import trainer.loop as loop
    from trainer.loop import Callback, default_schedule
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
    try:
        model._build = lambda name: None  # built above: keep that model
        model.fit(df, None, FitContext(seed=0, schedule=schedule, callbacks=[clock]))
    finally:
        loop.adamw = original_adamw
    timed = schedule[args.warmup:]
    real = int(sum(lengths[s].sum() for s in timed))
    padded = int(sum(len(s) * (-(-int(lengths[s].max()) // pad_multiple) * pad_multiple) for s in timed))
    out = {"seconds": clock.t_end - clock.t_warm, "real_tokens": real, "padded_tokens": padded,
           "samples": sum(len(s) for s in timed), "peak_gib": _peak_gib(),
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
    result = trainer.train()
    out = {"seconds": times[args.steps] - times[args.warmup], "real_tokens": int(counter["real"].item()),
           "padded_tokens": counter["padded"], "samples": counter["samples"], "peak_gib": _peak_gib(),
           "final_loss": result.training_loss}
    del trainer, model
    _reset_memory()
    return out


# ---------------------------------------------------------------------------- main

def _finish(r: dict) -> dict:
    r["tokens_per_s"] = r["real_tokens"] / r["seconds"]
    r["samples_per_s"] = r["samples"] / r["seconds"]
    r["padding_share"] = 1 - r["real_tokens"] / max(1, r["padded_tokens"])
    return r


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
    p.add_argument("--json", type=Path, help="also write the figures here")
    args = p.parse_args(argv)
    if args.warmup >= args.steps:
        p.error("--warmup must be smaller than --steps")
    variants = list(VARIANTS) if args.variants == "all" else [v for v in args.variants.split(",") if v]
    for v in variants:
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
        for r in range(args.rounds):
            order = ["hf", "ours"] if r % 2 == 0 else ["ours", "hf"]
            for name in order:
                res = _finish(fns[name](model_dir, df, labels, args))
                runs.append({"round": r + 1, "name": name, **res})
                print(f"round {r + 1} {name:5s}: {res['tokens_per_s']:9.0f} tokens/s, {res['samples_per_s']:7.1f} "
                      f"samples/s, padding {100 * res['padding_share']:4.1f}%, peak {res['peak_gib']} GiB", flush=True)
        for v in variants:
            base, settings = VARIANTS[v]
            try:
                res = _finish(fns[base](model_dir, df, labels, args, **settings))
            except Exception as exc:  # a variant that cannot run here is reported, not fatal
                print(f"variant {v}: failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}",
                      flush=True)
                runs.append({"round": None, "name": v, "error": f"{type(exc).__name__}: {exc}"[:500]})
                continue
            runs.append({"round": None, "name": v, **res})
            print(f"variant {v}: {res['tokens_per_s']:9.0f} tokens/s, padding {100 * res['padding_share']:4.1f}%, "
                  f"peak {res['peak_gib']} GiB", flush=True)

    rounds = []
    for r in range(1, args.rounds + 1):
        pair = {x["name"]: x for x in runs if x["round"] == r}
        rounds.append({"round": r, "hf_tokens_per_s": pair["hf"]["tokens_per_s"],
                       "ours_tokens_per_s": pair["ours"]["tokens_per_s"],
                       "ratio": pair["ours"]["tokens_per_s"] / pair["hf"]["tokens_per_s"]})
    hf_med = float(np.median([x["hf_tokens_per_s"] for x in rounds]))
    ours_med = float(np.median([x["ours_tokens_per_s"] for x in rounds]))
    lines = [header, "", "| round | HF Trainer tokens/s | ours tokens/s | ours / HF |", "|---|---:|---:|---:|"]
    lines += [f"| {x['round']} | {x['hf_tokens_per_s']:,.0f} | {x['ours_tokens_per_s']:,.0f} | {x['ratio']:.2f}x |"
              for x in rounds]
    lines += [f"| median | {hf_med:,.0f} | {ours_med:,.0f} | {ours_med / hf_med:.2f}x |", "",
              "| run | tokens/s | vs HF median | vs ours median | samples/s | padding | peak GiB | final loss |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for x in runs:
        name = f"{x['name']} (round {x['round']})" if x["round"] else x["name"]
        if "error" in x:
            lines.append(f"| {name} | failed: {x['error'].splitlines()[0][:80]} | | | | | | |")
            continue
        lines.append(f"| {name} | {x['tokens_per_s']:,.0f} | {x['tokens_per_s'] / hf_med:.2f}x | "
                     f"{x['tokens_per_s'] / ours_med:.2f}x | {x['samples_per_s']:.1f} | "
                     f"{100 * x['padding_share']:.1f}% | {x['peak_gib']} | {x['final_loss']:.4f} |")
    table = "\n".join(lines)
    print("\n" + table)
    result = {"device": device, "precision": precision, "args": {k: str(v) for k, v in vars(args).items()},
              "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
              "rounds": rounds, "median": {"hf": hf_med, "ours": ours_med, "ratio": ours_med / hf_med},
              "runs": runs, "table": table}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
