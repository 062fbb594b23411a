"""Stage 1: documents -> `sentences/` (the stage contract: extractor/engine/contract.py).

1. The driver lists the work units of every input (`extractor/documents/units.py`: byte
   ranges of dumps and JSONL, groups of text files, Parquet row groups; a UTF-16 dump is
   one unit), reading only sizes, heads and footers through `extractor/io/fs.py`, and trains
   Punkt on the first MB of cleaned text (or reads `--punkt-params`).
2. One round, one task per unit (`process.process_unit`): the task reads its unit through
   `extractor/io/fs.py` (local paths, file://, gs://, s3://, hdfs://), cleans and segments it,
   writes the rows to one Parquet file named by the unit
   (`<table>/corpus=<name>/part-<input>-<unit>.parquet`) with pyarrow and fixed writer
   settings, and returns only its count rows.
3. The driver sums the counts into stats["sentences"].

The same shape as stages 2 and 3: the plan (`plan.DocumentsPlan`, made by `make_plan`), the
round (`rounds.UNITS`: a function of (plan, unit)), the driver's decision before it
(`decide`: the Punkt step) and the round that writes the table (`write_table`, inside
`ctx.write_table_with`).

Rows never pass through the engine. A file's bytes depend only on its unit's input and the
settings, so they are the same whatever core, executor or filesystem writes them. Within
a file, rows are in input order: a document's sentences are contiguous and in order.
"""
from __future__ import annotations

import sys
import time
from dataclasses import replace

from extractor.core.errors import InputError, UserError
from extractor.documents import rounds
from extractor.documents.plan import DocumentsPlan
from extractor.documents.process import (MAX_LISTED_ERRORS, MAX_LISTED_LINES, build_stats, check_corpora,
                                         check_dropped_lines, corpus_settings, dropped_lines, dropped_lines_warnings,
                                         punkt_key, punkt_parameters, sum_counts)
from extractor.documents.formats import UnitError, list_units
from extractor.io import fs
# the flags and options live apart (no pyarrow there: the job's --help); one name each
from extractor.documents.options import Options, add_arguments  # noqa: F401

NAME = "sentences"
FIELDS = ("text_field", "id_field", "title_field", "genre_field")


def check(ctx) -> None:
    """Nothing to check before the stages run (the inputs are checked when listed)."""


def work_units(corpora, options: Options, corpora_settings: list):
    """Every input checked and listed into work units (`units.Listing`); a bad input is a
    one-line `InputError`. What the stage runs, and what `--dry-run` shows."""
    try:
        return list_units(corpora, options.unit_bytes, lambda spec: corpora_settings[corpora.index(spec)]["fields"])
    except UnitError as exc:
        raise InputError(str(exc)) from None


def listed_units(corpora, lang: str, options: Options):
    """`work_units` of `corpora` from the options alone (the job's `--dry-run`)."""
    fields = {k: getattr(options, k) for k in FIELDS}
    return work_units(corpora, options, corpus_settings(corpora, lang, fields))


def make_plan(ctx, options: Options):
    """The stage's plan from the listed inputs (before any work, Punkt training included),
    recorded for `--resume` (`runner.plan`): (plan, listing)."""
    fields = {k: getattr(options, k) for k in FIELDS}
    corpora = corpus_settings(ctx.corpora, ctx.lexicon.lang, fields)
    listing = work_units(ctx.corpora, options, corpora)
    plan = DocumentsPlan(corpora=corpora, lexicon=ctx.lexicon, min_chars=int(options.min_chars),
                         namespaces=listing.namespaces, units=listing.units)
    return plan, listing


def decide(ctx, runner, plan: DocumentsPlan, options: Options) -> tuple[DocumentsPlan, dict]:
    """The driver's Punkt step (reused by a resumed run): the plan with the Punkt parameters
    the units round segments with, and how they were obtained."""
    punkt, punkt_info = runner.step("punkt", lambda: punkt_parameters(
        ctx.lexicon, plan, list(plan.units), options.punkt_params, options.punkt_sample_mb, ctx.put_bytes))
    return replace(plan, punkt=punkt, punkt_key=punkt_key(punkt)), punkt_info


def write_table(runner, plan: DocumentsPlan, directory: str) -> list:
    """The units round: one task per unit, its file under `directory`; the count rows."""
    return [row for out in rounds.UNITS.run(runner, replace(plan, table_dir=directory), range(len(plan.units)))
            for row in out]


def run(ctx, runner) -> None:
    options = ctx.stage_options(NAME, Options)
    if not ctx.corpora:
        raise InputError("no input corpora")
    t0 = time.time()
    plan, listing = make_plan(ctx, options)
    for msg in listing.warnings:
        ctx.warn(msg)
    units = listing.units
    fields = {k: getattr(options, k) for k in FIELDS}
    reuse = runner.plan({"units": [repr(u) for u in units], "settings": repr(sorted(fields.items()))})
    plan, punkt_info = decide(ctx, runner, plan, options)
    punkt_info["seconds"] = round(time.time() - t0, 3)
    _log(f"Punkt parameters {punkt_info['source']} in {punkt_info['seconds']:.1f}s; {len(units)} work units")
    rows: list = []

    def write(directory: str) -> None:
        rows.extend(write_table(runner, plan, directory))
    try:  # a resumed run keeps the finished units' files (`reuse`)
        table_dir = ctx.write_table_with(NAME, write, keep=reuse)
    except UserError:  # the user's failure discards the run; any other (a dead JVM) keeps it for --resume
        runner.forget()
        fs.delete(ctx.table_path(NAME))  # no half-written table left behind
        raise
    counted, errors, first_bad, warnings = sum_counts(rows)
    names = [c["name"] for c in plan.corpora]
    counted += [{"corpus": names[ci], "count_kind": k, "count_reason": r, "n": n} for ci, k, r, n in listing.counts]
    errors = sorted(errors, key=lambda e: (e["corpus"], e["count_reason"] or "", e["detail"] or ""))[:MAX_LISTED_ERRORS]
    stats = build_stats(counted, errors, ctx.corpora)
    by_file, located = dropped_lines(rows)
    stats["dropped_lines"] = located[:MAX_LISTED_LINES]
    stats["dropped_lines_by_file"] = by_file
    try:  # a file that is mostly not what the flags say: the error, not its warnings
        check_dropped_lines(by_file, located, {c["name"]: c["fields"]["text_field"] for c in plan.corpora})
    except InputError:
        runner.forget()
        fs.delete(table_dir)
        raise
    for msg in warnings + dropped_lines_warnings(by_file, located):
        ctx.warn(msg)
    for path, (_, message) in sorted(first_bad.items()):
        ctx.warn(f"{path}: documents that are not valid UTF-8 were skipped (counted as documents_dropped.invalid_utf8);"
                 f" the first: {message}")
    stats["first_invalid_utf8"] = {p: {"offset": o, "detail": m} for p, (o, m) in sorted(first_bad.items())}
    try:
        check_corpora(ctx, stats)
    except InputError:
        runner.forget()
        fs.delete(table_dir)
        raise
    stats["seconds"] = {"punkt": punkt_info["seconds"],
                        "read_clean_segment_write": round(time.time() - t0 - punkt_info["seconds"], 3)}
    _log(f"sentences/ read, cleaned, segmented and written in {stats['seconds']['read_clean_segment_write']:.1f}s")
    stats["punkt"] = punkt_info
    stats["inputs"] = listing.inputs
    stats["work_units"] = len(units)
    stats["min_chars"] = int(options.min_chars)
    ctx.stats[NAME] = stats
    for row in errors[:5]:
        print(f"[sentences] skipped document {row['count_reason']} of {row['corpus']}: {row['detail']}",
              file=sys.stderr)


def _log(msg: str) -> None:
    print(f"[sentences] {msg}", file=sys.stderr, flush=True)
