"""Stage 3's pure per-unit functions (extractor.splits.pair_tables), without Spark: units of a
real pairs table layout, statistics that add up over units to what `trainer stats`
computes on the whole split, and output files that depend on the rows only."""
from __future__ import annotations

import hashlib
import zlib

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from extractor import statistics as st
from extractor.core.hashing import crc32s, digests
from extractor.io.parquet_writer import plain_schema
from extractor.splits import pair_tables as bt

from tests.test_splits_stage import make_pairs


@pytest.fixture(scope="module")
def pairs() -> pa.Table:
    pdf, _ = make_pairs()
    return pa.Table.from_pandas(pdf, preserve_index=False)


def _write_partitioned(table: pa.Table, folder, files_per_label: int, row_group: int) -> None:
    """A pairs table laid out as Spark writes `partitionBy("label")`: label=<v>/part-*.parquet."""
    for label in sorted(set(table.column("label").to_pylist())):
        part = table.filter(pa.compute.equal(table.column("label"), label)).drop_columns(["label"])
        step = -(-part.num_rows // files_per_label)
        for i in range(files_per_label):
            (folder / f"label={label}").mkdir(parents=True, exist_ok=True)
            pq.write_table(part.slice(i * step, step), folder / f"label={label}" / f"part-{i:05d}.parquet",
                           row_group_size=row_group)


def test_units_cover_every_row_once_with_partition_values(pairs, tmp_path, monkeypatch):
    _write_partitioned(pairs, tmp_path, files_per_label=2, row_group=40)
    (tmp_path / "_SUCCESS").write_text("")
    monkeypatch.setattr(bt, "UNIT_ROWS", 100)
    schema, units = bt.list_units(str(tmp_path))
    assert schema.names[-1] == "label" and schema.field("label").type == pa.string()
    assert all(u["rows"] <= 100 or len(u["row_groups"]) == 1 for u in units)
    assert sum(u["rows"] for u in units) == pairs.num_rows and len(units) > 8
    got = pa.concat_tables([bt.read_unit(u, schema) for u in units])
    key = ["pair_id", "label", "premise"]
    assert sorted(zip(*(got.column(k).to_pylist() for k in key))) == \
        sorted(zip(*(pairs.column(k).to_pylist() for k in key)))


def test_a_table_without_files_or_columns_is_a_one_line_error(pairs, tmp_path):
    with pytest.raises(bt.PairsTableError, match="has no Parquet file; run the pairs stage first"):
        bt.list_units(str(tmp_path))
    pq.write_table(pairs.drop_columns(["hypothesis"]), tmp_path / "part-00000.parquet")
    with pytest.raises(bt.PairsTableError, match="no column 'hypothesis'"):
        bt.list_units(str(tmp_path))


def test_unit_statistics_add_up_to_the_statistics_of_the_whole_split(pairs):
    """Three units' statistics, aggregated the way the stage aggregates them, give the
    block `statistics.split_statistics` computes on the split at once."""
    n = pairs.num_rows
    split = ["train" if i % 5 else "test" for i in range(n)]
    kept = pairs.append_column("_split", pa.array(split))
    thirds = [kept.slice(0, n // 3), kept.slice(n // 3, n // 3), kept.slice(2 * (n // 3))]
    stats = pa.concat_tables([bt.unit_statistics(t) for t in thirds])
    rows = stats.filter(pa.compute.equal(stats.column("kind"), "row")).select(["split", "label", *st.ROW_COLUMNS])
    per_split = [rows.filter(pa.compute.equal(rows.column("split"), s)) for s in ("test", "train")]
    aggregates = [r for frame in per_split for r in bt.split_aggregates(frame)]
    # the aggregates do not depend on the order in which the units' rows arrive
    for frame in per_split:
        assert bt.split_aggregates(frame) == bt.split_aggregates(frame.take(list(range(frame.num_rows))[::-1]))
    pmi = {s: bt.split_pmi(stats.filter(pa.compute.equal(stats.column("split"), s)),
                           {a["label"]: a["count"] for a in aggregates if a["split"] == s and a["label"] is not None})
           for s in ("train", "test")}
    duplicates = {s: {"pairs": 0, "sentence_pairs": 0} for s in ("train", "test")}
    got = bt.card_statistics(aggregates, pmi, duplicates)
    frame = kept.to_pandas()
    for split_name in ("train", "test"):
        part = frame[frame["_split"] == split_name]
        want = st.split_statistics(part[["premise", "hypothesis", "label"]])
        want["duplicates"] = duplicates[split_name]
        assert got[split_name] == want


def test_split_aggregates_of_a_lone_pair_and_of_pairs_without_a_label():
    """A label with one pair has no standard deviation (None in the card, not NaN); pairs
    without a label count in the whole split and as `unlabeled`, in no label's block."""
    rows = pd.DataFrame({"split": ["test"] * 4, "label": ["reasoning", "neutral", "neutral", None],
                         "premise_words": [10, 12, 14, 9], "hypothesis_words": [5, 6, 7, 8],
                         "overlap_jaccard": [0.1, 0.2, 0.3, 0.4], "lcs_ratio": [0.5, 0.5, 0.25, 0.0],
                         "new_token_rate": [0.5, 0.25, 0.75, 1.0],
                         "hypothesis_inner_capital": [False, True, False, False],
                         "overlap_jaccard_raw": [0.1, 0.1, 0.2, 0.3]})
    got = bt.card_statistics(bt.split_aggregates(pa.Table.from_pandas(rows, preserve_index=False)), {},
                             {"test": {"pairs": 0, "sentence_pairs": 0}})["test"]
    assert got["unlabeled"] == 1 and got["all"]["count"] == 4
    assert got["labels"]["reasoning"]["count"] == 1 and got["labels"]["reasoning"]["premise_words_std"] is None
    assert got["labels"]["neutral"]["premise_words_std"] == pytest.approx(2 ** 0.5)
    assert got["labels"]["neutral"]["lcs_ratio_median"] == pytest.approx(0.375)
    assert got["all"]["premise_words_mean"] == pytest.approx(11.25)


def test_output_files_depend_on_the_rows_only(pairs, tmp_path):
    """The same kept rows, cut into units two different ways and in another order, give
    byte-identical merged files."""
    n = pairs.num_rows
    schema = plain_schema(pairs.schema)
    splits = ["train" if i % 4 else "validation" for i in range(n)]
    n_files = {"train": 3, "validation": 1}

    def build(folder, cuts, order):
        for u, (start, stop) in enumerate(cuts):
            rows = [r for r in order if start <= r < stop]
            unit = pairs.slice(start, stop - start)
            kept = bt.kept_rows(unit, [r - start for r in rows], [splits[r] for r in rows])
            bt.shuffle_files(kept, str(folder), u, n_files)
        out = {}
        for split, k in n_files.items():
            for b in range(k):
                table = bt.merge_bucket(str(folder / split / f"{b:05d}"), schema)
                sink = pa.BufferOutputStream()
                pq.write_table(table, sink)
                out[(split, b)] = (table.num_rows, hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest())
        return out

    a = build(tmp_path / "a", [(0, n // 2), (n // 2, n)], list(range(n)))
    b = build(tmp_path / "b", [(0, 100), (100, 350), (350, n)], list(reversed(range(n))))
    assert a == b
    assert sum(rows for rows, _ in a.values()) == n and all(rows for rows, _ in a.values())


def test_summaries_of_a_document_of_10000_pairs(pairs):
    """One document of 10,000 pairs: one summary row per pair, every key distinct."""
    big = pd.DataFrame({"pair_id": [f"p{i}" for i in range(10_000)], "doc_id": "wiki:long", "corpus": "wiki",
                        "premise": [f"Sentence {i} of the long document." for i in range(10_000)],
                        "hypothesis": [f"Sentence {i + 1} of the long document." for i in range(10_000)],
                        "label": "neutral", "premise_ref": "wiki:long:0:1", "hypothesis_ref": "wiki:long:0:2"})
    out = bt.summaries(pa.Table.from_pandas(big, preserve_index=False), seed=3, unit=7)
    assert out.num_rows == 10_000 and set(out.column("_unit").to_pylist()) == {7}
    assert set(out.column("_pdoc").to_pylist()) == {"wiki:long"}
    assert len(set(out.column("_skey").to_pylist())) == 10_000


@pytest.mark.parametrize("prefix", [b"", b"11\x1f"])
def test_digests_are_blake2b_of_each_texts_utf8(prefix):
    """`hashing.digests` hashes slices of the Arrow data: each row is blake2b of `prefix` +
    its UTF-8 (None as "None"), on a list, a sliced array, a chunked array and texts that
    are all empty (an Arrow array without a data buffer); `hashing.crc32s` is zlib's crc32
    of the same slices, of strings and of binaries."""
    texts = ["Prin urmare, armata a trecut râul.", None, "", "ß İ ΣΊΣΥΦΟΣ", "x" * 3000, "\u3000", "None"] * 3

    def want(values):
        return [hashlib.blake2b(prefix + ("None" if v is None else v).encode("utf-8"), digest_size=16).digest()
                for v in values]

    def got(values):
        return [bytes(row) for row in digests(values, 16, prefix)]

    assert got(texts) == want(texts)
    assert got(pa.array(texts).slice(3, 11)) == want(texts[3:14])
    assert got(pa.chunked_array([pa.array(texts[:5]), pa.array(texts[5:])])) == want(texts)
    assert got(pa.array(["", ""])) == want(["", ""]) and got(pa.array([], pa.string())) == []
    # crc32s (the output files' and the document keys' buckets) over the same slices
    assert crc32s(pa.array(texts).slice(3, 11)).tolist() == [
        zlib.crc32(("None" if v is None else v).encode("utf-8")) for v in texts[3:14]]
    assert crc32s(pa.array([v.encode() for v in texts if v], pa.binary())).tolist() == [
        zlib.crc32(v.encode()) for v in texts if v]


def test_summaries_keys_hash_order_and_flags_follow_the_per_row_definitions():
    """The slim rows are computed column-wise (Arrow, one Python call per distinct token or
    text): two rows get the same `_pkey`, `_skey` or `_hkey` exactly when
    `statistics.pair_text_key` (ordered, either order) or `fold_text` of the hypothesis
    agree; `_h` is `stable_hash(pair_id, seed)`; documents come from the *_ref strings by
    the 'doc_id:para:sent' rule; `_reject` and `_test_only` as documented."""
    from extractor.core.hashing import stable_hash

    texts = ["The river rose.", "the  RIVER rose.", "The river rose. ", "Ştiu că ß.", "ştiu CĂ SS.",
             "x\u00a0y", "X Y", "", "İ", "i̇"]
    rows = []
    for i, p in enumerate(texts):
        for j, h in enumerate(texts):
            if (i * 7 + j) % 3 == 0:
                rows.append((p, h))
    n = len(rows)
    refs = ["wiki:a:b:0:1", "wiki:7:3", "no-colon", "one:colon", "", None, "a\nb:1:2", "::"]
    table = pa.table({
        "pair_id": [f"id{i}" for i in range(n)], "doc_id": [f"doc{i % 5}" for i in range(n)],
        "corpus": [("talks", "wiki", None)[i % 3] for i in range(n)],
        "premise": [p for p, _ in rows], "hypothesis": [h for _, h in rows], "label": ["neutral"] * n,
        "premise_ref": [refs[i % len(refs)] for i in range(n)], "hypothesis_ref": [refs[(i + 3) % len(refs)] for i in range(n)],
        "role": [("test-only", None, "train", None)[i % 4] for i in range(n)],
        "pos_ok": [(True, False, None, True)[i % 4] for i in range(n)],
        "keep": [(True, True, False, False, None)[i % 5] for i in range(n)]})
    out = bt.summaries(table, seed=11, test_only=frozenset({"talks"}), unit=2).to_pylist()

    def same_classes(keys, reference):
        return all((keys[a] == keys[b]) == (reference[a] == reference[b]) for a in range(n) for b in range(n))

    assert same_classes([r["_pkey"] for r in out], [st.pair_text_key(p, h) for p, h in rows])
    assert same_classes([r["_skey"] for r in out], [st.pair_text_key(p, h, ordered=False) for p, h in rows])
    assert same_classes([r["_hkey"] for r in out], [st.fold_text(h) for _, h in rows])
    assert len({r["_skey"] for r in out}) < len({r["_pkey"] for r in out}) < n  # both kinds of copies occur
    assert [r["_h"] for r in out] == [stable_hash(f"id{i}", seed=11) for i in range(n)]

    def doc(ref, own):
        head = ref.rsplit(":", 2)[0] if ref is not None and ref.count(":") >= 2 else ""
        return head or own

    assert [r["_pdoc"] for r in out] == [doc(table["premise_ref"][i].as_py(), f"doc{i % 5}") for i in range(n)]
    assert [r["_hdoc"] for r in out] == [doc(table["hypothesis_ref"][i].as_py(), f"doc{i % 5}") for i in range(n)]
    assert [r["_test_only"] for r in out] == [i % 3 == 0 or i % 4 == 0 for i in range(n)]
    expected = []
    for i in range(n):
        pos_ok, keep = (True, False, None, True)[i % 4], (True, True, False, False, None)[i % 5]
        expected.append("not_pos_ok" if not pos_ok else "not_keep" if not keep else None)
    assert [r["_reject"] for r in out] == expected
    assert {r["_unit"] for r in out} == {2} and [r["_row"] for r in out] == list(range(n))
