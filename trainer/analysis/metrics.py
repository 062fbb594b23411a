"""Classification metrics in the layout of RoNLI Table 4, and the confusion-matrix plot."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support


def compute_metrics(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str],
                    average_labels: Sequence[str] | None = None) -> dict:
    """accuracy, micro/macro F1, per-class P/R/F1/support and the confusion matrix.

    `labels` fixes the order of classes (the run's label list), so that a class absent
    from one split still gets its row (support 0). `average_labels` (cross-dataset
    evaluation): the classes micro/macro-F1 average over, e.g. the gold labels of a 3-label
    file; predictions outside them are errors.

    Macro-F1 averages over the classes of `average_labels` (or `labels`) that the split's
    gold labels hold: a class absent from the split has no F1 to average (its 0 would turn
    a perfect accuracy into macro-F1 0.5 on a split of two of four labels). Those classes
    are then named in ``absent_labels``, and ``macro_f1_labels`` lists the ones averaged.
    """
    labels = list(labels)
    gold, pred = list(gold), list(pred)
    avg = list(average_labels) if average_labels is not None else labels
    p, r, f, s = precision_recall_fscore_support(gold, pred, labels=labels, zero_division=0)
    if not gold:
        return {"n": 0, "accuracy": float("nan"), "micro_f1": float("nan"), "macro_f1": float("nan"),
                "per_class": {lab: {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0} for lab in labels},
                "confusion_matrix": {"labels": labels, "matrix": [[0] * len(labels) for _ in labels]}}
    present = set(gold)
    averaged = [lab for lab in avg if lab in present]
    absent = [lab for lab in avg if lab not in present]
    out: dict = {
        "n": len(gold),
        "accuracy": float(accuracy_score(gold, pred)),
        "micro_f1": float(f1_score(gold, pred, labels=avg, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(gold, pred, labels=averaged or avg, average="macro", zero_division=0)),
    }
    if absent and averaged:
        out["macro_f1_labels"] = averaged
        out["absent_labels"] = absent
    return {
        **out,
        "per_class": {lab: {"precision": float(p[i]), "recall": float(r[i]), "f1": float(f[i]),
                            "support": int(s[i])} for i, lab in enumerate(labels)},
        # rows: gold, columns: predicted
        "confusion_matrix": {"labels": labels,
                             "matrix": confusion_matrix(gold, pred, labels=labels).tolist()},
    }


def format_scores(m: dict) -> str:
    """One split's scores as the commands print them; a macro-F1 over part of the labels says so."""
    macro = f"macro-F1 {m['macro_f1']:.4f}"
    if m.get("absent_labels"):
        macro += (f" over the {len(m['macro_f1_labels'])} labels present ({', '.join(m['macro_f1_labels'])}; "
                  f"absent from this split: {', '.join(m['absent_labels'])})")
    return f"accuracy {m['accuracy']:.4f}, micro-F1 {m['micro_f1']:.4f}, {macro} (n={m['n']})"


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


# ---------------------------------------------------------------------------- slices

MISSING = "(none)"


def slice_values(column: pd.Series) -> pd.Series:
    """One value per row, or one row per element of a list cell (multi-label tags):
    the exploded series keeps the row index. Missing and empty lists count as "(none)"."""
    def norm(v):
        if isinstance(v, (list, tuple, set, np.ndarray)):
            items = [str(x) for x in v if x is not None and x == x]
            return items or [MISSING]
        if v is None or (isinstance(v, float) and v != v):
            return MISSING
        return str(v)
    values = column.map(norm)
    return values.explode() if values.map(lambda v: isinstance(v, list)).any() else values


def slice_metrics(preds: pd.DataFrame, column: str, labels: Sequence[str],
                  train_counts: dict | None = None) -> list[dict]:
    """Metrics of each value of `column` (ESNLIR Tables 7-8, IndoNLI Table 11), largest first.

    `preds` has `gold`, `pred` and the column; a list column counts a row under each of
    its tags. `train_counts` (value -> training rows) marks test-only values (n_train 0).
    """
    values = slice_values(preds[column])
    rows = []
    for value, idx in values.groupby(values, sort=False).groups.items():
        part = preds.loc[sorted(set(idx))]
        m = compute_metrics(part["gold"], part["pred"], labels)
        row = {"value": value, "n": m["n"], "accuracy": m["accuracy"], "macro_f1": m["macro_f1"],
               "label_counts": {lab: int(c) for lab, c in part["gold"].value_counts().sort_index().items()},
               "per_class_f1": {lab: v["f1"] for lab, v in m["per_class"].items()}}
        if train_counts is not None:
            row["n_train"] = int(train_counts.get(value, 0))
        rows.append(row)
    rows.sort(key=lambda r: (-r["n"], str(r["value"])))
    return rows


def slices_markdown(slices: dict) -> str:
    """{split: {column: rows}} as markdown tables (ESNLIR Table 7 layout)."""
    out = []
    for split, by in slices.items():
        for column, rows in by.items():
            has_train = any("n_train" in r for r in rows)
            out.append(f"### {split} by {column}\n")
            head = [column, "n"] + (["n_train"] if has_train else []) + ["accuracy", "macro-F1"]
            out.append("| " + " | ".join(head) + " |")
            out.append("|---|" + "---:|" * (len(head) - 1))
            for r in rows:
                cells = [str(r["value"]), str(r["n"])] + ([str(r.get("n_train", 0))] if has_train else []) + \
                        [f"{r['accuracy']:.3f}", f"{r['macro_f1']:.3f}"]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
    return "\n".join(out)
