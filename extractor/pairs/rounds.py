"""Stage 2's rounds: each a function of (plan, task) run by the runner on every task of the
round (one unit of the sentence files, one bucket of pair rows, or one file of the pairs
table), exchanging pair rows through the scratch files the plan names (`PairsScratch`),
returning only small results. The driver's decisions between them are in `stage.py`."""
from __future__ import annotations

from typing import TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extractor.neardup import distributed
from extractor.engine import scratch
from extractor.engine.rounds import Round
from extractor.core.hashing import stable_hashes
from extractor.pairs import buckets
from extractor.pairs import sentence_passes
from extractor.pairs.matching import matcher_for
from extractor.pairs.plan import EARLY, LATE, MARKED, Candidates, NeutralCheck, PairsPlan, PassTwo, TableFiles, Wanted
from extractor.io.parquet_writer import spark_partition, task_attempt, write_sorted
from extractor.core.schemas import PAIRS

OUTPUT_COLUMNS = tuple(f.name for f in PAIRS)


class PassOneResult(TypedDict):
    counts: list          # pass one's aggregate rows (`buckets.pass_counts`)
    hist: list            # one dense histogram per (corpus, strategy) (`buckets.dense_histograms`)
    documents: int        # its "doc" rows


class MarkedResult(TypedDict):
    tallies: list         # `buckets.marked_tallies`


class NearPairsResult(TypedDict):
    candidates: int
    pairs: int


class NearApplyResult(TypedDict):
    rejected: list        # [corpus, label, phrase, premise_stripped] of each rejected pair


class LimitsResult(TypedDict):
    lowest: list          # `buckets.lowest_selects`


class NeutralResult(TypedDict):
    tallies: list


class FilesResult(TypedDict):
    files: list           # {"path", "rows", "bytes"} of each file written


def _write_pairs(plan: PairsPlan, rows, kind: str, unit: int) -> None:
    """Pair rows cut into buckets of their texts: unit `unit`'s file in each bucket of `kind`."""
    if rows.num_rows:
        for b, part in scratch.split_by(rows, buckets.text_buckets(rows, plan.buckets)).items():
            scratch.write_arrow(part, plan.scratch.pairs(kind, b, unit))


def pass_one(plan: PairsPlan, k: int) -> PassOneResult:
    """Per unit of the sentence files (pass 1): the marked pairs and the early neutral
    candidates to the buckets of their texts, the documents' lowest bins to a scratch file;
    returns pass 1's aggregate rows, its histograms and its number of "doc" rows."""
    unit = plan.units[k]
    table = pa.Table.from_batches(list(sentence_passes.pass_one_streams(
        sentence_passes.file_streams([unit]), matcher_for(plan.lexicon), plan.seed, plan.strategies, model=None,
        lexicon=plan.lexicon, min_chars=plan.min_chars)), schema=sentence_passes.WORK)
    pairs = table.filter(pc.equal(table.column("kind"), "pair"))
    marker = pc.equal(pairs.column("source"), "marker")
    _write_pairs(plan, pairs.filter(marker), MARKED, k)
    _write_pairs(plan, pairs.filter(pc.invert(marker)), EARLY, k)
    docs = table.filter(pc.equal(table.column("kind"), "doc")).select(["corpus", "doc_id", "n", "bin"])
    if docs.num_rows:
        scratch.write_arrow(docs, plan.scratch.documents(k))
    return {"counts": buckets.pass_counts(table), "hist": buckets.pass_histograms(table), "documents": docs.num_rows}


def marked(plan: PairsPlan, b: int) -> MarkedResult:
    """Per bucket: identical marked pairs ranked, POS-checked; the kept ones (the lowest
    pair_id of each text pair, not rejected) to a scratch file; returns the tallies."""
    rows = scratch.read_arrow(plan.scratch.pairs(MARKED, b), sentence_passes.WORK)
    ranked = buckets.pos_checked(buckets.rank_identical(rows), plan.model, plan.lexicon)
    if plan.model:  # the verdicts, for the neutral round's candidates of the same texts
        scratch.write_arrow(buckets.judged(ranked), plan.scratch.verdicts(b))
    kept = ranked.filter(pc.and_(pc.is_null(ranked.column("reject")), pc.equal(ranked.column("bin"), 1)))
    scratch.write_arrow(_with_file(kept, plan.files), plan.scratch.kept(b))
    return {"tallies": buckets.marked_tallies(ranked)}


def near_bands(plan: PairsPlan, b: int) -> dict:
    """Near-duplicate pairs, per bucket of kept marked pairs: their hypotheses (with their
    premises and pair_ids) to `PairsScratch.near_texts`, the hypotheses' band rows to the
    folders of the bands' buckets (ids: bucket << 32 | row)."""
    assert plan.near is not None, "the near-duplicate rounds run only with near-duplicates on"
    kept = scratch.read_one(plan.scratch.kept(b))
    ids = distributed.gids(b, np.arange(kept.num_rows))
    texts = pa.table({"gid": pa.array(ids, pa.int64()), "corpus": kept.column("corpus").cast(pa.string()),
                      "doc_id": kept.column("pair_id").cast(pa.string()),  # the pair's id: the choice's key
                      "text": kept.column("hypothesis").cast(pa.large_string()),
                      "other": kept.column("premise").cast(pa.large_string())}, schema=distributed.TEXT_SCHEMA)
    scratch.write_arrow(texts, plan.scratch.near_texts(b))
    bands = distributed.unit_bands(texts.column("text"), ids, plan.near)
    for k, part in scratch.split_by(bands, distributed.band_buckets(bands.column("key"), plan.buckets)).items():
        scratch.write_arrow(part, plan.scratch.near_bands(k, b))
    return {}


def near_pairs(plan: PairsPlan, k: int) -> NearPairsResult:
    """Near-duplicate pairs, per bucket of band keys: candidates verified on both sides
    (hypotheses and premises at Jaccard >= the threshold); of each such two pairs the one
    with the higher seed hash of its pair_id goes (`rejected.near_duplicate_pair`): its id to
    the rejected folder of its bucket."""
    assert plan.near is not None, "the near-duplicate rounds run only with near-duplicates on"
    bands = scratch.read_arrow(plan.scratch.near_bands(k), distributed.BAND_SCHEMA)
    fetch = distributed.fetch_from(plan.scratch.near_texts, scratch.read_one)
    candidates, verified, _ = distributed.verify_bucket(bands, fetch, plan.near, k, plan.buckets)
    both = verified.filter(verified.column("both"))
    ha = stable_hashes(both.column("doc_id_a"), seed=plan.seed)
    hb = stable_hashes(both.column("doc_id_b"), seed=plan.seed)
    a_goes = (ha > hb) | ((ha == hb) & (np.asarray(both.column("doc_id_a").to_pylist(), dtype=object)
                                        > np.asarray(both.column("doc_id_b").to_pylist(), dtype=object)))
    gone = np.where(a_goes, both.column("gid_a").to_numpy(), both.column("gid_b").to_numpy()).astype(np.int64)
    gone = np.unique(gone) if len(gone) else gone
    table = pa.table({"gid": pa.array(gone, pa.int64())})
    for b, part in scratch.split_by(table, gone >> np.int64(32)).items():
        scratch.write_arrow(part, plan.scratch.near_rejected(b, k))
    return {"candidates": candidates, "pairs": both.num_rows}


def near_apply(plan: PairsPlan, b: int) -> NearApplyResult:
    """Near-duplicate pairs, per bucket of kept marked pairs: the rows that stay to
    `PairsScratch.kept(near=True)`; returns the rejected ones' tallies (corpus, label,
    phrase, premise_stripped)."""
    kept = scratch.read_one(plan.scratch.kept(b))
    gone = scratch.read_arrow(plan.scratch.near_rejected(b), pa.schema([("gid", pa.int64())]))
    rows = np.unique(gone.column("gid").to_numpy() & np.int64(0xFFFF_FFFF)) if gone.num_rows else np.zeros(0, np.int64)
    mask = np.zeros(kept.num_rows, dtype=bool)
    mask[rows] = True
    scratch.write_arrow(kept.filter(pa.array(~mask)), plan.scratch.kept(b, near=True))
    dropped = kept.filter(pa.array(mask))
    tallies = [[c, l, p, bool(s)] for c, l, p, s in zip(*(dropped.column(n).to_pylist() for n in
                                                        ("corpus", "label", "phrase", "premise_stripped")))]
    return {"rejected": tallies}


def pass_two(step: PassTwo, k: int) -> dict:
    """Per unit (only when a cut goes beyond pass 1's early bins): the neutral candidates
    under the cuts to the buckets of their texts (of the documents `step.needed` lists)."""
    by_file = step.needed.value if step.needed is not None else None
    plan = step.candidates.plan
    unit = plan.units[k]
    table = pa.Table.from_batches(list(sentence_passes.pass_two_streams(
        sentence_passes.file_streams([unit], by_file), matcher_for(plan.lexicon), plan.seed, plan.strategies,
        step.candidates.cuts, None, plan.lexicon, plan.min_chars)), schema=sentence_passes.WORK)
    _write_pairs(plan, table.filter(pc.equal(table.column("kind"), "pair")), LATE, k)
    return {}


def _bucket_candidates(candidates: Candidates, b: int) -> pa.Table:
    """A bucket's neutral candidates under the cuts: pass 1's early rows under the cut bins,
    or pass 2's rows."""
    work = candidates.plan.scratch
    if not candidates.early:
        return scratch.read_arrow(work.pairs(LATE, b), sentence_passes.WORK)
    cands = scratch.read_arrow(work.pairs(EARLY, b), sentence_passes.WORK)
    cut = [candidates.cuts.get((c, s), -1) for c, s in zip(cands.column("corpus").to_pylist(),
                                                    cands.column("source").to_pylist())]
    return cands.filter(pc.less_equal(cands.column("bin"), pa.array(cut, pa.int32())))


def neutral_limits(step: Wanted, b: int) -> LimitsResult:
    """Per bucket: the lowest selection hashes of its neutral candidates under the cuts, as
    many per (corpus, strategy) as the neutral round checks in all (`buckets.lowest_selects`)."""
    return {"lowest": buckets.lowest_selects(_bucket_candidates(step.candidates, b), step.wanted)}


def neutral(step: NeutralCheck, b: int) -> NeutralResult:
    """Per bucket: the neutral candidates under the cuts, against the bucket's kept marked
    pairs and each other, those under the limits POS-checked (`NeutralCheck.pos_limits`);
    those that stay to a scratch file; returns their tallies."""
    plan = step.candidates.plan
    cands = _bucket_candidates(step.candidates, b)
    kept = scratch.read_one(plan.scratch.kept(b, near=step.candidates.near_applied)).drop_columns(["_file"])
    known = None
    if step.verdicts and cands.num_rows:  # texts the marked round judged (first_random's premises...)
        texts = [cands.column(c).combine_chunks().cast(pa.large_string()) for c in ("premise", "hypothesis")]
        known = buckets.known_verdicts((scratch.read_one(path) for path in step.verdicts), pa.concat_arrays(texts))
    tallies, pool = buckets.neutral_round(cands, kept, plan.model, plan.lexicon, known, step.pos_limits())
    scratch.write_arrow(_with_file(pool, plan.files), plan.scratch.pool(b))
    return {"tallies": tallies}


def _with_file(rows, files: int):
    """The rows with `_file`: the file of the pairs table each goes to, the hash partition
    of (label, pair_id) that Spark's `repartition` would give it (`parquet_writer.spark_partition`)."""
    part = [spark_partition(key, files) for key in zip(rows.column("label").to_pylist(),
                                                      rows.column("pair_id").to_pylist())]
    return rows.append_column("_file", pa.array(part, pa.int32()))


def table_file(step: TableFiles, p: int) -> FilesResult:
    """Per file of the pairs table: the exact draw (every task finds the same last candidate
    taken from every bucket's cut bins), then this file's kept marked pairs and drawn neutral
    ones, sorted by (label, pair_id), written as `label=<l>/part-<file>.parquet` under
    `step.target`: the files a Spark `repartition` by (label, pair_id) would give, without a
    Spark shuffle."""
    def mine(rows):
        return rows.filter(pc.equal(rows.column("_file"), p)).drop_columns(["_file"])

    work, draw = step.plan.scratch, step.drawn.draw
    kept = scratch.read_arrow(work.kept(near=step.drawn.near_applied), None)
    parts = [mine(kept)]
    if draw is not None:
        pool = scratch.read_arrow(work.pool(), None)
        last = buckets.last_taken(buckets.boundary_rows(pool, draw), draw)
        parts.append(buckets.drawn(mine(pool), draw, last))
    rows = pa.concat_tables(parts).select(list(OUTPUT_COLUMNS)).cast(PAIRS)
    rows = rows.take(pc.sort_indices(rows, sort_keys=[("label", "ascending"), ("pair_id", "ascending")]))
    written = write_sorted(rows.to_batches(), step.target, ["label"], f"part-{p:05d}.parquet", task_attempt())
    return {"files": [{"path": path, "rows": n, "bytes": size} for path, n, size in written]}


PASS_ONE = Round("pass-one", pass_one)
MARKED_ROUND = Round("marked", marked)
NEAR_BANDS = Round("near-bands", near_bands)
NEAR_PAIRS = Round("near-pairs", near_pairs)
NEAR_APPLY = Round("near-apply", near_apply)
PASS_TWO = Round("pass-two", pass_two)
NEUTRAL_LIMITS = Round("neutral-limits", neutral_limits)
NEUTRAL = Round("neutral", neutral)
NEUTRAL_WHOLE_CUTS = Round("neutral-whole-cuts", neutral)
# not recorded: the files are written whole into the table's folder, after the decisions
FILES = Round(None, table_file, spread=True)
