"""spark-submit entry point: dumps -> sentences/ -> pairs/ -> splits/ under one output root.

    spark-submit jobs/extract.py --lang ro [--input PATH ...] [--output output/ro] [--stages all] [--resume]

CLI and wiring only: flags, the JobContext, the stages in order through the Spark runner,
the completion records of --resume, stats.json and the summary. The stages are the job's
list (extractor/job/stages.py; the contract: extractor/engine/stage.py): each adds its own
flags, checks its own settings, says what --dry-run prints of it and does its own work.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import os
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

# Under plain `python jobs/extract.py` from a checkout, make the repository importable
# (spark-submit.sh ships extractor/ with --py-files instead); so the imports below follow it.
_REPO = Path(__file__).resolve().parents[1]
if (_REPO / "extractor").is_dir() and str(_REPO) not in sys.path:
    sys.path.insert(0, str(_REPO))

# Only modules that import neither pyspark nor pyarrow, numpy, pandas here: `--help` and a
# flag error answer at once. The run's modules are imported once the flags are parsed
# (`_import_run_modules`); pyspark when the session starts (extractor/spark/session.py).
from extractor.core.errors import InputError, UserError  # noqa: E402
from extractor.engine import contract  # noqa: E402
from extractor.engine.stage import run_stage  # noqa: E402
from extractor.job import cost_model  # noqa: E402
from extractor.job.paths import resolve_job_args  # noqa: E402
from extractor.job.stages import BY_NAME, NAMES, STAGES, input_table, selected, switched_on, writer  # noqa: E402
from extractor.lexicon.lexicon import load_lexicon  # noqa: E402
from extractor.lexicon.label_filters import parse_disabled  # noqa: E402
from extractor.pairs import filters  # noqa: E402
from extractor.engine.records import PROGRESS, Progress  # noqa: E402
from extractor.spark import gateway  # noqa: E402
from extractor.spark.jvm import archive_pending  # noqa: E402
from extractor.spark.runner import SparkRunner  # noqa: E402
from extractor.spark.session import executor_python, get_session  # noqa: E402

if TYPE_CHECKING:  # imported at run time by `_import_run_modules`, once the flags are parsed
    from extractor import runs
    from extractor.engine.stage import Stage
    from extractor.io import fs
    from extractor.job.context import JobContext
    from extractor.job.inputs import corpora_from_args, load_manifest, mark_bundled_sample, spark_failure_message

    STAGE: dict[str, Stage]
# Flags that do not change a byte of the output: a resumed run may differ in them.
NOT_IN_FINGERPRINT = ("resume", "overwrite", "master", "jvm_tuning", "output", "dry_run", "verbose",
                      "spark_progress")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Each flag's default once: argparse's own "(default: ...)" only where the help does
    not already say its default, and never "(default: None)"."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default:" in text or "(default" in text or action.default in (None, argparse.SUPPRESS, False):
            return text
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="extract.py", description="Build an NLI corpus from text dumps by distant supervision.",
        formatter_class=HelpFormatter)
    g = p.add_argument_group("job")
    g.add_argument("--lang", required=True,
                   help="language code of a bundled lexicon (ro, es, en, ...), or the path of your own lexicon "
                        "YAML file (format: phrase_lexicons/README.md)")
    g.add_argument("--phrase-set", action="append", default=None, metavar="NAME",
                   help="add a named phrase set of the lexicon's phrase_sets to its phrases "
                        "(e.g. --lang ro --phrase-set extended); repeatable")
    g.add_argument("--no-label-filter", action="append", default=None, metavar="NAME",
                   help="turn off a part of the lexicon's label filters: context, phrases, neutral, or all; "
                        "repeatable (docs/label-quality.md)")
    filters.add_arguments(g)
    g.add_argument("--input", action="append", default=None, metavar="PATH",
                   help="a file, directory or glob; repeatable (default: the lexicon's bundled sample corpus)")
    g.add_argument("--output", default=None, help="output root (default: output/<lang>)")
    g.add_argument("--corpus", default=None, help="corpus name of a single --input (default: from the file name)")
    g.add_argument("--genre", default=None,
                   help="genre of a single --input (default for a dump: the project its siteinfo names, e.g. "
                        "wikipedia, wikivoyage; else the format's)")
    g.add_argument("--author", default=None,
                   help="who made the dataset (a person or an organisation), for the card's citation (default: a "
                        "manifest entry's 'author'; else none)")
    g.add_argument("--url", default=None,
                   help="where the dataset is published, for the card's citation (default: a manifest entry's "
                        "'url'; else the output's path)")
    g.add_argument("--manifest", default=None, metavar="corpora.yaml",
                   help="several corpora: a YAML list of {name, genre, format, path, role}")
    g.add_argument("--stages", default="all", choices=(*NAMES, "all"), help="run the stages up to this one")
    g.add_argument("--start-at", default=NAMES[0], choices=NAMES,
                   help="skip the stages before this one and read their table back from --output")
    g.add_argument("--overwrite", action="store_true", help="replace tables that already exist under --output")
    g.add_argument("--resume", action="store_true",
                   help="continue the newest unpublished run of --output (killed, preempted, interrupted): its "
                        "finished stages and work units are reused when the inputs (paths, sizes, mtimes), the "
                        "lexicon and every setting are the same, else a one-line refusal names the first "
                        "difference; with nothing to resume, a new run starts (docs/deployment.md)")
    g.add_argument("--min-chars", type=int, default=contract.MIN_CHARS,
                   help="sentences shorter than this are flagged short")
    g.add_argument("--seed", type=int, default=contract.SEED, help="seed of every hash-based random choice")
    g.add_argument("--files-per-table", type=int, default=contract.FILES_PER_TABLE,
                   help="Parquet files per table (per partition); part of the deterministic layout")
    g.add_argument("--master", default=None,
                   help="Spark master when run with plain python (spark-submit's own --master wins)")
    g.add_argument("--jvm-tuning", choices=("startup", "throughput"), default="startup",
                   help="local mode only: 'startup' runs the driver JVM with C1 JIT and a class-data archive "
                        "(half the JVM CPU on inputs up to a few GB); 'throughput' keeps the JVM defaults "
                        "(long runs). See extractor/spark/jvm.py")
    g.add_argument("--dry-run", action="store_true",
                   help="check the inputs, lexicon, spaCy model, output and flags, list the inputs and work units "
                        "and print an estimate of CPU time, wall time, scratch and output size (docs/scale.md "
                        "\"Cost model\"); starts no Spark and writes nothing")
    g.add_argument("--verbose", action="store_true",
                   help="print every counter of stats.json at the end (else the split table and the paths)")
    g.add_argument("--spark-progress", action="store_true",
                   help="show Spark's own console progress bars (its internal stage numbers) besides the "
                        "job's line per round")
    for spec in STAGES:
        spec.add_arguments(p)
    return p


def _import_run_modules() -> None:
    """Import what a run needs beyond its flags, as the module's names: these modules import
    pyarrow, numpy and pandas (1-2 s), which `--help` and a flag error do not wait for."""
    global fs, runs, JobContext, corpora_from_args, load_manifest, mark_bundled_sample, spark_failure_message
    global STAGE
    from extractor import runs
    from extractor.io import fs
    from extractor.job.context import JobContext
    from extractor.job.inputs import corpora_from_args, load_manifest, mark_bundled_sample, spark_failure_message
    STAGE = {spec.name: spec.stage() for spec in STAGES}  # each stage's module, imported here


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _versions() -> dict:
    found: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in ("pyspark", "mwparserfromhell", "nltk", "spacy", "pyarrow"):
        # from the installed metadata: importing spacy would import thinc and torch
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:  # not installed: the card says so
            found[name] = None
    return found


def run_fingerprint(args, lexicon, corpora) -> dict:
    """What a resumed run must share with the run it continues: the inputs (path, size,
    mtime), the lexicon's hash, the corpora and every setting that can change a byte (a flag
    left out that a stage fills in from the lexicon: its value, `Stage.resolved_flags`)."""
    given = vars(args)
    for stage in STAGE.values():
        given = {**given, **stage.resolved_flags(args, lexicon)}
    settings = {k: v for k, v in sorted(given.items()) if k not in NOT_IN_FINGERPRINT}
    return {"inputs": [runs.input_fingerprint(p) for c in corpora for p in c.paths],
            "lexicon_sha256": lexicon.sha256,
            "corpora": [{"name": c.name, "genre": c.genre, "format": c.format, "role": c.role,
                         "options": c.options} for c in corpora],
            "settings": settings}


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("NLI_KILL_AT"):  # the kill-and-resume tests: a task may kill this driver
        os.environ.setdefault("NLI_DRIVER_PID", str(os.getpid()))
    gateway.stderr_to_user()  # under spark-submit: errors and progress on stderr, as under plain python
    parser = build_parser()
    args = resolve_job_args(parser.parse_args(argv))  # relative paths: the command's directory, for every task
    _import_run_modules()
    try:
        return _main(args, argv, explicit_license=args.license if args.license != parser.get_default("license")
                     else None)
    except UserError as exc:
        return _fail(exc.one_line())


def _main(args, argv, explicit_license: str | None = None) -> int:
    last = len(NAMES) - 1 if args.stages == "all" else NAMES.index(args.stages)
    first = NAMES.index(args.start_at)
    if first > last:
        return _fail(f"--start-at {args.start_at} comes after --stages {args.stages}")
    to_run = selected(args, NAMES[first:last + 1])  # switched-off stages left out (StageSpec.enabled)

    lexicon = load_lexicon(args.lang, phrase_set=args.phrase_set, disabled_filters=parse_disabled(args.no_label_filter),
                           pair_filters=filters.parse_enabled(args.pair_filter))
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
    # the bundled sample, however given: one corpus name and license (an explicit --license wins)
    mark_bundled_sample(corpora, lexicon, rename=not (args.manifest or args.corpus), license=explicit_license)

    options = stage_options(args, lexicon, to_run)
    output = args.output or f"output/{lexicon.lang}"
    if args.dry_run:
        return dry_run(args, options, to_run, lexicon, corpora, output)
    command_line = " ".join(shlex.quote(a) for a in ["jobs/extract.py", *(sys.argv[1:] if argv is None else argv)])
    # The lock first: a second job on this output is refused before Spark starts.
    try:
        run = runs.Run.open(output, command_line, fingerprint=run_fingerprint(args, lexicon, corpora),
                            resume=args.resume)
    except OSError as exc:
        return _output_refused(exc, output)
    try:
        return _run(args, options, to_run, first, last, lexicon, corpora, run)
    except KeyboardInterrupt:  # the staged work stays for --resume; the lock is released
        run.release()
        print(f"[extract] interrupted: run {run.run_id} is kept under {output}/{runs.RUNS}/; run the same command "
              f"with --resume to continue it", file=sys.stderr)
        return 130
    except BaseException:
        # Only a failure the job diagnoses as the user's discards the run (_run aborts it);
        # whatever else happened (a dead JVM or executor, a bug), what it finished stays
        # staged for --resume and the lock is released. The published output is untouched.
        run.release()
        where = f"run {run.run_id} is kept under {output}/{runs.RUNS}/"
        # on a line of its own: Spark's progress bar may have been cut off mid-line
        if not gateway.jvm_alive(settle=2.0):  # the driver's messages went through the dead JVM: say it past it
            gateway.say(f"\n[extract] the Spark JVM died (killed, or out of memory?): {where}; "
                        f"continue it with: {_resume_command(argv)}")
            return 1
        gateway.say(f"\n[extract] the run failed: {where}; once the cause below is fixed, continue it with: "
                    f"{_resume_command(argv)}")
        raise


def _output_refused(exc: OSError, output: str) -> int:
    """The one line of an output the run cannot open (the run and `--dry-run` alike): by its
    errno (the output's filesystem), else a UserError's own line; any other is a bug."""
    message = runs.environment_failure_message(exc, output)
    if message is None:
        if not isinstance(exc, UserError):
            raise exc
        message = exc.one_line()
    return _fail(message)


def _resume_command(argv) -> str:
    """The command that continues this run: the one that started it (spark-submit's own
    words under spark-submit), with --resume."""
    words = [*(sys.argv[1:] if argv is None else argv)]
    words += [] if "--resume" in words else ["--resume"]
    submit = gateway.submit_command()
    if submit is not None:  # spark-submit's options, then the job's
        return shlex.join([*submit, *words])
    return shlex.join([sys.executable, sys.argv[0] if argv is None else "jobs/extract.py", *words])


def stage_options(args, lexicon, to_run: list) -> dict:
    """Every stage's options, built once from the flags (and the lexicon's choices) before
    any work: a bad value (e.g. --split-ratios) fails now, not after two stages."""
    if args.files_per_table < 1:
        raise InputError(f"--files-per-table {args.files_per_table}: expected a number >= 1")
    return {name: STAGE[name].options(args, lexicon) for name in to_run}


def checked_context(args, options, to_run, lexicon, corpora, output, command_line: str = "") -> JobContext:
    """A context without Spark in which every stage to run has made its checks before any work
    (settings, a missing model, the inputs' sample: formats, fields, language), the same in
    `--dry-run` and before the run's JVM starts; a failed check raises its one-line error.
    What the checks found is in its `stats` and `warnings`."""
    ctx = JobContext(spark=None, args=args, lexicon=lexicon, output=Path(output), corpora=corpora, stats={},
                     command_line=command_line, warnings=[], options=options)
    for name in to_run:
        STAGE[name].check(ctx, options[name])
    return ctx


def dry_run(args, options, to_run, lexicon, corpora, output) -> int:
    """--dry-run: what the job would do and an estimate of its cost, from the cost model
    (extractor/job/cost_model.py); the checks the job makes before any work (a failed one is its
    one-line error, exit 2); no Spark, nothing written."""
    try:  # the run's own refusals of the output, in its words: a file, no write access, a live lock
        runs.check_output(output)
    except OSError as exc:
        return _output_refused(exc, output)
    ctx = checked_context(args, options, to_run, lexicon, corpora, output)
    manifest = runs.read_manifest(output)
    published = sorted((manifest or {}).get("tables", {}))
    for name in to_run:
        if BY_NAME[name].writes in published and not args.overwrite:
            raise runs.OutputExistsError(f"{output}/{BY_NAME[name].writes} already exists; pass --overwrite to "
                                         f"replace it")
    needed = input_table(to_run[0], switched_on(args))
    if needed is not None and needed not in published:
        raise InputError(f"{output}/{needed}: no such table in the published output; run the stage "
                         f"that writes '{needed}' first (--start-at {writer(needed)})")
    print(f"[dry-run] lexicon: {lexicon.path} ({lexicon.lang}; sha256 {lexicon.sha256[:12]})")
    print(f"[dry-run] output: {output} ({'tables ' + ', '.join(published) + ' published' if published else 'new'}"
          f"{'; --overwrite replaces them' if published and args.overwrite else ''})")
    print(f"[dry-run] stages: {', '.join(to_run)}")
    sizes, mb = [], 0.0
    for c in corpora:
        for path in c.paths:
            found = runs.input_fingerprint(path)
            mb_text = cost_model.text_mb(path, found["bytes"])
            mb += mb_text
            files = f", {found['files']} files" if "files" in found else ""
            sizes.append(f"  {c.name} ({c.format}, {c.genre}, {c.role}): {path}: "
                         f"{cost_model.size(found['bytes'] / 1e6)}"
                         f"{files} (~{cost_model.size(mb_text)} of text)")
    print(f"[dry-run] inputs ({len(sizes)}):")
    print("\n".join(sizes))
    for name in to_run:
        for line in STAGE[name].describe(ctx, options[name]):
            print(line)
    master = args.master or "local[*]"
    print(f"[dry-run] estimate (master {master}):")
    print("\n".join(cost_model.render(cost_model.estimate(mb, to_run), master)))
    for msg in ctx.warnings:
        print(f"warning: {msg}", file=sys.stderr)
    print("[dry-run] nothing was run or written; drop --dry-run to run it")
    return 0


def _run(args, options, to_run, first, last, lexicon, corpora, run) -> int:
    output = run.root
    earlier = [s.writes for s in switched_on(args, STAGES[:first])]
    needed = input_table(to_run[0], switched_on(args))
    try:
        for name in earlier:  # --start-at: the published run's earlier tables become part of this run
            if run.reuse(name) is None and name == needed:
                raise InputError(f"{output}/{name}: no such table in the published output; run the stage "
                                 f"that writes '{name}' first (--start-at {writer(name)})")
        for name in to_run:  # fail before hours of work, not after
            table = BY_NAME[name].writes
            if run.published(table) and not args.overwrite:
                raise runs.OutputExistsError(f"{output}/{table} already exists; pass --overwrite to replace it")
        # before the JVM starts, as --dry-run does
        checked = checked_context(args, options, to_run, lexicon, corpora, output, run.command_line)
    except UserError as exc:
        run.abort()
        return _fail(exc.one_line())
    dropped = [s.writes for s in STAGES[last + 1:] if run.published(s.writes)]

    spark = get_session(master=args.master, app_name=f"nli-extract-{args.lang}", jvm_tuning=args.jvm_tuning,
                        progress=args.spark_progress)
    # Input failures are reported as one line below; others are re-raised with their trace.
    spark.sparkContext.setLogLevel("FATAL")
    if spark.sparkContext.uiWebUrl:
        print(f"[extract] Spark UI: {spark.sparkContext.uiWebUrl} ({spark.sparkContext.master})", file=sys.stderr,
              flush=True)
    run_dir = fs.local_path(run.dir)
    local_dir = Path(run_dir) if run_dir is not None and not fs.is_uri(output) else None
    ctx = JobContext(spark=spark, args=args, lexicon=lexicon, output=local_dir or Path("."),
                     corpora=corpora, stats={}, command_line=run.command_line, warnings=[],
                     output_uri=None if local_dir else run.dir, run=run, options=options)
    progress = Progress(run.path(PROGRESS), resuming=run.resumed is not None)
    # Earlier stages' counts survive a rerun that starts later.
    ctx.stats.update({k: v for k, v in run.published_stats().items()
                      if BY_NAME.get(k) in switched_on(args, STAGES[:first])})
    ctx.stats.update(checked.stats)
    ctx.warnings += checked.warnings
    for name in dropped:
        ctx.warn(f"{name}/ of the previous run is not part of this run (it was built from the tables this "
                 f"run replaces); run the later stages to rebuild it")
    started = time.time()
    timings = {}
    try:
        for stage in to_run:
            t0 = time.time()
            finished = progress.finished_stage(stage)
            if finished is not None:  # a resumed run: this stage's table is complete
                print(f"[extract] stage {stage}: reused from the interrupted run", file=sys.stderr, flush=True)
                progress.stages.append(stage)
                ctx.stats[stage] = finished["stats"]
                for msg in finished["warnings"]:
                    ctx.warn(msg)
            else:
                print(f"[extract] stage {stage} ...", file=sys.stderr, flush=True)
                seen = len(ctx.warnings)
                run_stage(STAGE[stage], ctx, progress.runner(stage, SparkRunner(ctx.spark, stage)))
                progress.finish_stage(stage, {"stats": ctx.stats[stage], "warnings": ctx.warnings[seen:]})
            timings[stage] = round(time.time() - t0, 3)
            runs.fault_point(f"after:{stage}")
        ctx.stats["job"] = {
            "command_line": run.command_line, "run_id": run.run_id, "lang": lexicon.lang,
            "lexicon": str(Path(str(lexicon.path)).name), "lexicon_sha256": lexicon.sha256, "seed": args.seed,
            "min_chars": args.min_chars, "stages_run": to_run, "seconds": timings,
            "total_seconds": round(time.time() - started, 3),
            "corpora": [{"name": c.name, "genre": c.genre, "format": c.format, "role": c.role, "paths": c.paths}
                        for c in corpora],
            "versions": _versions(), "spark_master": spark.sparkContext.master,
            "executor_python": executor_python(spark),
        }
        run.put_bytes("stats.json", runs.stats_bytes(ctx.stats))
        extra = {"stages_run": to_run, "lang": lexicon.lang, "lexicon_sha256": lexicon.sha256,
                 "inputs": [runs.input_fingerprint(p) for c in corpora for p in c.paths]}
        if run.resumed is not None:
            extra["resumed"] = progress.summary()
        manifest = run.publish(extra)
    except UserError as exc:  # raised on purpose about the user's input, flags or environment
        if not gateway.jvm_alive(spark):  # not the user's: kept for --resume (_main)
            raise
        run.abort()
        return _fail(runs.environment_failure_message(exc, output) or exc.one_line())  # an OutputError: by errno
    except OSError as exc:  # by its errno: the output's filesystem (full disk, read-only, permissions); else a bug
        message = runs.environment_failure_message(exc, output)
        if message is None or not gateway.jvm_alive(spark):
            raise
        run.abort()
        return _fail(message)
    except Exception as exc:  # a Spark failure that a task of ours marked: the input or the output; else a bug
        if not gateway.jvm_alive(spark):  # a lost gateway is nobody's input: kept for --resume (_main)
            raise
        message = spark_failure_message(exc, output)
        if message is None:
            raise
        run.abort()
        return _fail(message)
    if args.verbose:
        print(runs.summary_table(ctx.stats, sections=[s for s in NAMES if s in ctx.stats], max_rows=None))
    print(runs.end_summary(ctx.stats, output, [s.writes for s in STAGES if s.writes in manifest.get("tables", {})]))
    for msg in ctx.warnings:
        print(f"warning: {msg}", file=sys.stderr)
    if run.resumed is not None:
        done = progress.summary()
        units = ", ".join(f"{stage} {done['tasks_reused'].get(stage, 0)} of {n}" for stage, n in done["tasks"].items())
        print(f"[extract] resumed run {run.run_id}: stages reused whole: {', '.join(done['stages_reused']) or 'none'}; "
              f"work units reused: {units or 'none'}", file=sys.stderr)
    print(f"[extract] done: {output} (run {manifest['run_id']}; {output}/stats.json, {output}/manifest.json)")
    archive = archive_pending(spark.sparkContext.getConf().get("spark.driver.extraJavaOptions", ""))
    if archive:
        print(f"[extract] first run: the JVM now writes its class-data archive {archive} (about 20 s, once; "
              f"later runs start faster)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
