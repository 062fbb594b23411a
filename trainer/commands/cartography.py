"""`python -m trainer cartography RUN_DIR`: data maps of a run's training dynamics
(trainer/analysis/cartography.py holds the measures, groups and plot; docs/cartography.md).

Writes ``metrics.parquet``, ``groups.md``/``groups.csv``, ``summary.json`` and
``data_map.png`` to ``--output`` (default ``RUN_DIR/cartography/``).
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from extractor.core.errors import UserError
from trainer.analysis.cartography import (GROUPS, GroupRules, cartography_table, compute_measures, group_table,
                                          markdown_table, plot_data_map, read_dynamics, resolve_dynamics_dir)
from trainer.flags import add_output, add_overwrite, output_folder, refuse_existing


def _dynamics_cost(run_dir: Path) -> dict | None:
    """The recording cost `train` stored in config.json ("dynamics": {"mode", "seconds", "share"});
    runs from before the "forward" mode recorded by an extra pass."""
    try:
        d = json.loads((Path(run_dir) / "config.json").read_text()).get("dynamics") or {}
    except (OSError, ValueError, AttributeError):
        return None
    if "seconds" not in d or "share" not in d:
        return None
    return {"seconds": float(d["seconds"]), "share": float(d["share"]), "mode": str(d.get("mode", "pass"))}


def add_arguments(parser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run with dynamics/epoch_N.parquet files")
    add_output(parser, "output folder (default RUN_DIR/cartography)", type=str)
    add_overwrite(parser, "replace an existing output folder")
    parser.add_argument("--fraction", type=float, default=0.33,
                        help="share of the training set in each group, ranked on its measure (default 0.33)")
    parser.add_argument("--e2l-fraction", type=float, help="override --fraction for easy-to-learn")
    parser.add_argument("--a-fraction", type=float, help="override --fraction for ambiguous")
    parser.add_argument("--h2l-fraction", type=float, help="override --fraction for hard-to-learn")
    parser.add_argument("--e2l-min-confidence", type=float, help="absolute rule: E2L if confidence >= X")
    parser.add_argument("--h2l-max-confidence", type=float, help="absolute rule: H2L if confidence <= X")
    parser.add_argument("--a-min-variability", type=float, help="absolute rule: A if variability >= X")
    parser.add_argument("--burn-out", type=int, help="use only the first N epochs")
    parser.add_argument("--title", default="", help="title of the data map")


def run(args) -> int:
    """The outputs are written into a work folder beside OUT and swapped in once complete
    (extractor/io/atomic.py); a failure removes the work folder and leaves OUT as it was."""
    t0 = time.perf_counter()
    run_dir = Path(args.run_dir)
    if not run_dir.exists():
        raise UserError(f"{run_dir}: no such run directory")
    dyn_dir = resolve_dynamics_dir(run_dir)
    try:
        rules = GroupRules(
            e2l_fraction=args.e2l_fraction if args.e2l_fraction is not None else args.fraction,
            a_fraction=args.a_fraction if args.a_fraction is not None else args.fraction,
            h2l_fraction=args.h2l_fraction if args.h2l_fraction is not None else args.fraction,
            e2l_min_confidence=args.e2l_min_confidence,
            h2l_max_confidence=args.h2l_max_confidence,
            a_min_variability=args.a_min_variability,
        )
    except ValueError as exc:
        raise UserError(str(exc)) from None
    out = refuse_existing(args.output or run_dir / "cartography", args.overwrite)
    dynamics = read_dynamics(dyn_dir)
    measures = compute_measures(dynamics, burn_out=args.burn_out)
    table, thresholds = cartography_table(measures, rules)
    with output_folder(out, args.overwrite) as work:
        cols = ["pair_id", "gold", "epochs", "confidence", "variability", "correctness", *GROUPS, "n_groups", "s",
                "s_printed"]
        table[cols].to_parquet(work / "metrics.parquet", index=False)
        groups = group_table(table)
        groups.to_csv(work / "groups.csv")
        (work / "groups.md").write_text(markdown_table(groups) + "\n")
        title = args.title or run_dir.resolve().name
        plot_data_map(table, work / "data_map.png", title=title, thresholds=thresholds)
        n = len(table)
        summary: dict[str, Any] = {
            "run_dir": str(run_dir),
            "dynamics": str(dyn_dir),
            "examples": n,
            "epochs": int(table["epochs"].max()),
            "rules": asdict(rules),
            "thresholds": thresholds,
            "groups": {g: int(table[g].sum()) for g in GROUPS},
            "in_no_group": int((table["n_groups"] == 0).sum()),
            "in_two_groups": int((table["n_groups"] == 2).sum()),
            "in_three_groups": int((table["n_groups"] >= 3).sum()),
            "variability": "population standard deviation (ddof=0) of the gold-label probability",
            "s": "RoNLI eq. (1) with branches as the text and codomain [0,2] imply; s_printed: literal eq. (1)",
            "seconds": round(time.perf_counter() - t0, 2),
            "dynamics_cost": _dynamics_cost(run_dir),
        }
        (work / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"cartography of {n} examples over {summary['epochs']} epochs ({dyn_dir})")
    print("thresholds: " + ", ".join(f"{k}={v:.4f}" for k, v in thresholds.items() if v is not None))
    print(markdown_table(groups))
    print(f"in no group: {summary['in_no_group']} ({summary['in_no_group'] / n:.1%}), "
          f"in two groups: {summary['in_two_groups']} ({summary['in_two_groups'] / n:.1%})")
    cost = summary["dynamics_cost"]
    if cost:
        how = "from the training forward pass" if cost["mode"] == "forward" else "by a pass after each epoch"
        print(f"recording the dynamics ({how}) cost {cost['seconds']:.2f}s, "
              f"{100 * cost['share']:.1f}% of the training time")
    print(f"wrote {out}/metrics.parquet, groups.md, groups.csv, summary.json, data_map.png "
          f"in {summary['seconds']:.1f}s")
    return 0
