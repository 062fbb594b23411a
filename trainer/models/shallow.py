"""scikit-learn / xgboost baselines: majority, TF-IDF + LR / linear SVM, bag of words + XGBoost."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.dummy import DummyClassifier
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

from trainer.errors import ModelError
from trainer.models import FitContext, balanced_weights, sides, softmax, words, write_meta


def side_frame(df: pd.DataFrame, input_mode: str) -> pd.DataFrame:
    """Columns s0 (and s1): the sentences the model sees, named by position."""
    return pd.DataFrame({f"s{i}": col for i, col in enumerate(sides(df, input_mode))})


class OverlapFeatures(BaseEstimator, TransformerMixin):
    """Lexical overlap of premise (s0) and hypothesis (s1): the classic NLI cues."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        rows = []
        for a, b in zip(X["s0"], X["s1"]):
            wa, wb = set(words(a)), set(words(b))
            inter = len(wa & wb)
            la, lb = len(words(a)), len(words(b))
            rows.append([
                inter / max(1, len(wa | wb)),        # Jaccard
                inter / max(1, len(wb)),             # hypothesis words found in the premise
                inter / max(1, len(wa)),             # premise words found in the hypothesis
                math.log1p(la), math.log1p(lb),
                abs(la - lb) / max(1, la, lb),
            ])
        return np.asarray(rows, dtype=np.float64)


def text_features(input_mode: str, *, kind: str = "tfidf", max_features: int = 50000) -> ColumnTransformer:
    """Word + character n-gram TF-IDF (or word counts) per sentence, plus overlap for pairs."""
    n_sides = 2 if input_mode == "pair" else 1
    parts: list[tuple[str, Any, str | list[str]]] = []  # (name, transformer, column(s))
    for i in range(n_sides):
        col = f"s{i}"
        if kind == "tfidf":
            parts.append((f"word{i}", TfidfVectorizer(ngram_range=(1, 2), min_df=1, sublinear_tf=True,
                                                      max_features=max_features, token_pattern=r"(?u)\b\w+\b"), col))
            parts.append((f"char{i}", TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), min_df=2,
                                                      sublinear_tf=True, max_features=max_features), col))
        else:
            parts.append((f"bow{i}", CountVectorizer(ngram_range=(1, 2), min_df=2, max_features=max_features,
                                                     token_pattern=r"(?u)\b\w+\b"), col))
    if n_sides == 2:
        parts.append(("overlap", Pipeline([("f", OverlapFeatures()), ("scale", StandardScaler())]), ["s0", "s1"]))
    return ColumnTransformer(parts)


class SklearnModel:
    """A scikit-learn pipeline over side_frame(df); subclasses say which."""
    kind = ""
    GRID: dict[str, list] = {}
    DEFAULTS: dict = {}

    def __init__(self, labels: list[str], input_mode: str = "pair", params: dict | None = None):
        self.labels = list(labels)
        self.input_mode = input_mode
        self.params = {**self.DEFAULTS, **(params or {})}
        self.pipe: Any = None  # the scikit-learn Pipeline, once fitted or loaded

    def build(self, seed: int, class_weights: bool) -> Pipeline:
        raise NotImplementedError

    def _y(self, df: pd.DataFrame) -> np.ndarray:
        index = {lab: i for i, lab in enumerate(self.labels)}
        return df["label"].map(index).to_numpy(dtype=np.int64)

    def fit(self, train: pd.DataFrame, val: pd.DataFrame | None, ctx: FitContext) -> None:
        self.pipe = self.build(ctx.seed, ctx.class_weights)
        y = self._y(train)
        fit_kw = {}
        if ctx.class_weights and self.sample_weighted:
            fit_kw["clf__sample_weight"] = balanced_weights(y, len(self.labels))[y]
        self.pipe.fit(side_frame(train, self.input_mode), y, **fit_kw)

    sample_weighted = False  # class weights via sample_weight instead of class_weight

    def predict_proba(self, df: pd.DataFrame) -> np.ndarray:
        X = side_frame(df, self.input_mode)
        clf = self.pipe[-1]
        if hasattr(clf, "predict_proba"):
            p = self.pipe.predict_proba(X)
        else:  # linear SVM: softmax of decision values (scores, not calibrated probabilities)
            d = self.pipe.decision_function(X)
            p = softmax(np.column_stack([-d, d]) if d.ndim == 1 else d)
        out = np.zeros((len(df), len(self.labels)), dtype=np.float32)
        out[:, clf.classes_] = p  # classes never seen in training keep probability 0
        return out

    def save(self, model_dir: Path) -> None:
        write_meta(model_dir, {"kind": self.kind, "labels": self.labels, "input_mode": self.input_mode,
                               "params": self.params})
        joblib.dump(self.pipe, model_dir / "model.joblib")

    @classmethod
    def load(cls, model_dir: Path, meta: dict):
        model = cls(meta["labels"], meta["input_mode"], meta.get("params"))
        model.pipe = joblib.load(model_dir / "model.joblib")
        return model

    def embed(self, texts: list[str]) -> np.ndarray:
        raise ModelError(f"model {self.kind!r} has no sentence embeddings (use cbow-* or transformer)")


class Majority(SklearnModel):
    kind = "majority"

    def build(self, seed, class_weights):
        return Pipeline([("clf", DummyClassifier(strategy="most_frequent"))])


class TfidfLR(SklearnModel):
    kind = "tfidf-lr"
    # RoNLI Appendix B: C in [0.1, 1000]; their Softmax optimum C=1, tol 1e-3
    GRID = {"C": [0.1, 0.5, 1.0, 10.0, 100.0, 1000.0]}
    DEFAULTS = {"C": 1.0, "tol": 1e-3, "max_iter": 2000}

    def build(self, seed, class_weights):
        return Pipeline([("features", text_features(self.input_mode)),
                         ("clf", LogisticRegression(C=self.params["C"], tol=self.params["tol"],
                                                    max_iter=self.params["max_iter"], random_state=seed,
                                                    class_weight="balanced" if class_weights else None))])


class TfidfSVM(SklearnModel):
    kind = "tfidf-svm"
    # RoNLI Appendix B: SVM optimum C=0.5, max_iter 2500, tol 1e-5
    GRID = {"C": [0.1, 0.5, 1.0, 10.0, 100.0, 1000.0]}
    DEFAULTS = {"C": 0.5, "tol": 1e-5, "max_iter": 2500}

    def build(self, seed, class_weights):
        return Pipeline([("features", text_features(self.input_mode)),
                         ("clf", LinearSVC(C=self.params["C"], tol=self.params["tol"],
                                           max_iter=self.params["max_iter"], random_state=seed,
                                           class_weight="balanced" if class_weights else None))])


class BowXGBoost(SklearnModel):
    kind = "bow-xgboost"
    GRID = {"max_depth": [4, 6, 8], "learning_rate": [0.05, 0.1, 0.3]}
    # one thread: OpenMP barriers on a shared, oversubscribed machine cost more than they gain
    DEFAULTS = {"n_estimators": 300, "max_depth": 6, "learning_rate": 0.1, "n_jobs": 1}
    sample_weighted = True

    def build(self, seed, class_weights):
        from xgboost import XGBClassifier

        clf = XGBClassifier(n_estimators=self.params["n_estimators"], max_depth=self.params["max_depth"],
                            learning_rate=self.params["learning_rate"], tree_method="hist",
                            random_state=seed, n_jobs=int(self.params["n_jobs"]), eval_metric="mlogloss")
        return Pipeline([("features", text_features(self.input_mode, kind="bow", max_features=20000)),
                         ("clf", clf)])
