"""CBOW baselines (RoNLI): mean fastText word vectors of each sentence, concatenated.

`cbow-svm` classifies them with scikit-learn; `cbow-softmax` is multinomial logistic
regression trained in torch by epochs, so it records training dynamics on CPU. Vectors come
from `--vectors FILE.bin|FILE.vec`, or are trained on the training split with gensim.
"""
from __future__ import annotations

import hashlib
import logging
import pickle
import struct
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pandas as pd
import torch
from torch import nn

from trainer.errors import ModelError, ModelFileNotFound
from trainer.models.loop import DynamicsWriter, LoopConfig, fit
from trainer.models import FitContext, balanced_weights, sides, softmax, words, write_meta

log = logging.getLogger("trainer")
_CACHE: dict[str, object] = {}
# what gensim raises on a file that is not vectors of its format: unreadable, not a number
# or not UTF-8 where one is expected, a cut-off binary, an unsupported fastText model, not a pickle
_NOT_VECTORS = (OSError, ValueError, EOFError, NotImplementedError, struct.error, pickle.UnpicklingError)


def stable_str_hash(text: str) -> int:
    """gensim's `hashfxn`: Python's hash() changes between processes; this does not."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=4).digest(), "big")


def load_vectors(path: str | Path):
    """gensim KeyedVectors from a fastText .bin (sub-words for unseen words) or a .vec text file."""
    from gensim.models.fasttext import load_facebook_vectors
    from gensim.models import KeyedVectors

    path = Path(path)
    if not path.exists():
        raise ModelFileNotFound(f"{path}: no such vectors file")
    key = f"file:{path.resolve()}"
    if key not in _CACHE:
        try:
            if path.suffix == ".bin":
                _CACHE[key] = load_facebook_vectors(str(path))
            elif path.suffix == ".kv":
                _CACHE[key] = KeyedVectors.load(str(path))
            else:
                _CACHE[key] = KeyedVectors.load_word2vec_format(str(path), binary=False)
        except _NOT_VECTORS as exc:
            first = str(exc).splitlines()[0] if str(exc) else repr(exc)
            raise ModelError(f"{path}: cannot read word vectors: {first}") from exc
    return _CACHE[key]


def train_vectors(texts: list[str], *, dim: int, seed: int, epochs: int = 10):
    """fastText vectors trained on the given sentences (one worker: reproducible)."""
    from gensim.models import FastText

    sentences = [words(t) for t in dict.fromkeys(texts)]
    digest = hashlib.blake2b("\x1f".join(texts).encode("utf-8"), digest_size=8).hexdigest()
    key = f"train:{digest}:{dim}:{seed}:{epochs}"
    if key not in _CACHE:
        # gensim's default 2M n-gram buckets size every saved run by that default, not by the
        # corpus; the number of distinct n-grams grows with the vocabulary, so the buckets do
        # too (the saved sizes before and after: docs/trainer.md, "Baselines").
        vocabulary = {w for sentence in sentences for w in sentence}
        buckets = min(2_000_000, max(1 << 16, 8 * len(vocabulary)))
        model = FastText(sentences=sentences, vector_size=dim, window=5, min_count=2, epochs=epochs,
                         seed=seed, workers=1, hashfxn=stable_str_hash, min_n=3, max_n=6, bucket=buckets)
        log.info("trained fastText vectors on %d sentences: %d words, %d dimensions",
                 len(sentences), len(model.wv), dim)
        _CACHE[key] = model.wv
    return _CACHE[key]


def mean_vectors(kv, texts: list[str]) -> np.ndarray:
    """Average word vector per text; zeros when no word has a vector."""
    dim = kv.vector_size
    out = np.zeros((len(texts), dim), dtype=np.float32)
    subwords = hasattr(kv, "buckets_word") or type(kv).__name__ == "FastTextKeyedVectors"
    for i, text in enumerate(texts):
        toks = [w for w in words(text) if subwords or w in kv.key_to_index]
        if toks:
            out[i] = np.mean([kv[w] for w in toks], axis=0)
    return out


class CbowBase:
    kind = ""
    GRID: dict[str, list] = {}
    DEFAULTS: dict = {"vector_size": 100, "vector_epochs": 10, "vectors": None}

    def __init__(self, labels: list[str], input_mode: str = "pair", params: dict | None = None):
        self.labels = list(labels)
        self.input_mode = input_mode
        self.params = {**CbowBase.DEFAULTS, **self.DEFAULTS, **(params or {})}
        self.kv: Any = None  # gensim KeyedVectors, once fitted or loaded

    def _vectors(self, train: pd.DataFrame, seed: int):
        if self.params.get("vectors"):
            return load_vectors(self.params["vectors"])
        texts = train["premise"].astype(str).tolist() + train["hypothesis"].astype(str).tolist()
        return train_vectors(texts, dim=int(self.params["vector_size"]), seed=seed,
                             epochs=int(self.params["vector_epochs"]))

    def features(self, df: pd.DataFrame) -> np.ndarray:
        return np.hstack([mean_vectors(self.kv, col) for col in sides(df, self.input_mode)])

    def _y(self, df: pd.DataFrame) -> np.ndarray:
        index = {lab: i for i, lab in enumerate(self.labels)}
        return df["label"].map(index).to_numpy(dtype=np.int64)

    def embed(self, texts: list[str]) -> np.ndarray:
        return mean_vectors(self.kv, list(texts))

    def _save_vectors(self, model_dir: Path) -> dict:
        if self.params.get("vectors"):  # user vectors can be GBs: the run refers to them
            return {"vectors": str(Path(self.params["vectors"]).resolve())}
        self.kv.save(str(model_dir / "vectors.kv"))
        return {"vectors": "vectors.kv"}

    @staticmethod
    def _load_vectors(model_dir: Path, meta: dict):
        ref = meta["vectors"]
        return load_vectors(model_dir / ref if ref == "vectors.kv" else ref)


class CbowSVM(CbowBase):
    kind = "cbow-svm"
    # RoNLI Appendix B: C in [0.1, 1000], linear or RBF kernel; optimum C=0.5, tol 1e-5, 2500 iterations
    GRID = {"C": [0.1, 0.5, 1.0, 10.0, 100.0, 1000.0], "kernel": ["linear", "rbf"]}
    DEFAULTS = {"C": 0.5, "kernel": "linear", "tol": 1e-5, "max_iter": 2500}

    def fit(self, train: pd.DataFrame, val, ctx: FitContext) -> None:
        from sklearn.pipeline import Pipeline
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVC, LinearSVC

        self.kv = self._vectors(train, ctx.seed)
        cw = "balanced" if ctx.class_weights else None
        p = self.params
        clf = (LinearSVC(C=p["C"], tol=p["tol"], max_iter=p["max_iter"], random_state=ctx.seed, class_weight=cw)
               if p["kernel"] == "linear" else
               SVC(C=p["C"], kernel=p["kernel"], tol=p["tol"], max_iter=p["max_iter"] * 10, class_weight=cw,
                   random_state=ctx.seed))
        self.pipe = Pipeline([("scale", StandardScaler()), ("clf", clf)])
        self.pipe.fit(self.features(train), self._y(train))

    def predict_proba(self, df: pd.DataFrame) -> np.ndarray:
        d = self.pipe.decision_function(self.features(df))
        p = softmax(np.column_stack([-d, d]) if d.ndim == 1 else d)  # SVM scores, not calibrated
        out = np.zeros((len(df), len(self.labels)), dtype=np.float32)
        out[:, self.pipe[-1].classes_] = p
        return out

    def save(self, model_dir: Path) -> None:
        model_dir.mkdir(parents=True, exist_ok=True)
        meta = {"kind": self.kind, "labels": self.labels, "input_mode": self.input_mode, "params": self.params}
        meta.update(self._save_vectors(model_dir))
        write_meta(model_dir, meta)
        joblib.dump(self.pipe, model_dir / "model.joblib")

    @classmethod
    def load(cls, model_dir: Path, meta: dict):
        m = cls(meta["labels"], meta["input_mode"], meta.get("params"))
        m.kv = cls._load_vectors(model_dir, meta)
        m.pipe = joblib.load(model_dir / "model.joblib")
        return m


class DenseData:
    """Fixed-size feature rows for the torch loop."""

    def __init__(self, X: np.ndarray, labels: np.ndarray | None, n_classes: int):
        self.X = torch.as_tensor(X, dtype=torch.float32)
        self.labels = labels if labels is not None else np.zeros(len(X), dtype=np.int64)
        self.n_classes = n_classes
        self.lengths: np.ndarray | None = None  # all rows the same size

    def __len__(self) -> int:
        return len(self.X)

    def batch(self, indices):
        return {"x": self.X[indices]}


class SoftmaxHead(nn.Module):
    """Whitening (train statistics, saved with the weights) + a linear softmax layer.

    Mean word vectors are strongly correlated across dimensions, which leaves plain SGD/Adam
    far from the logistic-regression optimum after a few epochs; PCA whitening makes the
    problem well conditioned, so epochs of Adam reach it (and the dynamics mean something).
    """

    mean: torch.Tensor  # buffers, registered in __init__
    proj: torch.Tensor

    def __init__(self, dim: int, n_classes: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("proj", torch.eye(dim))
        self.linear = nn.Linear(dim, n_classes)

    def fit_whitening(self, X: np.ndarray) -> None:
        mean = X.mean(0, dtype=np.float64)
        cov = np.cov((X - mean).T) if len(X) > 1 else np.eye(X.shape[1])
        eig, vecs = np.linalg.eigh(np.atleast_2d(cov))
        # the ridge (1% of the top eigenvalue) keeps noise directions from being blown up: on SciNLI
        # it gives macro-F1 0.41 (no whitening: 0.33, ridge 1e-3: 0.43 but worse on small vocabularies)
        eig = np.clip(eig, 0, None) + 1e-2 * max(float(eig.max()), 1e-12)
        self.mean.copy_(torch.as_tensor(mean, dtype=torch.float32))
        self.proj.copy_(torch.as_tensor(vecs / np.sqrt(eig), dtype=torch.float32))

    def forward(self, x):
        return self.linear((x - self.mean) @ self.proj)


class CbowSoftmax(CbowBase):
    kind = "cbow-softmax"
    # RoNLI Appendix B: learning rate 1e-2..1e-6, mini-batch 8..256 (powers of two)
    GRID = {"lr": [1e-2, 1e-3, 1e-4], "batch_size": [32, 128]}
    DEFAULTS = {"lr": 1e-2, "batch_size": 64, "epochs": 10, "weight_decay": 1e-4, "patience": 3,
                "warmup_ratio": 0.0}

    def fit(self, train: pd.DataFrame, val: pd.DataFrame | None, ctx: FitContext):

        self.kv = self._vectors(train, ctx.seed)
        X, y = self.features(train), self._y(train)
        n = len(self.labels)
        torch.manual_seed(ctx.seed)  # the head's initial weights
        self.head = SoftmaxHead(X.shape[1], n)
        self.head.fit_whitening(X)
        p = self.params
        config = LoopConfig(epochs=int(p["epochs"]), batch_size=int(p["batch_size"]), lr=float(p["lr"]),
                            weight_decay=float(p["weight_decay"]), warmup_ratio=float(p["warmup_ratio"]),
                            patience=int(p["patience"]), max_grad_norm=0.0, seed=ctx.seed, device="cpu",
                            precision="fp32", eval_batch_size=1024, progress=False)
        callbacks = list(ctx.callbacks)
        if ctx.dynamics_df is not None and ctx.out_dir is not None:
            dyn = ctx.dynamics_df
            callbacks.insert(0, DynamicsWriter(DenseData(self.features(dyn), self._y(dyn), n), dyn["pair_id"],
                                               self.labels, ctx.out_dir / "dynamics"))
        val_data = DenseData(self.features(val), self._y(val), n) if val is not None and len(val) else None
        cw = balanced_weights(y, n) if ctx.class_weights else None
        self.state = fit(self.head, DenseData(X, y, n), config=config, val=val_data, callbacks=callbacks,
                         schedule=ctx.schedule, class_weights=cw,
                         checkpoint_dir=ctx.out_dir / "checkpoint" if ctx.out_dir else None, resume=ctx.resume)
        self.head.cpu().eval()

    def loop_config_steps(self) -> tuple[int, int]:
        return int(self.params["batch_size"]), int(self.params["epochs"])

    @torch.no_grad()
    def predict_proba(self, df: pd.DataFrame) -> np.ndarray:
        self.head.eval()
        x = torch.as_tensor(self.features(df))
        return torch.softmax(self.head(x), dim=-1).numpy().astype(np.float32)

    def save(self, model_dir: Path) -> None:
        from safetensors.torch import save_file

        model_dir.mkdir(parents=True, exist_ok=True)
        meta = {"kind": self.kind, "labels": self.labels, "input_mode": self.input_mode, "params": self.params,
                "dim": int(self.head.linear.in_features)}
        meta.update(self._save_vectors(model_dir))
        write_meta(model_dir, meta)
        save_file({k: v.contiguous() for k, v in self.head.state_dict().items()}, str(model_dir / "head.safetensors"))

    @classmethod
    def load(cls, model_dir: Path, meta: dict):
        from safetensors.torch import load_file

        m = cls(meta["labels"], meta["input_mode"], meta.get("params"))
        m.kv = cls._load_vectors(model_dir, meta)
        m.head = SoftmaxHead(meta["dim"], len(m.labels))
        m.head.load_state_dict(load_file(str(model_dir / "head.safetensors")))
        m.head.eval()
        return m
