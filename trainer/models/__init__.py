"""Model kinds of `train --model`: one class per kind, one small interface.

Every model has ``labels`` (ordered), ``input_mode`` and
``fit(train_df, val_df, ctx)``, ``predict_proba(df) -> (n, len(labels))``,
``save(model_dir)``, ``load(model_dir, meta)`` and ``embed(texts)``.
"""
from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

MODELS = {
    "majority": "trainer.models.shallow:Majority",
    "tfidf-lr": "trainer.models.shallow:TfidfLR",
    "tfidf-svm": "trainer.models.shallow:TfidfSVM",
    "bow-xgboost": "trainer.models.shallow:BowXGBoost",
    "cbow-svm": "trainer.models.cbow:CbowSVM",
    "cbow-softmax": "trainer.models.cbow:CbowSoftmax",
    "transformer": "trainer.models.transformer:Transformer",
    "e5-linear": "trainer.models.frozen:E5Linear",
}
TORCH_MODELS = {"cbow-softmax", "transformer"}
INPUT_MODES = ("pair", "hypothesis", "premise")
_WORD = re.compile(r"\w+", re.UNICODE)


def model_class(kind: str):
    module, name = MODELS[kind].split(":")
    return getattr(importlib.import_module(module), name)


def sides(df: pd.DataFrame, input_mode: str) -> list[list[str]]:
    """The text columns a model sees: both sentences, or only one (artifact baselines)."""
    cols = {"pair": ["premise", "hypothesis"], "hypothesis": ["hypothesis"], "premise": ["premise"]}[input_mode]
    return [df[c].astype(str).tolist() for c in cols]


def words(text: str) -> list[str]:
    """Lower-cased word tokens (Unicode letters and digits; works for any script)."""
    return _WORD.findall(text.lower())


@dataclass
class FitContext:
    """What a model's fit needs from the run beyond the data."""
    seed: int = 0
    out_dir: Path | None = None
    class_weights: bool = False
    params: dict[str, Any] = field(default_factory=dict)  # model hyper-parameters
    callbacks: list = field(default_factory=list)           # torch models: loop callbacks
    schedule: Any = None                                    # torch models: batch schedule
    dynamics_df: pd.DataFrame | None = None                 # distinct training rows to score per epoch
    resume: bool = False
    log: Any = None


def balanced_weights(y: np.ndarray, n_classes: int) -> np.ndarray:
    """Per-class weights n / (k * count_c), scikit-learn's "balanced"."""
    counts = np.bincount(y, minlength=n_classes).astype(float)
    counts[counts == 0] = 1.0
    return len(y) / (n_classes * counts)


def softmax(scores: np.ndarray) -> np.ndarray:
    scores = np.atleast_2d(scores)
    z = scores - scores.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def write_meta(model_dir: Path, meta: dict) -> None:
    model_dir.mkdir(parents=True, exist_ok=True)
    (model_dir / "model.json").write_text(json.dumps(meta, indent=2, sort_keys=True))
