"""`python -m trainer train`: baselines and transformers on any NLI data, one run directory.

Protocols: `--seeds N` (RoNLI: best seed on validation, its test scores, mean ± std),
`--grid` (RoNLI Appendix B ranges for shallow models), `--oversample` / `--class-weights`,
`--input-mode hypothesis|premise` (artifact baselines). Hooks for data cartography and
curriculum learning: `--subset`, `--cartography-from`, `--curriculum`, `--sts-from`.
"""
from __future__ import annotations

import argparse
import itertools
import json
import logging
import math
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from trainer.cli import UserError
from trainer.data import NLIDataError, add_column_arguments, column_mapping, drop_unlabeled, load_nli
from trainer.models import INPUT_MODES, MODELS, TORCH_MODELS, FitContext, model_class
from trainer.runs import check_labels, evaluate_splits, file_logger, write_evaluation, write_json
from trainer.metrics import mean_std

log = logging.getLogger("trainer")
SUBSETS = ("e2l", "a", "h2l", "e2l+a")
CURRICULA = ("length", "sts", "cart", "cart++", "cart-stra++")


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = p.add_argument_group("data")
    d.add_argument("--data", type=Path, help="splits folder (train/ validation/ test/) or any dataset folder")
    d.add_argument("--train", type=Path, help="training file (instead of --data)")
    d.add_argument("--validation", type=Path, help="validation file")
    d.add_argument("--test", type=Path, nargs="+", default=[], help="test file(s), each reported under its stem")
    add_column_arguments(p)
    m = p.add_argument_group("model")
    m.add_argument("--model", required=True, choices=sorted(MODELS))
    m.add_argument("--input-mode", choices=INPUT_MODES, default="pair",
                   help="pair, or one sentence only (hypothesis-only / premise-only artifact baselines)")
    m.add_argument("--out", type=Path, required=True, help="run directory to write")
    m.add_argument("--overwrite", action="store_true", help="replace an existing run directory")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--seeds", type=int, default=1, help="train N runs (seeds seed..seed+N-1), select on validation")
    m.add_argument("--grid", action="store_true", help="grid search (RoNLI Appendix B ranges) on validation macro-F1")
    m.add_argument("--oversample", action="store_true", help="copy minority-class examples up to the majority count")
    m.add_argument("--class-weights", action="store_true", help="weight the loss by inverse class frequency")
    m.add_argument("--C", type=float, help="regularisation of SVM / logistic regression")
    m.add_argument("--kernel", choices=["linear", "rbf"], help="cbow-svm kernel")
    m.add_argument("--vectors", type=Path, help="fastText .bin or .vec word vectors (cbow-*); default: trained on train")
    m.add_argument("--vector-size", type=int, help="dimension of vectors trained on the training split (default 100)")
    t = p.add_argument_group("torch models (cbow-softmax, transformer)")
    t.add_argument("--pretrained", help="checkpoint directory or hub name (transformer)")
    t.add_argument("--encoding", choices=["cross", "separate"], default="cross")
    t.add_argument("--freeze-encoder", action="store_true", help="train the head only (RoNLI)")
    t.add_argument("--max-length", type=int)
    t.add_argument("--epochs", type=int)
    t.add_argument("--batch-size", type=int)
    t.add_argument("--grad-accum", type=int, help="forward passes per optimisation step")
    t.add_argument("--lr", type=float)
    t.add_argument("--weight-decay", type=float)
    t.add_argument("--warmup-ratio", type=float)
    t.add_argument("--max-grad-norm", type=float, help="gradient clipping (0: off)")
    t.add_argument("--patience", type=int, help="early stopping patience in epochs (0: off)")
    t.add_argument("--head-hidden", type=int, help="hidden units of the separate-encoding head")
    t.add_argument("--dropout", type=float)
    t.add_argument("--precision", choices=["auto", "fp32", "bf16", "fp16"])
    t.add_argument("--no-group-by-length", dest="group_by_length", action="store_false", default=None)
    t.add_argument("--device", help="auto (default), cpu, cuda, cuda:1, mps")
    t.add_argument("--eval-batch-size", type=int)
    t.add_argument("--no-progress", dest="progress", action="store_false", default=None)
    t.add_argument("--resume", action="store_true", help="continue from RUN_DIR/checkpoint")
    t.add_argument("--keep-checkpoint", action="store_true", help="keep RUN_DIR/checkpoint after training")
    c = p.add_argument_group("cartography and curriculum (trainer.cartography, trainer.curriculum)")
    c.add_argument("--subset", choices=SUBSETS, help="train on a cartography region of the training set")
    c.add_argument("--cartography-from", type=Path, help="run (or cartography) directory with training dynamics")
    c.add_argument("--curriculum", choices=CURRICULA, help="batch schedule (torch models)")
    c.add_argument("--sts-from", type=Path, help="run whose embeddings rank pairs for --curriculum sts")


PARAM_FLAGS = ["C", "kernel", "vector_size", "pretrained", "encoding", "max_length", "epochs", "batch_size",
               "grad_accum", "lr", "weight_decay", "warmup_ratio", "max_grad_norm", "patience", "head_hidden",
               "dropout", "precision", "group_by_length", "device", "eval_batch_size", "progress"]


def model_params(args) -> dict:
    params = {k: getattr(args, k) for k in PARAM_FLAGS if getattr(args, k, None) is not None}
    if args.model == "transformer":
        params["freeze_encoder"] = bool(args.freeze_encoder)
    if args.vectors:
        params["vectors"] = str(args.vectors)
    if args.model in ("cbow-svm", "cbow-softmax"):
        params = {k: v for k, v in params.items() if k not in ("pretrained", "encoding", "max_length")}
    return params


# ---------------------------------------------------------------------------- data

def load_data(args) -> tuple[pd.DataFrame, pd.DataFrame | None, dict[str, pd.DataFrame], dict]:
    mapping = column_mapping(args)
    if args.data and args.train:
        raise UserError("give --data DIR or --train FILE, not both")
    if args.data:
        splits = load_nli(args.data, **mapping)
        if "train" not in splits:
            raise UserError(f"{args.data}: no train split (found: {', '.join(splits)})")
        train = splits.pop("train")
        val = splits.pop("validation", None)
        if args.validation:
            val = load_nli(args.validation, **mapping)["data"]
        tests = splits
        for f in args.test:
            tests[f.name.split(".")[0]] = load_nli(f, **mapping)["data"]
    elif args.train:
        train = load_nli(args.train, **mapping)["data"]
        val = load_nli(args.validation, **mapping)["data"] if args.validation else None
        tests = {}
        for f in args.test:
            name = f.name.split(".")[0]
            if name in tests or name in ("train", "validation"):
                raise UserError(f"{f}: two evaluation files share the name {name!r}")
            tests[name] = load_nli(f, **mapping)["data"]
    else:
        raise UserError("no data: give --data DIR or --train FILE [--validation FILE] [--test FILE ...]")
    dropped = {}
    train, dropped["train_unlabeled"] = drop_unlabeled(train)
    if val is not None:
        val, dropped["validation_unlabeled"] = drop_unlabeled(val)
    for name in list(tests):
        tests[name], dropped[f"{name}_unlabeled"] = drop_unlabeled(tests[name])
    if len(train) == 0:
        raise UserError(f"{train.attrs.get('source', 'train')}: no labelled training rows")
    return train, val, tests, {k: v for k, v in dropped.items() if v}


def oversample(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Copy minority-class rows until every class has the majority count (RoNLI).

    Whole copies first, then the remainder chosen by a stable hash of id and seed, so the
    result does not depend on row order or on anything but the data and the seed.
    """
    from extractor.hashing import stable_hash

    counts = df["label"].value_counts()
    target = int(counts.max())
    parts = [df]
    for label, count in counts.items():
        need = target - int(count)
        if need <= 0:
            continue
        rows = df[df["label"] == label]
        order = sorted(range(len(rows)), key=lambda i: stable_hash(rows["id"].iat[i], "oversample", seed=seed))
        reps = [rows] * (need // len(rows)) + [rows.iloc[order[: need % len(rows)]]]
        parts.extend(reps)
    return pd.concat(parts, ignore_index=True)


# ---------------------------------------------------------------------------- one run

def steps_for(model, n_train: int) -> tuple[int, int]:
    """(effective batch size, total optimisation steps) of a torch model's default run."""
    p = model.params
    step_size = int(p["batch_size"]) * int(p.get("grad_accum", 1))
    return step_size, int(p["epochs"]) * max(1, math.ceil(n_train / step_size))


def grid_search(args, labels, train, val, params, seed) -> tuple[dict, list]:
    cls = model_class(args.model)
    if not cls.GRID:
        log.info("--grid: %s has no grid; defaults kept", args.model)
        return params, []
    if val is None or not len(val):
        raise UserError("--grid needs validation data (--validation FILE or a validation split)")
    from trainer.metrics import compute_metrics

    keys = sorted(cls.GRID)
    results = []
    for values in itertools.product(*(cls.GRID[k] for k in keys)):
        combo = dict(zip(keys, values))
        model = cls(labels, args.input_mode, {**params, **combo, "progress": False})
        model.fit(train, val, FitContext(seed=seed, class_weights=args.class_weights))
        probs = model.predict_proba(val)
        m = compute_metrics(val["label"], np.asarray(labels, dtype=object)[probs.argmax(1)], labels)
        results.append({**combo, "validation_macro_f1": m["macro_f1"], "validation_accuracy": m["accuracy"]})
        log.info("grid %s: validation macro-F1 %.4f", combo, m["macro_f1"])
    best = max(results, key=lambda r: r["validation_macro_f1"])  # first of ties: grid order
    chosen = {k: best[k] for k in keys}
    log.info("grid: selected %s (validation macro-F1 %.4f)", chosen, best["validation_macro_f1"])
    return {**params, **chosen}, results


def train_one(args, seed: int, out: Path, train: pd.DataFrame, val, tests: dict, labels: list[str],
              base_config: dict, callbacks=()) -> dict:
    """Train and evaluate one seed into `out`; returns the metrics."""
    out.mkdir(parents=True, exist_ok=True)
    handler = file_logger(out)
    try:
        return _train_one(args, seed, out, train, val, tests, labels, base_config, list(callbacks))
    finally:
        logging.getLogger("trainer").removeHandler(handler)
        handler.close()


def _train_one(args, seed, out, train, val, tests, labels, base_config, callbacks) -> dict:
    t_start = time.perf_counter()
    resume = False
    if args.resume:
        if (out / "checkpoint").exists():
            resume = True
        elif (out / "metrics.json").exists():  # finished before (e.g. an earlier seed of --seeds)
            log.info("--resume: %s is complete; kept as it is", out)
            return json.loads((out / "metrics.json").read_text())
        else:
            log.info("--resume: no checkpoint in %s; training from the start", out)
    log.info("run %s: model %s, input mode %s, seed %d, %d training rows", out, args.model, args.input_mode,
             seed, len(train))
    config = {**base_config, "seed": seed, "out": str(out)}
    if args.subset:
        if not args.cartography_from:
            raise UserError("--subset needs --cartography-from RUN_DIR")
        from trainer.cartography import select_subset

        n_before = len(train)
        train = select_subset(train, args.cartography_from, args.subset).reset_index(drop=True)
        log.info("--subset %s: %d of %d training rows", args.subset, len(train), n_before)
        config["subset"] = {"name": args.subset, "from": str(args.cartography_from), "n": len(train),
                            "n_before": n_before}
    distinct = train  # dynamics score each training example once, oversampled or not
    if args.oversample:
        train = oversample(train, seed)
        log.info("--oversample: %d -> %d training rows %s", len(distinct), len(train),
                 train["label"].value_counts().to_dict())
    config["n_train"] = len(train)
    config["label_counts_train"] = {k: int(v) for k, v in train["label"].value_counts().sort_index().items()}

    params = model_params(args)
    if args.grid:  # searched once, with the first seed; later seeds reuse the winner
        if getattr(args, "grid_choice", None) is None:
            args.grid_choice = grid_search(args, labels, train, val, params, seed)
        params, config["grid"] = args.grid_choice
    cls = model_class(args.model)
    model = cls(labels, args.input_mode, params)
    config["params"] = model.params

    schedule = None
    if args.curriculum:
        if args.model not in TORCH_MODELS:
            raise UserError(f"--curriculum needs a model trained by steps ({', '.join(sorted(TORCH_MODELS))})")
        from trainer.curriculum import make_schedule

        step_size, total = steps_for(model, len(train))
        schedule = make_schedule(args.curriculum, train, total_steps=total, batch_size=step_size, seed=seed,
                                 cartography_from=args.cartography_from, sts_from=args.sts_from)
        if len(schedule) != total:
            log.warning("--curriculum %s returned %d steps for %d expected", args.curriculum, len(schedule), total)
        config["curriculum"] = {"name": args.curriculum, "total_steps": len(schedule), "batch_size": step_size}

    ctx = FitContext(seed=seed, out_dir=out, class_weights=args.class_weights, params=params,
                     callbacks=callbacks, schedule=schedule,
                     dynamics_df=distinct if args.model in TORCH_MODELS else None, resume=resume)
    t0 = time.perf_counter()
    model.fit(train, val, ctx)
    config["fit_seconds"] = round(time.perf_counter() - t0, 3)
    state = getattr(model, "state", None)
    if state is not None:
        config["history"] = state.history
        config["best_epoch"] = state.best_epoch
        config["device"] = str(state.device)
        config["train_seconds"] = round(state.train_seconds, 3)
        if "dynamics" in state.extra:
            config["dynamics"] = state.extra["dynamics"]
            d = state.extra["dynamics"]
            log.info("dynamics: %.2fs in all, %.1f%% of training time", d.get("seconds", 0), 100 * d.get("share", 0))
    model.save(out / "model")
    frames = ({"validation": val} if val is not None and len(val) else {}) | tests
    metrics, preds = evaluate_splits(model, frames)
    write_evaluation(out, metrics, preds)
    config["versions"] = versions()  # after the model's libraries are imported
    config["total_seconds"] = round(time.perf_counter() - t_start, 3)
    write_json(out / "config.json", config)
    if (out / "checkpoint").exists() and not args.keep_checkpoint:
        shutil.rmtree(out / "checkpoint")
    return metrics


# ---------------------------------------------------------------------------- entry

def versions() -> dict:
    out = {"python": platform.python_version()}
    for name in ("numpy", "pandas", "sklearn", "torch", "transformers", "xgboost", "gensim"):
        mod = sys.modules.get(name)
        if mod is not None:
            out[name] = getattr(mod, "__version__", "?")
    return out


def run(args, callbacks=()) -> int:
    """Entry point of `train`; `callbacks` (torch models) is for Python callers and tests."""
    from trainer.distributed import setup_run

    args.out = setup_run(args.out, args.device)  # torchrun: ranks > 0 write a scratch copy
    try:
        return _run(args, list(callbacks))
    except (NLIDataError, FileNotFoundError, ValueError) as exc:
        raise UserError(str(exc).splitlines()[0] if str(exc) else repr(exc)) from exc


def _run(args, callbacks) -> int:
    if args.seeds < 1:
        raise UserError("--seeds must be at least 1")
    if args.model == "transformer" and not args.pretrained:
        raise UserError("--model transformer needs --pretrained NAME_OR_DIR")
    if args.model == "transformer":
        from trainer.models.transformer import check_pretrained

        check_pretrained(args.pretrained)
    if args.curriculum in ("cart", "cart++", "cart-stra++") and not args.cartography_from:
        raise UserError(f"--curriculum {args.curriculum} needs --cartography-from RUN_DIR")
    if args.curriculum == "sts" and not args.sts_from:
        raise UserError("--curriculum sts needs --sts-from RUN_DIR")
    out: Path = args.out
    if out.exists() and any(out.iterdir()) and not (args.resume or args.overwrite):
        raise UserError(f"{out}: run directory exists and is not empty (use --overwrite or --resume)")
    if out.exists() and args.overwrite and not args.resume:
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)

    train, val, tests, dropped = load_data(args)
    labels = column_mapping(args)["label_names"] or sorted(train["label"].unique())
    check_labels(train, labels, train.attrs.get("source", "train"))
    for name, df in (({"validation": val} if val is not None else {}) | tests).items():
        check_labels(df, labels, df.attrs.get("source", name))
    if args.seeds > 1 and (val is None or not len(val)):
        raise UserError("--seeds N selects on validation: give --validation FILE or a validation split")
    base_config = {
        "command": ["python", "-m", "trainer", "train", *sys.argv[2:]] if sys.argv[1:2] == ["train"] else sys.argv,
        "model": args.model, "input_mode": args.input_mode, "labels": labels,
        "encoding": args.encoding if args.model == "transformer" else None,
        "data": {"data": str(args.data) if args.data else None, "train": str(args.train) if args.train else None,
                 "validation": str(args.validation) if args.validation else None,
                 "test": [str(t) for t in args.test], "columns": column_mapping(args),
                 "n_validation": len(val) if val is not None else 0, "n_test": {k: len(v) for k, v in tests.items()},
                 "dropped": dropped},
        "oversample": args.oversample, "class_weights": args.class_weights, "grid": None,
        "versions": versions(),
    }
    if args.seeds == 1:
        metrics = train_one(args, args.seed, out, train, val, tests, labels, base_config, callbacks)
        _print_summary(metrics)
        return 0

    seeds = [args.seed + i for i in range(args.seeds)]
    per_seed = {}
    for s in seeds:
        per_seed[str(s)] = train_one(args, s, out / f"seed_{s}", train, val, tests, labels, base_config, callbacks)
    selected = max(seeds, key=lambda s: (per_seed[str(s)]["validation"]["macro_f1"], -s))
    summary_keys = ("accuracy", "micro_f1", "macro_f1")
    runs = {s: {split: {k: m[k] for k in summary_keys} for split, m in ms.items()} for s, ms in per_seed.items()}
    mean, std = mean_std(runs)
    write_json(out / "seeds.json", {"selection": "validation macro_f1", "selected_seed": selected,
                                    "seeds": seeds, "runs": runs, "mean": mean, "std": std})
    sel = out / f"seed_{selected}"
    for name in ["metrics.json", "predictions.parquet", *[p.name for p in sel.glob("confusion_matrix_*.png")]]:
        shutil.copy2(sel / name, out / name)
    if (sel / "dynamics").exists():
        shutil.rmtree(out / "dynamics", ignore_errors=True)
        shutil.copytree(sel / "dynamics", out / "dynamics")
    selected_config = json.loads((sel / "config.json").read_text())
    write_json(out / "config.json", {**selected_config, "out": str(out), "seeds": seeds, "selected_seed": selected})
    with open(out / "train.log", "w", encoding="utf-8") as logf:
        for s in seeds:
            logf.write(f"==> seed_{s}/train.log\n")
            logf.write((out / f"seed_{s}" / "train.log").read_text(encoding="utf-8"))
    print(f"selected seed {selected} (best validation macro-F1)")
    _print_summary(per_seed[str(selected)])
    for split in mean:
        print(f"{split} over {len(seeds)} seeds: accuracy {mean[split]['accuracy']:.4f} ± {std[split]['accuracy']:.4f}, "
              f"macro-F1 {mean[split]['macro_f1']:.4f} ± {std[split]['macro_f1']:.4f}")
    return 0


def _print_summary(metrics: dict) -> None:
    for split, m in metrics.items():
        print(f"{split}: accuracy {m['accuracy']:.4f}, micro-F1 {m['micro_f1']:.4f}, macro-F1 {m['macro_f1']:.4f} "
              f"(n={m['n']})")
