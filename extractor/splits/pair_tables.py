"""Stage 3 per work unit: pure functions over pyarrow tables of pairs, no Spark.

The stage (`extractor.splits.stage`'s rounds; `splits_in_one_process` of
`tests/one_process.py` runs them in one process) touches the texts of the pairs table only here, in three steps:

1. `read_unit` + `summaries`: each work unit (row groups of one Parquet file of `pairs/`)
   becomes one slim row per pair: ids, documents, label, hash order and the comparison
   keys (`SUMMARY_SCHEMA`). Everything global (documents -> splits, identical pairs,
   quotas, leakage) is decided on these slim rows.
2. `kept_rows` + `shuffle_files`: a unit's kept rows, with their split, go to one Arrow
   file per (split, bucket); `batch_statistics` gives their card statistics.
3. `merge_bucket`: the files of one (split, bucket) sorted by `pair_id` into the final
   Parquet file. A pair's bucket is a hash of its `pair_id`, so the files depend on the
   rows only, not on the units, cores or partitions.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extractor.io import fs
from extractor.engine import scratch
from extractor import statistics
from extractor.core.errors import UserError
from extractor.core.hashing import crc32s
from extractor.core.hashing import digests as hash_texts
from extractor.core.hashing import stable_hashes
from extractor.io.parquet_writer import partition_values, plain_schema

SUMMARY_SCHEMA = pa.schema([
    ("_unit", pa.int32()), ("_row", pa.int32()), ("pair_id", pa.string()), ("corpus", pa.string()),
    ("doc_id", pa.string()), ("_pdoc", pa.string()), ("_hdoc", pa.string()), ("label", pa.string()),
    ("marker", pa.string()), ("source", pa.string()), ("_test_only", pa.bool_()), ("_reject", pa.string()),
    ("_h", pa.int64()), ("_pkey", pa.binary()), ("_skey", pa.binary()), ("_hkey", pa.binary()),
    ("_ppara", pa.int32()), ("_hpara", pa.int32())])
REQUIRED = ("pair_id", "doc_id", "corpus", "premise", "hypothesis", "label")
UNIT_ROWS = 65_536  # row groups per unit: about this many pairs
PAIRS_PER_FILE = 100_000


class PairsTableError(UserError, ValueError):
    """The pairs table cannot be read as stage 3 needs it: one-line message."""


# ---------------------------------------------------------------------------- units

def list_units(table_dir: str) -> tuple[pa.Schema, list[dict]]:
    """(the table's schema, its work units): every Parquet file of `table_dir`, cut into
    runs of row groups of about UNIT_ROWS rows. A unit is a small JSON-able dict."""
    import pyarrow.parquet as pq

    base = fs.canonical(table_dir).rstrip("/")
    files = [p for p, _ in fs.list_files(table_dir) if p.endswith(".parquet") or "." not in fs.basename(p)]
    schema, units, part_cols = None, [], []
    for path in files:
        parts = partition_values(path[len(base) + 1:])
        with fs.open_input(path) as fh:
            meta = pq.ParquetFile(fh).metadata
            file_schema = meta.schema.to_arrow_schema()
        if schema is None:
            part_cols = list(parts)
            schema = plain_schema(pa.schema([f for f in file_schema if f.name not in parts]
                                            + [pa.field(c, pa.string()) for c in part_cols]))
        groups: list[int] = []
        rows = 0
        for g in range(meta.num_row_groups):
            n = meta.row_group(g).num_rows
            if groups and rows + n > UNIT_ROWS:
                units.append({"path": path, "row_groups": groups, "rows": rows, "partition": parts})
                groups, rows = [], 0
            groups.append(g)
            rows += n
        if rows:
            units.append({"path": path, "row_groups": groups, "rows": rows, "partition": parts})
    if schema is None:
        raise PairsTableError(f"{table_dir}: the pairs table has no Parquet file; run the pairs stage first")
    for needed in REQUIRED:
        if needed not in schema.names:
            raise PairsTableError(f"{table_dir}: the pairs table has no column '{needed}'")
    return schema.remove_metadata(), units


def read_unit(unit: dict, schema: pa.Schema, columns: list[str] | None = None) -> pa.Table:
    """The rows of one unit as `schema` (partition columns filled in), or only `columns`."""
    import pyarrow.parquet as pq

    names = columns or schema.names
    parts = unit.get("partition") or {}
    with fs.open_input(unit["path"]) as fh:
        pf = pq.ParquetFile(fh)
        in_file = [c for c in names if c not in parts and c in pf.schema_arrow.names]
        table = pf.read_row_groups(unit["row_groups"], columns=in_file)
    arrays = []
    for name in names:
        field = schema.field(name)
        if name in parts:
            arrays.append(pa.array([parts[name]] * table.num_rows, pa.string()).cast(field.type))
        elif name in table.column_names:
            arrays.append(table.column(name).cast(field.type))
        else:
            arrays.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema([schema.field(n) for n in names]))


# ---------------------------------------------------------------------------- step 1

def _ref_docs(table: pa.Table, ref: str) -> pa.Array:
    """doc_id of a *_ref column: a struct's doc_id, the 'doc_id:para_idx:sent_idx'
    string's head, or the pair's own doc_id when there is no such column or value."""
    own = table.column("doc_id").cast(pa.string())
    if ref not in table.column_names:
        return own
    col = table.column(ref)
    if pa.types.is_struct(col.type):
        if col.type.get_field_index("doc_id") < 0:
            return own
        values = pc.struct_field(col, "doc_id").cast(pa.string())
    else:  # everything before the last two ':' ("" when there are fewer than two)
        values = pc.replace_substring_regex(col.cast(pa.string()),
                                            r"(?s)^(?:(.*):[^:]*:[^:]*|[^:]*(?::[^:]*)?)$", r"\1")
    return pc.if_else(pc.fill_null(pc.greater(pc.utf8_length(values), 0), False), values, own)


def _ref_paras(table: pa.Table, ref: str) -> pa.Array:
    """para_idx of a *_ref column (a struct's, or the middle of a 'doc_id:para_idx:sent_idx'
    string), null where there is none: what blocks are cut by (docs/splits.md "Blocks")."""
    n = table.num_rows
    if ref not in table.column_names:
        return pa.nulls(n, pa.int32())
    col = table.column(ref)
    if pa.types.is_struct(col.type):
        if col.type.get_field_index("para_idx") < 0:
            return pa.nulls(n, pa.int32())
        return pc.struct_field(col, "para_idx").cast(pa.int32())
    middle = pc.extract_regex(col.cast(pa.string()), r"(?s)^.*:(?P<p>[0-9]+):[^:]*$")
    return pc.struct_field(middle, "p").cast(pa.int32())


def _binary(rows: np.ndarray) -> pa.Array:
    """Rows of a 2-d uint8 array as a binary array."""
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(rows.shape[1]), len(rows),
                                                 [None, pa.py_buffer(np.ascontiguousarray(rows).tobytes())])
    return fixed.cast(pa.binary())


def summaries(table: pa.Table, seed: int, test_only=frozenset(), unit: int = 0) -> pa.Table:
    """One slim row per pair (`SUMMARY_SCHEMA`): `_h` the hash order of the pair
    (`stable_hash(pair_id, seed)`); `_hkey` the hypothesis (`statistics.fold_text`: case
    folded, whitespace collapsed) hashed (16 bytes of blake2b), `_pkey` the pair (premise's
    and hypothesis's hashes), `_skey` the sentence pair in either order (the two hashes,
    smaller first); `_reject` why a row the pairs stage kept for inspection is not data
    (`not_pos_ok`, `not_keep`), else null."""
    n = table.num_rows
    pair_ids = pc.fill_null(table.column("pair_id").cast(pa.string()).combine_chunks(), "None")  # str(None)
    # (the columns' chunks: pa.chunked_array of ChunkedArrays would convert them through
    # Python)
    folded = statistics.fold_texts(pa.chunked_array(table.column("premise").cast(pa.large_string()).chunks
                                                    + table.column("hypothesis").cast(pa.large_string()).chunks,
                                                    pa.large_string()))
    # the texts never hold None (fold_texts gives ""); each distinct text hashed once (a
    # sentence is the premise of one pair and the hypothesis of another, or of several)
    distinct = folded.dictionary_encode()
    digests = hash_texts(distinct.dictionary, 16)[distinct.indices.to_numpy()]
    dp, dh = digests[:n], digests[n:]
    hyp_first = _hyp_first(dp, dh)
    corpus = table.column("corpus").cast(pa.string())
    test = pc.is_in(corpus, value_set=pa.array(sorted(test_only), pa.string()))
    if "role" in table.column_names:
        test = pc.or_(test, pc.fill_null(pc.equal(table.column("role").cast(pa.string()), "test-only"), False))
    reject = pa.nulls(n, pa.string())
    for flag in ("keep", "pos_ok"):  # the first failing flag names the reason (null fails)
        if flag in table.column_names and pa.types.is_boolean(table.column(flag).type):
            reject = pc.if_else(pc.fill_null(table.column(flag), False), reject, pa.scalar(f"not_{flag}"))

    def col(name):
        return table.column(name).cast(pa.string()) if name in table.column_names else pa.nulls(n, pa.string())

    arrays = {
        "_unit": pa.array(np.full(n, unit, dtype=np.int32)), "_row": pa.array(np.arange(n, dtype=np.int32)),
        "pair_id": pair_ids, "corpus": corpus, "doc_id": col("doc_id"), "_pdoc": _ref_docs(table, "premise_ref"),
        "_hdoc": _ref_docs(table, "hypothesis_ref"), "label": col("label"), "marker": col("marker"),
        "source": col("source"), "_test_only": test, "_reject": reject, "_h": pa.array(stable_hashes(pair_ids, seed)),
        "_pkey": _binary(np.hstack([dp, dh])),
        "_skey": _binary(np.where(hyp_first[:, None], np.hstack([dh, dp]), np.hstack([dp, dh]))),
        "_hkey": _binary(dh), "_ppara": _ref_paras(table, "premise_ref"), "_hpara": _ref_paras(table, "hypothesis_ref"),
    }
    return pa.Table.from_arrays([arrays[f.name] for f in SUMMARY_SCHEMA], schema=SUMMARY_SCHEMA)


def _hyp_first(dp: np.ndarray, dh: np.ndarray) -> np.ndarray:
    """Per row: the hypothesis's digest sorts before the premise's (bytes compared)."""
    differ = dp != dh
    first = np.where(differ.any(axis=1), differ.argmax(axis=1), 0)
    rows = np.arange(len(dp))
    return dh[rows, first] < dp[rows, first]


# ---------------------------------------------------------------------------- step 2

def files_per_split(n_pairs: int, files_per_table: int) -> int:
    """How many Parquet files a split of `n_pairs` pairs is written as."""
    return max(1, min(int(files_per_table or 4), n_pairs // PAIRS_PER_FILE + 1))


def kept_rows(table: pa.Table, rows, splits) -> pa.Table:
    """The rows of a unit that the split assignment kept (row numbers, any order), with
    their split (`_split`), in row order."""
    rows = np.asarray(rows, dtype=np.int64)
    order = np.argsort(rows, kind="stable")
    taken = table.take(pa.array(rows[order]))
    splits = splits if isinstance(splits, (pa.Array, pa.ChunkedArray)) else pa.array(list(splits), pa.string())
    return taken.append_column("_split", splits.take(pa.array(order)).cast(pa.string()))


def file_buckets(pair_ids, n_files) -> np.ndarray:
    """The output file of every pair among `n_files` (one count, or one per pair): crc32 of
    the pair id's UTF-8, modulo the count."""
    return crc32s(pair_ids) % np.asarray(n_files, dtype=np.int64)


def shuffle_files(kept: pa.Table, folder: str, unit: int, n_files: Mapping[str, int]) -> list[str]:
    """Write a unit's kept rows as Arrow files ``<folder>/<split>/<bucket>/unit-<unit>.arrow``
    (the rows of each final file, from this unit, in their order). Returns the paths written."""
    split = pc.dictionary_encode(kept.column("_split").combine_chunks())
    names = split.dictionary.to_pylist()
    codes = split.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    per_row = np.array([n_files[s] for s in names], dtype=np.int64)[codes]
    buckets = file_buckets(kept.column("pair_id").combine_chunks(), per_row)
    written = []
    data = kept.drop_columns(["_split"])
    width = int(per_row.max()) + 1  # (split, bucket) numbered as split * width + bucket
    for group, part in scratch.split_by(data, codes * width + buckets).items():
        name, bucket = names[group // width], group % width
        path = fs.join(folder, name, scratch.numbered(bucket), scratch.unit_name(unit))
        scratch.write_arrow(part, path)
        written.append(path)
    return sorted(written)


STATS_SCHEMA = pa.schema([("kind", pa.string()), ("split", pa.string()), ("label", pa.string()),
                          ("side", pa.string()), ("word", pa.string()), ("n", pa.int64())]
                         + [(c, {"int64": pa.int64(), "float64": pa.float64(),
                                 "bool": pa.bool_()}[statistics.ROW_DTYPES[c]])
                            for c in statistics.ROW_COLUMNS])
SIDES = ("hypothesis", "premise")


def unit_statistics(kept: pa.Table) -> pa.Table:
    """The card's statistics of a unit's kept rows (`STATS_SCHEMA`): one ``row`` per pair
    with its :data:`~extractor.statistics.ROW_COLUMNS`, and one ``word`` row per (split,
    side, label, word) with ``n`` the texts holding the word (`statistics.batch_statistics`,
    one call for all splits: its labels are split and label joined). Rows of many units add
    up: aggregates of the row columns, sums of ``n``."""
    if not kept.num_rows:
        return STATS_SCHEMA.empty_table()
    splits = kept.column("_split").cast(pa.string())
    labels = kept.column("label").cast(pa.string())
    rows, words = statistics.batch_columns(kept.column("premise"), kept.column("hypothesis"),
                                           pc.binary_join_element_wise(splits, labels, "\x1f"), word_table=True)
    assert not isinstance(words, dict)  # word_table=True: an Arrow table
    n = kept.num_rows
    arrays = {"kind": pa.repeat(pa.scalar("row", pa.string()), n), "split": splits.combine_chunks(),
              "label": labels.combine_chunks()}
    for c in statistics.ROW_COLUMNS:
        arrays[c] = pa.array(rows[c], STATS_SCHEMA.field(c).type)
    m = words.num_rows
    out = [_stats_table(arrays, n)]
    if m:
        # "split\x1flabel" of each word row: the few distinct keys split once, then taken
        keys = pc.dictionary_encode(words.column("label").combine_chunks())
        split_label = [k.split("\x1f", 1) for k in keys.dictionary.to_pylist()]
        out.append(_stats_table({"kind": pa.repeat(pa.scalar("word", pa.string()), m),
                                 "split": pa.array([s for s, _ in split_label], pa.string()).take(keys.indices),
                                 "label": pa.array([l for _, l in split_label], pa.string()).take(keys.indices),
                                 "side": words.column("side"), "word": words.column("word"),
                                 "n": words.column("n")}, m))
    return pa.concat_tables(out)


def _stats_table(arrays: dict, n: int) -> pa.Table:
    return pa.Table.from_arrays([arrays.get(f.name, pa.nulls(n, f.type)) for f in STATS_SCHEMA], schema=STATS_SCHEMA)




def split_aggregates(rows: pa.Table) -> list[dict]:
    """The aggregate rows of one split's ``row`` statistics (columns split, label and the
    ROW_COLUMNS, from `unit_statistics`): one per label, one for rows without a label
    (count only) and one for the whole split (``label_all``), each a dict with ``count``
    and the AGGREGATES of `statistics.aggregate_columns` (the functions `trainer stats`
    uses; None where there is no value). The rows are put in one canonical order first,
    so that sums do not depend on the order in which the tasks delivered them."""
    split = rows.column("split")[0].as_py() if rows.num_rows else None
    keys = [("label", "ascending"), *((c, "ascending") for c in statistics.ROW_COLUMNS)]
    frame = rows.take(pc.sort_indices(rows, sort_keys=keys, null_placement="at_start"))
    labels = frame.column("label")
    blocks = statistics.aggregate_columns({c: frame.column(c).to_numpy() for c in statistics.ROW_COLUMNS}, labels)
    out = [dict(split=split, label=label, label_all=False, **block) for label, block in blocks["labels"].items()]
    missing = labels.null_count
    if missing:
        out.append(dict(split=split, label=None, label_all=False, count=missing))
    out.append(dict(split=split, label=None, label_all=True, **blocks["all"]))
    return [{c: r.get(c) for c in ("split", "label", "label_all", "count", *statistics.AGGREGATES)} for r in out]


def split_pmi(stats: pa.Table, label_totals: dict, top_k: int = 10, min_count: int = statistics.PMI_MIN_COUNT) -> dict:
    """The top PMI words of one split per side (``{"hypothesis": {label: [...]}, "premise":
    ...}``, as `statistics.top_pmi_from_counts` gives them) from the ``word`` rows of the
    split's statistics (all units; ``n`` summed per side, label and word) and the pairs
    per label (`label_totals`). The rows are summed over integer keys (side, label and word
    each numbered once), not grouped by their three strings."""
    words = stats.filter(pc.and_(pc.equal(stats.column("kind"), "word"), pc.is_valid(stats.column("label"))))
    coded = [pc.dictionary_encode(words.column(c).combine_chunks()) for c in ("side", "label", "word")]
    (sides, labels, vocabulary), (side_at, label_at, word_at) = zip(
        *((c.dictionary, c.indices.to_numpy(zero_copy_only=False).astype(np.int64)) for c in coded))
    n_labels, n_words = len(labels), len(vocabulary)
    keys, sums = statistics.key_sums((side_at * n_labels + label_at) * n_words + word_at,
                                     len(sides) * n_labels * n_words, words.column("n").to_numpy())
    side_of, label_of, word_of = keys // (n_labels * n_words), keys // n_words % n_labels, keys % n_words
    names = labels.to_pylist()
    out = {}
    for side in SIDES:
        at = sides.to_pylist().index(side) if side in sides.to_pylist() else -1
        mine = np.nonzero(side_of == at)[0]
        keep = mine[_pmi_contenders(word_of[mine], label_of[mine], names, sums[mine], label_totals, top_k, min_count)]
        out[side] = statistics.pmi_table([names[i] for i in label_of[keep].tolist()],
                                         vocabulary.take(pa.array(word_of[keep])).to_pylist(), sums[keep].tolist(),
                                         label_totals, k=top_k, min_count=min_count)
    return out


def _pmi_contenders(words_at: np.ndarray, label_at: np.ndarray, labels: list, c: np.ndarray, label_totals: dict,
                    top_k: int, min_count: int) -> np.ndarray:
    """Which rows (word number, label number, summed count `c`; `labels` the label names)
    `statistics.pmi_table` needs for the same result: every row of each word that is among
    a label's top `top_k` candidates by `pmi_table`'s rough score (with its ties, and a
    margin), so that each kept word's count (the sum of its rows) is the same. A label's
    candidates here contain its top `top_k` of all rows, so `pmi_table` finds the same
    k-th score, the same candidates and the same words; the other rows (most of a split's
    words) never become Python lists."""
    if not len(words_at):
        return np.zeros(0, dtype=bool)
    c = c.astype(np.float64)
    cw = np.bincount(words_at, weights=c)[words_at]
    totals = {l: t for l, t in label_totals.items() if t}
    n_labels, total = len(totals), sum(totals.values())
    cl = np.array([totals.get(l, 0) for l in labels], dtype=np.float64)[label_at]
    with np.errstate(divide="ignore", invalid="ignore"):
        rough = (np.log(((c + statistics.PMI_SMOOTHING) / (cw + statistics.PMI_SMOOTHING * n_labels)) / (cl / total))
                 if total else c)
    candidate = (cw >= min_count) & (cl > 0) & (rough > -1e-9)
    keep_word = np.zeros(int(words_at.max()) + 1, dtype=bool)
    for code in range(len(labels)):
        sel = np.nonzero(candidate & (label_at == code))[0]
        if len(sel) > top_k:
            kth = np.partition(rough[sel], len(sel) - top_k)[len(sel) - top_k]
            sel = sel[rough[sel] >= kth - 1e-6]
        keep_word[words_at[sel]] = True
    return keep_word[words_at]


def card_statistics(aggregates: list[dict], pmi: dict, duplicates: dict) -> dict:
    """``{split: block}`` as `statistics.split_statistics` gives it for each split, from
    what the stage gathered over all units: ``aggregates`` one dict per (split, label) and
    per split (``label_all`` true) with ``count`` and the AGGREGATES; ``pmi`` {split: top
    PMI words per side (`split_pmi`)}; ``duplicates`` {split: {"pairs": n, "sentence_pairs": n}}."""
    per_split: dict[str, list] = {}
    unlabeled: dict[str, int] = {}
    for row in aggregates:
        row = dict(row)
        split, total = row.pop("split"), row.pop("label_all")
        if not total and row["label"] is None:
            unlabeled[split] = int(row["count"])
            continue
        if total:
            row["label"] = None
        per_split.setdefault(split, []).append(row)
    return {split: statistics.assemble_split_statistics(statistics.blocks_from_rows(rows),
                                                        pmi.get(split) or {side: {} for side in SIDES},
                                                        unlabeled.get(split, 0), duplicates.get(split, {}))
            for split, rows in sorted(per_split.items())}


# ---------------------------------------------------------------------------- step 3

SORT_KEYS = ("pair_id", "doc_id", "premise", "hypothesis")


def merge_bucket(folder: str, schema: pa.Schema) -> pa.Table:
    """The rows of one final file: every unit's Arrow file of the bucket, sorted by
    `pair_id` (then the document and texts, so that equal ids cannot reorder)."""
    import pyarrow.ipc as ipc

    tables = []
    for path, _ in (fs.list_files(folder, recursive=False) if fs.exists(folder) else []):
        with fs.open_input(path) as fh:
            tables.append(ipc.open_stream(fh).read_all())
    if not tables:
        return schema.empty_table()
    table = pa.concat_tables(tables)
    keys = [(k, "ascending") for k in SORT_KEYS if k in table.column_names]
    return table.take(pc.sort_indices(table, sort_keys=keys))


# ---------------------------------------------------------------------------- card extras

EXAMPLES_PER_LABEL = 3
LENGTH_BINS = 61  # whitespace words 0..59, the last bin 60 and more


def pick_examples(kept: pa.Table, rows, hashes, k: int = EXAMPLES_PER_LABEL) -> list[dict]:
    """The card's example pairs among a unit's kept rows (`kept_rows`' table, rows in row
    order): per label the `k` rows with the lowest hash order (``hashes``: the slim rows'
    `_h`, `stable_hash(pair_id, seed)`, given with their ``rows`` in any order), as small
    dicts. The lowest over all units (`card.merge_examples`) are then the lowest of the
    whole dataset: the same pairs whatever the units, cores or partitions."""
    if not kept.num_rows:
        return []
    order = np.argsort(np.asarray(rows, dtype=np.int64), kind="stable")
    h = np.asarray(hashes, dtype=np.int64)[order]  # aligned with `kept` (sorted by row)
    labels = np.array(kept.column("label").cast(pa.string()).to_pylist(), dtype=object)
    chosen = []
    for label in sorted({l for l in labels if l is not None}):
        at = np.flatnonzero(labels == label)
        chosen += at[np.argsort(h[at], kind="stable")[:k]].tolist()
    picked = kept.take(pa.array(chosen, pa.int64()))
    cols = {c: picked.column(c).cast(pa.string()).to_pylist() if c in picked.column_names else [None] * len(chosen)
            for c in ("pair_id", "label", "_split", "marker", "premise", "hypothesis")}
    return [{"h": int(h[i]), "pair_id": cols["pair_id"][j], "label": cols["label"][j], "split": cols["_split"][j],
             "marker": cols["marker"][j], "premise": cols["premise"][j], "hypothesis": cols["hypothesis"][j]}
            for j, i in enumerate(chosen)]


def length_histograms(stats: pa.Table, bins: int = LENGTH_BINS) -> list[list]:
    """Premise and hypothesis lengths (whitespace words) per label of a unit's `unit_statistics`
    rows, as ``[label, side, counts]`` with `bins` counts (the last bin: that many words and
    more). Histograms of many units add up (`card.merge_histograms`)."""
    rows = stats.filter(pc.equal(stats.column("kind"), "row"))
    if not rows.num_rows:
        return []
    labels = np.array(rows.column("label").to_pylist(), dtype=object)
    out = []
    for label in sorted({l for l in labels if l is not None}):
        at = labels == label
        for side in ("premise", "hypothesis"):
            words = np.minimum(rows.column(f"{side}_words").to_numpy(zero_copy_only=False)[at], bins - 1)
            out.append([label, side, np.bincount(words.astype(np.int64), minlength=bins).tolist()])
    return out
