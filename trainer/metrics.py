"""Classification metrics in the layout of RoNLI Table 4, and the confusion-matrix plot."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support


def compute_metrics(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict:
    """accuracy, micro/macro F1, per-class P/R/F1/support and the confusion matrix.

    `labels` fixes the order of classes (the run's label list), so that a class absent
    from one split still gets its row (support 0) and macro-F1 averages the same classes.
    """
    labels = list(labels)
    gold, pred = list(gold), list(pred)
    p, r, f, s = precision_recall_fscore_support(gold, pred, labels=labels, zero_division=0)
    return {
        "n": len(gold),
        "accuracy": float(accuracy_score(gold, pred)),
        "micro_f1": float(f1_score(gold, pred, labels=labels, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(gold, pred, labels=labels, average="macro", zero_division=0)),
        "per_class": {lab: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]),
                            "support": int(s[i])} for i, lab in enumerate(labels)},
        # rows: gold, columns: predicted
        "confusion_matrix": {"labels": labels,
                             "matrix": confusion_matrix(gold, pred, labels=labels).tolist()},
    }


def plot_confusion(metrics: dict, path: Path, title: str = "") -> Path:
    """Write the confusion matrix of one split's metrics as a PNG (Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = metrics["confusion_matrix"]["labels"]
    m = np.asarray(metrics["confusion_matrix"]["matrix"])
    fig, ax = plt.subplots(figsize=(1.2 * len(labels) + 2.5, 1.0 * len(labels) + 2))
    ax.imshow(m, cmap="Blues")
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    hi = m.max() if m.size else 0
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            ax.text(j, i, str(m[i, j]), ha="center", va="center",
                    color="white" if m[i, j] > hi / 2 else "black")
    ax.set_title(title or f"accuracy {metrics['accuracy']:.3f}, macro-F1 {metrics['macro_f1']:.3f}")
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


SUMMARY_KEYS = ("accuracy", "micro_f1", "macro_f1")


def mean_std(per_seed: dict[str, dict[str, dict]]) -> tuple[dict, dict]:
    """Mean and sample std (ddof=1) over seeds of each split's summary metrics."""
    splits = sorted({s for runs in per_seed.values() for s in runs})
    mean, std = {}, {}
    for split in splits:
        vals = {k: [runs[split][k] for runs in per_seed.values() if split in runs] for k in SUMMARY_KEYS}
        mean[split] = {k: float(np.mean(v)) for k, v in vals.items()}
        std[split] = {k: float(np.std(v, ddof=1)) if len(v) > 1 else 0.0 for k, v in vals.items()}
    return mean, std
