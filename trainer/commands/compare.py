"""`python -m trainer compare RUN_A RUN_B [RUN_C ...] [--test NAME]`: significance tests
between runs (McNemar, Cochran's Q, Mann-Whitney U; trainer/analysis/significance.py)."""
from __future__ import annotations

import json
from pathlib import Path

from extractor.core.errors import UserError
from trainer.analysis.significance import EXACT_BELOW, compare_runs, format_report
from trainer.flags import add_json, add_output, add_overwrite, output_file, refuse_existing


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR",
                        help="two (or more) run directories; the first is the reference")
    parser.add_argument("--test", dest="split", metavar="NAME",
                        help="evaluated split to compare (default: test, else the first non-validation split)")
    parser.add_argument("--metric", default="macro_f1", choices=["macro_f1", "micro_f1", "accuracy"],
                        help="per-seed score for the Mann-Whitney U test (default macro_f1)")
    parser.add_argument("--mcnemar", default="auto", choices=["auto", "exact", "chi2"],
                        help=f"exact binomial, chi-square with continuity correction, or auto "
                             f"(exact below {EXACT_BELOW} discordant pairs)")
    add_json(parser, "every result")
    add_output(parser, "also write the report (the table, or JSON with --json) to this file", type=str)
    add_overwrite(parser, "replace an existing --output file")


def run(args) -> int:
    if len(args.runs) < 2:
        raise UserError("compare needs at least two run directories")
    for rd in args.runs:
        if not Path(rd).is_dir():
            raise UserError(f"{rd}: no such run directory")
    if args.output:
        refuse_existing(args.output, args.overwrite)
    result = compare_runs([Path(r) for r in args.runs], args.split, args.metric, args.mcnemar)
    text = json.dumps(result, indent=2) if args.json else format_report(result)
    if args.output:
        with output_file(args.output) as tmp:
            tmp.write_text(text + "\n", encoding="utf-8")
    print(text)
    return 0
