"""Stage 1: documents -> `sentences/` (the stage contract: extractor/engine/stage.py).

1. The driver lists the work units of every input (`extractor/sentences/units.py`: byte
   ranges of dumps and JSONL, groups of text files, Parquet row groups; a UTF-16 dump is
   one unit), reading only sizes, heads and footers through `extractor/io/fs.py`, and trains
   Punkt on the first MB of cleaned text (or reads `--punkt-params`).
2. One round, one task per unit (`process.process_unit`): the task reads its unit through
   `extractor/io/fs.py` (local paths, file://, gs://, s3://, hdfs://), cleans and segments it,
   writes the rows to one Parquet file named by the unit
   (`<table>/corpus=<name>/part-<input>-<unit>.parquet`) with pyarrow and fixed writer
   settings, and returns only its count rows.
3. The driver sums the counts into stats["sentences"].

The same shape as stages 2 and 3 (`SentencesStage`): the plan (`plan.DocumentsPlan`, made
by `make_plan`), the round (`rounds.UNITS`: a function of (plan, unit)), the driver's
decision before it (`decide`: the Punkt step, a `Punkt`) and the round that writes the
table (`write_table`).

Rows never pass through the engine. A file's bytes depend only on its unit's input and the
settings, so they are the same whatever core, executor or filesystem writes them. Within
a file, rows are in input order: a document's sentences are contiguous and in order.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace
from typing import Any

from extractor.core.errors import InputError
from extractor.sentences import language, rounds
from extractor.sentences.plan import DocumentsPlan
from extractor.sentences.process import (MAX_LISTED_ERRORS, MAX_LISTED_LINES, build_stats, check_corpora,
                                         check_dropped_lines, corpus_settings, dropped_lines, dropped_lines_warnings,
                                         inspect_inputs, punkt_key, punkt_parameters, sum_counts)
from extractor.sentences.formats import list_units
from extractor.sentences.units import Listing, UnitError
from extractor.engine.stage import Planned, Stage
# the flags and options live apart (no pyarrow there: the job's --help); one name each
from extractor.sentences.options import SPEC, Options, add_arguments  # noqa: F401

NAME = SPEC.name
FIELDS = ("text_field", "id_field", "title_field", "genre_field")


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


def make_plan(ctx, options: Options) -> tuple[DocumentsPlan, Listing]:
    """The stage's plan from the listed inputs (before any work, Punkt training included):
    (plan, listing)."""
    fields = {k: getattr(options, k) for k in FIELDS}
    corpora = corpus_settings(ctx.corpora, ctx.lexicon.lang, fields)
    listing = work_units(ctx.corpora, options, corpora)
    plan = DocumentsPlan(corpora=corpora, lexicon=ctx.lexicon, min_chars=int(options.min_chars),
                         namespaces=listing.namespaces, units=listing.units,
                         drop_foreign=options.language_check == "on" and ctx.lexicon.lang in language.languages())
    return plan, listing


def check_inputs(ctx, options: Options) -> dict:
    """The inputs' sample check before any work (`process.inspect_inputs`: formats, fields,
    the corpus's language), the same in the run and in `--dry-run`: a one-line `InputError`
    or `WrongLanguage`; else what the language sample found, per corpus (stats.json
    sentences.language)."""
    plan, _ = make_plan(ctx, options)
    check = options.language_check == "on" and ctx.lexicon.lang in language.languages()
    found = inspect_inputs(ctx.lexicon, plan, plan.units, check)
    return {"check": options.language_check if check else f"off (the identifier knows no '{ctx.lexicon.lang}')"
            if options.language_check == "on" else "off",
            "corpus_samples": {name: {"sentences": f.n, "share": round(f.share, 4), "languages": dict(
                sorted(f.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5])} for name, f in found.items()}}


@dataclass(frozen=True)
class Punkt:
    """What the driver's Punkt step learned: the parameters (`segment.params_to_dict`), their
    key (`process.punkt_key`) and how they were obtained (`info`: source, seconds)."""
    params: dict
    key: str
    info: dict


def decide(ctx, runner, plan: DocumentsPlan, options: Options) -> Punkt:
    """The driver's Punkt step (reused by a resumed run): the Punkt parameters the units
    round segments with, and how they were obtained."""
    params, info = runner.step("punkt", lambda: punkt_parameters(
        ctx.lexicon, plan, list(plan.units), options.punkt_params, options.punkt_sample_mb, ctx.put_bytes))
    return Punkt(params, punkt_key(params), info)


def write_table(runner, plan: DocumentsPlan, punkt: Punkt, directory: str) -> list:
    """The units round: one task per unit, its file under `directory`; the count rows. The
    round's tasks read the plan with the Punkt parameters and the table's folder
    (`DocumentsPlan.punkt`, `table_dir`: what `process.process_unit` reads)."""
    units = replace(plan, punkt=punkt.params, punkt_key=punkt.key, table_dir=directory)
    return [row for out in rounds.UNITS.run(runner, units, range(len(plan.units))) for row in out]


@dataclass(frozen=True)
class SentencesSetup:
    """Stage 1's plan and what the driver keeps beside it: the listing it was made from
    (its warnings, counts, inputs) and when the stage started."""
    plan: DocumentsPlan
    listing: Listing
    started: float      # when the stage started (time.time()), for its seconds


class SentencesStage(Stage[Options, SentencesSetup, Punkt, list]):
    """Stage 1 on the stage contract (`extractor.engine.stage.Stage`)."""

    spec = SPEC
    keeps_table = True  # one file per work unit: a resumed run keeps the finished units' files

    def check(self, ctx, options: Options) -> None:
        ctx.stats.setdefault(NAME, {})["language"] = check_inputs(ctx, options)

    def describe(self, ctx, options: Options) -> list[str]:
        listing = listed_units(ctx.corpora, ctx.lexicon.lang, options)
        for msg in listing.warnings:
            ctx.warn(msg)
        checked = ctx.stats.get(NAME, {}).get("language", {})
        samples = [f"  {name}: {info['share']:.0%} {ctx.lexicon.lang} of {info['sentences']} sampled paragraphs"
                   for name, info in checked.get("corpus_samples", {}).items()]
        return [f"[dry-run] work units of stage {NAME}: {len(listing.units)} (--unit-mb {options.unit_mb})",
                *(f"  {path}: " + ", ".join(f"{k} {v}" for k, v in how.items())
                  for path, how in listing.inputs.items()),
                f"[dry-run] inputs sampled (formats, fields, language; --language-check {checked.get('check', 'off')})"
                f"{':' if samples else ''}", *samples]

    def plan(self, ctx, runner, options: Options) -> Planned[SentencesSetup]:
        if not ctx.corpora:
            raise InputError("no input corpora")
        started = time.time()
        plan, listing = make_plan(ctx, options)
        for msg in listing.warnings:
            ctx.warn(msg)
        fields = {k: getattr(options, k) for k in FIELDS}
        key = {"units": [repr(u) for u in listing.units], "settings": repr(sorted(fields.items()))}
        return Planned(SentencesSetup(plan, listing, started), key)

    def decide(self, ctx, runner, plan: SentencesSetup, options: Options) -> Punkt:
        found = decide(ctx, runner, plan.plan, options)
        punkt = replace(found, info={**found.info, "seconds": round(time.time() - plan.started, 3)})
        _log(f"Punkt parameters {punkt.info['source']} in {punkt.info['seconds']:.1f}s; "
             f"{len(plan.listing.units)} work units")
        return punkt

    def write(self, ctx, runner, plan: SentencesSetup, decided: Punkt, directory: str) -> list:
        return write_table(runner, plan.plan, decided, directory)

    def finish(self, ctx, options: Options, plan: SentencesSetup, decided: Punkt, written: list) -> dict:
        return sentence_stats(ctx, options, plan, decided.info, written)


def sentence_stats(ctx, options: Options, planned: SentencesSetup, punkt_info: dict, rows: list) -> dict[str, Any]:
    """The stats block of stage 1 from the units round's count rows; a file that is mostly
    not what the flags say, or a corpus without a sentence, is its one-line `InputError`."""
    plan, listing, t0 = planned.plan, planned.listing, planned.started
    units = listing.units
    counted, errors, first_bad, warnings = sum_counts(rows)
    names = [c["name"] for c in plan.corpora]
    counted += [{"corpus": names[ci], "count_kind": k, "count_reason": r, "n": n} for ci, k, r, n in listing.counts]
    errors = sorted(errors, key=lambda e: (e["corpus"], e["count_reason"] or "", e["detail"] or ""))[:MAX_LISTED_ERRORS]
    stats = build_stats(counted, errors, ctx.corpora)
    stats["language"] = language_stats(ctx.stats.get(NAME, {}).get("language", {}), stats)
    by_file, located = dropped_lines(rows)
    stats["dropped_lines"] = located[:MAX_LISTED_LINES]
    stats["dropped_lines_by_file"] = by_file
    # a file that is mostly not what the flags say: the error, not its warnings
    check_dropped_lines(by_file, located, {c["name"]: c["fields"]["text_field"] for c in plan.corpora})
    for msg in warnings + dropped_lines_warnings(by_file, located):
        ctx.warn(msg)
    for path, (_, message) in sorted(first_bad.items()):
        ctx.warn(f"{path}: documents that are not valid UTF-8 were skipped (counted as documents_dropped.invalid_utf8);"
                 f" the first: {message}")
    stats["first_invalid_utf8"] = {p: {"offset": o, "detail": m} for p, (o, m) in sorted(first_bad.items())}
    check_corpora(ctx, stats)
    stats["seconds"] = {"punkt": punkt_info["seconds"],
                        "read_clean_segment_write": round(time.time() - t0 - punkt_info["seconds"], 3)}
    _log(f"sentences/ read, cleaned, segmented and written in {stats['seconds']['read_clean_segment_write']:.1f}s")
    stats["punkt"] = punkt_info
    stats["inputs"] = listing.inputs
    stats["work_units"] = len(units)
    stats["min_chars"] = int(options.min_chars)
    for row in errors[:5]:
        print(f"[sentences] skipped document {row['count_reason']} of {row['corpus']}: {row['detail']}",
              file=sys.stderr)
    return stats


def language_stats(checked: dict, stats: dict) -> dict:
    """stats.json sentences.language: the check's setting, each corpus's sample languages
    (`check_inputs`), the sentences dropped as written in another language, by language,
    and their share of the sentences segmented."""
    foreign = dict(sorted(stats.get("foreign_sentences", {}).items(), key=lambda kv: (-kv[1], kv[0])))
    seen = stats["sentences"]["total"] + sum(foreign.values())
    return {**checked, "foreign_sentences": foreign,
            "foreign_share": round(sum(foreign.values()) / seen, 4) if seen else 0.0}


def _log(msg: str) -> None:
    print(f"[sentences] {msg}", file=sys.stderr, flush=True)


STAGE = SentencesStage()
