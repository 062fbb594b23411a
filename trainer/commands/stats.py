"""`python -m trainer stats --data PATH`: statistics and leakage report for any NLI dataset.

Reads through `trainer.data.loading.load_nli` (our splits folder, HF folders, JSONL/JSON/CSV/TSV/
Parquet files) and computes every number with `extractor.statistics`, the same functions
the Spark job uses for the dataset card.
"""
from __future__ import annotations

import json
import sys

from extractor import statistics
from extractor.neardup import leakage, settings
from trainer.data.loading import add_column_arguments, column_mapping, load_nli
from trainer.flags import add_json, add_output, add_overwrite, output_file, refuse_existing


def add_arguments(parser) -> None:
    parser.add_argument("--data", nargs="+", action="extend", required=True, metavar="PATH",
                        help="a splits folder, a dataset folder, or one or more files "
                             "(several files are compared as splits named after their stems)")
    add_column_arguments(parser)
    add_json(parser, "the statistics")
    add_output(parser, "also write the report (markdown, or JSON with --json) to this file", type=str)
    add_overwrite(parser, "replace an existing --output file")
    parser.add_argument("--top-k", type=int, default=10, help="PMI words listed per label (default: 10)")
    parser.add_argument("--pmi-min-count", type=int, default=statistics.PMI_MIN_COUNT,
                        help="only words in at least this many hypotheses get a PMI "
                             f"(default: {statistics.PMI_MIN_COUNT})")
    settings.add_arguments(parser)


def compute(args) -> dict:
    data = args.data[0] if len(args.data) == 1 else list(args.data)
    splits = load_nli(data, **column_mapping(args), require_label=False)
    result = statistics.dataset_statistics(splits, top_k=args.top_k, min_count=args.pmi_min_count)
    near = settings.settings_from_args(args)
    if near is not None and len(splits) > 1:
        result["near_duplicate_leakage"] = leakage.near_duplicate_leakage(
            {n: (list(df["premise"]), list(df["hypothesis"])) for n, df in splits.items()}, near)
    for name, df in splits.items():
        dropped = df.attrs.get("dropped")
        if dropped:
            result["splits"][name]["dropped_rows"] = dropped
    return result


def run(args) -> int:
    if args.output:
        refuse_existing(args.output, args.overwrite)
    result = compute(args)
    if args.json:
        text = json.dumps(result, indent=2, ensure_ascii=False, sort_keys=False)
    else:
        text = statistics.markdown_report(result, source=" ".join(map(str, args.data)))
        if "near_duplicate_leakage" in result:
            text += "\n" + leakage.leakage_markdown(result["near_duplicate_leakage"]) + "\n"
    if args.output:
        with output_file(args.output) as tmp:
            tmp.write_text(text + "\n", encoding="utf-8")
    sys.stdout.write(text + "\n")
    return 0
