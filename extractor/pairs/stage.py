"""Stage 2 of the job: `sentences/` -> `pairs/` (the stage contract: extractor/engine/stage.py;
the logic is per document in extractor.pairs.pairing, run over Arrow batches by
extractor.pairs.sentence_passes; the global steps are pure functions over buckets of pair rows
in extractor.pairs.buckets and over aggregates in extractor.pairs.corpus). See docs/pairs.md.

The plan (`plan.PairsPlan`, made by `make_plan`) and the rounds (`rounds.py`: functions of
(plan, task)) are apart; this module holds the driver (`PairsStage`): `decide` runs the
steps 1-4 below, `write_table` step 5 into the table's folder. The steps' rounds of tasks
are handed to the runner (Spark tasks in the job, one process in the tests and
benchmarks); the pair rows travel between rounds as Arrow scratch files in
the scratch folder, cut into buckets by a hash of their texts, so every copy of a pair is
in one bucket; only counts reach the driver, and the JVM never holds a pair row:
1. pass 1, per unit of the sentence files as stage 1 wrote them (a document's sentences
   contiguous): marked pairs, the neutral candidates of the lowest selection bins, counts
   by rejection reason, histograms of the neutral selection hashes;
2. per bucket: identical marked pairs ranked (the lowest pair_id stays), the POS filter
   over them (`nlp.pipe`, the model loaded once per Python worker); the driver turns the
   counts into neutral targets and, per (corpus, strategy), the hash bin up to which
   candidates are kept (`corpus.plan_cuts`);
3. pass 2, per unit (only when a cut goes beyond what pass 1 gave early: `sentence_passes.early_covers`);
4. per bucket, two rounds: the lowest selection hashes of the neutral candidates, from
   which the driver finds the exact limit of the POS check per (corpus, strategy)
   (`corpus.check_limits`); then the candidates against the kept marked pairs and each
   other, the POS filter up to the limits (once more over the whole cuts when a strategy
   runs short under its limit: `corpus.limits_hold`);
5. per file of the pairs table: the exact draw, and the file's rows written (the files
   Spark's `repartition(files, label, pair_id)` would give: partitioned by label, sorted by pair_id).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from extractor.io import fs
from extractor.engine import scratch
from extractor.engine.stage import Planned, Stage
from extractor.pairs import buckets
from extractor.pairs import pos_filter
from extractor.pairs import rounds
from extractor.pairs import sentence_passes
from extractor.pairs.buckets import cut_points
from extractor.pairs.corpus import (build_stats, check_counts, check_limits, final_allocation, limits_hold, plan_cuts,
                                   tally_marked, tally_neutral)
from extractor.pairs.pairing import MARKED_REASONS  # noqa: F401  (re-exported for callers)
from extractor.pairs.plan import Candidates, Drawn, NeutralCheck, PairsPlan, PairsScratch, PassTwo, TableFiles, Wanted
from extractor.io.parquet_writer import finish_table_files
from extractor.core.schemas import PAIRS
from extractor.lexicon.lexicon import CompleteWords
# the flags and options live apart (no numpy there: the job's --help); one name each
from extractor.pairs.options import SPEC, Options, add_arguments, resolve_neutral_mix  # noqa: F401

WORK_NAME = "_tmp-pairs-work"  # scratch files between the rounds, beside the tables


def pos_lexicon(options: Options, lexicon):
    """The lexicon the POS filter reads: without its word lists under `--pos-words off`
    (the tagger judges every sentence)."""
    return replace(lexicon, complete_words=CompleteWords()) if options.pos_words == "off" else lexicon


def pos_status(options: Options, lexicon, warn=None) -> tuple[str | None, dict]:
    """(model to run or None, stats block) for the POS filter."""
    model = options.spacy_model or lexicon.spacy_model
    enabled, status, warning = pos_filter.resolve(options.pos_filter, model, lexicon)
    if warning and warn:
        warn(warning)
    words = pos_lexicon(options, lexicon).complete_words if enabled else None
    return (model if enabled else None), {"status": status, "mode": options.pos_filter,
                                          "model": model if enabled else None, "model_requested": model,
                                          "complete_words": {"subject": len(words.subject),
                                                             "predicate": len(words.predicate)} if words else None}


def _pos_tasks(slots: int, units: int) -> int:
    """Tasks of a POS step: one per core, and one per 16 units of pass 1 (or fewer) on a
    large table, so that a bucket holds the pairs of at most 16 units whatever the size of
    the input (its rows and its texts' verdicts are a task's memory). Both steps then run
    on every Python worker, each loading spaCy once, at the same time (not one worker in
    the first step and another, loading it again, in the second)."""
    return max(1, slots, -(-units // 16))


def reduce_pass_one(counts: list[tuple], tallies: list[tuple], histograms=()):
    """Steps 1-2's driver reduction of the rounds' small results, in one fixed order: pass
    one's count rows (`marked`, `edge`), its tasks' dense histograms (`histograms`: each
    task's `buckets.dense_histograms`) and the marked round's tallies, summed into (marked
    counts, neutral histograms, tally groups, document edges). What the driver holds here
    grows with the units (a few count rows and one HIST_SIZE list per (corpus, strategy) of
    each unit), the marked tallies (labels x phrases x flags per bucket) and the files (two
    edge rows each), never with the documents."""
    old = [(corpus, label, b, a) for kind, corpus, label, reject, b, edge, a in counts if kind == "hist"]
    # ("hist" count rows: results recorded for --resume by the code before dense histograms)
    hist = buckets.sum_histograms([*histograms, buckets.dense_histograms(old)] if old else histograms)
    rows = [(kind, corpus, label, None, None, reject, b, edge, a, None)
            for kind, corpus, label, reject, b, edge, a in counts if kind != "hist"]
    rows += [("tally", corpus, label, phrase, ps, reject, n, "true" if dup else "false", a, c)
             for corpus, label, phrase, ps, reject, n, dup, a, c in tallies]
    marked_counts: Counter = Counter()
    groups: list[tuple] = []
    edges: Counter = Counter()
    for kind, corpus, label, phrase, ps, reject, b, edge_doc, a, c in sorted(rows, key=repr):
        if kind == "marked":
            marked_counts[corpus, label, reject] += a
        elif kind == "edge":
            edges[corpus, edge_doc] += a
        elif kind == "tally":
            groups.append((corpus, label, phrase, ps, reject, b, edge_doc == "true", a, c))
    return marked_counts, hist, groups, edges


def make_plan(runner, table: str, lexicon, options: Options, model: str | None, work: str | None = None,
              files: int = 4) -> PairsPlan:
    """The stage's plan over the `sentences/` table at `table`: its units, buckets and
    settings, its scratch folder `work` (default: beside `table`)."""
    slots = max(1, runner.slots)
    units = sentence_passes.file_units(sentence_passes.sentence_files(table), 2 * slots)
    work_folder = PairsScratch(work or fs.join(fs.parent(fs.canonical(table)), WORK_NAME))
    return PairsPlan(lexicon=lexicon, units=units, model=model, scratch=work_folder,
                     buckets=_pos_tasks(slots, len(units)), seed=options.seed, strategies=options.strategies,
                     min_chars=options.min_chars, files=files, near=options.near)


def plan_key(plan: PairsPlan) -> dict:
    """What `--resume` compares of the plan (`Runner.plan`)."""
    return {"units": plan.units, "buckets": plan.buckets, "files": plan.files, "model": plan.model}


def decide(runner, plan: PairsPlan, options: Options, status: dict, released: list) -> tuple[Drawn, dict]:
    """Rounds 1-4 and the driver's decisions between them: what the files round writes the
    table with (`Drawn`: the kept marked pairs, the neutral draw) and the stage's stats
    block. Each round reads the plan or an input made once from what the rounds before it
    learned (`Candidates`, `PassTwo`, `Wanted`, `NeutralCheck`). Values shared with the
    tasks are appended to `released` (destroyed after the table)."""
    model = plan.model
    mix = options.mix
    bucket_ids = list(range(plan.buckets))
    # 1. pass 1; 2. identical marked pairs together (rank in `bin`), the POS filter ----------
    one = rounds.PASS_ONE.run(runner, plan, range(len(plan.units)))
    counts = [tuple(r) for out in one for r in out["counts"]]
    histograms = [out.get("hist", []) for out in one]
    del one
    tallies = [tuple(r) for out in rounds.MARKED_ROUND.run(runner, plan, bucket_ids) for r in out["tallies"]]
    marked_counts, hist, groups, edges = reduce_pass_one(counts, tallies, histograms)
    split = next((key for key, n in sorted(edges.items(), key=repr) if n > 1), None)
    if split:
        raise sentence_passes.DocumentOrderError(sentence_passes.split_document_error(*split))
    duplicates, kept, pos, per_corpus = tally_marked(groups, marked_counts, model)
    near_rejected, near_counts = None, None
    near_applied = plan.near is not None
    if near_applied:
        # near-duplicate pairs among the kept marked pairs (docs/neardup.md)
        rounds.NEAR_BANDS.run(runner, plan, bucket_ids)
        found = rounds.NEAR_PAIRS.run(runner, plan, bucket_ids)
        near_rejected = 0
        for out in rounds.NEAR_APPLY.run(runner, plan, bucket_ids):
            for corpus, label, phrase, stripped in out["rejected"]:
                kept[corpus, label, phrase, stripped] -= 1
                per_corpus[corpus][label] -= 1
                near_rejected += 1
        kept = Counter({k: v for k, v in kept.items() if v})
        near_counts = {"candidates": sum(f["candidates"] for f in found),
                       "verified_pairs": sum(f["pairs"] for f in found)}
    checked = sum(pos.values())
    pass_rate = pos.get(None, 0) / checked if model and checked else None
    targets, available, cuts = plan_cuts(per_corpus, hist, options.neutral_ratio, mix, pass_rate)

    # 3. pass 2 (when pass 1's early bins do not hold every candidate under the cuts); 4.
    # neutral candidates against the marked pairs and each other, the POS filter; the exact
    # draw ------------------------------------------------------------------------------------
    neutral_rejected: Counter = Counter()
    pos_neutral: Counter = Counter()
    dropped_identical = 0
    allocated = final_allocation(targets, mix, {})
    drawn = Drawn(near_applied=near_applied, draw=None)
    if any(b >= 0 for b in cuts.values()):
        candidates = Candidates(plan, near_applied=near_applied, cuts=cuts, early=sentence_passes.early_covers(cuts))
        if not candidates.early:
            by_file = _needed(plan.scratch, cuts)
            needed, two_units = None, plan.units
            if by_file is not None:
                two_units = [u for u in plan.units if u[0] in by_file]
                needed = runner.share(by_file)
                released.append(needed)
            rounds.PASS_TWO.run(runner, PassTwo(candidates, needed), [u[0] for u in two_units])
        wanted = Wanted(candidates, check_counts(per_corpus, hist, options.neutral_ratio, mix, pass_rate))
        lowest: dict = {}
        for limits_out in rounds.NEUTRAL_LIMITS.run(runner, wanted, bucket_ids):
            for corpus, source, values in limits_out["lowest"]:
                lowest.setdefault((corpus, source), []).extend(values)
        check = NeutralCheck(candidates, verdicts=_shared_verdicts(plan.scratch, len(bucket_ids)) if model else None,
                             limits=check_limits(lowest, wanted.wanted))
        del lowest
        for neutral_round in (rounds.NEUTRAL, rounds.NEUTRAL_WHOLE_CUTS):
            neutral = [tuple(r) for out in neutral_round.run(runner, check, bucket_ids) for r in out["tallies"]]
            pos_neutral, neutral_rejected, dropped_identical, avail2, bins = tally_neutral(neutral)
            allocated = final_allocation(targets, mix, avail2)
            if limits_hold(check.pos_limits(), avail2, allocated):
                break
            check = replace(check, whole_cuts=True)  # a strategy ran short under its limit: the round once more
        drawn = Drawn(near_applied=near_applied, check=check,
                      draw=cut_points(bins, {(c, s): n for c, per in allocated.items() for s, n in per.items()}))

    stats = build_stats(status=status, options=options, marked_counts=marked_counts, duplicates=duplicates,
                        kept=kept, pos=pos, pos_neutral=pos_neutral if model else None, targets=targets,
                        available=available, allocated=allocated, neutral_rejected=neutral_rejected,
                        neutral_duplicates=dropped_identical)
    if near_rejected is not None:  # with "off" stats.json stays as it was (same bytes)
        assert plan.near is not None and near_counts is not None  # set with near_rejected
        stats["rejected"]["near_duplicate_pair"] = near_rejected
        stats["near_duplicates"] = {"settings": plan.near.as_dict(), **near_counts}
    return drawn, stats


def write_table(runner, plan: PairsPlan, drawn: Drawn, directory: str) -> list[dict]:
    """The files round: the pairs table's files into `directory` (one task per file), after
    the decisions (`decide`); returns them."""
    directory = fs.canonical(directory)
    written = [f for out in rounds.FILES.run(runner, TableFiles(plan, drawn, directory), range(plan.files))
               for f in out["files"]]
    return finish_table_files(written, directory, lambda: PAIRS)


MAX_NEEDED_DOCUMENTS = 2_000_000
# The neutral round's tasks each read every verdict file of the marked round (filtered to
# their candidates' texts): done while all of them together read at most this much.
VERDICTS_READ_BUDGET = 4 << 30


def _shared_verdicts(work: PairsScratch, tasks: int) -> list[str] | None:
    """The marked round's verdict files for the neutral round's tasks (`buckets.judged`),
    or None (each Python worker then tags what its own cache lacks) when `tasks` reads of
    them would pass VERDICTS_READ_BUDGET: a few MB per GB of input, so shared up to tens
    of GB of input on a few hundred buckets, not for a whole enwiki."""
    folder = work.verdicts()
    files = sorted(fs.list_files(folder)) if fs.exists(folder) else []
    if not files or sum(size for _, size in files) * tasks > VERDICTS_READ_BUDGET:
        return None
    return [path for path, _ in files]




def _needed(work: PairsScratch, cuts: dict, limit: int | None = None) -> dict | None:
    """The documents pass 2 pairs again: those with a neutral candidate under a cut, from
    pass 1's "doc" rows, as {unit key: [doc_id]}; None (pass 2 reads every document) when
    more than `limit` (MAX_NEEDED_DOCUMENTS) documents are needed. A cut that takes every
    candidate of a strategy needs only the documents that have one. The "doc" files are
    read one unit at a time and filtered with
    numpy (`buckets.needed_in`): the driver holds one unit's rows and the needed doc_ids,
    at most `limit` of them, whatever the documents of the corpus."""
    limit = MAX_NEEDED_DOCUMENTS if limit is None else limit
    folder = work.documents()
    by_file: dict = {}
    found = 0
    for path, _ in sorted(fs.list_files(folder) if fs.exists(folder) else []):
        picked = buckets.needed_in(scratch.read_one(path), cuts)
        found += picked.num_rows
        if found > limit:
            return None
        for key, doc_id in zip(picked.column("bin").to_pylist(), picked.column("doc_id").to_pylist()):
            by_file.setdefault(key, []).append(doc_id)
    return by_file


@dataclass(frozen=True)
class PairsSetup:
    """Stage 2's plan and what the driver keeps beside it: the POS filter's stats block."""
    plan: PairsPlan
    status: dict


@dataclass(frozen=True)
class PairsDecided:
    """What rounds 1-4 decided (`Drawn`), the stats block so far, and the values shared with
    the tasks (released after the table)."""
    drawn: Drawn
    stats: dict
    shared: tuple


class PairsStage(Stage[Options, PairsSetup, PairsDecided, list]):
    """Stage 2 on the stage contract (`extractor.engine.stage.Stage`)."""

    spec = SPEC

    def resolved_flags(self, args, lexicon) -> dict:
        return {"neutral_mix": resolve_neutral_mix(args.neutral_mix, lexicon)}

    def check(self, ctx, options: Options) -> None:
        """Flag values, and `--pos-filter on` with a missing model (a one-line error now
        rather than after stage 1)."""
        pos_filter.resolve(options.pos_filter, options.spacy_model or ctx.lexicon.spacy_model, ctx.lexicon)

    def describe(self, ctx, options: Options) -> list[str]:
        _, pos = pos_status(options, ctx.lexicon, warn=ctx.warn)
        words = pos["complete_words"]
        lists = (f"; word lists before the tagger: {words['subject']:,} subject, {words['predicate']:,} predicate words"
                 if words else "")
        return [f"[dry-run] POS filter: {pos['status']} (--pos-filter {pos['mode']}; model {pos['model_requested']}"
                f"{lists})"]

    def plan(self, ctx, runner, options: Options) -> Planned[PairsSetup]:
        table = ctx.table_path(ctx.input_table(SPEC))
        if not fs.exists(table):
            ctx.read_table(ctx.input_table(SPEC))  # its one-line error
        model, status = pos_status(options, ctx.lexicon, ctx.warn)
        plan = make_plan(runner, table, pos_lexicon(options, ctx.lexicon), options, model,
                         work=ctx.table_path(WORK_NAME), files=ctx.files_per_table())
        return Planned(PairsSetup(plan, status), plan_key(plan), plan.scratch)

    def decide(self, ctx, runner, plan: PairsSetup, options: Options) -> PairsDecided:
        shared: list = []
        try:
            decided, stats = decide(runner, plan.plan, options, plan.status, shared)
        except BaseException:  # what the rounds shared is let go of whatever stops them
            release(shared)
            raise
        return PairsDecided(decided, stats, tuple(shared))

    def write(self, ctx, runner, plan: PairsSetup, decided: PairsDecided, directory: str) -> list:
        return write_table(runner, plan.plan, decided.drawn, directory)

    def finish(self, ctx, options: Options, plan: PairsSetup, decided: PairsDecided, written: list) -> dict:
        return {**decided.stats, "label_filters": ctx.lexicon.label_filters.describe()}

    def release(self, decided: PairsDecided) -> None:
        release(decided.shared)


def release(shared) -> None:
    """Destroy the values shared with the tasks (`Runner.share`)."""
    for item in shared:
        try:
            item.destroy()
        except Exception:  # a stopped session: nothing to release
            pass


STAGE = PairsStage()
