"""Run directories: writing results, reading a saved run back (`load_run`).

The layout is the contract of docs/trainer.md ("Run directory contract").
"""
from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pandas as pd

from trainer.metrics import compute_metrics, plot_confusion

log = logging.getLogger("trainer")


def write_json(path: Path, obj) -> None:
    """Write JSON via a temporary file, so a reader never sees half a file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=_jsonable) + "\n")
    os.replace(tmp, path)


def _jsonable(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def read_json(path: Path):
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    return json.loads(path.read_text())


def resolve_run_dir(run_dir) -> Path:
    """The directory that holds the model: a `--seeds` run points to its selected seed."""
    run_dir = Path(run_dir)
    config_path = run_dir / "config.json"
    if not config_path.exists():
        raise FileNotFoundError(f"{run_dir}: not a run directory (no config.json)")
    config = read_json(config_path)
    if config.get("selected_seed") is not None and not (run_dir / "model").exists():
        return run_dir / f"seed_{config['selected_seed']}"
    return run_dir


class LoadedRun:
    """A saved run's model: ``labels``, ``predict_proba(df)``, ``embed(texts)``, ``config``."""

    def __init__(self, run_dir: Path, model, config: dict):
        self.run_dir, self.model, self.config = run_dir, model, config

    @property
    def labels(self) -> list[str]:
        return list(self.model.labels)

    @property
    def input_mode(self) -> str:
        return self.model.input_mode

    def predict_proba(self, df: pd.DataFrame) -> np.ndarray:
        """(len(df), len(labels)) probabilities; df needs `premise` and `hypothesis`."""
        if len(df) == 0:
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        return np.asarray(self.model.predict_proba(df), dtype=np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Sentence embeddings: mean word vectors (cbow), [CLS] vectors (transformer)."""
        return np.asarray(self.model.embed(list(texts)), dtype=np.float32)


def load_run(run_dir) -> LoadedRun:
    from trainer.models import MODELS, model_class

    base = resolve_run_dir(run_dir)
    model_dir = base / "model"
    meta_path = model_dir / "model.json"
    if not meta_path.exists():
        raise FileNotFoundError(f"{base}: no saved model (model/model.json missing)")
    meta = read_json(meta_path)
    if meta.get("kind") not in MODELS:
        raise ValueError(f"{meta_path}: unknown model kind {meta.get('kind')!r}")
    model = model_class(meta["kind"]).load(model_dir, meta)
    return LoadedRun(base, model, read_json(base / "config.json"))


# ---------------------------------------------------------------------------- evaluation

def predictions_frame(df: pd.DataFrame, split: str, probs: np.ndarray, labels: list[str]) -> pd.DataFrame:
    names = np.asarray(labels, dtype=object)
    out = pd.DataFrame({"id": df["id"].astype(str).to_numpy(), "split": split,
                        "gold": df["label"].to_numpy() if "label" in df.columns else None,
                        "pred": names[probs.argmax(1)] if len(probs) else []})
    for i, lab in enumerate(labels):
        out[f"prob_{lab}"] = probs[:, i].astype(np.float32)
    return out


def evaluate_splits(model, frames: dict[str, pd.DataFrame]) -> tuple[dict, pd.DataFrame]:
    """Metrics per split name and the predictions of every row."""
    metrics, preds = {}, []
    for split, df in frames.items():
        probs = np.asarray(model.predict_proba(df), dtype=np.float32)
        p = predictions_frame(df, split, probs, list(model.labels))
        metrics[split] = compute_metrics(p["gold"], p["pred"], model.labels)
        preds.append(p)
        log.info("%s: accuracy %.4f, macro-F1 %.4f (n=%d)", split, metrics[split]["accuracy"],
                 metrics[split]["macro_f1"], len(df))
    return metrics, pd.concat(preds, ignore_index=True) if preds else pd.DataFrame()


def write_evaluation(out_dir: Path, metrics: dict, preds: pd.DataFrame) -> None:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "metrics.json", metrics)
    tmp = out_dir / "predictions.parquet.tmp"
    preds.to_parquet(tmp, index=False)
    os.replace(tmp, out_dir / "predictions.parquet")
    for split, m in metrics.items():
        plot_confusion(m, out_dir / f"confusion_matrix_{split}.png", title=f"{split}: accuracy {m['accuracy']:.3f}, "
                                                                         f"macro-F1 {m['macro_f1']:.3f}")


def check_labels(df: pd.DataFrame, labels: list[str], where: str) -> None:
    """Gold labels of evaluation data must be labels the model knows."""
    if "label" not in df.columns:
        return
    unknown = sorted(set(df["label"].dropna()) - set(labels))
    if unknown:
        raise ValueError(f"{where}: label {unknown[0]!r} is not one of the model's labels {labels}"
                         + (f" ({len(unknown)} unknown labels)" if len(unknown) > 1 else ""))


def file_logger(run_dir: Path) -> logging.Handler:
    """Send the trainer's log to RUN_DIR/train.log (and stderr at INFO)."""
    logger = logging.getLogger("trainer")
    logger.setLevel(logging.INFO)
    if not any(isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
               for h in logger.handlers):
        console = logging.StreamHandler()
        console.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(console)
    handler = logging.FileHandler(Path(run_dir) / "train.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    return handler
