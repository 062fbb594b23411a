"""`python -m trainer stress RUN --data FILE_OR_SPLITS --lang LANG`: stress tests of a run
(the templates, copies and report: trainer/analysis/stress.py; docs/evaluation.md).

Output (``--output``, default ``RUN/stress/``, written beside it and swapped in at the
end): ``metrics.json``, ``sets/<test>.parquet``,
``predictions.parquet``, ``table.md`` and ``config.json``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from extractor.core.errors import UserError
from trainer.training.evaluation import evaluate_frames, note_unmapped, run_mapping
from trainer.analysis.stress import TESTS, build_sets, load_templates, stress_report, table_markdown
from trainer.data.loading import (add_column_arguments, apply_label_map, check_ids, drop_unlabeled, load_one_split,
                                  parse_label_map)
from trainer.errors import RunError
from trainer.flags import add_data, add_label_map_arguments, add_output, add_overwrite, output_folder, refuse_existing
from trainer.training.runs import check_labels, load_run, write_json, write_parquet


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN")
    add_data(p, "test file, or a dataset folder (see --split)", required=True)
    p.add_argument("--split", default=None, help="split of a dataset folder (default: test, or its only split)")
    p.add_argument("--lang", required=True,
                   help="lexicon whose stress_tests templates to use: a language code (ro, es, en) or a YAML path")
    p.add_argument("--tests", default=",".join(TESTS), help=f"comma-separated subset of {', '.join(TESTS)}")
    p.add_argument("--seed", type=int, default=0, help="seed of the spelling rule (default 0)")
    add_output(p, "output directory (default: RUN/stress)")
    add_overwrite(p, "replace an existing output directory")
    p.add_argument("--duplicate-ids", choices=["error", "drop"], default="error")
    add_label_map_arguments(p)
    add_column_arguments(p, from_run=True)


def run(args) -> int:
    tests = [t.strip() for t in args.tests.split(",") if t.strip()]
    bad = [t for t in tests if t not in TESTS]
    if bad or not tests:
        raise UserError(f"--tests {args.tests!r}: unknown test {bad[0] if bad else ''!r} (tests: {', '.join(TESTS)})")
    if not args.data.exists():
        raise UserError(f"{args.data}: no such file or folder (--data)")
    templates, lexicon = load_templates(args.lang)
    label_map = parse_label_map(args.label_map)
    out = refuse_existing(args.output or Path(args.run_dir) / "stress", args.overwrite)
    run_ = load_run(args.run_dir)
    split, df = load_one_split(args.data, args.split, **run_mapping(args, run_))
    split = "test" if split == "data" else split
    df, n_unlabeled = drop_unlabeled(df)
    df, n_dup = check_ids(df, str(args.data), args.duplicate_ids)
    df = apply_label_map(df, label_map)
    if not label_map:
        try:
            check_labels(df, run_.labels, str(args.data))
        except RunError as exc:
            raise UserError(f"{exc}; map the file's labels with --label-map FILE_LABEL=MODEL_LABEL") from exc
    if not len(df):
        raise UserError(f"{args.data}: no labelled rows to stress")
    sets = build_sets(df, templates, args.seed, tests)
    frames = {"original": df, **sets}
    metrics, preds, labels = evaluate_frames(run_, frames, label_map, args.unmapped)
    base_pred = preds.loc[preds["split"] == "original", "pred"].to_numpy()
    for name, s in sets.items():
        metrics[name]["changed_rows"] = int(s["changed"].sum())
        metrics[name]["unchanged_rows"] = int((~s["changed"]).sum())
        metrics[name]["predictions_changed"] = float(
            np.mean(preds.loc[preds["split"] == name, "pred"].to_numpy() != base_pred))
    report = stress_report(metrics, labels)
    with output_folder(out, args.overwrite) as work:
        write_json(work / "metrics.json", report)
        (work / "sets").mkdir()
        for name, s in sets.items():
            write_parquet(s, work / "sets" / f"{name}.parquet")
        write_parquet(preds, work / "predictions.parquet")
        (work / "table.md").write_text(table_markdown(report, labels, split))
        write_json(work / "config.json", {"run": str(args.run_dir), "data": str(args.data), "split": split,
                                         "lexicon": lexicon, "templates": {t: templates[t] for t in tests},
                                         "seed": args.seed, "n": len(df), "label_map": label_map,
                                         "unmapped": args.unmapped if label_map else None,
                                         "dropped": {k: v for k, v in (("unlabeled", n_unlabeled),
                                                                      ("duplicate_id", n_dup)) if v}})
    print(table_markdown(report, labels, split), end="")
    for name in tests:
        e = report[name]
        print(f"{name}: accuracy {e['accuracy']:.4f} ({e['change']['accuracy']:+.4f}), macro-F1 {e['macro_f1']:.4f} "
              f"({e['change']['macro_f1']:+.4f}); {e['predictions_changed']:.1%} of predictions changed"
              + (f"; {e['unchanged_rows']} rows had no word to misspell" if e.get("unchanged_rows") else ""))
    note_unmapped({"original": metrics["original"]})
    print(f"wrote {out}/metrics.json, {out}/table.md and {len(tests)} test sets in {out}/sets/", file=sys.stderr)
    return 0
