"""Stage 3's rounds: each a function of (plan, task) run by the runner on every task of the
round (a work unit of the pairs table, a bucket of slim rows or keys, a range of units, an
output file), exchanging rows through the scratch files the plan names (`SplitsScratch`),
returning only small aggregates; and the driver steps over the same files (a corpus's
assignment, its blocks). The driver's decisions between rounds are in `stage.py`."""
from __future__ import annotations

from typing import Any, Sequence, TypedDict

import pyarrow as pa
import pyarrow.compute as pc

from extractor.io import fs
from extractor.neardup import distributed
from extractor import statistics
from extractor.engine import scratch
from extractor.engine.rounds import Round
from extractor.io import parquet_writer
from extractor.splits import assign
from extractor.splits import card
from extractor.splits import decisions
from extractor.splits import pair_tables
from extractor.splits.plan import Assigned, Cuts, Labelled, Output, Quotas, Short, SplitsPlan


class SummariesResult(TypedDict):
    counts: list        # [label, reject reason, n]
    corpora: list       # the corpora of the unit's data rows


class NearDuplicatesResult(TypedDict):
    candidates: int
    hypotheses: int
    pairs: int


class NearGroupsResult(TypedDict):
    documents_joined: int
    groups: int
    hypotheses_across_corpora: int


class NearLeakageResult(TypedDict):
    hypotheses_in_two_splits: int
    pairs_in_two_splits: int


class NoResult(TypedDict):
    """A round whose tasks only write scratch files."""


class AssignResult(TypedDict):
    documents: list     # [split, n]
    short: list         # the (split, label) cells left short of their share


class RankResult(TypedDict):
    counts: list        # [why, *decisions.GROUP, n]
    histogram: list


class BoundaryResult(TypedDict):
    rows: list


class QuotaRowsResult(TypedDict):
    rows: int
    corpora: list
    markers: list
    sources: list
    examples: list
    lengths: list


class KeysResult(TypedDict):
    leakage: list
    documents: list


class OutputFileResult(TypedDict, total=False):
    """Round 6's result: one of its kinds of task."""
    chart: list | None
    leakage: list
    documents: list
    near_leakage: NearLeakageResult
    aggregates: list
    pmi: dict[str, Any]
    path: str
    rows: int
    bytes: int


def summaries(plan: SplitsPlan, u: int) -> SummariesResult:
    """Round 1, per work unit: its slim rows (`pair_tables.summaries`), those that are data cut
    into buckets of sentence-pair keys, and its documents' weights per corpus; returns
    the rows per (label, reject reason) and the corpora."""
    source = pair_tables.read_unit(plan.units[u], plan.schema)
    table = pair_tables.summaries(source, plan.seed, plan.test_only, unit=u)
    counts = decisions.tally(table, ["label", "_reject"])
    rows = table.filter(pc.is_null(table.column("_reject")))
    if plan.near:
        near_unit(plan, u, source, rows)
    for b, part in scratch.split_by(rows, decisions.key_buckets(rows.column("_skey"), plan.buckets)).items():
        scratch.write_arrow(part, plan.scratch.summaries(b, u))
    weights = decisions.document_weights(rows)
    corpora = sorted(pc.unique(weights.column("corpus")).to_pylist())
    for corpus in corpora:
        part = weights.filter(pc.equal(weights.column("corpus"), corpus))
        scratch.write_arrow(part, plan.scratch.weights(corpus, u))
    return {"counts": counts, "corpora": corpora}


def near_unit(plan: SplitsPlan, u: int, source: pa.Table, rows: pa.Table) -> None:
    """Near-duplicates, per unit (docs/neardup.md): the unit's data rows' premises, corpus
    and document, with their hypotheses' shingles and band keys (not the hypotheses: the
    near-duplicates round verifies with the shingles), to `near-texts/unit-<u>.arrow`;
    their band rows to the folders of the bands' buckets."""
    at = rows.column("_row")
    ids = distributed.gids(u, at.to_numpy())
    bands, shingles, keys = distributed.unit_bands_with(source.column("hypothesis").take(at), ids, plan.near)
    texts = pa.table({"gid": pa.array(ids, pa.int64()), "corpus": rows.column("corpus"),
                      "doc_id": rows.column("doc_id"), "text": pa.nulls(len(ids), pa.large_string()),
                      "other": source.column("premise").take(at).cast(pa.large_string())},
                     schema=distributed.TEXT_SCHEMA)
    # the texts' shingles and band keys beside them: the near-duplicates round verifies
    # with these instead of cutting and hashing every candidate's text again
    texts = (texts.append_column("shingles", distributed.shingles_column(shingles))
             .append_column("bands", distributed.keys_column(keys)))
    scratch.write_arrow(texts, near_text_path(plan, u))
    scratch.write_arrow(pa.table({"gid": pa.array(ids, pa.int64()), "para": rows.column("_hpara")}),
                        plan.scratch.near_paras(u))  # for blocks
    for b, part in scratch.split_by(bands, distributed.band_buckets(bands.column("key"), plan.buckets)).items():
        scratch.write_arrow(part, plan.scratch.near_bands(b, u))


def near_text_path(plan: SplitsPlan, u: int) -> str:
    return plan.scratch.near_texts(u)


NEAR_EDGES = pa.schema([("corpus_a", pa.string()), ("doc_id_a", pa.string()), ("corpus_b", pa.string()),
                         ("doc_id_b", pa.string()), ("both", pa.bool_()), ("gid_a", pa.int64()),
                         ("gid_b", pa.int64())])


def near_duplicates(plan: SplitsPlan, b: int) -> NearDuplicatesResult:
    """Near-duplicates, per bucket of band keys: the candidates of its keys verified with the
    exact Jaccard of their hypotheses (texts fetched from the units' files); the verified
    pairs' corpora and documents to `near-edges/bucket-<b>.arrow`. Returns the counts."""
    bands = scratch.read_arrow(plan.scratch.near_bands(b), distributed.BAND_SCHEMA)
    fetch = distributed.fetch_from(lambda unit: near_text_path(plan, unit), scratch.read_one)
    candidates, verified, _ = distributed.verify_bucket(bands, fetch, plan.near, b, plan.buckets)
    edges = verified.select(list(NEAR_EDGES.names)).cast(NEAR_EDGES)
    scratch.write_arrow(edges, plan.scratch.near_edges(b))
    return {"candidates": candidates, "hypotheses": verified.num_rows,
            "pairs": int(pc.sum(verified.column("both")).as_py() or 0) if verified.num_rows else 0}


def near_groups(plan: SplitsPlan, _: int) -> NearGroupsResult:
    """Near-duplicates, one task (run by the driver where the verified pairs are at most
    NEAR_GROUPS_IN_DRIVER): the documents joined by the verified pairs (connected
    components over document ids within each corpus) to `near-groups/<corpus>.arrow`."""
    edges = scratch.read_arrow(plan.scratch.near_edges(), NEAR_EDGES)
    groups = groups_of(edges)
    for corpus in sorted(set(groups.column("corpus").to_pylist())):
        part = groups.filter(pc.equal(groups.column("corpus"), corpus))
        scratch.write_arrow(part, plan.scratch.near_groups(corpus))
    across = pc.sum(pc.not_equal(edges.column("corpus_a"), edges.column("corpus_b"))).as_py() if edges.num_rows else 0
    return {"documents_joined": groups.num_rows,
            "groups": len(set(zip(groups.column("corpus").to_pylist(), groups.column("group").to_pylist()))),
            "hypotheses_across_corpora": int(across or 0)}


def near_leakage(assigned_by: Assigned) -> NearLeakageResult:
    """Verified near-duplicate hypotheses and pairs (premise and hypothesis) whose documents
    went to two splits, over the pairs before the balance cut (the splits hold a subset)."""
    plan = assigned_by.plan
    edges = edge_units(plan, assigned_by.block_corpora, scratch.read_arrow(plan.scratch.near_edges(), NEAR_EDGES))
    assigned = scratch.read_arrow(plan.scratch.assigned(), decisions.ASSIGNED_SCHEMA)
    if not edges.num_rows or not assigned.num_rows:
        return {"hypotheses_in_two_splits": 0, "pairs_in_two_splits": 0}
    keys = decisions.doc_keys(assigned.column("corpus"), assigned.column("doc_id"))
    split = {}
    for side in "ab":
        where = pc.index_in(decisions.doc_keys(edges.column(f"corpus_{side}"), edges.column(f"doc_id_{side}")),
                            value_set=keys)
        split[side] = pc.fill_null(pc.take(assigned.column("split"), where), "")
    across = pc.and_(pc.not_equal(split["a"], split["b"]),
                     pc.and_(pc.not_equal(split["a"], ""), pc.not_equal(split["b"], "")))
    return {"hypotheses_in_two_splits": int(pc.sum(across).as_py() or 0),
            "pairs_in_two_splits": int(pc.sum(pc.and_(across, edges.column("both"))).as_py() or 0)}


def block_table(plan: SplitsPlan, block_corpora: Sequence[str]) -> pa.Table:
    """The blocks of the corpora assigned by blocks (empty when none is)."""
    if not block_corpora:
        return decisions.BLOCKS_SCHEMA.empty_table()
    return scratch.read_arrow(plan.scratch.blocks(), decisions.BLOCKS_SCHEMA)


def edge_units(plan: SplitsPlan, block_corpora: Sequence[str], edges: pa.Table) -> pa.Table:
    """Near-duplicate edges with the documents of `block_corpora` (assigned by blocks)
    replaced by the blocks of the two hypotheses (their paragraphs from `near-paras/`)."""
    blocks = block_table(plan, block_corpora)
    if not blocks.num_rows or not edges.num_rows:
        return edges
    paras = scratch.read_arrow(plan.scratch.near_paras(), None)
    for side in "ab":
        para = pc.take(paras.column("para"), pc.index_in(edges.column(f"gid_{side}"), value_set=paras.column("gid")))
        ids = decisions.block_ids(edges.column(f"corpus_{side}"), edges.column(f"doc_id_{side}"), para, blocks)
        edges = edges.set_column(edges.schema.get_field_index(f"doc_id_{side}"), f"doc_id_{side}", ids)
    return edges


def paragraphs(step: Short, b: int) -> NoResult:
    """Blocks, per bucket of slim rows: the pairs per paragraph (`decisions.paragraph_weights`)
    of the corpora short of a label (`step.short`), one file per corpus."""
    plan, corpora = step.plan, list(step.short)
    rows = scratch.read_arrow(plan.scratch.summaries(b), pair_tables.SUMMARY_SCHEMA)
    rows = rows.filter(pc.is_in(rows.column("corpus"), value_set=pa.array(corpora, pa.string())))
    weights = decisions.paragraph_weights(rows)
    for corpus in corpora:
        part = weights.filter(pc.equal(weights.column("corpus"), corpus))
        scratch.write_arrow(part, plan.scratch.paragraphs(corpus, b))
    return {}


def assign_blocks(labelled: Labelled, corpus: str, short: list) -> dict | None:
    """A corpus whose documents leave a split short of a label (`short`), assigned by blocks
    (docs/splits.md "Blocks"): its blocks' split to `assigned/`, their bounds to `blocks/`.
    None (documents stay the unit) when no document is cut or blocks leave as many cells short."""
    plan, labels = labelled.plan, labelled.labels
    paragraphs = scratch.read_arrow(plan.scratch.paragraphs(corpus), decisions.PARAGRAPHS_SCHEMA)
    size = assign.block_size(int(pc.sum(paragraphs.column("w")).as_py() or 0), plan.ratios)
    blocks = decisions.cut_blocks(paragraphs, size)
    if blocks.num_rows == len(set(blocks.column("doc_id").to_pylist())):
        return None  # no document was cut (no paragraphs in the refs, or small documents)
    weights = decisions.block_weights(paragraphs, blocks)
    if plan.near:
        edges = edge_units(plan, (corpus,), block_edges(plan, corpus, blocks))
        groups = groups_of(edges)
        assigned = assign_groups(weights, groups, labelled) if groups.num_rows else \
            decisions.assign_corpus(weights, labels, plan.ratios, plan.seed)
    else:
        assigned = decisions.assign_corpus(weights, labels, plan.ratios, plan.seed)
    left = decisions.short_cells(weights, assigned, labels, plan.ratios)
    if len(left) >= len(short):
        return None
    scratch.write_arrow(blocks, plan.scratch.blocks(corpus))
    scratch.write_arrow(assigned, plan.scratch.assigned(corpus))
    return {"documents": decisions.tally(assigned, ["split"]), "short": left,
            "unit": {"unit": "block", "pairs_per_block": size, "blocks": blocks.num_rows,
                     "documents": len(set(blocks.column("doc_id").to_pylist()))}}


def block_edges(plan: SplitsPlan, corpus: str, blocks: pa.Table) -> pa.Table:
    """The near-duplicate edges of `corpus` with `blocks` written for `edge_units`."""
    scratch.write_arrow(blocks, plan.scratch.blocks(corpus))
    edges = scratch.read_arrow(plan.scratch.near_edges(), NEAR_EDGES)
    return edges.filter(pc.and_(pc.equal(edges.column("corpus_a"), corpus), pc.equal(edges.column("corpus_b"), corpus)))


def groups_of(edges: pa.Table) -> pa.Table:
    """Connected components of the documents (or blocks) that near-duplicate edges join
    within a corpus (`neardup.document_groups`)."""
    same = pc.and_(pc.equal(edges.column("corpus_a"), edges.column("corpus_b")),
                   pc.not_equal(edges.column("doc_id_a"), edges.column("doc_id_b")))
    linked = edges.filter(same)
    return distributed.document_groups(pa.table({"corpus": linked.column("corpus_a"),
                                                 "doc_a": linked.column("doc_id_a"),
                                                 "doc_b": linked.column("doc_id_b")}, schema=distributed.EDGE_SCHEMA))


def assign_documents(labelled: Labelled, corpus: str) -> AssignResult:
    """Round 2, per corpus: every document to its split; returns documents per split. Run
    by the driver, not as a Spark job: the rows are few (one per document and label), and a
    Spark job's fixed serial cost would exceed the work."""
    plan, labels = labelled.plan, labelled.labels
    weights = scratch.read_arrow(plan.scratch.weights(corpus), decisions.WEIGHTS_SCHEMA)
    weights = weights.filter(pc.equal(weights.column("corpus"), corpus))
    groups = plan.scratch.near_groups(corpus)
    if plan.near and fs.exists(groups):
        assigned = assign_groups(weights, scratch.read_one(groups), labelled)
    else:
        assigned = decisions.assign_corpus(weights, labels, plan.ratios, plan.seed)
    scratch.write_arrow(assigned, plan.scratch.assigned(corpus))
    test_only = weights.num_rows and pc.any(weights.column("test_only")).as_py()
    short = [] if test_only else decisions.short_cells(weights, assigned, labels, plan.ratios)
    return {"documents": decisions.tally(assigned, ["split"]), "short": short}


def assign_groups(weights: pa.Table, groups: pa.Table, labelled: Labelled) -> pa.Table:
    """`decisions.assign_corpus` with the documents joined by near-duplicates assigned as one
    (under their group's id), then every other document of a group given the group's split."""
    at = pc.index_in(weights.column("doc_id"), value_set=groups.column("doc_id"))
    merged = weights.set_column(weights.schema.get_field_index("doc_id"), "doc_id",
                                pc.coalesce(pc.take(groups.column("group"), at), weights.column("doc_id")))
    plan = labelled.plan
    assigned = decisions.assign_corpus(merged, labelled.labels, plan.ratios, plan.seed)
    members = groups.filter(pc.not_equal(groups.column("doc_id"), groups.column("group")))
    where = pc.index_in(members.column("group"), value_set=assigned.column("doc_id"))
    members, where = members.filter(pc.is_valid(where)), where.filter(pc.is_valid(where))
    extra = pa.table({"corpus": members.column("corpus"), "doc_id": members.column("doc_id"),
                      "split": pc.take(assigned.column("split"), where)}, schema=decisions.ASSIGNED_SCHEMA)
    return pa.concat_tables([assigned, extra])


def rank(assigned_by: Assigned, b: int) -> RankResult:
    """Round 3, per bucket of sentence-pair keys: the drops of `decisions.rank_identical`;
    the rows kept so far, with their split, written to the folder of their unit range;
    their histograms."""
    plan, block_corpora = assigned_by.plan, assigned_by.block_corpora
    rows = scratch.read_arrow(plan.scratch.summaries(b), pair_tables.SUMMARY_SCHEMA)
    assigned = scratch.read_arrow(plan.scratch.assigned(), decisions.ASSIGNED_SCHEMA)
    rows = decisions.with_blocks(rows, block_table(plan, block_corpora), plan.private_premises)
    ranked = decisions.rank_identical(rows, assigned, frozenset(block_corpora))
    kept = ranked.filter(pc.is_null(ranked.column("_why"))).drop_columns(["_why"])
    where = pa.array(assigned_by.range_of, pa.int64()).take(kept.column("_unit")).to_numpy()
    for r, part in scratch.split_by(kept, where).items():
        scratch.write_arrow(part, plan.scratch.ranked(r, b))
    return {"counts": decisions.tally(ranked, ["_why", *decisions.GROUP]), "histogram": decisions.histogram(kept)}


def boundary(step: Cuts, b: int) -> BoundaryResult:
    """Round 4 (only when a quota ends inside a bin), per bucket: that bin's rows."""
    parts = [step.assigned.plan.scratch.ranked(r, b) for r in range(step.assigned.n_ranges)]
    tables = [scratch.read_one(p) for p in parts if fs.exists(p)]
    return {"rows": [row for t in tables for row in decisions.boundary_rows(t, step.cuts)]}


def quota_rows(quotas: Quotas, r: int) -> QuotaRowsResult:
    """Round 5, per unit range: the range's rows within their quota (`decisions.within_quota`
    over its rows from every bucket); their document, hypothesis, pair and sentence-pair
    keys to the folders of the keys' buckets; their texts to the Arrow files of their
    output files and their card statistics (`pair_tables.unit_statistics`) to a scratch file
    per split. Returns the figures."""
    plan = quotas.assigned.plan
    folder = plan.scratch.ranked(r)
    if not fs.exists(folder):
        return {"rows": 0, "corpora": [], "markers": [], "sources": [], "examples": [], "lengths": []}
    kept = decisions.within_quota(scratch.read_arrow(folder, None), quotas.cuts, quotas.last)
    keys = decisions.other_keys(kept)
    for k, part in scratch.split_by(keys, decisions.other_key_buckets(keys, plan.buckets)).items():
        scratch.write_arrow(part, plan.scratch.keys(k, r))
    n, examples, lengths = 0, [], []
    for u, part in scratch.split_by(kept, kept.column("_unit").to_numpy()).items():
        table = pair_tables.kept_rows(pair_tables.read_unit(plan.units[u], plan.schema), part.column("_row").to_numpy(),
                                      part.column("_split"))
        pair_tables.shuffle_files(table, plan.scratch.rows(), u, quotas.n_files)
        stats = pair_tables.unit_statistics(table)
        # the card's example pairs and length histograms, from the rows and figures at hand
        examples += pair_tables.pick_examples(table, part.column("_row").to_numpy(), part.column("_h").to_numpy())
        lengths += pair_tables.length_histograms(stats)
        for split in sorted(pc.unique(stats.column("split")).to_pylist()):  # (a set of 370k str: 0.6 s)
            scratch.write_arrow(stats.filter(pc.equal(stats.column("split"), split)),
                                plan.scratch.statistics(split, u))
        n += table.num_rows
    return {"rows": n, "corpora": decisions.tally(kept, ["_split", "corpus"]),
            "markers": decisions.tally(kept.filter(pc.is_valid(kept.column("marker"))), ["label", "marker"]),
            "sources": decisions.tally(kept.filter(pc.is_valid(kept.column("source"))), ["_split", "source"]),
            "examples": card.merge_examples(examples), "lengths": card.merge_histograms(lengths)}


def keys_result(plan: SplitsPlan, k: int) -> KeysResult:
    """A keys bucket (of every range): the leakage counts of its four kinds of keys and the
    documents per corpus."""
    keys = scratch.read_arrow(plan.scratch.keys(k), decisions.KEYS_SCHEMA)
    out = []
    for kind in decisions.LEAKAGE_KINDS:
        part = keys.filter(pc.equal(keys.column("kind"), kind))
        out += decisions.leakage_counts(kind, part.column("key"), part.column("split"))
    return {"leakage": out, "documents": decisions.documents_per_corpus(keys)}


def output_file(output: Output, task) -> OutputFileResult:
    """Round 6: an output file merged from its Arrow files (sorted by `pair_id`) and written
    as Parquet; or a split's card aggregates (`pair_tables.split_aggregates`) and top PMI words
    (`pair_tables.split_pmi`); or a keys bucket's leakage (`keys_result`); or the
    near-duplicates in two splits (`near_leakage`); or the chart of the
    class distribution (pairs per split and label, known from the quotas) drawn into the
    output folder, where the executors have matplotlib (a cluster's packed environment
    leaves it out: then the driver draws it after the round, the same file)."""
    kind, split, bucket = task
    quotas = output.decided.quotas
    plan = quotas.assigned.plan
    target = output.target  # the chart and the output files go there
    if kind == "chart":  # drawn here, beside the files, not after them in the driver
        try:
            import matplotlib  # noqa: F401
        except ImportError:  # a cluster's packed environment leaves it out: the driver draws
            return {"chart": None}
        return {"chart": [card.write_chart(quotas.chart, target), *card.write_charts(output.decided.charts, target)]}
    if kind == "keys":
        keys = keys_result(plan, bucket)
        return {"leakage": keys["leakage"], "documents": keys["documents"]}
    if kind == "near-leakage":
        return {"near_leakage": near_leakage(quotas.assigned)}
    if kind == "statistics":
        stats = scratch.read_arrow(plan.scratch.statistics(split), pair_tables.STATS_SCHEMA)
        rows = stats.filter(pc.equal(stats.column("kind"), "row"))
        aggregates = pair_tables.split_aggregates(rows.select(["split", "label", *statistics.ROW_COLUMNS]))
        totals = {r["label"]: int(r["count"]) for r in aggregates if not r["label_all"] and r["label"] is not None}
        return {"aggregates": aggregates, "pmi": {split: pair_tables.split_pmi(stats, totals)}}
    table = pair_tables.merge_bucket(plan.scratch.rows(split, bucket), plan.schema)
    written = parquet_writer.write_sorted(table.to_batches(), fs.join(target, split), [],
                                          f"part-{bucket:05d}.parquet", parquet_writer.task_attempt())
    if not written:
        return {}
    path, rows_written, size = written[0]
    return {"path": path, "rows": rows_written, "bytes": size}


# ---------------------------------------------------------------------------- stage


SUMMARIES = Round("summaries", summaries, reuse_memory=True)
NEAR_DUPLICATES = Round("near-duplicates", near_duplicates, reuse_memory=True)
NEAR_GROUPS = Round("near-groups", near_groups, reuse_memory=True)
PARAGRAPHS = Round("paragraphs", paragraphs, reuse_memory=True)
RANK = Round("rank", rank, reuse_memory=True)
BOUNDARY = Round("boundary", boundary, reuse_memory=True)
QUOTA_ROWS = Round("rows", quota_rows, reuse_memory=True)
# not recorded: round 6 writes the output folder, which a resumed run writes again whole
OUTPUT = Round(None, output_file, reuse_memory=True)
