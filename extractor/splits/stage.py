"""Stage 3: `pairs/` -> `splits/{train,validation,test}` + dataset card, stats, leakage (the
stage contract: extractor/engine/contract.py).

Rounds of tasks handed to the runner around pure functions: `extractor.splits.pair_tables` (per work unit of the
pairs table), `extractor.splits.decisions` (the global decisions, per bucket of slim rows),
`extractor.splits.assign` (assignment, quotas) and `extractor.statistics` (every number of
the card). The runner (Spark in the job) runs the rounds' tasks (docs/splits.md); between rounds
the tasks exchange scratch files (Arrow) under `_tmp-splits-work/`, cut into buckets by a
hash of the key they are grouped by, and only small aggregates reach the driver, which
turns them into the next round's decisions. No text crosses a shuffle, and there is no
Spark SQL shuffle at all.

The `splits/` folder is written through the run (`ctx.write_table_with`), published with the
other tables at the end, so a failed run never leaves a half-built dataset.
"""
from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from extractor import fs
from extractor import neardup as nd
from extractor.run import parquet_writer as _out
from extractor.engine import scratch
from extractor.engine.runner import InProcessRunner
from extractor.errors import UserError
from extractor import statistics as st
from extractor.splits import assign as sp
from extractor.splits import pair_tables as bt
from extractor.splits import card as card_mod
from extractor.splits import decisions as dc
from extractor.splits.plan import SplitsScratch
from extractor.names import LABELS, NEUTRAL
from extractor.pairs.matching import matcher_for
from extractor.statistics import precision
# the flags and options live apart (no numpy there: the job's --help); one name each
from extractor.splits.options import Options, add_arguments  # noqa: F401

NAME = STAGE = "splits"
PAIRS_PER_PARTITION = 100_000
WORK_NAME = "_tmp-splits-work"
# the most verified near-duplicate hypotheses whose documents the driver joins itself (a
# few MB of edges); above it one task does
NEAR_GROUPS_IN_DRIVER = 100_000
CHART_COST = 140_000  # drawing the chart (importing matplotlib) costs about what the statistics of 140,000 pairs do


def check(ctx) -> None:
    """Before any stage runs (jobs/extract.py): the split settings, so that a bad
    --balance fails in a second, not after stages 1 and 2."""
    ctx.stage_options(NAME, Options)


# ---------------------------------------------------------------------------- tasks

def _summaries_task(plan: dict):
    """Round 1, per work unit: its slim rows (`pair_tables.summaries`), those that are data cut
    into buckets of sentence-pair keys, and its documents' weights per corpus; returns
    the rows per (label, reject reason) and the corpora."""
    def fn(u: int) -> dict:
        source = bt.read_unit(plan["units"][u], plan["schema"])
        table = bt.summaries(source, plan["seed"], plan["test_only"], unit=u)
        counts = dc.tally(table, ["label", "_reject"])
        rows = table.filter(pc.is_null(table.column("_reject")))
        if plan.get("near"):
            _near_unit(plan, u, source, rows)
        for b, part in scratch.split_by(rows, dc.key_buckets(rows.column("_skey"), plan["buckets"])).items():
            scratch.write_arrow(part, plan["work"].summaries(b, u))
        weights = dc.document_weights(rows)
        corpora = sorted(pc.unique(weights.column("corpus")).to_pylist())
        for corpus in corpora:
            part = weights.filter(pc.equal(weights.column("corpus"), corpus))
            scratch.write_arrow(part, plan["work"].weights(corpus, u))
        return {"counts": counts, "corpora": corpora}
    return fn


def _near_unit(plan: dict, u: int, source: pa.Table, rows: pa.Table) -> None:
    """Near-duplicates, per unit (docs/neardup.md): the unit's data rows' premises, corpus
    and document, with their hypotheses' shingles and band keys (not the hypotheses: the
    near-duplicates round verifies with the shingles), to `near-texts/unit-<u>.arrow`;
    their band rows to the folders of the bands' buckets."""
    at = rows.column("_row")
    ids = nd.gids(u, at.to_numpy())
    bands, shingles, keys = nd.unit_bands_with(source.column("hypothesis").take(at), ids, plan["near"])
    texts = pa.table({"gid": pa.array(ids, pa.int64()), "corpus": rows.column("corpus"), "doc_id": rows.column("doc_id"),
                      "text": pa.nulls(len(ids), pa.large_string()),
                      "other": source.column("premise").take(at).cast(pa.large_string())}, schema=nd.TEXT_SCHEMA)
    # the texts' shingles and band keys beside them: the near-duplicates round verifies
    # with these instead of cutting and hashing every candidate's text again
    texts = texts.append_column("shingles", nd.shingles_column(shingles)).append_column("bands", nd.keys_column(keys))
    scratch.write_arrow(texts, _near_text_path(plan, u))
    scratch.write_arrow(pa.table({"gid": pa.array(ids, pa.int64()), "para": rows.column("_hpara")}),
                        plan["work"].near_paras(u))  # for blocks
    for b, part in scratch.split_by(bands, nd.band_buckets(bands.column("key"), plan["buckets"])).items():
        scratch.write_arrow(part, plan["work"].near_bands(b, u))


def _near_text_path(plan: dict, u: int) -> str:
    return plan["work"].near_texts(u)


_NEAR_EDGES = pa.schema([("corpus_a", pa.string()), ("doc_id_a", pa.string()), ("corpus_b", pa.string()),
                         ("doc_id_b", pa.string()), ("both", pa.bool_()), ("gid_a", pa.int64()),
                         ("gid_b", pa.int64())])


def _near_task(plan: dict):
    """Near-duplicates, per bucket of band keys: the candidates of its keys verified with the
    exact Jaccard of their hypotheses (texts fetched from the units' files); the verified
    pairs' corpora and documents to `near-edges/bucket-<b>.arrow`. Returns the counts."""
    def fn(b: int) -> dict:
        bands = scratch.read_arrow(plan["work"].near_bands(b), nd.BAND_SCHEMA)
        fetch = nd.fetch_from(lambda unit: _near_text_path(plan, unit), scratch.read_one)
        candidates, verified, _ = nd.verify_bucket(bands, fetch, plan["near"], b, plan["buckets"])
        edges = verified.select(list(_NEAR_EDGES.names)).cast(_NEAR_EDGES)
        scratch.write_arrow(edges, plan["work"].near_edges(b))
        return {"candidates": candidates, "hypotheses": verified.num_rows,
                "pairs": int(pc.sum(verified.column("both")).as_py() or 0) if verified.num_rows else 0}
    return fn


def _near_groups_task(plan: dict):
    """Near-duplicates, one task (run by the driver where the verified pairs are at most
    NEAR_GROUPS_IN_DRIVER): the documents joined by the verified pairs (connected
    components over document ids within each corpus) to `near-groups/<corpus>.arrow`."""
    def fn(_: int) -> dict:
        edges = scratch.read_arrow(plan["work"].near_edges(), _NEAR_EDGES)
        groups = _groups_of(edges)
        for corpus in sorted(set(groups.column("corpus").to_pylist())):
            part = groups.filter(pc.equal(groups.column("corpus"), corpus))
            scratch.write_arrow(part, plan["work"].near_groups(corpus))
        across = pc.sum(pc.not_equal(edges.column("corpus_a"), edges.column("corpus_b"))).as_py() if edges.num_rows else 0
        return {"documents_joined": groups.num_rows,
                "groups": len(set(zip(groups.column("corpus").to_pylist(), groups.column("group").to_pylist()))),
                "hypotheses_across_corpora": int(across or 0)}
    return fn


def _near_leakage(plan: dict) -> dict:
    """Verified near-duplicate hypotheses and pairs (premise and hypothesis) whose documents
    went to two splits, over the pairs before the balance cut (the splits hold a subset)."""
    edges = _edge_units(plan, scratch.read_arrow(plan["work"].near_edges(), _NEAR_EDGES))
    assigned = scratch.read_arrow(plan["work"].assigned(), dc.ASSIGNED_SCHEMA)
    if not edges.num_rows or not assigned.num_rows:
        return {"hypotheses_in_two_splits": 0, "pairs_in_two_splits": 0}
    keys = dc._doc_keys(assigned.column("corpus"), assigned.column("doc_id"))
    split = {}
    for side in "ab":
        where = pc.index_in(dc._doc_keys(edges.column(f"corpus_{side}"), edges.column(f"doc_id_{side}")), value_set=keys)
        split[side] = pc.fill_null(pc.take(assigned.column("split"), where), "")
    across = pc.and_(pc.not_equal(split["a"], split["b"]),
                     pc.and_(pc.not_equal(split["a"], ""), pc.not_equal(split["b"], "")))
    return {"hypotheses_in_two_splits": int(pc.sum(across).as_py() or 0),
            "pairs_in_two_splits": int(pc.sum(pc.and_(across, edges.column("both"))).as_py() or 0)}


def _blocks(plan: dict) -> pa.Table:
    """The blocks of the corpora assigned by blocks (empty when none is)."""
    if not plan.get("block_corpora"):
        return dc.BLOCKS_SCHEMA.empty_table()
    return scratch.read_arrow(plan["work"].blocks(), dc.BLOCKS_SCHEMA)


def _edge_units(plan: dict, edges: pa.Table) -> pa.Table:
    """Near-duplicate edges with the documents of corpora assigned by blocks replaced by the
    blocks of the two hypotheses (their paragraphs from `near-paras/`)."""
    blocks = _blocks(plan)
    if not blocks.num_rows or not edges.num_rows:
        return edges
    paras = scratch.read_arrow(plan["work"].near_paras(), None)
    for side in "ab":
        para = pc.take(paras.column("para"), pc.index_in(edges.column(f"gid_{side}"), value_set=paras.column("gid")))
        ids = dc.block_ids(edges.column(f"corpus_{side}"), edges.column(f"doc_id_{side}"), para, blocks)
        edges = edges.set_column(edges.schema.get_field_index(f"doc_id_{side}"), f"doc_id_{side}", ids)
    return edges


def _paragraphs_task(plan: dict, corpora: list):
    """Blocks, per bucket of slim rows: the pairs per paragraph (`decisions.paragraph_weights`)
    of `corpora`, one file per corpus."""
    def fn(b: int) -> dict:
        rows = scratch.read_arrow(plan["work"].summaries(b), bt.SUMMARY_SCHEMA)
        rows = rows.filter(pc.is_in(rows.column("corpus"), value_set=pa.array(corpora, pa.string())))
        weights = dc.paragraph_weights(rows)
        for corpus in corpora:
            part = weights.filter(pc.equal(weights.column("corpus"), corpus))
            scratch.write_arrow(part, plan["work"].paragraphs(corpus, b))
        return {}
    return fn


def _assign_blocks(plan: dict, corpus: str, short: list) -> dict | None:
    """A corpus whose documents leave a split short of a label (`short`), assigned by blocks
    (docs/splits.md "Blocks"): its blocks' split to `assigned/`, their bounds to `blocks/`.
    None (documents stay the unit) when no document is cut or blocks leave as many cells short."""
    paragraphs = scratch.read_arrow(plan["work"].paragraphs(corpus), dc.PARAGRAPHS_SCHEMA)
    size = sp.block_size(int(pc.sum(paragraphs.column("w")).as_py() or 0), plan["ratios"])
    blocks = dc.cut_blocks(paragraphs, size)
    if blocks.num_rows == len(set(blocks.column("doc_id").to_pylist())):
        return None  # no document was cut (no paragraphs in the refs, or small documents)
    weights = dc.block_weights(paragraphs, blocks)
    if plan.get("near"):
        edges = _edge_units({**plan, "block_corpora": [corpus]}, _block_edges(plan, corpus, blocks))
        groups = _groups_of(edges)
        assigned = _assign_groups(weights, groups, plan) if groups.num_rows else \
            dc.assign_corpus(weights, plan["labels"], plan["ratios"], plan["seed"])
    else:
        assigned = dc.assign_corpus(weights, plan["labels"], plan["ratios"], plan["seed"])
    left = dc.short_cells(weights, assigned, plan["labels"], plan["ratios"])
    if len(left) >= len(short):
        return None
    scratch.write_arrow(blocks, plan["work"].blocks(corpus))
    scratch.write_arrow(assigned, plan["work"].assigned(corpus))
    return {"documents": dc.tally(assigned, ["split"]), "short": left,
            "unit": {"unit": "block", "pairs_per_block": size, "blocks": blocks.num_rows,
                     "documents": len(set(blocks.column("doc_id").to_pylist()))}}


def _block_edges(plan: dict, corpus: str, blocks: pa.Table) -> pa.Table:
    """The near-duplicate edges of `corpus` with `blocks` written for `_edge_units`."""
    scratch.write_arrow(blocks, plan["work"].blocks(corpus))
    edges = scratch.read_arrow(plan["work"].near_edges(), _NEAR_EDGES)
    return edges.filter(pc.and_(pc.equal(edges.column("corpus_a"), corpus), pc.equal(edges.column("corpus_b"), corpus)))


def _groups_of(edges: pa.Table) -> pa.Table:
    """Connected components of the documents (or blocks) that near-duplicate edges join
    within a corpus (`neardup.document_groups`)."""
    same = pc.and_(pc.equal(edges.column("corpus_a"), edges.column("corpus_b")),
                   pc.not_equal(edges.column("doc_id_a"), edges.column("doc_id_b")))
    linked = edges.filter(same)
    return nd.document_groups(pa.table({"corpus": linked.column("corpus_a"), "doc_a": linked.column("doc_id_a"),
                                        "doc_b": linked.column("doc_id_b")}, schema=nd.EDGE_SCHEMA))


def _assign_task(plan: dict):
    """Round 2, per corpus: every document to its split; returns documents per split. Run
    by the driver, not as a Spark job: the rows are few (one per document and label) and
    a job costs about 0.1 CPU-s and 0.15 s on a local master, all of it serial."""
    def fn(corpus: str) -> dict:
        weights = scratch.read_arrow(plan["work"].weights(corpus), dc.WEIGHTS_SCHEMA)
        weights = weights.filter(pc.equal(weights.column("corpus"), corpus))
        groups = plan["work"].near_groups(corpus)
        if plan.get("near") and fs.exists(groups):
            assigned = _assign_groups(weights, scratch.read_one(groups), plan)
        else:
            assigned = dc.assign_corpus(weights, plan["labels"], plan["ratios"], plan["seed"])
        scratch.write_arrow(assigned, plan["work"].assigned(corpus))
        test_only = weights.num_rows and pc.any(weights.column("test_only")).as_py()
        short = [] if test_only else dc.short_cells(weights, assigned, plan["labels"], plan["ratios"])
        return {"documents": dc.tally(assigned, ["split"]), "short": short}
    return fn


def _assign_groups(weights: pa.Table, groups: pa.Table, plan: dict) -> pa.Table:
    """`decisions.assign_corpus` with the documents joined by near-duplicates assigned as one
    (under their group's id), then every other document of a group given the group's split."""
    at = pc.index_in(weights.column("doc_id"), value_set=groups.column("doc_id"))
    merged = weights.set_column(weights.schema.get_field_index("doc_id"), "doc_id",
                                pc.coalesce(pc.take(groups.column("group"), at), weights.column("doc_id")))
    assigned = dc.assign_corpus(merged, plan["labels"], plan["ratios"], plan["seed"])
    members = groups.filter(pc.not_equal(groups.column("doc_id"), groups.column("group")))
    where = pc.index_in(members.column("group"), value_set=assigned.column("doc_id"))
    members, where = members.filter(pc.is_valid(where)), where.filter(pc.is_valid(where))
    extra = pa.table({"corpus": members.column("corpus"), "doc_id": members.column("doc_id"),
                      "split": pc.take(assigned.column("split"), where)}, schema=dc.ASSIGNED_SCHEMA)
    return pa.concat_tables([assigned, extra])


def _rank_task(plan: dict):
    """Round 3, per bucket of sentence-pair keys: the drops of `decisions.rank_identical`;
    the rows kept so far, with their split, written to the folder of their unit range;
    their histograms."""
    def fn(b: int) -> dict:
        rows = scratch.read_arrow(plan["work"].summaries(b), bt.SUMMARY_SCHEMA)
        assigned = scratch.read_arrow(plan["work"].assigned(), dc.ASSIGNED_SCHEMA)
        rows = dc.with_blocks(rows, _blocks(plan))
        ranked = dc.rank_identical(rows, assigned, frozenset(plan.get("block_corpora", ())))
        kept = ranked.filter(pc.is_null(ranked.column("_why"))).drop_columns(["_why"])
        where = pa.array(plan["range_of"], pa.int64()).take(kept.column("_unit")).to_numpy()
        for r, part in scratch.split_by(kept, where).items():
            scratch.write_arrow(part, plan["work"].ranked(r, b))
        return {"counts": dc.tally(ranked, ["_why", *dc.GROUP]), "histogram": dc.histogram(kept)}
    return fn


def _boundary_task(plan: dict):
    """Round 4 (only when a quota ends inside a bin), per bucket: that bin's rows."""
    def fn(b: int) -> dict:
        parts = [plan["work"].ranked(r, b)
                 for r in range(plan["n_ranges"])]
        tables = [scratch.read_one(p) for p in parts if fs.exists(p)]
        return {"rows": [row for t in tables for row in dc.boundary_rows(t, plan["cuts"])]}
    return fn


def _rows_task(plan: dict):
    """Round 5, per unit range: the range's rows within their quota (`decisions.within_quota`
    over its rows from every bucket); their document, hypothesis, pair and sentence-pair
    keys to the folders of the keys' buckets; their texts to the Arrow files of their
    output files and their card statistics (`pair_tables.unit_statistics`) to a scratch file
    per split. Returns the figures."""
    def fn(r: int) -> dict:
        folder = plan["work"].ranked(r)
        if not fs.exists(folder):
            return {"rows": 0, "corpora": [], "markers": [], "sources": [], "examples": [], "lengths": []}
        kept = dc.within_quota(scratch.read_arrow(folder, None), plan["cuts"], plan["last"])
        keys = dc.other_keys(kept)
        for k, part in scratch.split_by(keys, dc.other_key_buckets(keys, plan["buckets"])).items():
            scratch.write_arrow(part, plan["work"].keys(k, r))
        n, examples, lengths = 0, [], []
        for u, part in scratch.split_by(kept, kept.column("_unit").to_numpy()).items():
            table = bt.kept_rows(bt.read_unit(plan["units"][u], plan["schema"]), part.column("_row").to_numpy(),
                                 part.column("_split"))
            bt.shuffle_files(table, plan["work"].rows(), u, plan["n_files"])
            stats = bt.unit_statistics(table)
            # the card's example pairs and length histograms, from the rows and figures at hand
            examples += bt.pick_examples(table, part.column("_row").to_numpy(), part.column("_h").to_numpy())
            lengths += bt.length_histograms(stats)
            for split in sorted(pc.unique(stats.column("split")).to_pylist()):  # (a set of 370k str: 0.6 s)
                scratch.write_arrow(stats.filter(pc.equal(stats.column("split"), split)),
                                    plan["work"].statistics(split, u))
            n += table.num_rows
        return {"rows": n, "corpora": dc.tally(kept, ["_split", "corpus"]),
                "markers": dc.tally(kept.filter(pc.is_valid(kept.column("marker"))), ["label", "marker"]),
                "sources": dc.tally(kept.filter(pc.is_valid(kept.column("source"))), ["_split", "source"]),
                "examples": card_mod.merge_examples(examples), "lengths": card_mod.merge_histograms(lengths)}
    return fn


def _keys_result(plan: dict, k: int) -> dict:
    """A keys bucket (of every range): the leakage counts of its four kinds of keys and the
    documents per corpus."""
    keys = scratch.read_arrow(plan["work"].keys(k), dc.KEYS_SCHEMA)
    out = []
    for kind in dc.LEAKAGE_KINDS:
        part = keys.filter(pc.equal(keys.column("kind"), kind))
        out += dc.leakage_counts(kind, part.column("key"), part.column("split"))
    return {"leakage": out, "documents": dc.documents_per_corpus(keys)}


def _files_task(plan: dict):
    """Round 6: an output file merged from its Arrow files (sorted by `pair_id`) and written
    as Parquet; or a split's card aggregates (`pair_tables.split_aggregates`) and top PMI words
    (`pair_tables.split_pmi`); or a keys bucket's leakage (`_keys_result`); or the
    near-duplicates in two splits (`_near_leakage`); or the chart of the
    class distribution (pairs per split and label, known from the quotas) drawn into the
    output folder, where the executors have matplotlib (a cluster's packed environment
    leaves it out: then the driver draws it after the round, the same file)."""
    def fn(task) -> dict:
        kind, split, bucket = task
        if kind == "chart":  # drawn here, beside the files, not after them in the driver
            try:
                import matplotlib  # noqa: F401
            except ImportError:  # a cluster's packed environment leaves it out: the driver draws
                return {"chart": None}
            return {"chart": [card_mod.write_chart(plan["chart"], plan["target"]),
                              *card_mod.write_charts(plan["charts"], plan["target"])]}
        if kind == "keys":
            return _keys_result(plan, bucket)
        if kind == "near-leakage":
            return {"near_leakage": _near_leakage(plan)}
        if kind == "statistics":
            stats = scratch.read_arrow(plan["work"].statistics(split), bt.STATS_SCHEMA)
            rows = stats.filter(pc.equal(stats.column("kind"), "row"))
            aggregates = bt.split_aggregates(rows.select(["split", "label", *st.ROW_COLUMNS]))
            totals = {r["label"]: int(r["count"]) for r in aggregates if not r["label_all"] and r["label"] is not None}
            return {"aggregates": aggregates, "pmi": {split: bt.split_pmi(stats, totals)}}
        table = bt.merge_bucket(plan["work"].rows(split, bucket), plan["schema"])
        written = _out.write_sorted(table.to_batches(), fs.join(plan["target"], split), [],
                                    f"part-{bucket:05d}.parquet", _out.task_attempt())
        return dict(zip(("path", "rows", "bytes"), written[0])) if written else {}
    return fn


# ---------------------------------------------------------------------------- stage

def _test_only_corpora(ctx) -> set[str]:
    return {c.name for c in (ctx.corpora or []) if getattr(c, "role", "train") == "test-only"}


def run(ctx, runner) -> None:
    """Stage entry point: six rounds, five of them rounds of tasks handed to `runner`
    (docs/splits.md). The slim rows are cut into about one bucket per 100,000 pairs (never
    more than the runner's `max_buckets`, Spark's `spark.sql.shuffle.partitions`, never
    fewer than the cores); results do not depend on it."""
    path = ctx.table_path("pairs")
    if not fs.exists(path):
        ctx.read_table("pairs")  # the job's one-line "no such table" error
    schema, units = bt.list_units(path)
    n = sum(u["rows"] for u in units)
    wanted = max(runner.slots, n // PAIRS_PER_PARTITION + 1)
    _run(ctx, runner, schema, units, n, max(1, min(runner.max_buckets or wanted, wanted)))


def rounds(runner, plan: dict, balance, max_eval: int | None, files_per_table: int) -> dict:
    """Rounds 1-6 of the stage (docs/splits.md) with `runner` running a round's tasks (with
    each task's estimated cost: the Spark runner packs them into one Spark task per core)
    and returning their results; `plan` holds the units, schema, seed, ratios, test-only corpora,
    bucket count, scratch folder (`work`) and output folder (`target`). Returns what the
    card and stats need (drops, documents, counts, quotas, sizes, figures, leakage, blocks,
    files written)."""
    drops: dict = {}
    slots = runner.slots
    columns = plan["schema"].names
    # the rounds' tasks are short, each bounded by a unit or a bucket: the tasks of one
    # engine task reuse the memory the one before freed (docs/scale.md: handing it back
    # after each task cost 0.5 of about 7 CPU-s on 100,000 pairs, the pages faulted in again)
    run_round = functools.partial(runner.map, reuse_memory=True)
    # 1-2. slim rows per unit; rows the pairs stage kept only for inspection (rejected by a
    #      filter) are not data: counted, then left out. Documents -> splits per corpus.
    found = run_round(_summaries_task(plan), list(range(len(plan["units"]))), costs=[u["rows"] for u in plan["units"]],
                      name="summaries")
    labels_seen = set()
    for r in found:
        for label, why, count in r["counts"]:
            if why is None:
                labels_seen.add(label)
            else:
                drops[why] = drops.get(why, 0) + count
    plan["labels"] = sorted(labels_seen)
    corpora = sorted({c for r in found for c in r["corpora"]})
    near = None
    if plan.get("near") and found:
        # near-duplicates: candidates per bucket of band keys, verified; documents joined
        near = {"candidates": 0, "hypotheses": 0, "pairs": 0}
        for r in run_round(_near_task(plan), list(range(plan["buckets"])), costs=[1.0] * plan["buckets"],
                           name="near-duplicates"):
            for k in near:
                near[k] += r[k]
        # the components over few verified pairs are cheaper here than a Spark job (about
        # 0.03 CPU-s and 0.03 s of serial wall time); over many, one task holds them
        groups = _near_groups_task(plan)
        near.update(groups(0) if near["hypotheses"] <= NEAR_GROUPS_IN_DRIVER
                    else run_round(groups, [0], name="near-groups")[0])
    assign = _assign_task(plan)
    per_corpus = {corpus: assign(corpus) for corpus in corpora}
    units = {corpus: {"unit": "document"} for corpus in corpora}
    # documents too large or too few for every split to get its share of every label:
    # contiguous blocks of paragraphs instead, where they do better (docs/splits.md "Blocks")
    short = [c for c in corpora if per_corpus[c]["short"]]
    plan["block_corpora"] = []
    if short:
        run_round(_paragraphs_task(plan, short), list(range(plan["buckets"])), costs=[1.0] * plan["buckets"],
                  name="paragraphs")
        for corpus in short:
            blocked = _assign_blocks(plan, corpus, per_corpus[corpus]["short"])
            if blocked is None:
                fs.delete(plan["work"].blocks(corpus))
            else:
                per_corpus[corpus], units[corpus] = blocked, blocked["unit"]
                plan["block_corpora"].append(corpus)
    documents: dict = {}
    for r in per_corpus.values():
        for split, count in r["documents"]:
            documents[split] = documents.get(split, 0) + count

    # 3. pairs spanning two splits and all copies of a sentence pair but one; the counts per
    #    (split, corpus, label) the quotas come from, and their histograms. The rows left are
    #    written per range of units, the way round 5 reads them.
    buckets = list(range(plan["buckets"]))
    plan["n_ranges"] = n_ranges = max(1, min(len(plan["units"]), 2 * slots))
    plan["range_of"] = _unit_ranges(plan["units"], n_ranges)
    even = [1.0] * len(buckets)
    ranked = run_round(_rank_task(plan), buckets, costs=even, name="rank") if found else []
    counts, dropped = dc.ranked_counts(ranked)
    drops.update({"pair_spans_documents_of_two_splits": 0,
                  **({"pair_spans_blocks_of_two_splits": 0} if plan["block_corpora"] else {}), **dropped})  # (round 1's drops: other reasons)

    # 4. balance: quotas per (split, corpus, label) from the counts; each takes the pairs with
    #    the lowest hashes, found through the histograms (and the rows of the bins where a
    #    quota ends part-way).
    labels = sorted({k[2] for k in counts})
    quotas = sp.compute_quotas(counts, balance, labels, max_eval)
    drops["balance"] = sp.quota_drops(counts, quotas)
    plan["cuts"] = dc.cut_points([h for r in ranked for h in r["histogram"]], quotas)
    partial = any(need for _, need in plan["cuts"].values())
    edges = [row for r in run_round(_boundary_task(plan), buckets, costs=even, name="boundary")
             for row in r["rows"]] if partial else []
    plan["last"] = dc.thresholds(edges, plan["cuts"])
    sizes = {s: 0 for s in sp.SPLITS}
    for (split, corpus, label), quota in quotas.items():
        sizes[split] += min(quota, counts.get((split, corpus, label), 0))
    plan["n_files"] = {s: bt.files_per_split(sizes[s], files_per_table) for s in sp.SPLITS}
    plan["chart"] = {s: {} for s in sp.SPLITS}
    for (split, corpus, label), quota in sorted(quotas.items()):
        if min(quota, counts.get((split, corpus, label), 0)):
            plan["chart"][split][label] = plan["chart"][split].get(label, 0) + min(quota, counts[(split, corpus, label)])

    # 5. per range of units: the kept rows, their figures, keys, texts and statistics.
    rows_of = [sum(u["rows"] for u, r in zip(plan["units"], plan["range_of"]) if r == i) for i in range(n_ranges)]
    kept = run_round(_rows_task(plan), list(range(n_ranges)), costs=rows_of, name="rows") \
        if any(sizes.values()) else []
    plan["charts"] = card_mod.chart_data(kept, plan.get("earlier_stats"), sum(u["rows"] for u in plan["units"]),
                                         drops, sizes)
    # 6. the output files; the card's aggregates and PMI words per split; the leakage of
    #    every kind of key and the documents per corpus; the near-duplicates across splits
    #    (one task here, not a Spark job of its own: about 0.1 CPU-s less); the chart.
    files = [("file", s, b) for s in sp.SPLITS if sizes[s] for b in range(plan["n_files"][s])]
    stats_tasks = [("statistics", s, 0) for s in sp.SPLITS if sizes[s]]
    keys_tasks = [("keys", "", k) for k in buckets] if kept else []
    near_tasks = [("near-leakage", "", 0)] if near is not None else []
    # (not recorded: round 6 writes the output folder, which a resumed run writes again whole)
    last = run_round(_files_task(plan), stats_tasks + files + keys_tasks + near_tasks + [("chart", "", 0)],
                     costs=[float(sizes[s]) for _, s, _ in stats_tasks]
                     + [0.5 * sizes[s] / plan["n_files"][s] for _, s, _ in files]
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
    leakage, duplicates = dc.leakage_report([row for r in last for row in r.get("leakage", [])])
    aggregates = [a for r in last for a in r.get("aggregates", [])]
    pmi = {split: top for r in last for split, top in r.get("pmi", {}).items()}
    kept_sizes = {s: sum(v["pairs"] for k, v in corpora_stats.items() if k.split("|", 1)[0] == s) for s in sp.SPLITS}
    if kept_sizes != sizes:
        raise RuntimeError(f"splits: kept rows {kept_sizes} differ from the quotas {sizes} (a bug; please report it)")
    return {"drops": drops, "documents": documents, "labels": labels, "counts": counts, "quotas": quotas,
            "sizes": sizes, "corpora": dict(sorted(corpora_stats.items())), "markers": markers, "sources": sources,
            "leakage": leakage, "blocks": bt.card_statistics(aggregates, pmi, duplicates),
            "written": [r for r in last if "path" in r], "chart": any(r.get("chart") for r in last),
            "near": near, "units": units, "charts": plan["charts"],
            "examples": card_mod.merge_examples([e for r in kept for e in r.get("examples", [])])}


def label_precision(lexicon, markers: dict, sources: dict) -> dict:
    """The splits' estimated label precision (extractor/statistics/precision.py): the pairs of
    each label by phrase (the lexicon's spelling of the markers as written) and, for neutral,
    by strategy, weighed with the lexicon's `measured_precision`."""
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
    return {"gold_set": measured.get("gold_set"), "about": measured.get("about"),
            "labels": precision.estimate(counts, measured)}


def _unit_ranges(units: list, n: int) -> list[int]:
    """Range number of each unit: `n` contiguous ranges of about equal rows (a unit goes to
    the range its middle row falls in)."""
    total = sum(u["rows"] for u in units) or 1
    out, seen = [], 0
    for u in units:
        out.append(min(n - 1, (2 * seen + u["rows"]) * n // (2 * total)))
        seen += u["rows"]
    return out


def _run(ctx, runner, schema, units: list, n_input: int, buckets: int) -> None:
    options = ctx.stage_options(NAME, Options)
    ratios, balance, max_eval, seed = options.ratios, options.balance_mode, options.max_eval, options.seed
    stats: dict = {"settings": {"split_ratios": list(ratios), "balance": str(balance),
                                "max_eval_per_corpus": max_eval, "seed": seed}}
    if options.near is not None:  # with "off" stats.json stays as it was (same bytes)
        stats["settings"]["near_duplicates"] = options.near.as_dict()
    stats["input_pairs"] = n_input
    work = SplitsScratch(ctx.table_path(WORK_NAME))
    if not runner.plan({"units": units, "buckets": buckets, "slots": runner.slots,
                        "settings": stats["settings"], "files": options.files_per_table}):
        work.delete()
    plan = {"units": units, "schema": schema, "seed": seed, "work": work, "buckets": buckets,
            "test_only": frozenset(_test_only_corpora(ctx)), "ratios": ratios, "near": options.near,
            "earlier_stats": card_mod.earlier_stats(ctx.stats)}

    def write(target: str) -> None:
        """Rounds 1-6 (round 6 writes the split files into `target`), then the card."""
        plan["target"] = target
        found = rounds(runner, plan, balance, max_eval, options.files_per_table)
        drops, sizes, blocks, leakage = found["drops"], found["sizes"], found["blocks"], found["leakage"]
        stats["documents"] = found["documents"]
        _warn_missing(ctx, found["labels"], found["counts"], found["quotas"], balance)
        stats["unit"] = found["units"]
        lacking = sp.missing_labels(found["counts"], found["quotas"], found["labels"], ratios)
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
        for split in sp.SPLITS:
            if not sizes[split]:  # `datasets` cannot read an empty Parquet split: leave it out, say so
                ctx.warn(f"splits: the {split} split is empty and is not written")

        result = {"splits": {s: blocks.get(s) or {"labels": {}, "all": {"count": 0, **{k: None for k in st.AGGREGATES}}}
                             for s in sp.SPLITS}}
        stats["splits"] = {s: int(result["splits"][s]["all"]["count"]) for s in sp.SPLITS}
        stats["labels"] = {s: {l: b["count"] for l, b in result["splits"][s]["labels"].items()} for s in sp.SPLITS}
        stats["corpora"] = found["corpora"]
        stats["dropped"] = drops
        stats["leakage"] = leakage["checks"]
        if found["near"] is not None:
            near = found["near"]
            stats["near_duplicates"] = {k: v for k, v in near.items() if k != "leakage"}
            leakage["near_duplicates"] = {"settings": options.near.as_dict(), **near["leakage"],
                                          "scope": "verified near-duplicate hypotheses of the pairs before the balance cut"}
        stats["markers"] = {l: dict(sorted(m.items(), key=lambda kv: (-kv[1], kv[0]))[:15])
                            for l, m in sorted(markers.items())}
        if "source" in columns:
            stats["sources"] = dict(sorted(sources.items()))
        stats["label_precision"] = label_precision(ctx.lexicon, markers, sources)
        dataset = {"splits": result["splits"], "leakage": leakage["between_splits"]}
        for line in card_mod.artefact_warnings(dataset, markdown=False):  # the card's warnings, in the summary too
            ctx.warn(f"splits: {line}")
        build = card_mod.build_info(ctx)
        with tempfile.TemporaryDirectory() as local_tmp:
            local = Path(local_tmp)
            card_mod.write_card_files(local, dataset=dataset, stage_stats=stats, build=build,
                                      schema=schema, lang=ctx.lexicon.lang,
                                      license=card_mod.corpus_licenses(ctx.corpora, options.license), leakage=leakage,
                                      pairs_stats=ctx.stats.get("pairs"), sentences_stats=ctx.stats.get("sentences"),
                                      num_bytes=num_bytes, chart=not found["chart"],
                                      examples=found["examples"], charts=found["charts"])
            for f in sorted(local.iterdir()):
                fs.write_bytes(fs.join(target, f.name), f.read_bytes())

    try:  # round 6 writes the table whole: a resumed run writes it again (keep=False)
        ctx.write_table_with("splits", write)
    except UserError:  # the user's failure discards the run; any other (Ctrl-C, a dead JVM) keeps it for --resume
        runner.forget()  # the records first: they speak of the scratch files
        work.delete()
        raise
    runner.forget()
    work.delete()
    ctx.stats[STAGE] = stats


def _warn_missing(ctx, labels, counts, quotas, balance) -> None:
    for label in LABELS:
        if label not in labels:
            ctx.warn(f"splits: no '{label}' pairs in pairs/ after leakage removal")
    for split, corpus in sorted({(s, c) for (s, c, _) in counts}):
        kept = sum(quotas.get((split, corpus, l), 0) for l in labels)
        if kept == 0 and sum(counts.get((split, corpus, l), 0) for l in labels):
            missing = [l for l in labels if not counts.get((split, corpus, l))]
            ctx.warn(f"splits: {split} of corpus {corpus} is empty after --balance {balance}"
                     + (f" (no {', '.join(missing)} pairs there)" if missing else ""))


def splits_in_one_process(pairs_dir: str, out_dir: str, seed: int = 0, ratios=(0.8, 0.1, 0.1),
                          balance: str = "downsample", max_eval_per_corpus: int | None = sp.DEFAULT_MAX_EVAL_PER_CORPUS,
                          test_only: set | None = None, files_per_table: int = 4, buckets: int = 1,
                          near: nd.Settings | None = None) -> dict:
    """Stage 3 in one plain Python process (no Spark): the six rounds (`rounds`) with each
    round's tasks run one after another here (`InProcessRunner`), over the same Parquet files
    and scratch files in a temporary folder. For the engine-overhead benchmark
    (benchmarks/splits_throughput.py): Spark's CPU against the CPU of exactly the same
    functions (the tests compare the stage with an independent pandas reference,
    tests/splits_reference.py). The pairs table in `pairs_dir` -> the split files under
    `out_dir/<split>/`, as the stage writes them (no card). Returns the rounds' results with
    the pairs per split. `near`: the near-duplicate settings (`neardup.Settings()` for the
    stage's default, `--near-duplicates on`); None: off."""
    schema, units = bt.list_units(pairs_dir)
    with tempfile.TemporaryDirectory() as work:
        plan = {"units": units, "schema": schema, "seed": seed, "work": SplitsScratch(work), "buckets": buckets, "target": out_dir,
                "test_only": frozenset(test_only or ()), "ratios": tuple(ratios), "near": near}
        result = rounds(InProcessRunner(), plan, sp.parse_balance(balance), max_eval_per_corpus,
                        files_per_table)
    result["splits"] = {}
    for w in result["written"]:
        split = fs.basename(fs.parent(w["path"]))
        result["splits"][split] = result["splits"].get(split, 0) + int(w["rows"])
    return result
