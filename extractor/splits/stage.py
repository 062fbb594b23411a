"""Stage 3: `pairs/` -> `splits/{train,validation,test}` + dataset card, stats, leakage (the
stage contract: extractor/engine/stage.py).

Rounds of tasks handed to the runner around pure functions: `extractor.splits.pair_tables` (per work unit of the
pairs table), `extractor.splits.decisions` (the global decisions, per bucket of slim rows),
`extractor.splits.assign` (assignment, quotas) and `extractor.statistics` (every number of
the card). The runner (Spark in the job) runs the rounds' tasks (docs/splits.md); between rounds
the tasks exchange scratch files (Arrow) under `_tmp-splits-work/`, cut into buckets by a
hash of the key they are grouped by, and only small aggregates reach the driver, which
turns them into the next round's decisions. No text crosses a shuffle, and there is no
Spark SQL shuffle at all.

The plan (`plan.SplitsPlan`) and the rounds (`rounds.py`: functions of (plan, task)) are
apart; this module holds the driver (`SplitsStage`): `decide` runs the rounds that decide
(steps 1-5 below), `write_output` the last one, into the output folder, and `write_card`
the card beside the splits.

The `splits/` folder is written through the run (`ctx.write_table_with`), published with the
other tables at the end, so a failed run never leaves a half-built dataset.
"""
from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from pathlib import Path

from extractor.io import fs
from extractor import statistics
from extractor.core.names import LABELS, NEUTRAL
from extractor.engine.stage import Planned, Stage
from extractor.pairs.matching import matcher_for
from extractor.splits import assign
from extractor.splits import card
from extractor.splits import decisions
from extractor.splits import pair_tables
from extractor.splits import rounds
from extractor.splits.plan import Assigned, Cuts, Decided, Labelled, Output, Quotas, Short, SplitsPlan, SplitsScratch
from extractor.statistics import precision
# the flags and options live apart (no numpy there: the job's --help); one name each
from extractor.splits.options import SPEC, Options, add_arguments  # noqa: F401

NAME = SPEC.name
PAIRS_PER_PARTITION = 100_000
WORK_NAME = "_tmp-splits-work"
# the most verified near-duplicate hypotheses whose documents the driver joins itself (a
# few MB of edges); above it one task does
NEAR_GROUPS_IN_DRIVER = 100_000
CHART_COST = 140_000  # drawing the chart (importing matplotlib) costs about what the statistics of 140,000 pairs do


def _test_only_corpora(ctx) -> set[str]:
    return {c.name for c in (ctx.corpora or []) if getattr(c, "role", "train") == "test-only"}


def bucket_count(runner, units: list) -> int:
    """The slim rows are cut into about one bucket per 100,000 pairs (never more than the
    runner's `max_buckets`, Spark's `spark.sql.shuffle.partitions`, never fewer than the
    cores); results do not depend on it."""
    wanted = max(runner.slots, sum(u["rows"] for u in units) // PAIRS_PER_PARTITION + 1)
    return max(1, min(runner.max_buckets or wanted, wanted))


def decide(runner, plan: SplitsPlan, balance, max_eval: int | None, files_per_table: int,
           earlier_stats: dict | None = None) -> tuple[Decided, dict]:
    """Rounds 1-5 and the driver's decisions between them (`runner` runs a round's tasks,
    with each task's estimated cost: the Spark runner packs them into one Spark task per
    core): what round 6 writes the splits with (`Decided`), and what the card and stats
    need so far (drops, documents, counts, quotas, sizes, the kept rows' figures). Each
    round reads the plan or an input made once from what the rounds before it learned
    (`Labelled`, `Short`, `Assigned`, `Cuts`, `Quotas`)."""
    drops: dict = {}
    slots = runner.slots
    units = plan.units
    # 1-2. slim rows per unit; rows the pairs stage kept only for inspection (rejected by a
    #      filter) are not data: counted, then left out. Documents -> splits per corpus.
    found = rounds.SUMMARIES.run(runner, plan, range(len(units)), costs=[u["rows"] for u in units])
    labels_seen = set()
    for r in found:
        for label, why, count in r["counts"]:
            if why is None:
                labels_seen.add(label)
            else:
                drops[why] = drops.get(why, 0) + count
    labelled = Labelled(plan, sorted(labels_seen))
    corpora = sorted({c for r in found for c in r["corpora"]})
    near = None
    if plan.near and found:
        # near-duplicates: candidates per bucket of band keys, verified; documents joined
        near = {"candidates": 0, "hypotheses": 0, "pairs": 0}
        for nr in rounds.NEAR_DUPLICATES.run(runner, plan, range(plan.buckets), costs=[1.0] * plan.buckets):
            near["candidates"] += nr["candidates"]
            near["hypotheses"] += nr["hypotheses"]
            near["pairs"] += nr["pairs"]
        # the components over few verified pairs are cheaper here than a Spark job's fixed
        # serial cost; over many, one task holds them
        grouped = (rounds.near_groups(plan, 0) if near["hypotheses"] <= NEAR_GROUPS_IN_DRIVER
                   else rounds.NEAR_GROUPS.run(runner, plan, [0])[0])
        near.update(documents_joined=grouped["documents_joined"], groups=grouped["groups"],
                    hypotheses_across_corpora=grouped["hypotheses_across_corpora"])
    # run by the driver, not as a Spark job: the rows are few (one per document and label)
    per_corpus: dict[str, Any] = {corpus: rounds.assign_documents(labelled, corpus) for corpus in corpora}
    unit_of = {corpus: {"unit": "document"} for corpus in corpora}
    # documents too large or too few for every split to get its share of every label:
    # contiguous blocks of paragraphs instead, where they do better (docs/splits.md "Blocks")
    short = [c for c in corpora if per_corpus[c]["short"]]
    block_corpora: list = []
    if short:
        rounds.PARAGRAPHS.run(runner, Short(plan, short), range(plan.buckets), costs=[1.0] * plan.buckets)
        for corpus in short:
            blocked = rounds.assign_blocks(labelled, corpus, per_corpus[corpus]["short"])
            if blocked is None:
                fs.delete(plan.scratch.blocks(corpus))
            else:
                per_corpus[corpus], unit_of[corpus] = blocked, blocked["unit"]
                block_corpora.append(corpus)
    documents: dict = {}
    for assigned in per_corpus.values():
        for split, count in assigned["documents"]:
            documents[split] = documents.get(split, 0) + count

    # 3. pairs spanning two splits and all copies of a sentence pair but one; the counts per
    #    (split, corpus, label) the quotas come from, and their histograms. The rows left are
    #    written per range of units, the way round 5 reads them.
    buckets = list(range(plan.buckets))
    n_ranges = max(1, min(len(units), 2 * slots))
    assigned = Assigned(plan, block_corpora=block_corpora, n_ranges=n_ranges, range_of=_unit_ranges(units, n_ranges))
    even = [1.0] * len(buckets)
    ranked: list[Any] = rounds.RANK.run(runner, assigned, buckets, costs=even) if found else []
    counts, dropped = decisions.ranked_counts(ranked)
    drops.update({"pair_spans_documents_of_two_splits": 0,
                  **({"pair_spans_blocks_of_two_splits": 0} if block_corpora else {}),
                  **dropped})  # (round 1's drops: other reasons)

    # 4. balance: quotas per (split, corpus, label) from the counts; each takes the pairs with
    #    the lowest hashes, found through the histograms (and the rows of the bins where a
    #    quota ends part-way).
    labels = sorted({k[2] for k in counts})
    quotas = assign.compute_quotas(counts, balance, labels, max_eval)
    drops["balance"] = assign.quota_drops(counts, quotas)
    cuts = Cuts(assigned, decisions.cut_points([h for r in ranked for h in r["histogram"]], quotas))
    partial = any(need for _, need in cuts.cuts.values())
    edges = [row for r in rounds.BOUNDARY.run(runner, cuts, buckets, costs=even)
             for row in r["rows"]] if partial else []
    sizes = {s: 0 for s in assign.SPLITS}
    for (split, corpus, label), quota in quotas.items():
        sizes[split] += min(quota, counts.get((split, corpus, label), 0))
    chart: dict = {s: {} for s in assign.SPLITS}
    for (split, corpus, label), quota in sorted(quotas.items()):
        if min(quota, counts.get((split, corpus, label), 0)):
            chart[split][label] = chart[split].get(label, 0) + min(quota, counts[(split, corpus, label)])
    within = Quotas(assigned, cuts=cuts.cuts, last=decisions.thresholds(edges, cuts.cuts),
                    n_files={s: pair_tables.files_per_split(sizes[s], files_per_table) for s in assign.SPLITS},
                    chart=chart)

    # 5. per range of units: the kept rows, their figures, keys, texts and statistics.
    rows_of = [sum(u["rows"] for u, r in zip(units, assigned.range_of) if r == i) for i in range(n_ranges)]
    kept: list[Any] = (rounds.QUOTA_ROWS.run(runner, within, range(n_ranges), costs=rows_of) if any(sizes.values())
                       else [])
    decided = Decided(within, charts=card.chart_data(kept, earlier_stats, sum(u["rows"] for u in units), drops, sizes))
    return decided, {"drops": drops, "documents": documents, "labels": labels, "counts": counts, "quotas": quotas,
                  "sizes": sizes, "near": near, "units": unit_of, "kept": kept}


def write_output(runner, decided: Decided, found: dict, target: str) -> dict:
    """Round 6 into `target`: the output files; the card's aggregates and PMI words per
    split; the leakage of every kind of key and the documents per corpus; the near-duplicates
    across splits (one task here, not a Spark job of its own, which would cost more than it
    does); the
    chart. Returns what the card and stats need (`decide`'s, with the figures, leakage,
    blocks and files written)."""
    sizes, near, kept = found["sizes"], found["near"], found["kept"]
    plan, n_files = decided.quotas.assigned.plan, decided.quotas.n_files
    buckets = list(range(plan.buckets))
    columns = plan.schema.names
    files = [("file", s, b) for s in assign.SPLITS if sizes[s] for b in range(n_files[s])]
    stats_tasks = [("statistics", s, 0) for s in assign.SPLITS if sizes[s]]
    keys_tasks = [("keys", "", k) for k in buckets] if kept else []
    near_tasks = [("near-leakage", "", 0)] if near is not None else []
    tasks = stats_tasks + files + keys_tasks + near_tasks + [("chart", "", 0)]
    last = rounds.OUTPUT.run(runner, Output(decided, target), tasks,
                              costs=[float(sizes[s]) for _, s, _ in stats_tasks]
                              + [0.5 * sizes[s] / n_files[s] for _, s, _ in files]
                              + [0.1 * sum(sizes.values()) / len(buckets)] * len(keys_tasks) + [1.0] * len(near_tasks)
                              + [CHART_COST])
    if near is not None:
        near["leakage"] = next(r["near_leakage"] for r in last if "near_leakage" in r)

    corpora_stats: dict = {}
    markers: dict = {}
    sources: dict = {}
    for r in kept:
        for split, corpus, count in r["corpora"]:
            corpora_stats.setdefault(f"{split}|{corpus}", {"pairs": 0, "documents": 0})["pairs"] += count
        for label, marker, count in r["markers"]:
            if "marker" in columns:
                markers.setdefault(label, {})[marker] = markers.get(label, {}).get(marker, 0) + count
        for split, source, count in r["sources"]:
            if "source" in columns:
                sources[f"{split}|{source}"] = sources.get(f"{split}|{source}", 0) + count
    for r in last:
        for split, corpus, count in r.get("documents", []):
            corpora_stats[f"{split}|{corpus}"]["documents"] += count
    leakage, duplicates = decisions.leakage_report([row for r in last for row in r.get("leakage", [])])
    aggregates = [a for r in last for a in r.get("aggregates", [])]
    pmi = {split: top for r in last for split, top in r.get("pmi", {}).items()}
    kept_sizes = {s: sum(v["pairs"] for k, v in corpora_stats.items() if k.split("|", 1)[0] == s)
                  for s in assign.SPLITS}
    if kept_sizes != sizes:
        raise RuntimeError(f"splits: kept rows {kept_sizes} differ from the quotas {sizes} (a bug; please report it)")
    return {"drops": found["drops"], "documents": found["documents"], "labels": found["labels"],
            "counts": found["counts"], "quotas": found["quotas"], "sizes": sizes,
            "corpora": dict(sorted(corpora_stats.items())), "markers": markers, "sources": sources,
            "leakage": leakage, "blocks": pair_tables.card_statistics(aggregates, pmi, duplicates),
            "written": [r for r in last if "path" in r], "chart": any(r.get("chart") for r in last),
            "near": near, "units": found["units"], "charts": decided.charts,
            "examples": card.merge_examples([e for r in kept for e in r.get("examples", [])])}


def label_precision(lexicon, markers: dict, sources: dict, check: dict | None = None) -> dict:
    """The splits' estimated label precision (extractor/statistics/precision.py): the pairs of
    each label by phrase (the lexicon's spelling of the markers as written) and, for neutral,
    by strategy, weighed with the lexicon's `measured_precision`. `check`: the semantic check's
    settings when the pairs went through it; its own measurement (`semantic_check`) is used
    when it was made with the same head and thresholds (`semantic_check: measured`), else the
    one without the check (`semantic_check: not measured`)."""
    matcher = matcher_for(lexicon)
    counts: dict = {}
    for label, by_marker in markers.items():
        for marker, n in by_marker.items():
            phrase = matcher.phrase_of(marker) or marker
            counts.setdefault(label, {})
            counts[label][phrase] = counts[label].get(phrase, 0) + n
    for key, n in sources.items():
        source = key.split("|", 1)[1]
        if source != "marker":
            counts.setdefault(NEUTRAL, {})
            counts[NEUTRAL][source] = counts[NEUTRAL].get(source, 0) + n
    measured = lexicon.measured_precision
    which = {}
    if check is not None:
        checked = measured.get("semantic_check") or {}
        same = all(checked.get(k) == check.get(k) for k in ("head_sha256", "threshold", "neutral_threshold"))
        if checked and same:
            measured = {**measured, **checked}
        which = {"semantic_check": "measured" if checked and same else "not measured",
                 "head_sha256": check.get("head_sha256")}
    return {"gold_set": measured.get("gold_set"), "about": measured.get("about"), "genres": measured.get("genres"),
            "labels": precision.estimate(counts, measured), **which}


def _unit_ranges(units: Sequence[dict], n: int) -> list[int]:
    """Range number of each unit: `n` contiguous ranges of about equal rows (a unit goes to
    the range its middle row falls in)."""
    total = sum(u["rows"] for u in units) or 1
    out, seen = [], 0
    for u in units:
        out.append(min(n - 1, (2 * seen + u["rows"]) * n // (2 * total)))
        seen += u["rows"]
    return out


def make_plan(ctx, runner, options: Options, schema, units: list, buckets: int) -> SplitsPlan:
    """The stage's plan over the pairs table's units, its scratch folder beside the tables."""
    return SplitsPlan(units=units, schema=schema, seed=options.seed, scratch=SplitsScratch(ctx.table_path(WORK_NAME)),
                      buckets=buckets, ratios=options.ratios, test_only=frozenset(_test_only_corpora(ctx)),
                      near=options.near, private_premises=assign.private_premise_corpora(
                          ((ctx.stats.get("pairs") or {}).get("neutral") or {}).get("allocated")))


def settings_stats(options: Options) -> dict:
    """The stats block's `settings` (also part of the plan's key for `--resume`)."""
    settings: dict[str, Any] = {"split_ratios": list(options.ratios), "balance": str(options.balance_mode),
                "max_eval_per_corpus": options.max_eval, "seed": options.seed}
    if options.near is not None:  # with "off" stats.json stays as it was (same bytes)
        settings["near_duplicates"] = options.near.as_dict()
    return settings


@dataclass(frozen=True)
class SplitsDecided:
    """What rounds 1-5 decided (`Decided`), and what the card and stats need so far
    (`decide`'s)."""
    decided: Decided
    found: dict


class SplitsStage(Stage[Options, SplitsPlan, SplitsDecided, dict]):
    """Stage 3 on the stage contract (`extractor.engine.stage.Stage`)."""

    spec = SPEC

    def check(self, ctx, options: Options) -> None:
        """The split settings are checked when the options are built (before any stage
        runs), so that a bad --balance fails in a second, not after stages 1 and 2."""

    def plan(self, ctx, runner, options: Options) -> Planned[SplitsPlan]:
        path = ctx.table_path(ctx.input_table(SPEC))
        if not fs.exists(path):
            ctx.read_table(ctx.input_table(SPEC))  # the job's one-line "no such table" error
        schema, units = pair_tables.list_units(path)
        plan = make_plan(ctx, runner, options, schema, units, bucket_count(runner, units))
        key = {"units": units, "buckets": plan.buckets, "slots": runner.slots, "settings": settings_stats(options),
               "files": options.files_per_table}
        return Planned(plan, key, plan.scratch)

    def decide(self, ctx, runner, plan: SplitsPlan, options: Options) -> SplitsDecided:
        decided, found = decide(runner, plan, options.balance_mode, options.max_eval, options.files_per_table,
                                card.earlier_stats(ctx.stats))
        return SplitsDecided(decided, found)

    def write(self, ctx, runner, plan: SplitsPlan, decided: SplitsDecided, directory: str) -> dict:
        """Round 6 (the split files into `directory`), then the card; the stats block."""
        return write_card(ctx, runner, options=ctx.stage_options(NAME, self), plan=plan, decided=decided,
                          target=directory)

    def finish(self, ctx, options: Options, plan: SplitsPlan, decided: SplitsDecided, written: dict) -> dict:
        return written


def write_card(ctx, runner, options: Options, plan: SplitsPlan, decided: SplitsDecided, target: str) -> dict:
    """Round 6 (the split files into `target`), then the card beside them: the stats block."""
    schema = plan.schema
    ratios, balance = options.ratios, options.balance_mode
    stats: dict = {"settings": settings_stats(options)}
    stats["input_pairs"] = sum(u["rows"] for u in plan.units)
    found = write_output(runner, decided.decided, decided.found, target)
    drops, sizes, blocks, leakage = found["drops"], found["sizes"], found["blocks"], found["leakage"]
    stats["documents"] = found["documents"]
    _warn_missing(ctx, found["labels"], found["counts"], found["quotas"], balance)
    stats["unit"] = found["units"]
    lacking = assign.missing_labels(found["counts"], found["quotas"], found["labels"], ratios)
    unused_sets = [n for n in ctx.lexicon.phrase_sets_available if n not in ctx.lexicon.phrase_set]
    way = assign.levers(found["counts"], found["labels"], balance.mode, ratios, unused_sets)
    for split, missing in lacking.items():
        ctx.warn(f"splits: the {split} split holds no {', '.join(missing)} pairs: too few pairs,"
                 " documents or blocks for every label")
    if lacking:
        stats["missing_labels"] = lacking
    columns = schema.names
    markers, sources, written = found["markers"], found["sources"], found["written"]

    num_bytes: dict = {}
    for w in written:
        split = fs.basename(fs.parent(w["path"]))
        num_bytes[split] = num_bytes.get(split, 0) + int(w["bytes"])
    for split in assign.SPLITS:
        if not sizes[split]:  # `datasets` cannot read an empty Parquet split: leave it out, say so
            ctx.warn(f"splits: the {split} split is empty and is not written")
    if lacking or not all(sizes[s] for s, r in zip(assign.SPLITS, ratios) if r > 0):
        ctx.warn(f"splits: what would fill the empty splits and missing labels on this corpus: {way}")
        stats["levers"] = way

    result = {"splits": {s: blocks.get(s)
                         or {"labels": {}, "all": {"count": 0, **{k: None for k in statistics.AGGREGATES}}}
                         for s in assign.SPLITS}}
    stats["splits"] = {s: int(result["splits"][s]["all"]["count"]) for s in assign.SPLITS}
    stats["labels"] = {s: {l: b["count"] for l, b in result["splits"][s]["labels"].items()} for s in assign.SPLITS}
    stats["corpora"] = found["corpora"]
    stats["dropped"] = drops
    stats["leakage"] = leakage["checks"]
    if found["near"] is not None:
        assert options.near is not None  # the near-duplicate rounds ran
        near = found["near"]
        stats["near_duplicates"] = {k: v for k, v in near.items() if k != "leakage"}
        leakage["near_duplicates"] = {
            "settings": options.near.as_dict(), **near["leakage"],
            "scope": "verified near-duplicate hypotheses of the pairs before the balance cut"}
    stats["markers"] = {l: dict(sorted(m.items(), key=lambda kv: (-kv[1], kv[0]))[:15])
                        for l, m in sorted(markers.items())}
    if "source" in columns:
        stats["sources"] = dict(sorted(sources.items()))
    stats["label_precision"] = label_precision(ctx.lexicon, markers, sources,
                                               (ctx.stats.get("check") or {}).get("settings"))
    dataset = {"splits": result["splits"], "leakage": leakage["between_splits"]}
    for line in card.artefact_warnings(dataset, markdown=False):  # the card's warnings, in the summary too
        ctx.warn(f"splits: {line}")
    build = {**card.build_info(ctx), **card.check_info(ctx.stats.get("check"))}  # the check: when it ran
    with tempfile.TemporaryDirectory() as local_tmp:
        local = Path(local_tmp)
        card.write_card_files(local, dataset=dataset, stage_stats=stats, build=build,
                              schema=schema, lang=ctx.lexicon.lang,
                              license=card.corpus_licenses(ctx.corpora, options.license), leakage=leakage,
                              pairs_stats=ctx.stats.get("pairs"), sentences_stats=ctx.stats.get("sentences"),
                              num_bytes=num_bytes, chart=not found["chart"],
                              examples=found["examples"], charts=found["charts"])
        for f in sorted(local.iterdir()):
            fs.write_bytes(fs.join(target, f.name), f.read_bytes())
    return stats


def _warn_missing(ctx, labels, counts, quotas, balance) -> None:
    for label in LABELS:
        if label not in labels:
            ctx.warn(f"splits: no '{label}' pairs in pairs/ (none made, or every one removed as leaking: "
                     f"stats.json pairs and splits.dropped say which)")
    for split, corpus in sorted({(s, c) for (s, c, _) in counts}):
        kept = sum(quotas.get((split, corpus, l), 0) for l in labels)
        if kept == 0 and sum(counts.get((split, corpus, l), 0) for l in labels):
            missing = [l for l in labels if not counts.get((split, corpus, l))]
            ctx.warn(f"splits: {split} of corpus {corpus} is empty after --balance {balance}"
                     + (f" (no {', '.join(missing)} pairs there)" if missing else ""))


STAGE = SplitsStage()
