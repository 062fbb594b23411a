"""Stage 3's global decisions as pure functions over slim rows (pyarrow + numpy, no Spark).

The stage (`extractor.splits.stage`) cuts the slim summary rows of
`extractor.splits.pair_tables.summaries` into buckets and runs these functions on each bucket
in a task; only small aggregates (counts, histograms, a few boundary rows) reach the
driver, which turns them into decisions (quotas, cut points) for the next round:

1. `document_weights` (per unit) -> `assign_corpus` (per corpus): every document of a
   corpus goes, whole, to one split (by the hash of (doc_id, seed), with the greedy of
   `assign.greedy_splits`);
2. `rank_identical` (per bucket of sentence-pair keys: every copy of a sentence pair is in
   one bucket): pairs spanning two splits and all but one copy of each sentence pair are
   marked with their drop reason; `histogram` gives, per (split, corpus, label), how
   many of the remaining pairs fall in each of `BINS` ranges of the hash order `_h`;
3. `cut_points` (driver): from the histograms and the quotas, per group the bin where its
   quota ends and how many of that bin's pairs it takes; `boundary_rows` (per bucket) and
   `thresholds` (driver) find the last pair taken, exactly;
4. `within_quota` (per bucket): the kept pairs, the first of each group in the order
   (`_h`, `pair_id`, `_unit`, `_row`) up to its quota, the order a global sort would give;
5. `leakage_counts` (per bucket of any key) and `leakage_report` (driver): keys found in
   two splits and repeats within one.

The results do not depend on the number of buckets, tasks or cores (tested).
"""
from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extractor.core.hashing import byte_buffers, crc32s, stable_hashes
from extractor.splits import assign

BITS = 10
BINS = 1 << BITS  # ranges of the hash order per group; a partial bin's rows go to the driver
ORDER = ("_h", "pair_id", "_unit", "_row")  # the order in which the quotas take the pairs
WEIGHTS_SCHEMA = pa.schema([("corpus", pa.string()), ("doc_id", pa.string()), ("label", pa.string()),
                            ("w", pa.int64()), ("test_only", pa.bool_())])
ASSIGNED_SCHEMA = pa.schema([("corpus", pa.string()), ("doc_id", pa.string()), ("split", pa.string())])
PARAGRAPHS_SCHEMA = pa.schema([("corpus", pa.string()), ("doc_id", pa.string()), ("para", pa.int32()),
                               ("label", pa.string()), ("w", pa.int64()), ("test_only", pa.bool_())])
BLOCKS_SCHEMA = pa.schema([("corpus", pa.string()), ("doc_id", pa.string()), ("start", pa.int32())])
RANKED_COLUMNS = ("_unit", "_row", "pair_id", "corpus", "doc_id", "label", "marker", "source",
                  "_h", "_pkey", "_skey", "_hkey")
KEYS_SCHEMA = pa.schema([("kind", pa.string()), ("key", pa.binary()), ("split", pa.string()),
                         ("corpus", pa.string())])


# ---------------------------------------------------------------------------- buckets

def key_buckets(keys: pa.Array, n: int) -> np.ndarray:
    """Bucket of each digest key (its first four bytes, big-endian) among `n`: numpy over
    the Arrow buffers."""
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    keys = keys.cast(pa.large_binary())
    m = len(keys)
    offsets, data = byte_buffers(keys)
    if keys.null_count or (np.diff(offsets) < 4).any():
        raise ValueError("key_buckets: every key must be a digest of at least 4 bytes")
    if not m:
        return np.zeros(0, dtype=np.int64)
    at = offsets[:-1]
    heads = np.zeros(m, dtype=np.int64)
    for j in range(4):
        heads = (heads << 8) | data[at + j]
    return heads % n


# ---------------------------------------------------------------------------- documents

def document_weights(rows: pa.Table) -> pa.Table:
    """Per (corpus, document, label) of a unit's slim rows (`WEIGHTS_SCHEMA`): `w` the pairs
    of the label the document holds; a document that only lends a pair its premise or
    hypothesis (`_pdoc`, `_hdoc`) weighs 0 but is listed, so it still gets a split."""
    parts = []
    for col, w in (("doc_id", 1), ("_pdoc", 0), ("_hdoc", 0)):
        parts.append(pa.table({"corpus": rows.column("corpus"), "doc_id": rows.column(col),
                               "label": rows.column("label"), "w": pa.array(np.full(rows.num_rows, w)),
                               "test_only": rows.column("_test_only")}))
    grouped = pa.concat_tables(parts).group_by(["corpus", "doc_id", "label"], use_threads=False).aggregate(
        [("w", "sum"), ("test_only", "any")])
    return pa.table({n: grouped.column(c) for n, c in (("corpus", "corpus"), ("doc_id", "doc_id"), ("label", "label"),
                                                         ("w", "w_sum"), ("test_only", "test_only_any"))},
                    schema=WEIGHTS_SCHEMA)


def assign_corpus(weights: pa.Table, labels: Sequence[str], ratios, seed: int) -> pa.Table:
    """Every document of one corpus (its `document_weights` rows from all units) -> its
    split (`ASSIGNED_SCHEMA`), visited in the order of the hash of (doc_id, seed), then
    doc_id, by the greedy of `assign.greedy_splits` (the pandas definition:
    `assign_documents` in tests/splits_reference.py): Arrow kernels and numpy, no pandas
    frame (the driver runs this between two rounds, so all of it is serial time)."""
    keyed = weights.filter(pc.and_(pc.is_valid(weights.column("corpus")), pc.is_valid(weights.column("doc_id"))))
    # the rows of all units summed per document and label by numpy over the documents'
    # codes; rows without a label count for the test-only flag only (only documents whose
    # pairs have a label are assigned)
    encoded = pc.dictionary_encode(doc_keys(keyed.column("corpus"), keyed.column("doc_id"))).combine_chunks()
    code = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    labelled = keyed.column("label").is_valid().to_numpy(zero_copy_only=False)
    docs = np.unique(code[labelled])
    if not len(docs):
        return ASSIGNED_SCHEMA.empty_table()
    col = pc.index_in(keyed.column("label"), value_set=pa.array(labels, pa.string()))
    known = col.is_valid().to_numpy(zero_copy_only=False)
    matrix = np.zeros((len(encoded.dictionary), len(labels)), dtype=np.int64)
    np.add.at(matrix, (code[known], col.drop_null().to_numpy()), keyed.column("w").to_numpy()[known])
    test_only = np.zeros(len(encoded.dictionary), dtype=bool)
    np.logical_or.at(test_only, code, keyed.column("test_only").fill_null(False).to_numpy(zero_copy_only=False))
    _, first = np.unique(code, return_index=True)  # a row of each document
    at = pa.array(first[docs])
    corpus, doc_id = keyed.column("corpus").take(at), keyed.column("doc_id").take(at)
    at = pc.sort_indices(pa.table({"h": stable_hashes(doc_id, seed=seed), "doc_id": doc_id, "corpus": corpus}),
                         sort_keys=[("h", "ascending"), ("doc_id", "ascending"), ("corpus", "ascending")])
    rows = docs[at.to_numpy()]
    splits = assign.greedy_splits(matrix[rows].astype(np.float64), test_only[rows].tolist(), ratios)
    return pa.table({"corpus": corpus.take(at), "doc_id": doc_id.take(at), "split": pa.array(splits, pa.string())},
                    schema=ASSIGNED_SCHEMA)


# ---------------------------------------------------------------------------- blocks

def paragraph_weights(rows: pa.Table) -> pa.Table:
    """`document_weights` per paragraph (`PARAGRAPHS_SCHEMA`): a pair weighs 1 in its
    hypothesis's paragraph of its own document and 0 in the paragraphs it takes its premise
    and hypothesis from (listed, so that they get a block). A missing paragraph is 0."""
    parts = []
    for doc, para, w in (("doc_id", "_hpara", 1), ("_pdoc", "_ppara", 0), ("_hdoc", "_hpara", 0)):
        parts.append(pa.table({"corpus": rows.column("corpus"), "doc_id": rows.column(doc),
                               "para": pc.fill_null(rows.column(para), 0), "label": rows.column("label"),
                               "w": pa.array(np.full(rows.num_rows, w)), "test_only": rows.column("_test_only")}))
    grouped = pa.concat_tables(parts).group_by(["corpus", "doc_id", "para", "label"], use_threads=False).aggregate(
        [("w", "sum"), ("test_only", "any")])
    return pa.table({n: grouped.column(c) for n, c in (("corpus", "corpus"), ("doc_id", "doc_id"), ("para", "para"),
                                                         ("label", "label"), ("w", "w_sum"),
                                                         ("test_only", "test_only_any"))}, schema=PARAGRAPHS_SCHEMA)


def cut_blocks(paragraphs: pa.Table, size: int) -> pa.Table:
    """The blocks of every document of `paragraphs` (its `paragraph_weights` rows from all
    buckets) as (corpus, doc_id, start) rows (`BLOCKS_SCHEMA`), by `assign.block_starts`
    over the pairs each paragraph holds."""
    summed = paragraphs.group_by(["corpus", "doc_id", "para"], use_threads=False).aggregate([("w", "sum")])
    summed = summed.sort_by([("corpus", "ascending"), ("doc_id", "ascending"), ("para", "ascending")])
    per_doc: dict = {}
    for corpus, doc, para, w in zip(*(summed.column(c).to_pylist() for c in ("corpus", "doc_id", "para", "w_sum"))):
        if doc is not None and w:
            per_doc.setdefault((corpus, doc), ([], []))
            per_doc[(corpus, doc)][0].append(para)
            per_doc[(corpus, doc)][1].append(w)
    for corpus, doc in zip(summed.column("corpus").to_pylist(), summed.column("doc_id").to_pylist()):
        if doc is not None:
            per_doc.setdefault((corpus, doc), ([], []))  # lends sentences only: one block
    out = [(c, d, start) for (c, d), (paras, ws) in sorted(per_doc.items())
           for start in assign.block_starts(paras, ws, size)]
    return pa.table({"corpus": [r[0] for r in out], "doc_id": [r[1] for r in out], "start": [r[2] for r in out]},
                    schema=BLOCKS_SCHEMA)


def block_ids(corpus, docs, paras, blocks: pa.Table) -> pa.Array:
    """The block key (`assign.block_key`) of each (corpus, document, paragraph) whose
    document has blocks in `blocks`; the document id itself otherwise."""
    starts: dict = {}
    for c, d, s in zip(*(blocks.column(n).to_pylist() for n in ("corpus", "doc_id", "start"))):
        starts.setdefault((c, d), []).append(s)
    for v in starts.values():
        v.sort()
    out = []
    for c, d, p in zip(_pylist(corpus), _pylist(docs), _pylist(paras)):
        mine = starts.get((c, d))
        out.append(d if mine is None else assign.block_key(d, mine[max(0, bisect.bisect_right(mine, p or 0) - 1)]))
    return pa.array(out, pa.string())


def _pylist(values) -> list:
    return values.to_pylist() if hasattr(values, "to_pylist") else list(values)


def with_blocks(rows: pa.Table, blocks: pa.Table, private_premises=frozenset()) -> pa.Table:
    """Slim rows with `doc_id`, `_pdoc` and `_hdoc` replaced by their blocks' keys (the
    pair's own unit is its hypothesis's block) where their document is cut into blocks. In
    the corpora of `private_premises` (`assign.private_premise_corpora`) a `second_random`
    pair's premise, an unused sentence in no other pair, takes its pair's block."""
    if not blocks.num_rows:
        return rows
    for doc, para in (("doc_id", "_hpara"), ("_pdoc", "_ppara"), ("_hdoc", "_hpara")):
        ids = block_ids(rows.column("corpus"), rows.column(doc), rows.column(para), blocks)
        rows = rows.set_column(rows.schema.get_field_index(doc), doc, ids)
    if private_premises:
        follows = pc.and_(pc.is_in(rows.column("corpus"), value_set=pa.array(sorted(private_premises), pa.string())),
                          pc.equal(rows.column("source"), "second_random"))
        rows = rows.set_column(rows.schema.get_field_index("_pdoc"), "_pdoc",
                               pc.if_else(follows, rows.column("doc_id"), rows.column("_pdoc")))
    return rows


def block_weights(paragraphs: pa.Table, blocks: pa.Table) -> pa.Table:
    """`document_weights` rows of blocks (`WEIGHTS_SCHEMA`, doc_id the block key) from
    `paragraph_weights` rows."""
    keys = block_ids(paragraphs.column("corpus"), paragraphs.column("doc_id"), paragraphs.column("para"), blocks)
    table = pa.table({"corpus": paragraphs.column("corpus"), "doc_id": keys, "label": paragraphs.column("label"),
                      "w": paragraphs.column("w"), "test_only": paragraphs.column("test_only")})
    grouped = table.group_by(["corpus", "doc_id", "label"], use_threads=False).aggregate([("w", "sum"),
                                                                                         ("test_only", "any")])
    return pa.table({"corpus": grouped.column("corpus"), "doc_id": grouped.column("doc_id"),
                     "label": grouped.column("label"), "w": grouped.column("w_sum"),
                     "test_only": grouped.column("test_only_any")}, schema=WEIGHTS_SCHEMA)


def short_cells(weights: pa.Table, assigned: pa.Table, labels: Sequence[str], ratios) -> list[tuple[str, str]]:
    """(split, label) cells an assignment leaves short of their share (`assign.shortfall`),
    from the units' weights and their splits."""
    keys = doc_keys(assigned.column("corpus"), assigned.column("doc_id"))
    split = _split_of(weights, "doc_id", assigned, keys).to_pylist()
    units = sorted(set(zip(weights.column("doc_id").to_pylist(), split)), key=lambda u: (str(u[0]), u[1]))
    at = {u: i for i, u in enumerate(units)}
    matrix = np.zeros((len(units), len(labels)))
    col = {l: j for j, l in enumerate(labels)}
    for d, s, label, w in zip(weights.column("doc_id").to_pylist(), split, weights.column("label").to_pylist(),
                              weights.column("w").to_pylist()):
        if label in col:
            matrix[at[(d, s)], col[label]] += w
    return [(s, labels[j]) for s, j in assign.shortfall(matrix, [u[1] for u in units], ratios)]


def doc_keys(corpus, docs) -> pa.Array:
    """One string key per document, ``corpus \x1f doc_id``: what split assignments are
    looked up by."""
    return pc.binary_join_element_wise(pc.cast(corpus, pa.string()), pc.cast(docs, pa.string()), "\x1f")


def _split_of(rows: pa.Table, column: str, assigned: pa.Table, assigned_keys: pa.Array) -> pa.Array:
    where = pc.index_in(doc_keys(rows.column("corpus"), rows.column(column)), value_set=assigned_keys)
    return pc.fill_null(pc.take(assigned.column("split"), where), "")


# ---------------------------------------------------------------------------- identical pairs

def rank_identical(rows: pa.Table, assigned: pa.Table, blocked=frozenset()) -> pa.Table:
    """The slim rows of one bucket of sentence-pair keys with their split (`_split`, that
    of their own document) and why they go (`_why`): `pair_spans_documents_of_two_splits`
    when the premise's or hypothesis's document is in another split;
    `identical_pair_in_other_split` / `..._same_split` for every copy of a sentence pair
    but one: the copy in test, else validation, else train, then the lowest `_h` (then
    pair_id, unit, row); copies spanning two splits sort last. Kept rows have `_why` null."""
    keys = doc_keys(assigned.column("corpus"), assigned.column("doc_id"))
    split = _split_of(rows, "doc_id", assigned, keys)
    cross = pc.invert(pc.and_(pc.equal(_split_of(rows, "_pdoc", assigned, keys), split),
                              pc.equal(_split_of(rows, "_hdoc", assigned, keys), split)))
    by_priority = pa.array(sorted(assign.KEEP_PRIORITY, key=assign.KEEP_PRIORITY.__getitem__), pa.string())
    ranks = pa.array([assign.KEEP_PRIORITY[s] for s in by_priority.to_pylist()], pa.int8())
    prio = pc.fill_null(pc.take(ranks, pc.index_in(split, value_set=by_priority)), len(assign.KEEP_PRIORITY))
    in_blocks = pc.is_in(rows.column("corpus"), value_set=pa.array(sorted(blocked), pa.string()))
    table = rows.select(list(RANKED_COLUMNS)).append_column("_split", split) \
        .append_column("_cross", cross).append_column("_prio", prio).append_column("_blocked", in_blocks)
    table = table.take(pc.sort_indices(table, sort_keys=[(k, "ascending") for k in
                                                         ("_skey", "_cross", "_prio", *ORDER)]))
    n = table.num_rows
    first = np.ones(n, dtype=bool)
    if n > 1:
        skeys = table.column("_skey")
        first[1:] = pc.not_equal(skeys.slice(1), skeys.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    crossed = table.column("_cross").to_numpy(zero_copy_only=False)
    prio_sorted = table.column("_prio").to_numpy()
    best = prio_sorted[np.nonzero(first)[0]][np.cumsum(first) - 1] if n else prio_sorted
    blocked_rows = table.column("_blocked").to_numpy(zero_copy_only=False)
    code = np.select([crossed & blocked_rows, crossed, first, prio_sorted > best], [3, 0, -1, 1],
                     default=2).astype(np.int8)
    why = pa.DictionaryArray.from_arrays(pa.array(code, mask=code < 0), pa.array(
        ["pair_spans_documents_of_two_splits", "identical_pair_in_other_split", "identical_pair_in_same_split",
         "pair_spans_blocks_of_two_splits"]))
    return table.drop_columns(["_cross", "_prio", "_blocked"]).append_column("_why", why.cast(pa.string()))


def ranked_counts(results: list[dict]) -> tuple[dict, dict]:
    """From the results of the rank round (each with ``counts``: `tally` rows [why, split,
    corpus, label, rows] of `rank_identical`): the rows kept per (split, corpus, label),
    which the quotas come from, and the rows dropped per reason."""
    counts: dict = {}
    drops: dict = {}
    for r in results:
        for why, split, corpus, label, count in r["counts"]:
            if why is None:
                counts[(split, corpus, label)] = counts.get((split, corpus, label), 0) + count
            else:
                drops[why] = drops.get(why, 0) + count
    return counts, drops


def tally(table: pa.Table, columns: list[str]) -> list[list]:
    """[*values, rows] per distinct combination of `columns` (nulls included), sorted."""
    if not table.num_rows:
        return []
    grouped = table.group_by(columns, use_threads=False).aggregate([([], "count_all")])
    return sorted(([*vals, int(n)] for *vals, n in zip(*(grouped.column(c).to_pylist() for c in columns),
                                                       grouped.column("count_all").to_pylist())),
                  key=lambda r: tuple("" if v is None else str(v) for v in r))


GROUP = ("_split", "corpus", "label")


def _bins(table: pa.Table) -> np.ndarray:
    return table.column("_h").to_numpy() >> (63 - BITS)


def _groups(table: pa.Table) -> tuple[np.ndarray, list[tuple]]:
    """(group number of each row, the groups (split, corpus, label) by number), with Arrow
    kernels rather than a tuple per row."""
    key = pc.binary_join_element_wise(*(pc.cast(table.column(c), pa.string()) for c in GROUP), "\x1f",
                                      null_handling="replace", null_replacement="\x00")
    encoded = pc.dictionary_encode(key).combine_chunks()
    number = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    _, first = np.unique(number, return_index=True)
    at = pa.array(first)
    return number, list(zip(*(table.column(c).take(at).to_pylist() for c in GROUP)))


def histogram(kept: pa.Table) -> list[list]:
    """[split, corpus, label, counts per bin of `_h`] for the rows of a bucket still kept."""
    if not kept.num_rows:
        return []
    number, groups = _groups(kept)
    counts = np.bincount(number * BINS + _bins(kept), minlength=len(groups) * BINS).reshape(len(groups), BINS)
    return [[*g, counts[i].tolist()] for i, g in sorted(enumerate(groups), key=lambda kv: tuple(map(str, kv[1])))]


def cut_points(histograms: list[list], quotas: dict) -> dict[tuple, tuple[int, int]]:
    """Per group (split, corpus, label): (bin, need): the quota takes every row of the bins
    before `bin` and the first `need` rows of `bin` (all rows: (BINS, 0); none: (0, 0))."""
    total: dict = {}
    for *g, counts in histograms:
        acc = total.setdefault(tuple(g), np.zeros(BINS, dtype=np.int64))
        acc += np.asarray(counts, dtype=np.int64)
    cuts = {}
    for g, counts in total.items():
        quota, n = int(quotas.get(g, 0)), int(counts.sum())
        if quota >= n:
            cuts[g] = (BINS, 0)
        elif quota <= 0:
            cuts[g] = (0, 0)
        else:
            cum = np.cumsum(counts)
            b = int(np.searchsorted(cum, quota))  # first bin where the running count reaches the quota
            cuts[g] = (b, quota - (int(cum[b - 1]) if b else 0))
    return cuts


def _group_cut(table: pa.Table, cuts: Mapping) -> tuple[np.ndarray, list[tuple], np.ndarray, np.ndarray]:
    """(group number of each row, the groups, each row's cut bin, each row's need)."""
    number, groups = _groups(table)
    per = [cuts.get(g, (0, 0)) for g in groups]
    return (number, groups, np.array([c for c, _ in per], dtype=np.int64)[number],
            np.array([n for _, n in per], dtype=np.int64)[number])


def boundary_rows(kept: pa.Table, cuts: Mapping) -> list[list]:
    """[split, corpus, label, *ORDER values] of the rows in the bin where their group's
    quota ends part-way."""
    if not kept.num_rows:
        return []
    number, groups, cut, need = _group_cut(kept, cuts)
    idx = pa.array(np.nonzero((_bins(kept) == cut) & (need > 0))[0])
    order = [kept.column(c).take(idx).to_pylist() for c in ORDER]
    return [[*groups[g], *values] for g, *values in zip(number[idx.to_numpy()].tolist(), *order)]


def thresholds(rows: list[list], cuts: Mapping) -> dict[tuple, list]:
    """Per group cut part-way: the ORDER values of the last row its quota takes."""
    per: dict = {}
    for r in rows:
        per.setdefault(tuple(r[:3]), []).append(tuple(r[3:]))
    return {g: list(sorted(per[g])[need - 1]) for g, (_, need) in cuts.items() if need}


def within_quota(kept: pa.Table, cuts: Mapping, last: Mapping) -> pa.Table:
    """The rows of `kept` (ranked rows, `_why` null; any subset) that their group's quota takes."""
    if not kept.num_rows:
        return kept
    number, groups, cut, _ = _group_cut(kept, cuts)
    bins = _bins(kept)
    mask = bins < cut
    edge = np.nonzero(bins == cut)[0]
    if len(edge):
        order = [kept.column(c).take(pa.array(edge)).to_pylist() for c in ORDER]
        for i, g, *values in zip(edge.tolist(), number[edge].tolist(), *order):
            limit = last.get(groups[g])
            mask[i] = limit is not None and tuple(values) <= tuple(limit)
    return kept.filter(pa.array(mask))


# ---------------------------------------------------------------------------- leakage

LEAKAGE_KINDS = ("documents", "pairs", "sentence_pairs", "hypotheses")


def leakage_counts(kind: str, keys: pa.Array, splits: pa.Array) -> list[list]:
    """[kind, mask, keys, repeats per split...]: the keys of one kind grouped by the set of
    splits they occur in (a bit mask over `assign.SPLITS`), with how many rows beyond the
    first each split holds of them. A bucket must hold every row of its keys."""
    if not len(keys):
        return []
    table = pa.table({"k": keys, **{f"c{i}": pc.cast(pc.equal(splits, s), pa.int64())
                                    for i, s in enumerate(assign.SPLITS)}})
    grouped = table.group_by(["k"], use_threads=False).aggregate([(f"c{i}", "sum") for i in range(len(assign.SPLITS))])
    counts = np.stack([grouped.column(f"c{i}_sum").to_numpy() for i in range(len(assign.SPLITS))])
    mask = sum((counts[i] > 0).astype(np.int64) << i for i in range(len(assign.SPLITS)))
    repeats = np.maximum(counts - 1, 0)
    out = []
    for m in np.unique(mask).tolist():
        sel = mask == m
        out.append([kind, m, int(sel.sum()), *(int(repeats[i][sel].sum()) for i in range(len(assign.SPLITS)))])
    return out


def leakage_report(rows: list[list]) -> tuple[dict, dict]:
    """From `leakage_counts` rows of all buckets: ({"checks": keys of each kind in two
    splits, "between_splits": per pair of splits}, {split: repeated pairs and sentence
    pairs}): the first three checks must be 0, shared hypotheses are reported."""
    checks = {f"{kind}_in_two_splits": 0 for kind in LEAKAGE_KINDS}
    between = {f"{a}|{b}": {kind: 0 for kind in LEAKAGE_KINDS}
               for i, a in enumerate(assign.SPLITS) for b in assign.SPLITS[i + 1:]}
    duplicates = {s: {"pairs": 0, "sentence_pairs": 0} for s in assign.SPLITS}
    for kind, mask, keys, *repeats in rows:
        names = [s for i, s in enumerate(assign.SPLITS) if int(mask) >> i & 1]
        if len(names) > 1:
            checks[f"{kind}_in_two_splits"] += int(keys)
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    between[f"{a}|{b}"][kind] += int(keys)
        if kind in duplicates["train"]:
            for s, r in zip(assign.SPLITS, repeats):
                duplicates[s][kind] += int(r)
    return {"checks": checks, "between_splits": between}, duplicates


def other_keys(kept: pa.Table) -> pa.Table:
    """The keys of kept rows (`KEYS_SCHEMA`), to be grouped in buckets of keys: documents
    and hypotheses one row per distinct (kind, key, split, corpus); pairs and sentence
    pairs one row per kept row (no corpus), so that repeats within a split count."""
    docs = pa.table({"kind": pa.repeat(pa.scalar("documents", pa.string()), kept.num_rows),
                     "key": pc.cast(kept.column("doc_id"), pa.binary()), "split": kept.column("_split"),
                     "corpus": kept.column("corpus")})
    hyps = pa.table({"kind": pa.repeat(pa.scalar("hypotheses", pa.string()), kept.num_rows),
                     "key": kept.column("_hkey"),
                     "split": kept.column("_split"), "corpus": kept.column("corpus")})
    both = pa.concat_tables([docs, hyps]).group_by(list(KEYS_SCHEMA.names), use_threads=False).aggregate([])
    pairs = [pa.table({"kind": pa.repeat(pa.scalar(kind, pa.string()), kept.num_rows), "key": kept.column(col),
                       "split": kept.column("_split"), "corpus": pa.nulls(kept.num_rows, pa.string())})
             for kind, col in (("pairs", "_pkey"), ("sentence_pairs", "_skey"))]
    return pa.concat_tables([both.select(list(KEYS_SCHEMA.names)).cast(KEYS_SCHEMA),
                             *(p.cast(KEYS_SCHEMA) for p in pairs)])


def other_key_buckets(keys: pa.Table, n: int) -> np.ndarray:
    """Bucket of each `other_keys` row among `n`: a hash of the key (a document id's crc32;
    the first four bytes of the other kinds, which are digests)."""
    docs = pc.equal(keys.column("kind"), "documents").to_numpy(zero_copy_only=False)
    out = np.empty(keys.num_rows, dtype=np.int64)
    key = keys.column("key")
    out[docs] = crc32s(key.filter(pa.array(docs))) % n
    out[~docs] = key_buckets(key.filter(pa.array(~docs)), n)
    return out


def documents_per_corpus(keys: pa.Table) -> list[list]:
    """[split, corpus, documents] from the document rows of `other_keys` (one bucket of
    keys, from any number of buckets of rows: a document is counted once)."""
    docs = keys.filter(pc.equal(keys.column("kind"), "documents"))
    if not docs.num_rows:
        return []
    distinct = docs.group_by(["key", "split", "corpus"], use_threads=False).aggregate([])
    return tally(distinct, ["split", "corpus"])
