"""`python -m trainer evaluate RUN_DIR --test FILE [FILE ...]`: a saved run on new data.

Writes the same outputs as training (metrics.json keyed by each file's stem,
predictions.parquet, confusion-matrix PNGs) to `--out` (default RUN_DIR/evaluation/).
Column flags default to the mapping the run was trained with.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from trainer.cli import UserError
from trainer.data import NLIDataError, add_column_arguments, drop_unlabeled, load_nli
from trainer.runs import check_labels, evaluate_splits, load_run, write_evaluation


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--test", type=Path, nargs="+", required=True, help="labelled file(s) to evaluate on")
    p.add_argument("--out", type=Path, help="output directory (default: RUN_DIR/evaluation)")
    add_column_arguments(p)
    for action in p._actions:  # None = "as in the run's config.json"
        if action.dest in ("premise", "hypothesis", "label", "id_col", "label_names"):
            action.default = None


def run_mapping(args, run) -> dict:
    """Column flags given now, else those the run was trained with, else the canonical names."""
    saved = (run.config.get("data") or {}).get("columns") or {}
    names = args.label_names.split(",") if isinstance(args.label_names, str) else None
    return {"premise": args.premise or saved.get("premise", "premise"),
            "hypothesis": args.hypothesis or saved.get("hypothesis", "hypothesis"),
            "label": args.label or saved.get("label", "label"),
            "id_col": args.id_col or saved.get("id_col"),
            "label_names": names or saved.get("label_names")}


def load_frames(files, mapping, labels) -> dict:
    frames = {}
    for f in files:
        name = f.name.split(".")[0]
        if name in frames:
            raise UserError(f"{f}: two test files share the name {name!r}")
        df, _ = drop_unlabeled(load_nli(f, **mapping)["data"])
        check_labels(df, labels, str(f))
        frames[name] = df
    return frames


def run(args) -> int:
    try:
        run_ = load_run(args.run_dir)
        frames = load_frames(args.test, run_mapping(args, run_), run_.labels)
        metrics, preds = evaluate_splits(run_.model, frames)
    except (NLIDataError, FileNotFoundError, ValueError) as exc:
        raise UserError(str(exc).splitlines()[0]) from exc
    out = args.out or Path(args.run_dir) / "evaluation"
    write_evaluation(out, metrics, preds)
    for split, m in metrics.items():
        print(f"{split}: accuracy {m['accuracy']:.4f}, micro-F1 {m['micro_f1']:.4f}, macro-F1 {m['macro_f1']:.4f} "
              f"(n={m['n']})")
    print(f"wrote {out}/metrics.json")
    return 0
