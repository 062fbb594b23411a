"""A saved run scored on new data: what `evaluate` and `stress` share (trainer/commands/evaluate.py).

Writes the same outputs as training (metrics.json keyed by each file's stem,
predictions.parquet with the rows' own columns, confusion-matrix PNGs) to `--output`
(default RUN_DIR/evaluation/), written beside it and swapped in at the end
(extractor/io/atomic.py). Column flags default to the mapping the run was trained with.

- `--by COL` (repeatable): metrics per value of a column (genre, corpus, source, marker,
  neutral strategy, or a list column of tags), in `slices.json` / `slices.md`.
- `--label-map a=b,c=d` (repeatable, the maps add up): cross-dataset evaluation. Label names
  of the data *and* of the model are renamed through the map into one label space
  (many-to-one allowed); gold labels the model cannot predict are reported (`unmapped`),
  kept as errors by default. `stress` takes the same flags.
- RUN_DIR may be a local Hugging Face sequence-classification checkpoint that the trainer
  did not train (zero-shot): its `id2label` names are its labels.
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from extractor.core.errors import UserError
from trainer.data.loading import apply_label_map, check_ids, drop_unlabeled, load_one_split
from trainer.analysis.metrics import compute_metrics
from trainer.errors import RunError
from trainer.training.runs import check_labels, evaluate_splits, predictions_frame, with_row_columns

log = logging.getLogger("trainer")


def run_mapping(args, run) -> dict:
    """Column flags given now, else those the run was trained with, else the canonical names."""
    saved = (run.config.get("data") or {}).get("columns") or {}
    names = args.label_names.split(",") if isinstance(args.label_names, str) else None
    return {"premise": args.premise or saved.get("premise", "premise"),
            "hypothesis": args.hypothesis or saved.get("hypothesis", "hypothesis"),
            "label": args.label or saved.get("label", "label"),
            "id_col": args.id_col or saved.get("id_col"),
            "label_names": names or saved.get("label_names")}


def load_frames(files, mapping, labels, *, label_map: dict | None = None, duplicate_ids: str = "error",
                check: bool = True, split: str | None = None) -> dict:
    """{stem: frame} of labelled files or folders; gold labels renamed through `label_map`
    (original in `orig_label`). A dataset folder gives `split`, else its test split, else its
    only split (:func:`trainer.data.loading.load_one_split`)."""
    frames = {}
    for f in files:
        name = Path(f).name.split(".")[0]
        if name in frames:
            raise UserError(f"{f}: two test files share the name {name!r}")
        _, df = load_one_split(f, split, **mapping)
        df, n_unlabeled = drop_unlabeled(df)
        dropped = dict(df.attrs.get("dropped") or {})
        df, n_dup = check_ids(df, str(f), duplicate_ids)
        dropped.update({k: v for k, v in (("unlabeled", n_unlabeled), ("duplicate_id", n_dup)) if v})
        df = apply_label_map(df, label_map or {})
        df.attrs["dropped"] = dropped
        if check:
            try:
                check_labels(df, labels, str(f))
            except RunError as exc:
                raise UserError(f"{exc}; map the file's labels with --label-map FILE_LABEL=MODEL_LABEL") from exc
        frames[name] = df
    return frames


# ---------------------------------------------------------------------------- cross-dataset scoring

def mapped_space(model_labels: list[str], label_map: dict[str, str]) -> tuple[list[str], np.ndarray]:
    """The model's labels renamed through the map (order of first appearance) and the
    (len(model_labels), len(space)) 0/1 matrix that sums probabilities into that space."""
    space: list[str] = []
    for lab in model_labels:
        target = label_map.get(lab, lab)
        if target not in space:
            space.append(target)
    merge = np.zeros((len(model_labels), len(space)), dtype=np.float32)
    for i, lab in enumerate(model_labels):
        merge[i, space.index(label_map.get(lab, lab))] = 1.0
    return space, merge


def score_mapped(gold: pd.Series, probs: np.ndarray, model_labels: list[str], label_map: dict[str, str],
                 unmapped: str = "keep", where: str = "data") -> tuple[dict, np.ndarray, np.ndarray, list[str]]:
    """Metrics of a model on gold labels (already renamed) in the mapped label space.

    Probabilities of model labels mapped to the same name are summed. Gold labels outside
    the model's mapped labels are "unmapped": reported, and kept as errors (`keep`), dropped
    (`drop`, counted) or an error (`error`). Macro-F1 averages the gold labels present.
    Returns (metrics, kept row mask, mapped probabilities, the label list of the metrics).
    """
    space, merge = mapped_space(model_labels, label_map)
    mapped = probs @ merge if len(probs) else np.zeros((0, len(space)), dtype=np.float32)
    gold = gold.astype(object)
    counts = gold.value_counts()
    outside = {str(k): int(v) for k, v in counts.items() if k not in space}
    keep = np.ones(len(gold), dtype=bool)
    if outside and unmapped == "error":
        lab = next(iter(outside))
        raise UserError(f"{where}: gold label {lab!r} ({outside[lab]} rows) is not a label of the model after "
                        f"--label-map (model labels: {space}); extend --label-map or use --unmapped keep|drop")
    if outside and unmapped == "drop":
        keep = ~gold.isin(list(outside)).to_numpy()
    labels = space + [lab for lab in outside if unmapped == "keep"]
    g = gold[keep].tolist()
    pred = np.asarray(space, dtype=object)[mapped[keep].argmax(1)] if keep.any() else np.asarray([], dtype=object)
    present = [lab for lab in labels if lab in set(g)]
    m = compute_metrics(g, list(pred), labels, average_labels=present or labels)
    predicted = pd.Series(pred).value_counts()
    m["label_map"] = {
        "map": label_map, "model_labels": list(model_labels), "mapped_model_labels": space,
        "averaged_over": present,
        "unmapped_gold": outside,  # gold labels no model label maps to: rows counted as errors or dropped
        "unmapped_policy": unmapped, "rows_dropped": int((~keep).sum()),
        "predicted_outside_gold": {str(k): int(v) for k, v in predicted.items() if k not in set(g)},
    }
    return m, keep, mapped, labels


def evaluate_frames(run_, frames: dict, label_map: dict, unmapped: str = "keep") -> tuple[dict, pd.DataFrame, list]:
    """(metrics per frame, predictions, the label list of the metrics): in the model's own labels,
    or through `label_map` (and always for an outside checkpoint) in the mapped label space."""
    if label_map or run_.config.get("model") == "hf-checkpoint":
        metrics, preds = _evaluate_mapped(run_, frames, label_map, unmapped)
        labels = sorted({lab for m in metrics.values() for lab in m["confusion_matrix"]["labels"]})
        return metrics, preds, labels
    metrics, preds = evaluate_splits(run_.model, frames)
    return metrics, preds, list(run_.labels)


def note_unmapped(metrics: dict) -> None:
    """A `note:` line on stderr per split with gold labels no model label maps to."""
    for split, m in metrics.items():
        lm = m.get("label_map")
        if lm and lm["unmapped_gold"]:
            print(f"note: {split}: gold labels the model cannot predict after --label-map: {lm['unmapped_gold']} "
                  f"({'counted as errors' if lm['unmapped_policy'] == 'keep' else 'rows dropped'})", file=sys.stderr)


def _evaluate_mapped(run_, frames: dict, label_map: dict, unmapped: str) -> tuple[dict, pd.DataFrame]:
    metrics, parts = {}, []
    for split, df in frames.items():
        probs = run_.predict_proba(df)
        m, keep, mapped, labels = score_mapped(df["label"], probs, run_.labels, label_map, unmapped,
                                               df.attrs.get("source", split))
        metrics[split] = m
        kept = df[keep].reset_index(drop=True)
        space = m["label_map"]["mapped_model_labels"]
        p = predictions_frame(kept, split, mapped[keep], space)
        p.insert(4, "model_pred", np.asarray(run_.labels, dtype=object)[probs[keep].argmax(1)]
                 if keep.any() else [])
        parts.append(with_row_columns(p, kept))
        log.info("%s: accuracy %.4f, macro-F1 %.4f (n=%d, label map)", split, m["accuracy"], m["macro_f1"], m["n"])
    return metrics, pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
