"""`python -m trainer evaluate RUN_DIR --data FILE [--data FILE ...]`: a saved run on new data.

Writes the same outputs as training (metrics.json keyed by each file's stem,
predictions.parquet with the rows' own columns, confusion-matrix PNGs) to `--output`
(default RUN_DIR/evaluation/), written beside it and swapped in at the end
(extractor/io/atomic.py). Column flags default to the mapping the run was trained with. The scoring
(`--by`, `--label-map`, outside checkpoints) is trainer/training/evaluation.py's.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from extractor.core.errors import UserError
from trainer.training.evaluation import evaluate_frames, load_frames, note_unmapped, run_mapping
from trainer.analysis.metrics import format_scores
from trainer.data.loading import add_column_arguments, parse_label_map
from trainer.flags import add_data, add_label_map_arguments, add_output, add_overwrite, output_folder, refuse_existing
from trainer.training.runs import load_run, write_evaluation, write_slices


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                   help="a run directory, or a local Hugging Face sequence-classification checkpoint")
    add_data(p, "labelled file(s) or dataset folder(s) to evaluate on (repeatable): JSONL/JSON/CSV/TSV/"
                "Parquet files, a split folder, or a folder with split folders or test.* files "
                "(its test split, see --split)", required=True, many=True)
    p.add_argument("--split", default=None,
                   help="split of a dataset folder given to --data (default: test, or the folder's only split)")
    add_output(p, "output directory (default: RUN_DIR/evaluation)")
    add_overwrite(p, "replace an existing output directory")
    p.add_argument("--by", action="append", default=[], metavar="COL",
                   help="metrics per value of column COL (repeatable; a list column counts each tag)")
    add_label_map_arguments(p)
    p.add_argument("--duplicate-ids", choices=["error", "drop"], default="error")
    add_column_arguments(p, from_run=True)


def run(args) -> int:
    label_map = parse_label_map(args.label_map)
    out = refuse_existing(args.output or Path(args.run_dir) / "evaluation", args.overwrite)
    run_ = load_run(args.run_dir)
    frames = load_frames(args.data, run_mapping(args, run_), run_.labels, label_map=label_map,
                         duplicate_ids=args.duplicate_ids, check=not label_map, split=args.split)
    for col in [c for item in args.by for c in item.split(",") if c]:
        if not any(col in df.columns for df in frames.values()):
            first = next(iter(frames.values()))
            raise UserError(f"--by {col}: no test file has a column {col!r} "
                            f"(columns: {', '.join(map(str, first.columns))})")
    metrics, preds, labels = evaluate_frames(run_, frames, label_map, args.unmapped)
    for name, df in frames.items():
        if df.attrs.get("dropped"):
            metrics[name]["dropped"] = df.attrs["dropped"]
            print(f"note: {name}: dropped {sum(df.attrs['dropped'].values())} rows {df.attrs['dropped']}",
                  file=sys.stderr)
    with output_folder(out, args.overwrite) as work:
        write_evaluation(work, metrics, preds)
        if args.by:
            write_slices(work, preds, args.by, labels)
    for split, m in metrics.items():
        print(f"{split}: {format_scores(m)}")
    note_unmapped(metrics)
    print(f"wrote {out}/metrics.json" + (f" and {out}/slices.md" if args.by else ""))
    return 0
