"""A `train` run (trainer/commands/train.py): baselines and transformers on any NLI data, one run directory.

Protocols: `--seeds N` (RoNLI: best seed on validation, its test scores, mean ± std),
`--grid` (RoNLI Appendix B ranges), `--oversample` / `--class-weights`,
`--input-mode hypothesis|premise` (artifact baselines), several `--train` files merged,
`--train-size N`. Hooks for data cartography and curriculum learning: `--subset`,
`--cartography-from`, `--curriculum`, `--sts-from`.

Reliability by construction: every setting is checked before any data is read; the run is
written into its work folder ``OUT.inprogress/`` and swapped in as ``OUT`` only when it has
finished (extractor/io/atomic.py), so a failed or killed run never damages the run it would
replace (``--overwrite``); ``--resume`` continues an unfinished run only under the same
settings (``resume.json``).
"""
from __future__ import annotations

import itertools
import json
import logging
import math
import os
import platform
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from extractor.io import atomic
from extractor.core.errors import UserError
from extractor.core.hashing import stable_hash
from extractor.core.names import LABELS
from trainer.analysis.cartography import select_subset
from trainer.training.curriculum import make_schedule
from trainer.data.loading import (apply_label_map, check_ids, column_mapping, drop_unlabeled, load_nli,
                                  load_one_split, merge_frames, parse_file_spec, stratified_subsample)
from trainer.analysis.metrics import compute_metrics, format_scores, mean_std
from trainer.models import TORCH_MODELS, FitContext, model_class
from trainer.training.runs import (LOG_FILE_ONLY, check_labels, evaluate_splits, file_logger, write_evaluation,
                                   write_json, write_slices)

log = logging.getLogger("trainer")


PARAM_FLAGS = ["C", "kernel", "vector_size", "pretrained", "encoding", "max_length", "epochs", "batch_size",
               "grad_accum", "lr", "head_lr", "weight_decay", "warmup_ratio", "max_grad_norm", "patience",
               "head_hidden", "dropout", "precision", "group_by_length", "device", "eval_batch_size", "progress",
               "compile", "deterministic", "dynamics", "pooling"]


def model_params(args) -> dict:
    params = {k: getattr(args, k) for k in PARAM_FLAGS if getattr(args, k, None) is not None}
    if args.model == "transformer":
        params["freeze_encoder"] = bool(args.freeze_encoder)
    if args.vectors:
        params["vectors"] = str(args.vectors)
    if args.model in ("cbow-svm", "cbow-softmax"):
        unused = ("pretrained", "encoding", "max_length", "dynamics", "pooling")
        params = {k: v for k, v in params.items() if k not in unused}
    return params


# ---------------------------------------------------------------------------- settings

# RoNLI Appendix B for the transformer: learning rate, mini-batch size, dropout and head size.
# Dropout and head size shape only the separate encoding's MLP head; under --encoding cross
# they are left out of the grid (they would train the same model twice).
TRANSFORMER_GRID: dict[str, list] = {"lr": [1e-5, 2e-5, 5e-5], "batch_size": [16, 32], "dropout": [0.1, 0.3],
                    "head_hidden": [256, 512]}
TRANSFORMER_GRID_FROZEN: dict[str, list] = {**TRANSFORMER_GRID, "lr": [1e-2, 1e-3, 1e-4]}
GRID_TYPES = {"lr": float, "batch_size": int, "dropout": float, "head_hidden": int, "C": float, "kernel": str,
              "max_depth": int, "learning_rate": float, "epochs": int, "weight_decay": float}


def parse_grid_values(items: list[str]) -> dict[str, list]:
    """``["lr=1e-5,3e-5", "batch_size=16"]`` -> {"lr": [1e-05, 3e-05], "batch_size": [16]}."""
    out: dict[str, list] = {}
    for item in items:
        if "=" not in item:
            raise UserError(f"--grid-values {item!r}: expected KEY=V1,V2 (keys: {', '.join(sorted(GRID_TYPES))})")
        key, values = item.split("=", 1)
        key = key.strip().replace("-", "_")
        if key not in GRID_TYPES:
            raise UserError(f"--grid-values {item!r}: unknown key {key!r} (keys: {', '.join(sorted(GRID_TYPES))})")
        try:
            out[key] = [GRID_TYPES[key](v) for v in values.split(",") if v.strip()]
        except ValueError as exc:
            raise UserError(f"--grid-values {item!r}: {exc}") from exc
        if not out[key]:
            raise UserError(f"--grid-values {item!r}: no values")
    return out


def model_grid(args) -> dict[str, list]:
    """The grid `--grid` searches for this model: the model's RoNLI ranges, then --grid-values."""
    if args.model == "transformer":
        grid = dict(TRANSFORMER_GRID_FROZEN if args.freeze_encoder else TRANSFORMER_GRID)
        if args.encoding == "cross":
            grid = {k: v for k, v in grid.items() if k not in ("dropout", "head_hidden")}
    else:
        grid = dict(model_class(args.model).GRID)
    grid.update(parse_grid_values(args.grid_values))
    return grid


POSITIVE = ("seeds", "epochs", "batch_size", "grad_accum", "max_length", "eval_batch_size", "vector_size",
            "head_hidden", "train_size")


def validate_args(args) -> None:
    """Every setting checked before any data is read or any directory written: one line each."""
    for name in POSITIVE:
        v = getattr(args, name, None)
        if v is not None and v < 1:
            raise UserError(f"--{name.replace('_', '-')} must be at least 1 (got {v})")
    for name in ("lr", "head_lr"):
        v = getattr(args, name, None)
        if v is not None and not v > 0:
            raise UserError(f"--{name.replace('_', '-')} must be positive (got {v})")
    if args.dropout is not None and not 0 <= args.dropout < 1:
        raise UserError(f"--dropout must be in [0, 1) (got {args.dropout})")
    if args.patience is not None and args.patience < 0:
        raise UserError(f"--patience must be 0 (off) or more (got {args.patience})")
    for name in ("warmup_ratio",):
        v = getattr(args, name)
        if v is not None and not 0 <= v <= 1:
            raise UserError(f"--warmup-ratio must be in [0, 1] (got {v})")
    if args.C is not None and not args.C > 0:
        raise UserError(f"--C must be positive (got {args.C})")
    if args.data and args.train:
        raise UserError("give --data DIR or --train FILE, not both")
    if not args.data and not args.train:
        raise UserError("no data: give --data DIR or --train FILE [--validation FILE] [--test FILE ...]")
    if args.resume and args.overwrite:
        raise UserError("--resume continues an unfinished run and --overwrite starts again: give one of them")
    if args.model == "transformer" and not args.pretrained:
        raise UserError("--model transformer needs --pretrained NAME_OR_DIR")
    if args.model == "transformer":
        # lazy: trainer.models.transformer imports torch and transformers (seconds of start-up)
        from trainer.models.transformer import check_pretrained

        check_pretrained(args.pretrained)
    if args.curriculum and args.model not in TORCH_MODELS:
        raise UserError(f"--curriculum needs a model trained by steps ({', '.join(sorted(TORCH_MODELS))})")
    if args.curriculum in ("cart", "cart++", "cart-stra++") and not args.cartography_from:
        raise UserError(f"--curriculum {args.curriculum} needs --cartography-from RUN_DIR")
    if args.curriculum == "sts" and not args.sts_from:
        raise UserError("--curriculum sts needs --sts-from RUN_DIR")
    if args.subset and not args.cartography_from:
        raise UserError("--subset needs --cartography-from RUN_DIR")
    if args.grid:
        grid = model_grid(args)
        if not grid and args.grid_values:
            raise UserError(f"--grid-values: {args.model} has no grid")
    elif args.grid_values:
        raise UserError("--grid-values needs --grid")
    for flag, path in (("--cartography-from", args.cartography_from), ("--sts-from", args.sts_from),
                       ("--vectors", args.vectors), ("--data", args.data)):
        if path is not None and not Path(path).exists():
            raise UserError(f"{path}: no such file or folder ({flag})")
    for flag, specs in (("--train", args.train), ("--validation", args.validation)):
        for spec in specs:
            path, _ = parse_file_spec(spec)
            if not path.exists():
                raise UserError(f"{path}: no such file or folder ({flag})")
    names: dict[str, Path] = {}
    for f in args.test:
        if not Path(f).exists():
            raise UserError(f"{f}: no such file or folder (--test)")
        name = Path(f).name.split(".")[0]
        if name in names and Path(names[name]).resolve() != Path(f).resolve():
            raise UserError(f"{f}: two evaluation files share the name {name!r} ({names[name]}); rename one")
        if name in ("train", "validation") and not args.data:
            raise UserError(f"{f}: a test file may not be named {name!r} (the name of a split); rename it")
        names[name] = Path(f)
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        raise UserError(f"{out}: --output is a file, not a run directory")
    parent = out.resolve().parent
    while not parent.exists():
        parent = parent.parent
    if not os.access(parent, os.W_OK):
        raise UserError(f"{parent}: not writable (--output {out})")


# ---------------------------------------------------------------------------- data

def _load_files(specs: list, mapping: dict, allow_new: bool, what: str) -> tuple[pd.DataFrame, list[str]]:
    """One or several files (each ``FILE[::overrides]``) as one frame; names of the files."""
    frames = []
    for spec in specs:
        path, over = parse_file_spec(spec)
        label_map = over.pop("label_map", None)
        df = load_nli(path, **{**mapping, **over}, allow_unknown_labels=allow_new)
        if len(df) != 1:
            raise UserError(f"{path}: holds several splits ({', '.join(df)}); give one file or split folder to {what}")
        df = next(iter(df.values()))
        frames.append((path.name.split(".")[0], apply_label_map(df, label_map)))
    names = [n for n, _ in frames]
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise UserError(f"{what}: two files share the name {dup!r}; rename one")
    return merge_frames(frames), [str(parse_file_spec(s)[0]) for s in specs]


def load_data(args) -> tuple[pd.DataFrame, pd.DataFrame | None, dict[str, pd.DataFrame], dict]:
    """(train, validation or None, {test name: frame}, drops {split: {reason: n}})."""
    mapping = column_mapping(args)
    allow_new = bool(getattr(args, "allow_new_labels", False))
    if args.data and args.train:
        raise UserError("give --data DIR or --train FILE, not both")
    if args.data:
        splits = load_nli(args.data, **mapping, allow_unknown_labels=allow_new)
        if "train" not in splits:
            raise UserError(f"{args.data}: no train split (found: {', '.join(splits)})")
        train = splits.pop("train")
        val = splits.pop("validation", None)
        if args.validation:
            val, _ = _load_files(args.validation, mapping, allow_new, "--validation")
        tests = splits
    elif args.train:
        train, _ = _load_files(args.train, mapping, allow_new, "--train")
        val = _load_files(args.validation, mapping, allow_new, "--validation")[0] if args.validation else None
        tests = {}
    else:
        raise UserError("no data: give --data DIR or --train FILE [--validation FILE] [--test FILE ...]")
    for f in args.test:
        name = Path(f).name.split(".")[0]
        if name in tests and not args.data:
            continue  # the same file twice: evaluated once
        tests[name] = load_one_split(Path(f), flag=None, **mapping, allow_unknown_labels=allow_new)[1]
    dropped: dict[str, dict] = {}
    frames = {"train": train, **({"validation": val} if val is not None else {}), **tests}
    policy = getattr(args, "duplicate_ids", "error")
    for name, df in frames.items():
        d = dict(df.attrs.get("dropped") or {})
        if name == "train" and len(args.train) > 1:  # merged: per-file drops summed
            d = {}
            for per_file in (df.attrs.get("dropped") or {}).values():
                for k, v in per_file.items():
                    d[k] = d.get(k, 0) + v
        df2, d["unlabeled"] = drop_unlabeled(df)
        df2, d["duplicate_id"] = check_ids(df2, df.attrs.get("source", name), policy)
        frames[name] = df2
        d = {k: int(v) for k, v in d.items() if v}
        if d:
            dropped[name] = d
    train = frames.pop("train")
    val = frames.pop("validation", None)
    if len(train) == 0:
        raise UserError(f"{train.attrs.get('source', 'train')}: no usable training rows "
                        f"(dropped: {dropped.get('train', {})})")
    return train, val, frames, dropped


def declared_labels(args, train: pd.DataFrame, val, tests: dict) -> tuple[list[str], str]:
    """The dataset's declared label set and where it comes from (docs/trainer.md, "Labels")."""
    names = column_mapping(args)["label_names"]
    if names:
        return list(names), "--label-names"
    seen = set(train["label"].dropna())
    if len(seen & set(LABELS)) >= 3:
        return list(LABELS), "the canonical labels (the training data uses at least 3 of them)"
    held_out = set()
    for df in ([val] if val is not None else []) + list(tests.values()):
        held_out |= set(df["label"].dropna())
    if held_out:
        return sorted(held_out), "the labels of the validation and test data"
    return sorted(seen), "the training labels (no other declaration: nothing to check against)"


def check_train_labels(args, train: pd.DataFrame, val, tests: dict) -> tuple[list[str], dict]:
    """The run's label list; training labels outside the declared set are an error unless allowed."""
    declared, source = declared_labels(args, train, val, tests)
    counts = train["label"].value_counts()
    new = sorted(set(counts.index) - set(declared))
    info = {"declared": declared, "declared_by": source, "new_labels": {}}
    if new:
        first = train.loc[train["label"] == new[0], "pair_id"].iloc[0]
        if not args.allow_new_labels:
            where = train.attrs.get("source", "train")
            raise UserError(f"{where}: label {new[0]!r} ({int(counts[new[0]])} rows, first id {first!r}) is not in "
                            f"the dataset's label set {declared} (from {source.split(' (')[0]})"
                            + (f" nor are {new[1:]}" if len(new) > 1 else "")
                            + "; fix those rows, or pass --allow-new-labels to train it as a new class")
        info["new_labels"] = {lab: int(counts[lab]) for lab in new}
        log.warning("--allow-new-labels: %s trained as new classes", info["new_labels"])
    return sorted(counts.index), info


def oversample(df: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Copy minority-class rows until every class has the majority count (RoNLI).

    Whole copies first, then the remainder chosen by a stable hash of id and seed, so the
    result does not depend on row order or on anything but the data and the seed.
    """
    counts = df["label"].value_counts()
    target = int(counts.max())
    parts = [df]
    for label, count in counts.items():
        need = target - int(count)
        if need <= 0:
            continue
        rows = df[df["label"] == label]
        order = sorted(range(len(rows)), key=lambda i: stable_hash(rows["pair_id"].iat[i], "oversample", seed=seed))
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
    """Every combination of the model's grid fitted on train, scored by validation macro-F1."""
    cls = model_class(args.model)
    grid = model_grid(args)
    if not grid:
        log.info("--grid: %s has no grid; defaults kept", args.model)
        return params, []
    if val is None or not len(val):
        raise UserError("--grid needs validation data (--validation FILE or a validation split)")
    keys = sorted(grid)
    combos = list(itertools.product(*(grid[k] for k in keys)))
    results = []
    try:
        from tqdm.auto import tqdm
        bar = tqdm(combos, desc="grid", unit="fit", disable=params.get("progress") is False)
    except ImportError:  # pragma: no cover - tqdm is a dependency
        bar = combos
    for values in bar:
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


# settings that do not change the trained model (left out of the resume check)
NOT_MODEL = {"progress", "device", "eval_batch_size"}


def resume_fingerprint(config: dict) -> dict:
    """What a checkpoint must share with the command that resumes it (``resume.json``)."""
    params = {k: v for k, v in (config.get("params") or {}).items() if k not in NOT_MODEL}
    data = dict(config.get("data") or {})
    return {"model": config.get("model"), "input_mode": config.get("input_mode"), "labels": config.get("labels"),
            "seed": config.get("seed"), "params": params, "data": {k: data.get(k) for k in
                                                                 ("data", "train", "validation", "columns")},
            "n_train": config.get("n_train"), "label_counts_train": config.get("label_counts_train"),
            "oversample": config.get("oversample"), "class_weights": config.get("class_weights"),
            "subset": config.get("subset"), "curriculum": config.get("curriculum"),
            "train_size": config.get("train_size")}


def fingerprint_diff(old: dict, new: dict, prefix: str = "") -> list[str]:
    """Human-readable differences, e.g. ``params.lr 2e-05 -> 5e-05``."""
    out = []
    for k in sorted(set(old) | set(new), key=str):
        a, b = old.get(k), new.get(k)
        if isinstance(a, dict) and isinstance(b, dict):
            out += fingerprint_diff(a, b, f"{prefix}{k}.")
        elif a != b:
            out.append(f"{prefix}{k} {json.dumps(a, default=str)} -> {json.dumps(b, default=str)}")
    return out


def train_one(args, seed: int, out: Path, train: pd.DataFrame, val, tests: dict, labels: list[str],
              base_config: dict, callbacks=(), final_out: Path | None = None) -> dict:
    """Train and evaluate one seed into `out`; returns the metrics. `final_out`: where `out` will be published."""
    out.mkdir(parents=True, exist_ok=True)
    handler = file_logger(out)
    try:
        return _train_one(args, seed, out, train, val, tests, labels, base_config, list(callbacks),
                          final_out or out)
    finally:
        logging.getLogger("trainer").removeHandler(handler)
        handler.close()


def _train_one(args, seed, out, train, val, tests, labels, base_config, callbacks, final_out) -> dict:
    t_start = time.perf_counter()
    if args.resume and (out / "metrics.json").exists() and (out / "config.json").exists():
        log.info("--resume: %s is complete; kept as it is", out)  # e.g. an earlier seed of --seeds
        return json.loads((out / "metrics.json").read_text())
    log.info("run %s: model %s, input mode %s, seed %d, %d training rows", final_out, args.model, args.input_mode,
             seed, len(train))
    if base_config.get("validation", "").startswith("no validation data"):
        log.warning(base_config["validation"], extra=LOG_FILE_ONLY)  # printed once by run_training
    config = {**base_config, "seed": seed, "out": str(final_out)}
    if args.train_size:
        n_before = len(train)
        train = stratified_subsample(train, args.train_size, seed)
        log.info("--train-size %d: %d of %d training rows (stratified, seed %d) %s", args.train_size, len(train),
                 n_before, seed, train["label"].value_counts().sort_index().to_dict())
        config["train_size"] = {"n": len(train), "n_before": n_before, "seed": seed}
    if args.subset:
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
        step_size, total = steps_for(model, len(train))
        schedule = make_schedule(args.curriculum, train, total_steps=total, batch_size=step_size, seed=seed,
                                 cartography_from=args.cartography_from, sts_from=args.sts_from)
        if len(schedule) != total:
            log.warning("--curriculum %s returned %d steps for %d expected", args.curriculum, len(schedule), total)
        config["curriculum"] = {"name": args.curriculum, "total_steps": len(schedule), "batch_size": step_size}

    # the resume check: a checkpoint is continued only by the command that wrote it
    print_fp = resume_fingerprint(config)
    fp_path = out / "resume.json"
    resume = False
    if args.resume and fp_path.exists():
        diff = fingerprint_diff(json.loads(fp_path.read_text()), print_fp)
        if diff:
            raise UserError(f"--resume: {out} was started with other settings: {'; '.join(diff[:4])}"
                            + (f" (+{len(diff) - 4} more)" if len(diff) > 4 else "")
                            + "; give the original flags, or --overwrite to start again")
        resume = (out / "checkpoint").exists()
        log.info("--resume: %s", "continuing from the checkpoint" if resume else "no checkpoint yet; from the start")
    elif args.resume:
        log.info("--resume: nothing to resume in %s; training from the start", out)
    write_json(fp_path, print_fp)

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
    if not frames:
        log.warning(NOTHING_HELD_OUT, extra=LOG_FILE_ONLY)
        frames = {"train": distinct}
    metrics, preds = evaluate_splits(model, frames)
    for split, d in (config.get("data") or {}).get("dropped", {}).items():
        if split in metrics:
            metrics[split]["dropped"] = d
    write_evaluation(out, metrics, preds)
    if args.by:
        write_slices(out, preds, args.by, list(model.labels), train=distinct)
    config["versions"] = versions()  # after the model's libraries are imported
    config["total_seconds"] = round(time.perf_counter() - t_start, 3)
    write_json(out / "config.json", config)
    if (out / "checkpoint").exists() and not args.keep_checkpoint:
        shutil.rmtree(out / "checkpoint")
    fp_path.unlink(missing_ok=True)
    return metrics


NOTHING_HELD_OUT = ("no validation or test data: the scores are on the training data itself (how well the "
                    "model fits it, not how well it generalises; give --test FILE or a test split)")


# ---------------------------------------------------------------------------- entry

def versions() -> dict:
    out = {"python": platform.python_version()}
    for name in ("numpy", "pandas", "sklearn", "torch", "transformers", "xgboost", "gensim"):
        mod = sys.modules.get(name)
        if mod is not None:
            out[name] = getattr(mod, "__version__", "?")
    return out


def prepare_output(args) -> Path:
    """Decide what happens to `--output` before any work; returns the run's work folder,
    ``OUT.inprogress`` (not created yet)."""
    out = Path(args.output)
    work = atomic.unfinished_path(out)
    pid = atomic.live_claim(work)
    if pid is not None:
        raise UserError(f"{out}: another train (pid {pid}) is writing this run ({work}); wait for it or "
                        f"choose another --output")
    if out.exists() and any(out.iterdir()):
        is_run = (out / "config.json").exists()
        if not (args.resume or args.overwrite):
            raise UserError(f"{out}: run directory exists and is not empty (use --overwrite or --resume)")
        if args.overwrite and not is_run:
            raise UserError(f"{out}: not a run directory (no config.json); --overwrite replaces runs only: "
                            f"choose another --output or remove it yourself")
    if work.exists():
        if args.overwrite:
            atomic.discard(work)
        elif not has_progress(work):
            print(f"note: {work}: an unfinished run with nothing trained in it (no checkpoint, no finished seed): "
                  f"removed", file=sys.stderr)
            atomic.discard(work)
        elif not args.resume:
            raise UserError(f"{work}: an unfinished run is there (a failed or killed train): use --resume to "
                            f"continue it, or --overwrite to start again")
    return work


def has_progress(work: Path) -> bool:
    """Whether an unfinished run holds anything `--resume` would reuse: a checkpoint or a
    finished seed of `--seeds`."""
    return any(work.glob("checkpoint")) or any(work.glob("seed_*/checkpoint")) or \
        any(work.glob("seed_*/metrics.json"))


def note_validation(args, val) -> str | None:
    """What the run does without validation data (printed, logged and stored in config.json)."""
    if val is not None and len(val):
        return None
    if args.model in TORCH_MODELS:
        return ("no validation data: no early stopping and no best-epoch selection; the last epoch's weights "
                "are kept (give --validation FILE or a validation split)")
    return "no validation data: no validation scores (give --validation FILE or a validation split)"


def run_training(args, callbacks) -> int:
    validate_args(args)
    out: Path = Path(args.output)
    work = prepare_output(args)
    if args.resume and not work.exists() and (out / "metrics.json").exists() and (out / "config.json").exists():
        print(f"--resume: {out} is complete; kept as it is")
        return 0

    train, val, tests, dropped = load_data(args)
    labels, label_info = check_train_labels(args, train, val, tests)
    for name, df in (({"validation": val} if val is not None else {}) | tests).items():
        check_labels(df, labels, df.attrs.get("source", name))
    if args.seeds > 1 and (val is None or not len(val)):
        print(f"note: --seeds {args.seeds} without validation data: no seed can be selected; all {args.seeds} "
              f"are trained, their scores averaged (mean ± std), and the first seed ({args.seed}) is the run's "
              f"model", file=sys.stderr)
    if args.grid and (val is None or not len(val)) and model_grid(args):
        raise UserError("--grid needs validation data (--validation FILE or a validation split)")
    evaluated = list(tests.values()) + ([val] if val is not None else [])
    for col in args.by:
        for c in col.split(","):
            if c and not any(c in df.columns for df in evaluated):
                columns = ", ".join(map(str, evaluated[0].columns)) if evaluated else "no test data"
                raise UserError(f"--by {c}: no test data has a column {c!r} (columns: {columns})")
    note = note_validation(args, val)
    if note:
        print(f"note: {note}", file=sys.stderr)  # train.log gets it in train_one
    for split, d in dropped.items():
        print(f"note: {split}: dropped {sum(d.values())} rows {d} (recorded in config.json)", file=sys.stderr)
    base_config = {
        "command": ["python", "-m", "trainer", "train", *sys.argv[2:]] if sys.argv[1:2] == ["train"] else sys.argv,
        "model": args.model, "input_mode": args.input_mode, "labels": labels, "label_set": label_info,
        "encoding": args.encoding if args.model == "transformer" else None,
        "data": {"data": str(args.data) if args.data else None,
                 "train": [str(t) for t in args.train] if args.train else None,
                 "validation": [str(v) for v in args.validation] if args.validation else None,
                 "test": [str(t) for t in args.test], "columns": column_mapping(args),
                 "n_validation": len(val) if val is not None else 0, "n_test": {k: len(v) for k, v in tests.items()},
                 "dropped": dropped, "duplicate_ids": args.duplicate_ids},
        "validation": note or "used for early stopping / selection",
        "oversample": args.oversample, "class_weights": args.class_weights, "grid": None,
        "by": args.by, "versions": versions(),
    }

    # kept on failure when it holds a checkpoint or a finished seed (for --resume), removed when
    # nothing was trained yet (a failed start: a model that does not load), swapped in when finished
    try:
        with atomic.WorkFolder(out, work=work, keep=True, resume=True) as work:
            atomic.claim(work)
            code = _train_all(args, work, out, train, val, tests, labels, base_config, callbacks)
    except BaseException:
        if has_progress(work):
            log.error("train failed: %s keeps its previous state; the unfinished run is in %s (--resume continues "
                      "it)", out, work)
        else:
            atomic.discard(work)
            log.error("train failed before anything was trained: %s keeps its previous state; nothing is left to "
                      "resume (%s removed)", out, work)
        raise
    print(f"wrote {out}")
    return code


def _train_all(args, work, out, train, val, tests, labels, base_config, callbacks) -> int:
    if args.seeds == 1:
        metrics = train_one(args, args.seed, work, train, val, tests, labels, base_config, callbacks, final_out=out)
        _print_summary(metrics)
        return 0

    seeds = [args.seed + i for i in range(args.seeds)]
    per_seed = {}
    for s in seeds:
        per_seed[str(s)] = train_one(args, s, work / f"seed_{s}", train, val, tests, labels, base_config, callbacks,
                                     final_out=out / f"seed_{s}")
    selectable = all("validation" in per_seed[str(s)] for s in seeds)
    selected = max(seeds, key=lambda s: (per_seed[str(s)]["validation"]["macro_f1"], -s)) if selectable else seeds[0]
    summary_keys = ("accuracy", "micro_f1", "macro_f1")
    runs = {s: {split: {k: m[k] for k in summary_keys} for split, m in ms.items()} for s, ms in per_seed.items()}
    mean, std = mean_std(runs)
    selection = "validation macro_f1" if selectable else "the first seed (no validation data)"
    write_json(work / "seeds.json", {"selection": selection, "selected_seed": selected,
                                      "seeds": seeds, "runs": runs, "mean": mean, "std": std})
    sel = work / f"seed_{selected}"
    names = ["metrics.json", "predictions.parquet", *[p.name for p in sel.glob("confusion_matrix_*.png")],
             *[p.name for p in sel.glob("slices.*")]]
    for name in names:
        shutil.copy2(sel / name, work / name)
    if (sel / "dynamics").exists():
        shutil.rmtree(work / "dynamics", ignore_errors=True)
        shutil.copytree(sel / "dynamics", work / "dynamics")
    selected_config = json.loads((sel / "config.json").read_text())
    write_json(work / "config.json", {**selected_config, "out": str(out), "seeds": seeds, "selected_seed": selected})
    with open(work / "train.log", "w", encoding="utf-8") as logf:
        for s in seeds:
            logf.write(f"==> seed_{s}/train.log\n")
            logf.write((work / f"seed_{s}" / "train.log").read_text(encoding="utf-8"))
    print(f"selected seed {selected} (best validation macro-F1)" if selectable else
          f"seed {selected}: the run's model (the first seed; no validation data to select on)")
    _print_summary(per_seed[str(selected)])
    for split in mean:
        print(f"{split} over {len(seeds)} seeds: "
              f"accuracy {mean[split]['accuracy']:.4f} ± {std[split]['accuracy']:.4f}, "
              f"macro-F1 {mean[split]['macro_f1']:.4f} ± {std[split]['macro_f1']:.4f}")
    return 0


def _print_summary(metrics: dict) -> None:
    if list(metrics) == ["train"]:
        print(f"note: {NOTHING_HELD_OUT}")
    for split, m in metrics.items():
        print(f"{split}: {format_scores(m)}")
