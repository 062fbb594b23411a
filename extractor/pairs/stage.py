"""Stage 2 of the job: `sentences/` -> `pairs/` (the stage contract: extractor/engine/contract.py; the logic is per document in
extractor.pairs.pairing, run over Arrow batches by extractor.pairs.sentence_passes; the global
steps are pure functions over buckets of pair rows in extractor.pairs.buckets and over
aggregates in extractor.pairs.corpus). See docs/pairs.md.

Six rounds of tasks handed to the runner (Spark tasks in the job, one process in the tests
and benchmarks); the pair rows travel between rounds as Arrow scratch files in
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

import tempfile
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extractor import fs
from extractor import neardup as nd
from extractor.engine import scratch
from extractor.engine.runner import InProcessRunner
from extractor.errors import UserError
from extractor.hashing import stable_hashes
from extractor.run.parquet_writer import finish_table_files, spark_partition, task_attempt, write_sorted
from extractor.pairs import sentence_passes as bt
from extractor.pairs import buckets as pb
from extractor.pairs import pos_filter as pf
from extractor.pairs.buckets import cut_points
from extractor.pairs.corpus import (build_stats, check_counts, check_limits, final_allocation, limits_hold, plan_cuts,
                                   tally_marked, tally_neutral)
from extractor.pairs.matching import matcher_for
from extractor.pairs.plan import EARLY, LATE, MARKED, PairsScratch
from extractor.pairs.pairing import MARKED_REASONS  # noqa: F401  (re-exported for callers)
from extractor.schemas import PAIRS
# the flags and options live apart (no numpy there: the job's --help); one name each
from extractor.pairs.options import Options, PairsOptions, add_arguments  # noqa: F401

NAME = STAGE = "pairs"
WORK_NAME = "_tmp-pairs-work"  # scratch files between the rounds, beside the tables
OUTPUT_COLUMNS = tuple(f.name for f in PAIRS)


def pos_status(options: Options, lexicon, warn=None) -> tuple[str | None, dict]:
    """(model to run or None, stats block) for the POS filter."""
    model = options.spacy_model or lexicon.spacy_model
    enabled, status, warning = pf.resolve(options.pos_filter, model, lexicon)
    if warning and warn:
        warn(warning)
    return (model if enabled else None), {"status": status, "mode": options.pos_filter,
                                          "model": model if enabled else None, "model_requested": model}


# --------------------------------------------------------------------------- Spark

def _pos_tasks(slots: int, units: int) -> int:
    """Tasks of a POS step: one per core, and one per 16 units of pass 1 (or fewer) on a
    large table, so that a bucket holds the pairs of at most 16 units whatever the size of
    the input (its rows and its texts' verdicts are a task's memory). Both steps then run
    on every Python worker, each loading spaCy once, at the same time (not one worker in
    the first step and another, loading it again, in the second)."""
    return max(1, slots, -(-units // 16))


def _plan_of(lexicon, options: Options, units: list, model, work: PairsScratch, buckets: int) -> dict:
    return {"lexicon": lexicon, "units": units, "model": model, "work": work, "buckets": buckets,
            "seed": options.seed, "strategies": options.strategies, "min_chars": options.min_chars}


def _write_pairs(plan: dict, rows, kind: str, unit: int) -> None:
    """Pair rows cut into buckets of their texts: unit `unit`'s file in each bucket of `kind`."""
    if rows.num_rows:
        for b, part in scratch.split_by(rows, pb.text_buckets(rows, plan["buckets"])).items():
            scratch.write_arrow(part, plan["work"].pairs(kind, b, unit))


def _pass_one_task(plan: dict):
    """Round 1, per unit of the sentence files (pass 1): the marked pairs and the early
    neutral candidates to the buckets of their texts, the documents' lowest bins to a
    scratch file; returns pass 1's aggregate rows, its histograms (one dense list per
    (corpus, strategy): `buckets.dense_histograms`) and its number of "doc" rows."""
    def fn(k: int) -> dict:

        unit = plan["units"][k]
        table = pa.Table.from_batches(list(bt.pass_one_streams(
            bt.file_streams([unit]), matcher_for(plan["lexicon"]), plan["seed"], plan["strategies"], model=None,
            lexicon=plan["lexicon"], min_chars=plan["min_chars"])), schema=bt.WORK)
        pairs = table.filter(pc.equal(table.column("kind"), "pair"))
        marker = pc.equal(pairs.column("source"), "marker")
        _write_pairs(plan, pairs.filter(marker), MARKED, k)
        _write_pairs(plan, pairs.filter(pc.invert(marker)), EARLY, k)
        docs = table.filter(pc.equal(table.column("kind"), "doc")).select(["corpus", "doc_id", "n", "bin"])
        if docs.num_rows:
            scratch.write_arrow(docs, plan["work"].documents(k))
        return {"counts": pb.pass_counts(table), "hist": pb.pass_histograms(table), "documents": docs.num_rows}
    return fn


def _marked_task(plan: dict):
    """Round 2, per bucket: identical marked pairs ranked, POS-checked; the kept ones (the
    lowest pair_id of each text pair, not rejected) to a scratch file; returns the tallies."""
    def fn(b: int) -> dict:

        rows = scratch.read_arrow(plan["work"].pairs(MARKED, b), bt.WORK)
        ranked = pb.pos_checked(pb.rank_identical(rows), plan["model"], plan["lexicon"])
        if plan["model"]:  # the verdicts, for the neutral round's candidates of the same texts
            scratch.write_arrow(pb.judged(ranked), plan["work"].verdicts(b))
        kept = ranked.filter(pc.and_(pc.is_null(ranked.column("reject")), pc.equal(ranked.column("bin"), 1)))
        scratch.write_arrow(_with_file(kept, plan["files"]), plan["work"].kept(b))
        return {"tallies": pb.marked_tallies(ranked)}
    return fn


def _near_bands_task(plan: dict):
    """Near-duplicate pairs, per bucket of kept marked pairs: their hypotheses (with their
    premises and pair_ids) to `near-texts/bucket-<b>.arrow`, the hypotheses' band rows to the
    folders of the bands' buckets (ids: bucket << 32 | row)."""
    def fn(b: int) -> dict:
        kept = scratch.read_one(plan["work"].kept(b))
        ids = nd.gids(b, np.arange(kept.num_rows))
        texts = pa.table({"gid": pa.array(ids, pa.int64()), "corpus": kept.column("corpus").cast(pa.string()),
                          "doc_id": kept.column("pair_id").cast(pa.string()),  # the pair's id: the choice's key
                          "text": kept.column("hypothesis").cast(pa.large_string()),
                          "other": kept.column("premise").cast(pa.large_string())}, schema=nd.TEXT_SCHEMA)
        scratch.write_arrow(texts, plan["work"].near_texts(b))
        bands = nd.unit_bands(texts.column("text"), ids, plan["near"])
        for k, part in scratch.split_by(bands, nd.band_buckets(bands.column("key"), plan["buckets"])).items():
            scratch.write_arrow(part, plan["work"].near_bands(k, b))
        return {}
    return fn


def _near_pairs_task(plan: dict):
    """Near-duplicate pairs, per bucket of band keys: candidates verified on both sides
    (hypotheses and premises at Jaccard >= the threshold); of each such two pairs the one
    with the higher seed hash of its pair_id goes (`rejected.near_duplicate_pair`): its id to
    `near-rejected-<its bucket>/band-<k>.arrow`."""
    def fn(k: int) -> dict:
        bands = scratch.read_arrow(plan["work"].near_bands(k), nd.BAND_SCHEMA)
        fetch = nd.fetch_from(lambda b: plan["work"].near_texts(b), scratch.read_one)
        candidates, verified, _ = nd.verify_bucket(bands, fetch, plan["near"], k, plan["buckets"])
        both = verified.filter(verified.column("both"))
        ha = stable_hashes(both.column("doc_id_a"), seed=plan["seed"])
        hb = stable_hashes(both.column("doc_id_b"), seed=plan["seed"])
        a_goes = (ha > hb) | ((ha == hb) & (np.asarray(both.column("doc_id_a").to_pylist(), dtype=object)
                                            > np.asarray(both.column("doc_id_b").to_pylist(), dtype=object)))
        gone = np.where(a_goes, both.column("gid_a").to_numpy(), both.column("gid_b").to_numpy()).astype(np.int64)
        gone = np.unique(gone) if len(gone) else gone
        table = pa.table({"gid": pa.array(gone, pa.int64())})
        for b, part in scratch.split_by(table, gone >> np.int64(32)).items():
            scratch.write_arrow(part, plan["work"].near_rejected(b, k))
        return {"candidates": candidates, "pairs": both.num_rows}
    return fn


def _near_apply_task(plan: dict):
    """Near-duplicate pairs, per bucket of kept marked pairs: the rows that stay to
    `kept-near/bucket-<b>.arrow`; returns the rejected ones' tallies (corpus, label,
    phrase, premise_stripped)."""
    def fn(b: int) -> dict:
        kept = scratch.read_one(plan["work"].kept(b))
        gone = scratch.read_arrow(plan["work"].near_rejected(b), pa.schema([("gid", pa.int64())]))
        rows = np.unique(gone.column("gid").to_numpy() & np.int64(0xFFFF_FFFF)) if gone.num_rows else np.zeros(0, np.int64)
        mask = np.zeros(kept.num_rows, dtype=bool)
        mask[rows] = True
        scratch.write_arrow(kept.filter(pa.array(~mask)), plan["work"].kept(b, near=True))
        dropped = kept.filter(pa.array(mask))
        tallies = [[c, l, p, bool(s)] for c, l, p, s in zip(*(dropped.column(n).to_pylist() for n in
                                                            ("corpus", "label", "phrase", "premise_stripped")))]
        return {"rejected": tallies}
    return fn


def _pass_two_task(plan: dict, needed):
    """Round 3 (only when a cut goes beyond pass 1's early bins), per unit: the neutral
    candidates under the cuts to the buckets of their texts."""
    def fn(k: int) -> dict:


        by_file = needed.value if needed is not None else None
        unit = plan["units"][k]
        table = pa.Table.from_batches(list(bt.pass_two_streams(
            bt.file_streams([unit], by_file), matcher_for(plan["lexicon"]), plan["seed"], plan["strategies"],
            plan["cuts"], None, plan["lexicon"], plan["min_chars"])), schema=bt.WORK)
        _write_pairs(plan, table.filter(pc.equal(table.column("kind"), "pair")), LATE, k)
        return {}
    return fn


def _bucket_candidates(plan: dict, b: int) -> pa.Table:
    """A bucket's neutral candidates under the cuts: pass 1's early rows under the cut bins,
    or pass 2's rows."""
    if not plan["early"]:
        return scratch.read_arrow(plan["work"].pairs(LATE, b), bt.WORK)
    cands = scratch.read_arrow(plan["work"].pairs(EARLY, b), bt.WORK)
    cut = [plan["cuts"].get((c, s), -1) for c, s in zip(cands.column("corpus").to_pylist(),
                                                       cands.column("source").to_pylist())]
    return cands.filter(pc.less_equal(cands.column("bin"), pa.array(cut, pa.int32())))


def _limits_task(plan: dict):
    """Round 4a, per bucket: the lowest selection hashes of its neutral candidates under the
    cuts, as many per (corpus, strategy) as the neutral round checks in all
    (`buckets.lowest_selects`)."""
    def fn(b: int) -> dict:

        return {"lowest": pb.lowest_selects(_bucket_candidates(plan, b), plan["wanted"])}
    return fn


def _neutral_task(plan: dict):
    """Round 4b, per bucket: the neutral candidates under the cuts, against the bucket's kept
    marked pairs and each other, those under the limits POS-checked (`plan["limits"]`; None:
    all); those that stay to a scratch file; returns their tallies."""
    def fn(b: int) -> dict:

        cands = _bucket_candidates(plan, b)
        kept = scratch.read_one(plan["work"].kept(b, near=plan.get("kept") == "kept-near")).drop_columns(["_file"])
        known = None
        if plan.get("verdicts") and cands.num_rows:  # texts the marked round judged (first_random's premises...)
            texts = [cands.column(c).combine_chunks().cast(pa.large_string()) for c in ("premise", "hypothesis")]
            known = pb.known_verdicts((scratch.read_one(path) for path in plan["verdicts"]), pa.concat_arrays(texts))
        tallies, pool = pb.neutral_round(cands, kept, plan["model"], plan["lexicon"], known, plan["limits"])
        scratch.write_arrow(_with_file(pool, plan["files"]), plan["work"].pool(b))
        return {"tallies": tallies}
    return fn


def _with_file(rows, files: int):
    """The rows with `_file`: the file of the pairs table each goes to, the hash partition
    of (label, pair_id) that Spark's `repartition` would give it (`parquet_writer.spark_partition`)."""
    part = [spark_partition(key, files) for key in zip(rows.column("label").to_pylist(),
                                                          rows.column("pair_id").to_pylist())]
    return rows.append_column("_file", pa.array(part, pa.int32()))


def _files_task(plan: dict):
    """Round 5, per file of the pairs table: the exact draw (every task finds the same last
    candidate taken from every bucket's cut bins), then this file's kept marked pairs and
    drawn neutral ones, sorted by (label, pair_id), written as `label=<l>/part-<file>.parquet`:
    the files a Spark `repartition` by (label, pair_id) would give, without a Spark shuffle."""
    def fn(p: int) -> dict:

        def mine(rows):
            return rows.filter(pc.equal(rows.column("_file"), p)).drop_columns(["_file"])

        kept = scratch.read_arrow(plan["work"].kept(near=plan.get("kept") == "kept-near"), None)
        parts = [mine(kept)]
        if plan["draw"] is not None:
            pool = scratch.read_arrow(plan["work"].pool(), None)
            last = pb.last_taken(pb.boundary_rows(pool, plan["draw"]), plan["draw"])
            parts.append(pb.drawn(mine(pool), plan["draw"], last))
        rows = pa.concat_tables(parts).select(list(OUTPUT_COLUMNS)).cast(PAIRS)
        rows = rows.take(pc.sort_indices(rows, sort_keys=[("label", "ascending"), ("pair_id", "ascending")]))
        written = write_sorted(rows.to_batches(), plan["target"], ["label"], f"part-{p:05d}.parquet",
                               task_attempt())
        return {"files": [{"path": path, "rows": n, "bytes": size} for path, n, size in written]}
    return fn


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
    hist = pb.sum_histograms([*histograms, pb.dense_histograms(old)] if old else histograms)
    rows = [(kind, corpus, label, None, None, reject, b, edge, a, None)
            for kind, corpus, label, reject, b, edge, a in counts if kind != "hist"]
    rows += [("tally", corpus, label, phrase, ps, reject, n, "true" if dup else "false", a, c)
             for corpus, label, phrase, ps, reject, n, dup, a, c in tallies]
    marked_counts = Counter()
    groups, edges = [], Counter()
    for kind, corpus, label, phrase, ps, reject, b, edge_doc, a, c in sorted(rows, key=repr):
        if kind == "marked":
            marked_counts[corpus, label, reject] += a
        elif kind == "edge":
            edges[corpus, edge_doc] += a
        elif kind == "tally":
            groups.append((corpus, label, phrase, ps, reject, b, edge_doc == "true", a, c))
    return marked_counts, hist, groups, edges


def build_pairs(runner, table: str, lexicon, options: Options, warn=None, work: str | None = None,
                files: int = 4):
    """`sentences/` table (a path, as stage 1 wrote it: a document's sentences contiguous in
    one file) -> (write, stats dict, cleanup callable): ``write(directory)`` writes the pairs
    table's `files` files there (a Spark `repartition` by (label, pair_id): partitioned by label,
    sorted by pair_id) and returns them. Call the cleanup after writing: it deletes the
    scratch folder `work` (default: beside `table`). `runner` runs the rounds' tasks
    (extractor.stage: Spark tasks in the job, `InProcessRunner` in one process)."""
    model, status = pos_status(options, lexicon, warn)
    slots = max(1, runner.slots)
    units = bt.file_units(bt.sentence_files(table), 2 * slots)
    work = PairsScratch(work or fs.join(fs.parent(fs.canonical(table)), WORK_NAME))
    buckets = list(range(_pos_tasks(slots, len(units))))
    if not runner.plan({"units": units, "buckets": len(buckets), "files": files, "model": model}) \
            and work.exists():
        work.delete()  # what an earlier attempt of this stage left
    plan = _plan_of(lexicon, options, units, model, work, len(buckets))
    plan["near"] = options.near
    plan["files"] = files
    released: list = []

    def cleanup():
        runner.forget()  # the records first: they speak of the scratch files
        for item in released:
            try:
                item.destroy()
            except Exception:  # a stopped session: nothing to release
                pass
        work.delete()

    try:
        # 1. pass 1; 2. identical marked pairs together (rank in `bin`), the POS filter ------
        one = runner.map(_pass_one_task(plan), list(range(len(units))), name="pass-one")
        counts = [tuple(r) for out in one for r in out["counts"]]
        histograms = [out.get("hist", []) for out in one]
        del one
        tallies = [tuple(r) for out in runner.map(_marked_task(plan), buckets, name="marked")
                   for r in out["tallies"]]
        marked_counts, hist, groups, edges = reduce_pass_one(counts, tallies, histograms)
        split = next((key for key, n in sorted(edges.items(), key=repr) if n > 1), None)
        if split:
            raise bt.DocumentOrderError(bt.split_document_error(*split))
        duplicates, kept, pos, per_corpus = tally_marked(groups, marked_counts, model)
        near_rejected = None
        if options.near is not None:
            # near-duplicate pairs among the kept marked pairs (docs/neardup.md)
            runner.map(_near_bands_task(plan), buckets, name="near-bands")
            found = runner.map(_near_pairs_task(plan), buckets, name="near-pairs")
            near_rejected = 0
            for out in runner.map(_near_apply_task(plan), buckets, name="near-apply"):
                for corpus, label, phrase, stripped in out["rejected"]:
                    kept[corpus, label, phrase, stripped] -= 1
                    per_corpus[corpus][label] -= 1
                    near_rejected += 1
            kept = Counter({k: v for k, v in kept.items() if v})
            plan["kept"] = "kept-near"
            plan["near_counts"] = {"candidates": sum(f["candidates"] for f in found),
                                   "verified_pairs": sum(f["pairs"] for f in found)}
        checked = sum(pos.values())
        pass_rate = pos.get(None, 0) / checked if model and checked else None
        targets, available, cuts = plan_cuts(per_corpus, hist, options.neutral_ratio, options.neutral_mix, pass_rate)

        # 3. pass 2 (when pass 1's early bins do not hold every candidate under the cuts); 4.
        # neutral candidates against the marked pairs and each other, the POS filter; 5.-6.
        # the exact draw, the rows ---------------------------------------------------------
        neutral_rejected, pos_neutral, dropped_identical = Counter(), Counter(), 0
        allocated = final_allocation(targets, options.neutral_mix, {})
        plan["cuts"], plan["draw"] = cuts, None
        if any(b >= 0 for b in cuts.values()):
            plan["early"] = bt.early_covers(cuts)
            if not plan["early"]:
                by_file = _needed(work, cuts)
                needed, two_units = None, units
                if by_file is not None:
                    two_units = [u for u in units if u[0] in by_file]
                    needed = runner.share(by_file)
                    released.append(needed)
                runner.map(_pass_two_task(plan, needed), [u[0] for u in two_units], name="pass-two")
            plan["verdicts"] = _shared_verdicts(work, len(buckets)) if model else None
            plan["wanted"] = check_counts(per_corpus, hist, options.neutral_ratio, options.neutral_mix, pass_rate)
            lowest: dict = {}
            for out in runner.map(_limits_task(plan), buckets, name="neutral-limits"):
                for corpus, source, values in out["lowest"]:
                    lowest.setdefault((corpus, source), []).extend(values)
            plan["limits"] = check_limits(lowest, plan["wanted"])
            del lowest
            for name in ("neutral", "neutral-whole-cuts"):
                neutral = [tuple(r) for out in runner.map(_neutral_task(plan), buckets, name=name)
                           for r in out["tallies"]]
                pos_neutral, neutral_rejected, dropped_identical, avail2, bins = tally_neutral(neutral)
                allocated = final_allocation(targets, options.neutral_mix, avail2)
                if limits_hold(plan["limits"], avail2, allocated):
                    break
                plan["limits"] = None  # a strategy ran short under its limit: every candidate under the cuts
            plan["draw"] = cut_points(bins, {(c, s): n for c, per in allocated.items() for s, n in per.items()})
    except UserError:  # the user's failure discards the run; any other (Ctrl-C, a dead JVM) keeps it for --resume
        cleanup()
        raise

    def write(directory: str) -> list[dict]:
        """Round 5: the pairs table's files into `directory` (one task per file; not
        recorded: `directory` is written whole, after the decisions)."""
        directory = fs.canonical(directory)
        written = [f for out in runner.map(_files_task(dict(plan, target=directory)), list(range(files)),
                                           spread=True) for f in out["files"]]
        return finish_table_files(written, directory, lambda: PAIRS)

    stats = build_stats(status=status, options=options, marked_counts=marked_counts, duplicates=duplicates,
                        kept=kept, pos=pos, pos_neutral=pos_neutral if model else None, targets=targets,
                        available=available, allocated=allocated, neutral_rejected=neutral_rejected,
                        neutral_duplicates=dropped_identical)
    if near_rejected is not None:  # with "off" stats.json stays as it was (same bytes)
        stats["rejected"]["near_duplicate_pair"] = near_rejected
        stats["near_duplicates"] = {"settings": options.near.as_dict(), **plan["near_counts"]}
    return write, stats, cleanup


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
        picked = pb.needed_in(scratch.read_one(path), cuts)
        found += picked.num_rows
        if found > limit:
            return None
        for key, doc_id in zip(picked.column("bin").to_pylist(), picked.column("doc_id").to_pylist()):
            by_file.setdefault(key, []).append(doc_id)
    return by_file


def check(ctx) -> None:
    """Before any stage runs: flag values, and `--pos-filter on` with a missing model
    (a one-line error now rather than after stage 1)."""
    options = ctx.stage_options(NAME, Options)
    pf.resolve(options.pos_filter, options.spacy_model or ctx.lexicon.spacy_model, ctx.lexicon)


def run(ctx, runner) -> None:
    options = ctx.stage_options(NAME, Options)
    table = ctx.table_path("sentences")
    if not fs.exists(table):
        ctx.read_table("sentences")  # its one-line error
    write, stats, cleanup = build_pairs(runner, table, ctx.lexicon, options, warn=ctx.warn,
                                        work=ctx.table_path(WORK_NAME), files=ctx.files_per_table())
    try:
        ctx.write_table_with("pairs", write)
    except UserError:  # as above: any other failure keeps the finished rounds for --resume
        cleanup()
        raise
    cleanup()
    stats["label_filters"] = ctx.lexicon.label_filters.describe()
    ctx.stats[STAGE] = stats


def pairs_in_one_process(table: str, out_dir: str, lexicon, options: Options, files: int = 4) -> tuple[list[dict], dict]:
    """Stage 2 in one plain Python process (no Spark): the same rounds with each round's
    tasks run one after another here (`InProcessRunner`), over the same sentence files, with
    scratch files in a temporary folder and the same writer. For the engine-overhead
    benchmark (benchmarks/pairs_throughput.py): Spark's CPU against the CPU of exactly the
    same functions. The tests compare the stage with `corpus.reference_pairs`, an
    independent implementation over Python rows, instead. Returns (the files written, the
    stage's `stats.json` block)."""
    with tempfile.TemporaryDirectory() as work:
        write, stats, cleanup = build_pairs(InProcessRunner(), table, lexicon, options,
                                            work=f"{work}/scratch", files=files)
        try:
            written = write(out_dir)
        finally:
            cleanup()
    return written, stats
