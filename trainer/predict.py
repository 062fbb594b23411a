"""`python -m trainer predict RUN_DIR --input FILE --out FILE`: label a file with a saved run.

The input needs premise and hypothesis (a gold label is not needed). The output
(.parquet, .jsonl or .csv by suffix) has id, premise, hypothesis, pred and prob_<label>.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from trainer.cli import UserError
from trainer.data import NLIDataError, add_column_arguments, load_one_split
from trainer.evaluate import run_mapping
from trainer.runs import load_run, predictions_frame

FORMATS = (".parquet", ".jsonl", ".csv")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--input", type=Path, required=True,
                   help="file to label, or a dataset folder (its test split, else its only split)")
    p.add_argument("--out", type=Path, required=True, help="output file: .parquet, .jsonl or .csv")
    add_column_arguments(p, from_run=True)


def run(args) -> int:
    if args.out.suffix not in FORMATS:
        raise UserError(f"{args.out}: output must end in {', '.join(FORMATS)}")
    try:
        run_ = load_run(args.run_dir)
        mapping = run_mapping(args, run_)
        df = load_one_split(args.input, flag=None, **mapping, require_label=False)[1]
        probs = run_.predict_proba(df)
    except (NLIDataError, FileNotFoundError, ValueError) as exc:
        raise UserError(str(exc).splitlines()[0]) from exc
    preds = predictions_frame(df, "data", probs, run_.labels).drop(columns=["split", "gold"])
    preds.insert(1, "premise", df["premise"].to_numpy())
    preds.insert(2, "hypothesis", df["hypothesis"].to_numpy())
    if "label" in df.columns:
        preds.insert(3, "gold", df["label"].to_numpy())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    if args.out.suffix == ".parquet":
        preds.to_parquet(tmp, index=False)
    elif args.out.suffix == ".jsonl":
        preds.to_json(tmp, orient="records", lines=True, force_ascii=False)
    else:
        preds.to_csv(tmp, index=False)
    tmp.replace(args.out)
    print(f"labelled {len(preds)} rows -> {args.out} ({preds['pred'].value_counts().to_dict()})")
    return 0
