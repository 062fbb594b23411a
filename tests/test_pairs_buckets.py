"""Stage 2's per-bucket global steps (`extractor.pairs.buckets`) without Spark: identical
pairs, tallies, neutral candidates against marked pairs, and the exact draw over any
number of buckets against one global sort."""
from __future__ import annotations

import random

import pyarrow as pa
import pytest

from extractor.pairs import sentence_passes as bt
from extractor.pairs import buckets as pb
from extractor.pairs import neutral as nt
from extractor.scratch import split_by


def _rows(rows: list[dict]) -> pa.Table:
    base = {"corpus": "wiki", "doc_id": "d", "label": "neutral", "source": "both_random", "kind": "pair",
            "reject": None, "n": 0, "copies": 1, "bin": 0, "select": 0, "phrase": None, "premise_stripped": False}
    return pa.Table.from_pylist([{**base, **r} for r in rows], schema=bt.WORK)


def test_identical_texts_rank_by_pair_id_and_tally_with_their_copies():
    rows = _rows([{"pair_id": "b", "premise": "P one.", "hypothesis": "H one.", "label": "reasoning", "copies": 3},
                  {"pair_id": "a", "premise": "P one.", "hypothesis": "H one.", "label": "reasoning"},
                  {"pair_id": "c", "premise": "P two.", "hypothesis": "H one.", "label": "reasoning"}])
    ranked = pb.rank_identical(rows)
    assert list(zip(ranked.column("pair_id").to_pylist(), ranked.column("bin").to_pylist())) == \
        [("a", 1), ("b", 2), ("c", 1)]
    tallies = sorted(pb.marked_tallies(ranked), key=repr)
    # (corpus, label, phrase, stripped, reject, n, duplicate, rows, copies)
    assert tallies == [("wiki", "reasoning", None, False, None, 0, False, 2, 2),
                       ("wiki", "reasoning", None, False, None, 0, True, 1, 3)]


def test_pass_counts_sum_per_kind_and_name_the_document_of_an_edge():
    rows = _rows([{"pair_id": "x", "premise": "a", "hypothesis": "b"},
                  {"kind": "marked", "label": "reasoning", "n": 4}, {"kind": "marked", "label": "reasoning", "n": 1},
                  {"kind": "edge", "doc_id": "wiki:7", "n": 1}, {"kind": "doc", "doc_id": "wiki:7", "n": 9}])
    counts = sorted(pb.pass_counts(rows), key=repr)
    assert counts == [("edge", "wiki", "neutral", None, 0, "wiki:7", 1), ("marked", "wiki", "reasoning", None, 0, None, 5)]


def test_neutral_candidates_identical_to_a_marked_pair_or_to_each_other_are_left_out():
    marked = _rows([{"pair_id": "m", "premise": "Same.", "hypothesis": "Pair.", "source": "marker"}])
    cands = _rows([{"pair_id": "n1", "premise": "Same.", "hypothesis": "Pair.", "select": 5},
                   {"pair_id": "n3", "premise": "Other.", "hypothesis": "Pair.", "select": 7},
                   {"pair_id": "n2", "premise": "Other.", "hypothesis": "Pair.", "select": 9}])
    tallies, pool = pb.neutral_round(cands, marked, model=None, lexicon=None)
    assert pool.column("pair_id").to_pylist() == ["n2"]
    # (corpus, source, reject, rank when it counts, selection bin, rows, verdicts asked)
    assert sorted(tallies, key=repr) == [("wiki", "both_random", None, 1, 0, 1, 0), ("wiki", "both_random", None, 2, 0, 1, 0),
                                         ("wiki", "both_random", None, None, 0, 1, 0)]


@pytest.mark.parametrize("buckets", [1, 4, 9])
def test_the_draw_takes_the_lowest_selection_hashes_of_each_group_over_any_buckets(buckets):
    rng = random.Random(buckets)
    rows = []
    for i in range(5000):
        select = rng.randrange(1 << 63) if i % 10 else (123 << (63 - nt.BIN_BITS))  # a crowded bin, ties on select
        rows.append({"pair_id": f"p{i:05d}", "premise": f"P {i}.", "hypothesis": f"H {i}.", "select": select,
                     "corpus": rng.choice(["wiki", "news"]), "source": rng.choice(["both_random", "first_random"])})
    pool = _rows(rows)
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["corpus"], r["source"]), []).append((r["select"], r["pair_id"]))
    wanted = {key: rng.choice([0, 1, len(v) // 3, len(v), len(v) + 10]) for key, v in groups.items()}
    bins: dict = {}
    for key, values in groups.items():
        for select, _ in values:
            b = select >> (63 - nt.BIN_BITS)
            bins.setdefault(key, {})[b] = bins.get(key, {}).get(b, 0) + 1
    cuts = pb.cut_points(bins, wanted)
    parts = split_by(pool, pb.text_buckets(pool, buckets)).values()
    last = pb.last_taken([r for p in parts for r in pb.boundary_rows(p, cuts)], cuts)
    got = sorted(x for p in parts for x in pb.drawn(p, cuts, last).column("pair_id").to_pylist())
    want = sorted(pid for key, values in groups.items() for _, pid in sorted(values)[:wanted[key]])
    assert got == want
