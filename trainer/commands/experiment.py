"""`python -m trainer experiment LINEUP.yaml`: a RoNLI-style line-up of `train` runs from
one YAML file (the file, its entries and the results tables: trainer/training/lineup.py).

Every run goes to ``OUT/<name>/``; a finished run (``metrics.json`` present) is kept
unless ``--overwrite``. The results are ``OUT/results.md`` and ``OUT/results.json``.
"""
from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

from extractor.core.errors import UserError
from extractor.io.atomic import discard, unfinished_path
from trainer.flags import add_output, add_overwrite, output_file
from trainer.training.lineup import collect, flags, load_lineup, results_markdown, run_trainer, train_argv


def add_arguments(parser) -> None:
    parser.add_argument("lineup", metavar="LINEUP.yaml", help="the line-up file (see examples/lineup-*.yaml)")
    add_output(parser, "output folder (default: the file's 'output', else runs/<name>)", type=str)
    parser.add_argument("--seeds", type=int, help="override the file's number of seeds")
    parser.add_argument("--only", nargs="+", action="extend", metavar="NAME",
                        help="run only these entries (the reference is run if needed)")
    add_overwrite(parser, "retrain runs that already have metrics.json")
    parser.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    parser.add_argument("--report-only", action="store_true", help="only rebuild results.md from finished runs")


def run(args) -> int:
    lineup = load_lineup(args.lineup)
    if args.output:
        lineup.out = Path(args.output)
    if args.seeds:
        lineup.seeds = args.seeds
    names = [e.name for e in lineup.entries]
    wanted = set(args.only or names)
    unknown = wanted - set(names)
    if unknown:
        raise UserError(f"{args.lineup}: --only names not in the line-up: {', '.join(sorted(unknown))}")
    todo = [e for e in lineup.entries if e.name in wanted]
    if any(e.needs_cartography or e.curriculum == "sts" for e in todo) and lineup.reference not in wanted:
        todo.insert(0, lineup.entries[names.index(lineup.reference)])
    # the reference first: others depend on its dynamics and embeddings
    todo.sort(key=lambda e: e.name != lineup.reference)
    lineup.out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    failed: list[str] = []
    if not args.report_only:
        for entry in todo:
            run_dir = lineup.out / entry.name
            argv = train_argv(lineup, entry)
            if args.dry_run:
                print("python -m trainer " + " ".join(shlex.quote(a) for a in argv))
                continue
            if (run_dir / "metrics.json").exists() and not args.overwrite:
                print(f"[{entry.name}] done already ({run_dir}/metrics.json); --overwrite retrains", flush=True)
            else:
                unfinished = unfinished_path(run_dir)  # where `train` keeps a run until it is finished
                if args.overwrite:
                    for d in (run_dir, unfinished):
                        discard(d)
                elif unfinished.exists():  # a failed or killed attempt: continue it (same settings only)
                    argv = [*argv, "--resume"]
                print(f"[{entry.name}] training", flush=True)
                t0 = time.perf_counter()
                code = run_trainer(argv, lineup.out / "logs" / f"{entry.name}.log")
                timings[entry.name] = round(time.perf_counter() - t0, 1)
                if code != 0:
                    failed.append(entry.name)
                    if entry.name == lineup.reference:
                        raise UserError(f"the reference run {entry.name} failed; "
                                        f"see {lineup.out}/logs/{entry.name}.log")
                    continue
                print(f"[{entry.name}] {timings[entry.name]:.0f}s", flush=True)
            if entry.name == lineup.reference and any(e.needs_cartography for e in todo):
                carto = run_dir / "cartography" / "metrics.parquet"
                if not carto.exists() or args.overwrite:
                    # the reference's cartography is recomputed: --overwrite replaces an older one
                    argv_c = ["cartography", str(run_dir), *flags(lineup.cartography_args), "--overwrite"]
                    if run_trainer(argv_c, lineup.out / "logs" / "cartography.log") != 0:
                        raise UserError(f"cartography of {run_dir} failed; see {lineup.out}/logs/cartography.log")
                    print(f"[cartography] {run_dir}/cartography", flush=True)
        if args.dry_run:
            return 0
    results = collect(lineup)
    results["timings_s"] = timings
    results["failed"] = failed
    md = results_markdown(results, train_args=lineup.train_args)
    with output_file(lineup.out / "results.md") as tmp:
        tmp.write_text(md)
    with output_file(lineup.out / "results.json") as tmp:
        tmp.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(md)
    print(f"wrote {lineup.out}/results.md and results.json")
    if failed:
        print(f"failed: {', '.join(failed)} (logs in {lineup.out}/logs/)", file=sys.stderr)
        return 1
    return 0
