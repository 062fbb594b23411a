"""`python -m trainer predict RUN_DIR --data FILE --output FILE`: label a file with a saved run.

The input needs premise and hypothesis (a gold label is not needed). The output
(.parquet, .jsonl or .csv by suffix) has pair_id, premise, hypothesis, pred and prob_<label>.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from extractor.core.errors import UserError
from trainer.data.loading import add_column_arguments, load_one_split
from trainer.training.evaluation import run_mapping
from trainer.flags import add_data, add_output, add_overwrite, output_file, refuse_existing
from trainer.training.runs import load_run, predictions_frame

FORMATS = (".parquet", ".jsonl", ".csv")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    add_data(p, "file to label, or a dataset folder (its test split, else its only split)", required=True)
    add_output(p, "output file: .parquet, .jsonl or .csv", required=True)
    add_overwrite(p, "replace an existing output file")
    add_column_arguments(p, from_run=True)


def run(args) -> int:
    out = args.output
    if out.suffix not in FORMATS:
        raise UserError(f"{out}: output must end in {', '.join(FORMATS)}")
    refuse_existing(out, args.overwrite)
    run_ = load_run(args.run_dir)
    mapping = run_mapping(args, run_)
    df = load_one_split(args.data, flag=None, **mapping, require_label=False)[1]
    probs = run_.predict_proba(df)
    preds = predictions_frame(df, "data", probs, run_.labels).drop(columns=["split", "gold"])
    preds.insert(1, "premise", df["premise"].to_numpy())
    preds.insert(2, "hypothesis", df["hypothesis"].to_numpy())
    if "label" in df.columns:
        preds.insert(3, "gold", df["label"].to_numpy())
    with output_file(out) as tmp:
        if out.suffix == ".parquet":
            preds.to_parquet(tmp, index=False)
        elif out.suffix == ".jsonl":
            preds.to_json(tmp, orient="records", lines=True, force_ascii=False)
        else:
            preds.to_csv(tmp, index=False)
    print(f"labelled {len(preds)} rows -> {out} ({preds['pred'].value_counts().to_dict()})")
    return 0
