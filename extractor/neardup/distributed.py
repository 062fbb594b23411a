"""Near-duplicates in a distributed run: the steps of the stages' rounds.

What the stages' rounds run (docs/neardup.md "In the job"): a per-unit task makes the band
rows of its texts (`unit_bands`) and keeps its texts (`TEXT_SCHEMA`) in a scratch file; the
engine groups the band rows by key (`band_buckets`: the bucket of a key); a task per bucket
finds the candidates and verifies them against the texts it fetches by id
(`verify_bucket`); one task joins the documents of the verified pairs (`document_groups`).
Ids (`gid`) are ``unit << 32 | row``: stable whatever the number of tasks.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extractor.neardup.minhash import (Shingles, band_keys, band_rows, bucket_pairs, components, pair_jaccard,
                                       shingle_sets, signatures, sorted_unique)
from extractor.neardup.settings import Settings

# candidate pairs whose (candidate x band) keys are compared together: a bucket's candidates
# grow with its texts (up to max_bucket per text and band), its memory must not
_CHUNK_CANDIDATES = 1 << 16

BAND_SCHEMA = pa.schema([("key", pa.uint64()), ("gid", pa.int64())])
TEXT_SCHEMA = pa.schema([("gid", pa.int64()), ("corpus", pa.string()), ("doc_id", pa.string()),
                         ("text", pa.large_string()), ("other", pa.large_string())])
EDGE_SCHEMA = pa.schema([("corpus", pa.string()), ("doc_a", pa.string()), ("doc_b", pa.string())])
GROUP_SCHEMA = pa.schema([("corpus", pa.string()), ("doc_id", pa.string()), ("group", pa.string())])


def gids(unit: int, rows) -> np.ndarray:
    return (np.int64(unit) << np.int64(32)) | np.asarray(rows, dtype=np.int64)


def unit_bands(texts, ids: np.ndarray, settings: Settings) -> pa.Table:
    """The band rows (`BAND_SCHEMA`) of a unit's texts with their ids."""
    return unit_bands_with(texts, ids, settings)[0]


def unit_bands_with(texts, ids: np.ndarray, settings: Settings) -> tuple[pa.Table, Shingles, np.ndarray]:
    """`unit_bands`, with the texts' shingles and band keys (to keep beside the texts:
    `shingles_column`, `keys_column`)."""
    sh = shingle_sets(texts, settings)
    keys = band_keys(signatures(sh, settings), settings)
    k, i = band_rows(ids, keys)
    return pa.table({"key": pa.array(k, pa.uint64()), "gid": pa.array(i, pa.int64())}, schema=BAND_SCHEMA), sh, keys


def band_buckets(keys, n: int) -> np.ndarray:
    """The bucket (of `n`) of each band key: every row of a key in one bucket."""
    keys = keys.to_numpy() if isinstance(keys, (pa.Array, pa.ChunkedArray)) else np.asarray(keys)
    return ((keys >> np.uint64(1)) % np.uint64(max(n, 1))).astype(np.int64)


def verify_bucket(bands: pa.Table, fetch, settings: Settings, bucket: int | None = None,
                  buckets: int | None = None) -> tuple[int, pa.Table, np.ndarray]:
    """One bucket of band rows -> (candidates, the verified pairs' text rows side by side,
    their Jaccard). ``fetch(ids)`` returns the `TEXT_SCHEMA` rows of sorted distinct ids, in
    that order (``text`` the text compared: a pair's hypothesis; ``other`` its premise). The
    verified table has the columns of `TEXT_SCHEMA` suffixed ``_a`` and ``_b`` (``gid_a <
    gid_b``), sorted by (gid_a, gid_b), and ``both``: the ``other`` texts are near-duplicates
    too (a near-duplicate pair). With `bucket` (of `buckets`), only the candidates this
    bucket owns are kept: two texts sharing several bands are candidates in several
    buckets, and belong to the one of their smallest shared key, so that every pair is
    counted once whatever the number of buckets. Where the fetched rows also hold
    ``shingles`` and ``bands`` (`shingles_column`, `keys_column` of their texts) they are
    used instead of cutting and hashing the texts again: the same results."""
    cand = bucket_pairs(bands.column("key").to_numpy(), bands.column("gid").to_numpy(), settings.max_bucket)
    empty = pa.table({f"{f.name}_{s}": pa.array([], f.type) for s in "ab" for f in TEXT_SCHEMA}
                     | {"both": pa.array([], pa.bool_())})
    if not len(cand):
        return 0, empty, np.zeros(0)
    ids = sorted_unique(cand.ravel())
    rows = fetch(ids)
    if rows.num_rows != len(ids) or not (rows.column("gid").to_numpy() == ids).all():
        raise RuntimeError("near-duplicates: the texts fetched do not match the ids asked for (a bug)")
    stored = "shingles" in rows.column_names and "bands" in rows.column_names
    sh = stored_shingles(rows.column("shingles")) if stored else shingle_sets(rows.column("text"), settings)
    left, right = np.searchsorted(ids, cand[:, 0]), np.searchsorted(ids, cand[:, 1])
    if bucket is not None:
        keys = stored_keys(rows.column("bands"), settings) if stored else band_keys(signatures(sh, settings), settings)
        assert buckets is not None  # `bucket` comes with `buckets`
        mine = np.zeros(len(cand), dtype=bool)
        step = _CHUNK_CANDIDATES   # the (candidates x bands) keys a chunk at a time
        for a in range(0, len(cand), step):
            kl, kr = keys[left[a:a + step]], keys[right[a:a + step]]
            shared = np.where(kl == kr, kl, np.uint64(0xFFFF_FFFF_FFFF_FFFF))
            mine[a:a + step] = band_buckets(shared.min(axis=1), buckets) == bucket
        cand, left, right = cand[mine], left[mine], right[mine]
    jac = pair_jaccard(sh, left, right)
    keep = jac >= settings.threshold
    left, right = left[keep], right[keep]
    a, b = rows.take(pa.array(left)), rows.take(pa.array(right))
    out = {f"{n}_a": a.column(n) for n in a.column_names} | {f"{n}_b": b.column(n) for n in b.column_names}
    # the other texts of the verified pairs only (a text's shingles do not depend on its batch)
    used = sorted_unique(np.concatenate([left, right]))
    if len(used):
        other = shingle_sets(rows.column("other").take(pa.array(used)), settings)
        both = pair_jaccard(other, np.searchsorted(used, left), np.searchsorted(used, right))
    else:
        both = np.zeros(0)
    out["both"] = pa.array(both >= settings.threshold)
    return len(cand), pa.table({k: out[k] for k in empty.column_names}), jac[keep]


def shingles_column(sh: Shingles) -> pa.Array:
    """A batch's shingle sets as a list column (a row per text): what a stage can keep
    beside its texts so that `verify_bucket` does not cut them again (`stored_shingles`)."""
    return pa.LargeListArray.from_arrays(pa.array(sh.offsets, pa.int64()), pa.array(sh.values, pa.uint64()))


def stored_shingles(column) -> Shingles:
    """`Shingles` of a `shingles_column` (any rows of it, in their order)."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offsets = np.asarray(column.offsets, dtype=np.int64)
    values = column.values.to_numpy()[offsets[0]:offsets[-1]]
    return Shingles(offsets - offsets[0], np.ascontiguousarray(values, dtype=np.uint64))


def keys_column(keys: np.ndarray) -> pa.Array:
    """A batch's band keys (`band_keys`) as a fixed-size list column (a row per text)."""
    return pa.FixedSizeListArray.from_arrays(pa.array(keys.ravel(), pa.uint64()), keys.shape[1])


def stored_keys(column, settings: Settings) -> np.ndarray:
    """The (n, bands) band keys of a `keys_column` (any rows of it, in their order)."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return np.asarray(column.flatten().to_numpy(), dtype=np.uint64).reshape(len(column), settings.bands)


def fetch_from(paths_of_unit, read) -> Callable:
    """A `verify_bucket` fetch over per-unit text files: ``paths_of_unit(u)`` the file of
    unit ``u`` (its rows sorted by gid), ``read(path)`` an Arrow table."""
    def fetch(ids: np.ndarray) -> pa.Table:
        parts = []
        units = ids >> np.int64(32)
        for u in sorted_unique(units):
            table = read(paths_of_unit(int(u)))
            have = table.column("gid").to_numpy()
            want = ids[units == u]
            parts.append(table.take(pa.array(np.searchsorted(have, want))))
        return pa.concat_tables(parts) if parts else TEXT_SCHEMA.empty_table()
    return fetch


def document_groups(edges: pa.Table) -> pa.Table:
    """Documents joined by near-duplicate edges (`EDGE_SCHEMA`, within one corpus each),
    per corpus: the connected components over document ids, each document of a component
    with its group (the smallest doc_id of the component); documents of no edge are left
    out (`GROUP_SCHEMA`, sorted by corpus and doc_id)."""
    if not edges.num_rows:
        return GROUP_SCHEMA.empty_table()
    corpus = edges.column("corpus")
    if isinstance(corpus, pa.ChunkedArray):
        corpus = corpus.combine_chunks()
    keys = pc.binary_join_element_wise(pa.concat_arrays([corpus.cast(pa.string())] * 2),
                                       pa.concat_arrays([edges.column("doc_a").combine_chunks().cast(pa.string()),
                                                         edges.column("doc_b").combine_chunks().cast(pa.string())]),
                                       "\x1f")
    names = pc.unique(keys)
    names = names.take(pc.sort_indices(names))  # sorted: node numbers (and groups) do not depend on the edge order
    nodes = pc.index_in(keys, value_set=names).to_numpy().astype(np.int64)
    m = edges.num_rows
    comp = components(len(names), np.stack([nodes[:m], nodes[m:]], axis=1))
    parts = [s.split("\x1f", 1) for s in names.to_pylist()]
    group = [parts[c][1] for c in comp]
    return pa.table({"corpus": [p[0] for p in parts], "doc_id": [p[1] for p in parts], "group": group},
                    schema=GROUP_SCHEMA)
