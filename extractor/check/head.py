"""The check's pair model over the encoder's embeddings: the features of a pair and the
fitted head that turns them into probabilities (numpy only; the encoder is
`extractor.encoder.embed`).

Three logistic models, fitted by `benchmarks/check_head.py` and shipped as `head.json`
beside this module (rebuilt byte-identically by the same script):

- `prior`: p(label | premise, hypothesis) over the four labels, fitted on SciNLI's 4,000
  human-labelled English pairs (`../shared/data/nli`) from both embeddings and their
  comparison (`related_features`); the multilingual encoder carries it to other languages;
- `marked`: p(the phrase's label is right) of a marked pair, from the difference of its two
  embeddings, its label (one-hot), the cosine per label, its phrase (one-hot over the
  phrases of at least 5 tuning pairs: a phrase-specific intercept) and the prior
  (`marked_features`);
- `related`: p(the two sentences are related, i.e. the readers' label is not neutral) of a
  neutral pair, from `related_features` and the prior (`neutral_features`).

`marked` and `related` are fitted on the gold sets' tuning parts only. The feature sets are
those of the best cross-validated AUC there among those tried
(benchmarks/check_head_variants.py; docs/label-quality.md).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources

import numpy as np

from extractor.core.names import LABELS, MARKED_LABELS

HEAD_FILE = "head.json"
KIND = "query"  # E5's prompt for both sentences: a symmetric comparison


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, 2d + 1): the premise's and hypothesis's unit embeddings compared: u * v, |u - v|
    and their cosine (the last column)."""
    cos = np.sum(u * v, axis=1, keepdims=True)
    return np.hstack([u * v, np.abs(u - v), cos]).astype(np.float64)


def base_marked_features(u: np.ndarray, v: np.ndarray, labels) -> np.ndarray:
    """(n, d + 6): u - v, the label one-hot and the cosine per label (marked labels only)."""
    cos = np.sum(u * v, axis=1, keepdims=True).astype(np.float64)
    onehot = label_onehot(labels)
    return np.hstack([(u - v).astype(np.float64), onehot, onehot * cos])


def label_onehot(labels) -> np.ndarray:
    return np.array([[lab == m for m in MARKED_LABELS] for lab in labels], dtype=np.float64).reshape(-1, 3)


def related_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(n, 4d + 1): `pair_features`, then u and v themselves."""
    return np.hstack([pair_features(u, v), u.astype(np.float64), v.astype(np.float64)])


def marked_features(u: np.ndarray, v: np.ndarray, labels, phrases, known: list[str], prior: np.ndarray) -> np.ndarray:
    """(n, d + 13 + len(known)): `base_marked_features`, the phrase one-hot over `known`
    phrases, the prior's four probabilities and, per label, the prior's probability of the
    pair's own label."""
    onehot = label_onehot(labels)
    own = prior[np.arange(len(prior)), [LABELS.index(lab) for lab in labels]][:, None]
    phrase = np.array([[p == k for k in known] for p in phrases], dtype=np.float64).reshape(-1, len(known))
    return np.hstack([base_marked_features(u, v, labels), phrase, prior, onehot * own])


def neutral_features(u: np.ndarray, v: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """(n, 4d + 5): `related_features` and the prior's four probabilities."""
    return np.hstack([related_features(u, v), prior])


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))


@dataclass(frozen=True)
class Logistic:
    """One fitted logistic head: p = sigmoid(x . coef + intercept)."""
    coef: np.ndarray
    intercept: float

    def predict(self, x: np.ndarray) -> np.ndarray:
        return sigmoid(x @ self.coef + self.intercept)


@dataclass(frozen=True)
class Multinomial:
    """A fitted multinomial logistic model: p = softmax(x . coef.T + intercept), classes in
    `LABELS` order."""
    coef: np.ndarray       # (classes, features)
    intercept: np.ndarray  # (classes,)

    def predict(self, x: np.ndarray) -> np.ndarray:
        z = x @ self.coef.T + self.intercept
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Head:
    """The shipped head: the prior, both logistic heads, the phrases the marked head knows, the
    default thresholds, the encoder it reads and the file's sha256."""
    prior: Multinomial
    marked: Logistic
    related: Logistic
    phrases: list
    threshold: float          # a marked pair is dropped below this p(label right)
    neutral_threshold: float  # a neutral pair is dropped at or above this p(related)
    encoder: str
    sha256: str

    def p_right(self, u: np.ndarray, v: np.ndarray, labels, phrases) -> np.ndarray:
        prior = self.prior.predict(related_features(u, v))
        return self.marked.predict(marked_features(u, v, labels, phrases, self.phrases, prior))

    def p_related(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        return self.related.predict(neutral_features(u, v, self.prior.predict(related_features(u, v))))


def from_bytes(data: bytes) -> Head:
    doc = json.loads(data)

    def logistic(part: dict) -> Logistic:
        return Logistic(np.asarray(part["coef"], dtype=np.float64), float(part["intercept"]))

    prior = Multinomial(np.asarray(doc["prior"]["coef"], dtype=np.float64),
                        np.asarray(doc["prior"]["intercept"], dtype=np.float64))
    return Head(prior=prior, marked=logistic(doc["marked"]), related=logistic(doc["related"]),
                phrases=list(doc["marked"]["phrases"]),
                threshold=float(doc["thresholds"]["marked"]), neutral_threshold=float(doc["thresholds"]["neutral"]),
                encoder=str(doc["encoder"]), sha256=hashlib.sha256(data).hexdigest())


def head_bytes() -> bytes:
    """The shipped head file's bytes (read through the package: it may be inside a zip)."""
    return resources.files("extractor.check").joinpath(HEAD_FILE).read_bytes()


def load() -> Head:
    return from_bytes(head_bytes())


def to_json(prior: tuple, marked: tuple, related: tuple, phrases: list[str], thresholds: dict, encoder: str,
            training: dict) -> bytes:
    """The head file's bytes: every number rounded to 7 significant digits, keys in a fixed
    order, so that a rebuild from the same data gives the same bytes."""
    def num(x) -> float:
        return float(f"{float(x):.7g}")

    doc = {"encoder": encoder, "kind": KIND,
           "thresholds": {k: num(v) for k, v in sorted(thresholds.items())},
           "prior": {"coef": [[num(c) for c in row] for row in prior[0]], "intercept": [num(c) for c in prior[1]],
                     "labels": list(LABELS)},
           "marked": {"coef": [num(c) for c in marked[0]], "intercept": num(marked[1]),
                      "labels": list(MARKED_LABELS), "phrases": list(phrases)},
           "related": {"coef": [num(c) for c in related[0]], "intercept": num(related[1])},
           "training": training}
    return (json.dumps(doc, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
