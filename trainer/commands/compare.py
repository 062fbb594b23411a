"""`python -m trainer compare RUN_A RUN_B [RUN_C ...] [--test NAME]`: significance tests
between runs (McNemar, Cochran's Q, Mann-Whitney U; trainer/analysis/significance.py)."""
from __future__ import annotations

import json
from pathlib import Path

from extractor.errors import UserError
from trainer.analysis.significance import EXACT_BELOW, compare_runs, format_report


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR", help="two (or more) run directories; the first is the reference")
    parser.add_argument("--test", dest="split", metavar="NAME",
                        help="evaluated split to compare (default: test, else the first non-validation split)")
    parser.add_argument("--metric", default="macro_f1", choices=["macro_f1", "micro_f1", "accuracy"],
                        help="per-seed score for the Mann-Whitney U test (default macro_f1)")
    parser.add_argument("--mcnemar", default="auto", choices=["auto", "exact", "chi2"],
                        help=f"exact binomial, chi-square with continuity correction, or auto (exact below {EXACT_BELOW} discordant pairs)")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")


def run(args) -> int:
    if len(args.runs) < 2:
        raise UserError("compare needs at least two run directories")
    for rd in args.runs:
        if not Path(rd).is_dir():
            raise UserError(f"{rd}: no such run directory")
    result = compare_runs([Path(r) for r in args.runs], args.split, args.metric, args.mcnemar)
    print(format_report(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    return 0
