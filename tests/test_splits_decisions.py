"""Stage 3's global decisions (`extractor.splits.decisions`) without Spark: each function on
planted rows, and the bucketed rounds against one global sort, for any number of buckets."""
from __future__ import annotations

import math

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from extractor import statistics as st
from extractor.engine.scratch import split_by
from extractor.splits import assign as sp
from extractor.splits import pair_tables as bt
from extractor.splits import decisions as dc
from tests.splits_reference import assign_documents


def _slim(rows: list[dict]) -> pa.Table:
    base = {"_unit": 0, "corpus": "wiki", "label": "neutral", "marker": None, "source": None, "_test_only": False,
            "_reject": None, "_pkey": b"p", "_hkey": b"h"}
    full = []
    for i, r in enumerate(rows):
        row = {**base, "_row": i, "pair_id": f"p{i}", "_pdoc": r.get("doc_id"), "_hdoc": r.get("doc_id"), **r}
        full.append(row)
    return pa.Table.from_pylist(full, schema=bt.SUMMARY_SCHEMA)


def _assigned(pairs: dict) -> pa.Table:
    return pa.table({"corpus": ["wiki"] * len(pairs), "doc_id": list(pairs), "split": list(pairs.values())},
                    schema=dc.ASSIGNED_SCHEMA)


def test_rank_identical_keeps_the_test_copy_then_the_lowest_hash_and_drops_pairs_spanning_splits():
    rows = _slim([
        {"doc_id": "a", "_skey": b"s1", "_h": 5},                     # train copy of s1
        {"doc_id": "c", "_skey": b"s1", "_h": 9},                     # test copy of s1: kept
        {"doc_id": "a", "_skey": b"s1", "_h": 1, "_hdoc": "c"},      # spans train and test: dropped
        {"doc_id": "a", "_skey": b"s2", "_h": 7},                     # two train copies: lowest hash kept
        {"doc_id": "a", "_skey": b"s2", "_h": 3},
        {"doc_id": "b", "_skey": b"s3", "_h": 2},                     # alone: kept
    ])
    ranked = dc.rank_identical(rows, _assigned({"a": "train", "b": "validation", "c": "test"}))
    why = dict(zip(ranked.column("pair_id").to_pylist(), ranked.column("_why").to_pylist()))
    assert why == {"p0": "identical_pair_in_other_split", "p1": None, "p2": "pair_spans_documents_of_two_splits",
                   "p3": "identical_pair_in_same_split", "p4": None, "p5": None}
    splits = dict(zip(ranked.column("pair_id").to_pylist(), ranked.column("_split").to_pylist()))
    assert splits["p1"] == "test" and splits["p5"] == "validation"


def test_documents_get_weights_and_splits_per_corpus():
    rows = _slim([{"doc_id": "a", "_skey": b"1", "_h": 1, "label": "entailment"},
                  {"doc_id": "a", "_skey": b"2", "_h": 2, "label": "neutral", "_hdoc": "lender"},
                  {"doc_id": "b", "_skey": b"3", "_h": 3, "label": "neutral"}])
    weights = dc.document_weights(rows)
    got = {(d, l): w for d, l, w in zip(*(weights.column(c).to_pylist() for c in ("doc_id", "label", "w")))}
    assert got == {("a", "entailment"): 1, ("a", "neutral"): 1, ("b", "neutral"): 1, ("lender", "neutral"): 0}
    assigned = dc.assign_corpus(weights, ["entailment", "neutral"], (0.8, 0.1, 0.1), seed=0)
    assert sorted(assigned.column("doc_id").to_pylist()) == ["a", "b", "lender"]  # a lender gets a split too
    assert set(assigned.column("split").to_pylist()) <= set(sp.SPLITS)


def test_assign_corpus_gives_the_assignment_of_assign_documents():
    """The stage's column-wise assignment (one group-by, numpy) visits the documents in the
    order of `assign_documents` (tests/splits_reference.py), the pandas definition, and gives each the same
    split: documents spread over several units, lenders (weight 0), a label outside the
    list (counts 0), rows without a label (not assigned unless labelled elsewhere),
    test-only documents, hash ties broken by doc_id."""
    import pandas as pd

    rng = random.Random(5)
    labels = ["contrasting", "entailment", "neutral"]
    rows = []
    for d in range(400):
        doc = f"d{d:03d}" if d % 50 else "tie"  # the same doc_id in two corpora: the same hash
        corpus = "news" if d % 50 == 0 and d % 100 else "wiki"
        for _ in range(rng.randrange(1, 4)):  # rows from several units repeat a (doc, label)
            label = rng.choice(labels + ["reasoning", None])
            rows.append({"corpus": corpus, "doc_id": doc, "label": label, "w": rng.choice([0, 1, 2, 5]),
                         "test_only": d % 37 == 0 and label is None})
    weights = pa.Table.from_pylist(rows, schema=dc.WEIGHTS_SCHEMA)
    for seed in (0, 9):
        for corpus in ("wiki", "news", None):  # None: both corpora in one call, "tie" in each
            part = weights if corpus is None else weights.filter(pa.compute.equal(weights.column("corpus"), corpus))
            got = dc.assign_corpus(part, labels, (0.7, 0.2, 0.1), seed)
            frame = part.to_pandas()
            held = frame[frame["label"].notna()].drop_duplicates(["corpus", "doc_id"])[["corpus", "doc_id"]]
            counts = (frame[frame["label"].isin(labels)].groupby(["corpus", "doc_id", "label"])["w"].sum()
                      .unstack("label").reindex(columns=labels).fillna(0))
            counts.columns = [f"n_{i:03d}" for i in range(len(labels))]
            flags = frame.groupby(["corpus", "doc_id"])["test_only"].any().rename("test_only").reset_index()
            docs = (held.merge(counts.reset_index(), on=["corpus", "doc_id"], how="left").fillna(0)
                    .merge(flags, on=["corpus", "doc_id"]).sort_values(["corpus", "doc_id"]))
            want = assign_documents(docs, (0.7, 0.2, 0.1), seed)
            assert got.to_pandas().equals(want.reset_index(drop=True)), (seed, corpus)
            assert got.num_rows == len(held) > 0


def _random_slim(n: int, seed: int) -> pa.Table:
    rng = random.Random(seed)
    rows = [{"doc_id": f"d{rng.randrange(n // 5)}", "_skey": bytes([rng.randrange(256) for _ in range(16)]),
             "_h": rng.randrange(1 << 63), "label": rng.choice(["contrasting", "entailment", "neutral"]),
             "corpus": rng.choice(["wiki", "news"])} for _ in range(n)]
    for r in rows[: n // 10]:  # a few pairs share their hash order: the tie goes to pair_id, unit, row
        r["_h"] = 42
    return _slim(rows)


@pytest.mark.parametrize("buckets", [1, 3, 8])
def test_bucketed_quotas_take_exactly_the_lowest_hashes_of_each_group(buckets):
    """Rounds 3-5 over any number of buckets keep the rows one global sort by
    (_h, pair_id, unit, row) within (split, corpus, label) would keep, up to the quota."""
    table = _random_slim(6000, seed=buckets)
    split = pa.array(["train", "validation", "test"] * 2000)
    kept_all = table.select(list(dc.RANKED_COLUMNS)).append_column("_split", split)
    counts = {tuple(r[:3]): r[3] for r in dc.tally(kept_all, list(dc.GROUP))}
    rng = random.Random(7)
    quotas = {g: rng.choice([0, n // 3, n - 1, n, n + 5]) for g, n in counts.items()}
    parts = split_by(kept_all, dc.key_buckets(kept_all.column("_skey"), buckets))
    cuts = dc.cut_points([h for p in parts.values() for h in dc.histogram(p)], quotas)
    last = dc.thresholds([r for p in parts.values() for r in dc.boundary_rows(p, cuts)], cuts)
    got = sorted(x for p in parts.values() for x in dc.within_quota(p, cuts, last).column("pair_id").to_pylist())
    order = kept_all.take(pc.sort_indices(kept_all, sort_keys=[(k, "ascending") for k in dc.ORDER]))
    taken: dict = {}
    want = []
    for g, pid in zip(zip(*(order.column(c).to_pylist() for c in dc.GROUP)), order.column("pair_id").to_pylist()):
        if taken.get(g, 0) < quotas[g]:
            taken[g] = taken.get(g, 0) + 1
            want.append(pid)
    assert got == sorted(want)
    assert len(got) == sum(min(q, counts[g]) for g, q in quotas.items())


def test_leakage_report_finds_keys_in_two_splits_and_repeats_within_one():
    """Planted keys (the stage's own output has none to find): a document in train and
    test, a pair repeated in train, a sentence pair and a hypothesis in train and
    validation; the same counts whatever the buckets."""
    rows = [("d1", b"p1", b"s1", b"h1", "train"), ("d1", b"p2", b"s2", b"h2", "test"),
            ("d2", b"p3", b"s3", b"h1", "train"), ("d2", b"p3", b"s3", b"h3", "train"),
            ("d3", b"p4", b"s4", b"h1", "validation"), ("d4", b"p5", b"s1", b"h4", "validation"),
            ("d1", b"p1", b"s1", b"h1", "train")]
    doc, pkey, skey, hkey, split = (pa.array(c) for c in zip(*rows))
    counted = []
    for kind, keys in (("documents", pc.cast(doc, pa.binary())), ("pairs", pkey), ("sentence_pairs", skey),
                       ("hypotheses", hkey)):
        table = pa.table({"k": keys, "s": split})
        for part in split_by(table, np.array([zlib_bucket(k) for k in keys.to_pylist()])).values():
            counted += dc.leakage_counts(kind, part.column("k"), part.column("s"))
    leakage, duplicates = dc.leakage_report(counted)
    assert leakage["checks"] == {"documents_in_two_splits": 1, "pairs_in_two_splits": 0,
                                 "sentence_pairs_in_two_splits": 1, "hypotheses_in_two_splits": 1}
    assert leakage["between_splits"]["train|test"] == {"documents": 1, "pairs": 0, "sentence_pairs": 0,
                                                       "hypotheses": 0}
    assert leakage["between_splits"]["train|validation"] == {"documents": 0, "pairs": 0, "sentence_pairs": 1,
                                                             "hypotheses": 1}
    assert duplicates == {"train": {"pairs": 2, "sentence_pairs": 2}, "validation": {"pairs": 0, "sentence_pairs": 0},
                          "test": {"pairs": 0, "sentence_pairs": 0}}


def zlib_bucket(key: bytes) -> int:
    import zlib

    return zlib.crc32(key) % 3


def test_other_keys_are_distinct_and_count_documents_per_corpus():
    kept = pa.table({"doc_id": ["a", "a", "b", "c"], "_hkey": [b"h1", b"h1", b"h2", b"h1"],
                     "_pkey": [b"p1", b"p2", b"p2", b"p3"], "_skey": [b"s1", b"s2", b"s2", b"s1"],
                     "_split": ["train", "train", "train", "test"], "corpus": ["wiki", "wiki", "wiki", "news"]})
    keys = dc.other_keys(kept)
    kinds = keys.column("kind").to_pylist()
    # hypotheses h1 train, h2 train, h1 test; documents a, b, c: distinct; pair keys one per row
    assert [kinds.count(k) for k in ("hypotheses", "documents", "pairs", "sentence_pairs")] == [3, 3, 4, 4]
    assert dc.documents_per_corpus(keys) == [["test", "news", 1], ["train", "wiki", 2]]
    # the keys of one bucket come from many ranges of rows: a document counts once
    twice = pa.concat_tables([keys, dc.other_keys(kept.slice(0, 1))])
    assert dc.documents_per_corpus(twice) == [["test", "news", 1], ["train", "wiki", 2]]
    # leakage from the keys, as the last round counts it: s1 is in train and test, h1 too,
    # p2 twice in train (a repeated pair), s2 twice in train
    rows = []
    for kind in dc.LEAKAGE_KINDS:
        part = keys.filter(pa.compute.equal(keys.column("kind"), kind))
        rows += dc.leakage_counts(kind, part.column("key"), part.column("split"))
    leakage, duplicates = dc.leakage_report(rows)
    assert leakage["checks"] == {"documents_in_two_splits": 0, "pairs_in_two_splits": 0,
                                 "sentence_pairs_in_two_splits": 1, "hypotheses_in_two_splits": 1}
    assert duplicates["train"] == {"pairs": 1, "sentence_pairs": 1} and duplicates["test"]["pairs"] == 0


def test_split_pmi_sums_units_and_leaves_out_rare_words():
    """Word rows of several units add up per (side, label, word); a word held by fewer than
    PMI_MIN_COUNT texts of the split (all labels) is not scored; the premise side is
    scored on its own rows."""
    rows = [("hypothesis", "neutral", "river", 3), ("hypothesis", "neutral", "river", 1),
            ("hypothesis", "entailment", "river", 2), ("hypothesis", "neutral", "rare", 4),
            ("premise", "entailment", "bank", 5)]
    stats = pa.Table.from_pylist(
        [{"kind": "word", "split": "train", "side": s, "label": l, "word": w, "n": n} for s, l, w, n in rows]
        + [{"kind": "row", "split": "train", "label": "neutral"}], schema=bt.STATS_SCHEMA)
    got = bt.split_pmi(stats, {"neutral": 8, "entailment": 8})
    river = {"word": "river", "pmi": round(math.log(((4 + 1) / (6 + 2)) / (8 / 16)), 4), "count": 4, "word_count": 6}
    assert got["hypothesis"] == {"entailment": [], "neutral": [river]}
    assert got["premise"]["entailment"][0]["word"] == "bank" and got["premise"]["neutral"] == []


@pytest.mark.parametrize("top_k,min_count", [(10, 5), (3, 1), (40, 2)])
def test_split_pmi_scores_only_the_contenders_with_the_result_of_all_rows(top_k, min_count):
    """`split_pmi` hands `pmi_table` only the rows of words among a label's top candidates
    (`_pmi_contenders`): on 20,000 words of Zipf-like counts in four labels and two units,
    with many tied scores, the result is `pmi_table`'s over every summed row."""
    rng = np.random.default_rng(11)
    labels = ["contrasting", "entailment", "reasoning", "neutral"]
    rows = []
    for side in ("hypothesis", "premise"):
        for w in range(20000):
            for label in labels:
                n = int(rng.zipf(1.6)) if rng.random() < 0.4 else 0
                if n:
                    for unit_part in (n // 2, n - n // 2):  # two units' rows of the word
                        if unit_part:
                            rows.append({"kind": "word", "split": "train", "side": side, "label": label,
                                         "word": f"w{w % 7000}-{w}" if w % 3 else f"t{n}", "n": unit_part})
    stats = pa.Table.from_pylist(rows, schema=bt.STATS_SCHEMA)
    totals = {"contrasting": 30000, "entailment": 25000, "reasoning": 25000, "neutral": 30000}
    got = bt.split_pmi(stats, totals, top_k=top_k, min_count=min_count)
    summed = stats.group_by(["side", "label", "word"]).aggregate([("n", "sum")])
    for side in ("hypothesis", "premise"):
        part = summed.filter(pc.equal(summed.column("side"), side))
        want = st.pmi_table(part.column("label").to_pylist(), part.column("word").to_pylist(),
                            part.column("n_sum").to_pylist(), totals, k=top_k, min_count=min_count)
        assert got[side] == want and all(len(v) == top_k for v in want.values())


def test_key_buckets_are_the_first_four_bytes_of_each_key():
    """A digest key's bucket is its first four bytes, big-endian, modulo the buckets: on
    sliced and chunked arrays too; a key shorter than four bytes is an error."""
    rng = np.random.default_rng(2)
    keys = pa.array([bytes(rng.integers(0, 256, 4 + i % 29, dtype=np.uint8)) for i in range(3000)], pa.binary())
    for arr in (keys, keys.slice(11, 500), pa.chunked_array([keys.slice(0, 7), keys.slice(7)])):
        values = arr.to_pylist()
        for n in (1, 7, 1 << 31):
            assert dc.key_buckets(arr, n).tolist() == [int.from_bytes(v[:4], "big") % n for v in values]
    with pytest.raises(ValueError):
        dc.key_buckets(pa.array([b"abcd", b"abc"], pa.binary()), 3)
