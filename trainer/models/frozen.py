"""``e5-linear``: a frozen sentence encoder and a linear head, the CPU-friendly baseline of
a real encoder.

Each sentence is embedded once by the derived multilingual-e5-small (extractor/encoder:
E5's ``query:`` prompt, which E5 uses for symmetric tasks and linear probes; mean pooling;
unit vectors); a pair becomes ``[u, v, |u - v|, u * v]`` (InferSent's features; one side:
``[u]``) and a logistic regression reads it. Embeddings are cached per process by text, so
that validation, test, grid points and seeds embed a sentence once.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from trainer.models.shallow import SklearnModel

_ENCODERS: dict[str, Any] = {}
_VECTORS: dict[tuple[str, str], np.ndarray] = {}


def sentence_vectors(texts: list[str], device: str = "auto", kind: str = "query") -> np.ndarray:
    """Unit vectors of `texts` from the derived encoder, each text embedded once per process."""
    # torch and transformers only when a frozen-encoder model embeds (the trainer's --help stays quick)
    from extractor.encoder.embed import Encoder

    dev = None if device in (None, "auto") else device
    key = dev or "auto"
    if key not in _ENCODERS:
        _ENCODERS[key] = Encoder(device=dev)
    todo = list(dict.fromkeys(t for t in texts if (kind, t) not in _VECTORS))
    if todo:
        for text, vec in zip(todo, _ENCODERS[key].embed(todo, kind)):
            _VECTORS[(kind, text)] = vec
    return np.stack([_VECTORS[(kind, t)] for t in texts]) if texts else np.zeros((0, 384), dtype=np.float32)


class PairFeatures(BaseEstimator, TransformerMixin):
    """side_frame columns s0 (and s1) -> [u, v, |u - v|, u * v] (one side: [u])."""

    def __init__(self, device: str = "auto"):
        self.device = device

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        cols = [c for c in ("s0", "s1") if c in X.columns]
        vecs = [sentence_vectors(X[c].astype(str).tolist(), self.device) for c in cols]
        if len(vecs) == 1:
            return vecs[0]
        u, v = vecs
        return np.hstack([u, v, np.abs(u - v), u * v])


class E5Linear(SklearnModel):
    kind = "e5-linear"
    GRID = {"C": [0.1, 1.0, 10.0]}
    DEFAULTS = {"C": 1.0, "max_iter": 2000, "device": "auto"}

    def build(self, seed, class_weights):
        return Pipeline([("features", PairFeatures(str(self.params.get("device") or "auto"))),
                         ("scale", StandardScaler()),
                         ("clf", LogisticRegression(C=float(self.params["C"]), max_iter=int(self.params["max_iter"]),
                                                    random_state=seed,
                                                    class_weight="balanced" if class_weights else None))])

    def embed(self, texts: list[str]) -> np.ndarray:
        return sentence_vectors(list(texts), str(self.params.get("device") or "auto"))
