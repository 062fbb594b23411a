"""spark-submit entry point: dumps -> sentences/ -> pairs/ -> splits/ under one output root.

    spark-submit jobs/extract.py --lang ro [--input PATH ...] [--output output/ro] [--stages all]

CLI and wiring only: flags, the JobContext, the stages in order, stats.json and the summary.
Each stage module (extractor/spark/<stage>_stage.py) adds its own flags and does its own work.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import shlex
import sys
import time
from pathlib import Path

# Under plain `python jobs/extract.py` from a checkout, make the repository importable
# (spark-submit.sh ships extractor/ with --py-files instead).
_REPO = Path(__file__).resolve().parents[1]
if (_REPO / "extractor").is_dir() and str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

STAGES = ("sentences", "pairs", "splits")
TABLES = {"sentences": "sentences", "pairs": "pairs", "splits": "splits"}


BROKEN: dict = {}  # stage -> why its module could not be imported


def stage_modules() -> dict:
    """The stage modules that exist: each lands independently. A module that fails to
    import is an error only when its stage is asked for."""
    modules = {}
    for stage in STAGES:
        name = f"extractor.spark.{stage}_stage"
        try:
            modules[stage] = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:  # the module exists but one of its imports is missing
                BROKEN[stage] = f"{name} cannot be imported: {exc}"
        except Exception as exc:
            BROKEN[stage] = f"{name} cannot be imported: {type(exc).__name__}: {exc}"
    return modules


def build_parser(modules: dict) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="extract.py", description="Build an NLI corpus from text dumps by distant supervision.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    g = p.add_argument_group("job")
    g.add_argument("--lang", required=True, help="language code of a bundled lexicon (ro, es, en, ...), or the path of your own lexicon YAML file "
                        "(format: phrase_lexicons/README.md)")
    g.add_argument("--phrase-set", action="append", default=None, metavar="NAME",
                   help="add a named phrase set of the lexicon's phrase_sets to its phrases "
                        "(e.g. --lang ro --phrase-set extended); repeatable")
    g.add_argument("--input", action="append", default=None, metavar="PATH",
                   help="a file, directory or glob; repeatable (default: the lexicon's bundled sample corpus)")
    g.add_argument("--output", default=None, help="output root (default: output/<lang>)")
    g.add_argument("--corpus", default=None, help="corpus name of a single --input (default: from the file name)")
    g.add_argument("--genre", default=None, help="genre of a single --input (default: wikipedia for dumps)")
    g.add_argument("--manifest", default=None, metavar="corpora.yaml",
                   help="several corpora: a YAML list of {name, genre, format, path, role}")
    g.add_argument("--stages", default="all", choices=(*STAGES, "all"), help="run the stages up to this one")
    g.add_argument("--start-at", default=STAGES[0], choices=STAGES,
                   help="skip the stages before this one and read their table back from --output")
    g.add_argument("--overwrite", action="store_true", help="replace tables that already exist under --output")
    g.add_argument("--min-chars", type=int, default=50, help="sentences shorter than this are flagged short")
    g.add_argument("--seed", type=int, default=0, help="seed of every hash-based random choice")
    g.add_argument("--files-per-table", type=int, default=4,
                   help="Parquet files per table (per partition); part of the deterministic layout")
    g.add_argument("--master", default=None,
                   help="Spark master when run with plain python (spark-submit's own --master wins)")
    g.add_argument("--jvm-tuning", choices=("startup", "throughput"), default="startup",
                   help="local mode only: 'startup' runs the driver JVM with C1 JIT and a class-data archive "
                        "(half the JVM CPU on inputs up to a few GB); 'throughput' keeps the JVM defaults "
                        "(long runs). See extractor/spark/jvm.py")
    for module in modules.values():
        module.add_arguments(p)
    return p


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _versions() -> dict:
    out = {"python": sys.version.split()[0]}
    for name in ("pyspark", "mwparserfromhell", "nltk", "spacy", "pyarrow"):
        # from the installed metadata: importing spacy would import thinc and torch (~10 CPU-s)
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:  # not installed: the card says so
            out[name] = None
    return out


def main(argv: list[str] | None = None) -> int:
    from extractor.job import InputError, JobContext, corpora_from_args, load_manifest, spark_failure_message
    from extractor.lexicon import LexiconError, load_lexicon
    from extractor import output as out

    modules = stage_modules()
    parser = build_parser(modules)
    args = parser.parse_args(argv)
    last = len(STAGES) - 1 if args.stages == "all" else STAGES.index(args.stages)
    first = STAGES.index(args.start_at)
    if first > last:
        return _fail(f"--start-at {args.start_at} comes after --stages {args.stages}")
    to_run = [s for s in STAGES[first:last + 1]]
    missing = [s for s in to_run if s not in modules]
    if missing and missing[0] in BROKEN:
        return _fail(BROKEN[missing[0]])
    if missing:
        return _fail(f"stage(s) {', '.join(missing)} not available in this version (module extractor/spark/{missing[0]}_stage.py)")

    try:
        lexicon = load_lexicon(args.lang, phrase_set=args.phrase_set)
        if args.manifest:
            if args.input or args.corpus:
                raise InputError("--manifest and --input/--corpus exclude each other")
            corpora = load_manifest(args.manifest)
        else:
            inputs = args.input or ([str(lexicon.sample_input)] if lexicon.sample_input else [])
            if not inputs:
                raise InputError(f"{lexicon.path}: no bundled sample corpus here (an installed engine ships "
                                 f"none); give --input PATH")
            corpora = corpora_from_args(inputs, args.corpus, args.genre)
            if not args.input:  # the bundled sample: a stable corpus name
                for spec in corpora:
                    spec.name = f"{args.lang}-sample" if len(corpora) == 1 else spec.name
    except (InputError, LexiconError, FileNotFoundError) as exc:
        return _fail(str(exc))

    try:
        check_settings(args, modules, to_run)
    except ValueError as exc:
        return _fail(str(exc).splitlines()[0])

    output = args.output or f"output/{lexicon.lang}"
    command_line = " ".join(shlex.quote(a) for a in ["jobs/extract.py", *(sys.argv[1:] if argv is None else argv)])
    # The lock first: a second job on this output is refused before Spark starts.
    try:
        run = out.Run.open(output, command_line)
    except out.RunLockedError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(out.environment_failure_message(exc, output) or str(exc).splitlines()[0])
    try:
        return _run(args, modules, to_run, first, last, lexicon, corpora, run, command_line)
    except BaseException:
        run.abort()  # the published output stays as it was; nothing staged is left
        raise


def check_settings(args, modules: dict, to_run: list) -> None:
    """Every setting checked before any work (issue: bad --split-ratios found after two
    stages): a stage module's `check_args(args)` when it has one, and the splits flags."""
    for stage in to_run:
        check = getattr(modules.get(stage), "check_args", None)
        if check is not None:
            check(args)
    if "splits" in to_run:
        from extractor.splits import assign

        assign.parse_ratios(getattr(args, "split_ratios", "0.8,0.1,0.1"))
        assign.parse_balance(getattr(args, "balance", ["downsample"]))
    if args.files_per_table < 1:
        raise ValueError(f"--files-per-table {args.files_per_table}: expected a number >= 1")


def _run(args, modules, to_run, first, last, lexicon, corpora, run, command_line) -> int:
    from extractor.job import InputError, JobContext, spark_failure_message
    from extractor.lexicon import LexiconError
    from extractor import output as out

    output = run.root
    earlier = [TABLES[s] for s in STAGES[:first]]
    try:
        for name in earlier:  # --start-at: the published run's earlier tables become part of this run
            if run.reuse(name) is None and name == earlier[-1]:
                raise InputError(f"{output}/{name}: no such table in the published output; run the stage "
                                 f"that writes '{name}' first (--start-at {STAGES[first - 1]})")
        for stage in to_run:  # fail before hours of work, not after
            if run.published(TABLES[stage]) and not args.overwrite:
                raise out.OutputExistsError(f"{output}/{TABLES[stage]} already exists; pass --overwrite to replace it")
    except (InputError, FileExistsError) as exc:
        run.abort()
        return _fail(str(exc))
    dropped = [TABLES[s] for s in STAGES[last + 1:] if run.published(TABLES[s])]

    from extractor.spark.session import executor_python, get_session

    spark = get_session(master=args.master, app_name=f"nli-extract-{args.lang}", jvm_tuning=args.jvm_tuning)
    # Input failures are reported as one line below; others are re-raised with their trace.
    spark.sparkContext.setLogLevel("FATAL")
    local_dir = Path(out.fs.local_path(run.dir)) if run.local and not out.is_uri(output) else None
    ctx = JobContext(spark=spark, args=args, lexicon=lexicon, output=local_dir or Path("."),
                     corpora=corpora, stats={}, command_line=command_line, warnings=[],
                     output_uri=None if local_dir else run.dir, run=run)
    # Earlier stages' counts survive a rerun that starts later.
    ctx.stats.update({k: v for k, v in run.published_stats().items() if k in STAGES[:first]})
    for name in dropped:
        ctx.warn(f"{name}/ of the previous run is not part of this run (it was built from the tables this "
                 f"run replaces); run the later stages to rebuild it")
    started = time.time()
    timings = {}
    try:
        for stage in to_run:  # settings a stage can check before any stage runs (e.g. a missing model)
            if hasattr(modules[stage], "check"):
                modules[stage].check(ctx)
        for stage in to_run:
            t0 = time.time()
            print(f"[extract] stage {stage} ...", file=sys.stderr, flush=True)
            modules[stage].run(ctx)
            timings[stage] = round(time.time() - t0, 3)
            out.fault_point(f"after:{stage}")
        ctx.stats["job"] = {
            "command_line": command_line, "run_id": run.run_id, "lang": lexicon.lang,
            "lexicon": str(Path(str(lexicon.path)).name), "lexicon_sha256": lexicon.sha256, "seed": args.seed,
            "min_chars": args.min_chars, "stages_run": to_run, "seconds": timings,
            "total_seconds": round(time.time() - started, 3),
            "corpora": [{"name": c.name, "genre": c.genre, "format": c.format, "role": c.role, "paths": c.paths}
                        for c in corpora],
            "versions": _versions(), "spark_master": spark.sparkContext.master,
            "executor_python": executor_python(spark),
        }
        run.put_bytes("stats.json", out.stats_bytes(ctx.stats))
        manifest = run.publish({"stages_run": to_run, "lang": lexicon.lang, "lexicon_sha256": lexicon.sha256,
                                "inputs": [out.fingerprint(p) for c in corpora for p in c.paths]})
    except (InputError, LexiconError, FileNotFoundError, FileExistsError, ValueError, OSError) as exc:
        run.abort()
        # a full disk met inside a reader's task may come back wrapped as an input error
        message = out.environment_failure_message(exc, output, any_error=isinstance(exc, OSError))
        return _fail(message or (str(exc).splitlines()[0] if str(exc) else type(exc).__name__))
    except Exception as exc:  # Spark/Java failures: name the input or the output, not the JVM stack
        run.abort()
        message = out.environment_failure_message(exc, output) or spark_failure_message(exc, ctx.corpora)
        if message is None:
            raise
        return _fail(message)
    print(out.summary_table(ctx.stats, sections=[s for s in STAGES if s in ctx.stats]))
    for msg in ctx.warnings:
        print(f"warning: {msg}", file=sys.stderr)
    print(f"[extract] done: {output} (run {manifest['run_id']}; {output}/stats.json, {output}/manifest.json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
