"""Pure split logic: ratios and balance flags, whole-document assignment, quotas."""
from __future__ import annotations

import pandas as pd
import pytest

from extractor.splits import assign as sp
from tests.splits_reference import assign_documents


def test_parse_ratios_and_errors():
    assert sp.parse_ratios("0.8,0.1,0.1") == (0.8, 0.1, 0.1)
    assert sp.parse_ratios("0.7, 0.15 ,0.15") == (0.7, 0.15, 0.15)
    for bad in ("0.8,0.1", "0.8,0.1,0.2", "a,b,c", "1.2,-0.1,-0.1"):
        with pytest.raises(sp.SplitsError, match="--split-ratios"):
            sp.parse_ratios(bad)


def test_parse_balance():
    assert sp.parse_balance(["downsample"]) == sp.Balance("downsample")
    assert sp.parse_balance("none") == sp.Balance("none")
    assert sp.parse_balance(["cap", "500"]) == sp.Balance("cap", 500)
    assert sp.parse_balance("cap=20") == sp.Balance("cap", 20)
    for bad in (["cap"], ["cap", "0"], ["cap", "x"], ["balanced"]):
        with pytest.raises(sp.SplitsError, match="--balance"):
            sp.parse_balance(bad)


def _docs(n=400, corpus="wiki", test_only=False):
    return pd.DataFrame({"corpus": corpus, "doc_id": [f"{corpus}:{i}" for i in range(n)],
                         "n_pairs": [1 + (i * 7) % 13 for i in range(n)], "test_only": test_only})


def test_assignment_hits_ratios_in_pairs_and_is_whole_and_deterministic():
    docs = _docs()
    out = assign_documents(docs, (0.8, 0.1, 0.1), seed=0)
    assert out["doc_id"].is_unique and set(out["doc_id"]) == set(docs["doc_id"])
    share = docs.merge(out, on=["corpus", "doc_id"]).groupby("split")["n_pairs"].sum() / docs["n_pairs"].sum()
    assert share["train"] == pytest.approx(0.8, abs=0.02)
    assert share["validation"] == pytest.approx(0.1, abs=0.02)
    assert share["test"] == pytest.approx(0.1, abs=0.02)
    # input row order does not matter; the seed does
    shuffled = assign_documents(docs.sample(frac=1, random_state=3), (0.8, 0.1, 0.1), seed=0)
    pd.testing.assert_frame_equal(out.sort_values("doc_id").reset_index(drop=True),
                                  shuffled.sort_values("doc_id").reset_index(drop=True))
    other = assign_documents(docs, (0.8, 0.1, 0.1), seed=1)
    changed = other.set_index("doc_id")["split"].sort_index() != out.set_index("doc_id")["split"].sort_index()
    assert changed.sum() > 20


def test_small_corpus_still_gets_every_split_and_test_only_goes_to_test():
    out = assign_documents(_docs(12), (0.8, 0.1, 0.1), seed=0)
    assert set(out["split"]) == {"train", "validation", "test"}
    only = assign_documents(_docs(30, "talks", True), (0.8, 0.1, 0.1), seed=0)
    assert set(only["split"]) == {"test"}


def test_largest_remainder():
    assert sp.largest_remainder({"a": 10, "b": 5}, 100) == {"a": 10, "b": 5}
    got = sp.largest_remainder({"a": 70, "b": 20, "c": 10}, 15)
    assert sum(got.values()) == 15 and got == {"a": 11, "b": 3, "c": 1}  # 10.5, 3, 1.5: tie to "a"
    got = sp.largest_remainder({"a": 1, "b": 1, "c": 1}, 2)
    assert got == {"a": 1, "b": 1, "c": 0}  # ties go to the smaller key


COUNTS = {("train", "wiki", "contrasting"): 300, ("train", "wiki", "reasoning"): 900,
          ("train", "wiki", "neutral"): 1000, ("train", "wiki", "entailment"): 120,
          ("test", "wiki", "contrasting"): 40, ("test", "wiki", "reasoning"): 90,
          ("test", "wiki", "neutral"): 100, ("test", "wiki", "entailment"): 20,
          ("test", "news", "contrasting"): 5, ("test", "news", "reasoning"): 9, ("test", "news", "neutral"): 9}
LABELS = ["contrasting", "entailment", "neutral", "reasoning"]


def test_downsample_per_split_and_corpus_with_eval_cap():
    q = sp.compute_quotas(COUNTS, sp.Balance("downsample"), LABELS, max_eval_per_corpus=60)
    assert {q[("train", "wiki", l)] for l in LABELS} == {120}
    assert {q[("test", "wiki", l)] for l in LABELS} == {15}   # min(20, 60 // 4)
    # news has no entailment in test: ESNLIR's per-corpus balance empties that group
    assert {q[("test", "news", l)] for l in LABELS} == {0}
    drops = sp.quota_drops(COUNTS, q)
    assert drops["train"]["neutral"] == 880 and drops["test"]["contrasting"] == 25 + 5


def test_none_keeps_distribution_and_stratifies_eval_down_to_the_cap():
    q = sp.compute_quotas(COUNTS, sp.Balance("none"), LABELS, max_eval_per_corpus=125)
    assert q[("train", "wiki", "neutral")] == 1000  # train is not capped
    test_wiki = {l: q[("test", "wiki", l)] for l in LABELS}
    assert sum(test_wiki.values()) == 125
    assert test_wiki == {"contrasting": 20, "entailment": 10, "neutral": 50, "reasoning": 45}
    assert sum(q[("test", "news", l)] for l in LABELS) == 23  # under the cap: all kept


def test_cap_n_per_label_and_split_across_corpora():
    q = sp.compute_quotas(COUNTS, sp.Balance("cap", 50), LABELS, max_eval_per_corpus=None)
    for split in ("train", "test"):
        for label in LABELS:
            total = sum(n for (s, c, l), n in q.items() if s == split and l == label)
            avail = sum(n for (s, c, l), n in COUNTS.items() if s == split and l == label)
            assert total == min(50, avail)
    # split over corpora in proportion: test/neutral 100 wiki + 9 news -> 46 + 4
    assert (q[("test", "wiki", "neutral")], q[("test", "news", "neutral")]) == (46, 4)


def test_small_corpus_assignment_is_stratified_by_label():
    # the shape of a small corpus (the first bundled Romanian sample): 12 documents, ~6 pairs each, labels uneven
    rows = [(2, 2, 3, 2), (2, 1, 2, 2), (1, 1, 1, 2), (2, 1, 2, 1), (1, 1, 2, 2), (1, 1, 1, 2),
            (0, 2, 1, 1), (1, 1, 0, 3), (1, 1, 1, 1), (1, 1, 5, 2), (2, 1, 2, 1), (0, 1, 1, 2)]
    docs = pd.DataFrame(rows, columns=["n_0", "n_1", "n_2", "n_3"])
    docs.insert(0, "doc_id", [f"ro:{100 + i}" for i in range(len(rows))])
    docs.insert(0, "corpus", "ro")
    docs["test_only"] = False
    for seed in range(5):
        out = docs.merge(assign_documents(docs, (0.8, 0.1, 0.1), seed=seed), on=["corpus", "doc_id"])
        per_split = out.groupby("split")[["n_0", "n_1", "n_2", "n_3"]].sum()
        assert set(per_split.index) == {"train", "validation", "test"}
        # every label present in every split, so `downsample` keeps something everywhere
        assert (per_split > 0).all().all(), (seed, per_split)
        assert per_split.loc["train"].sum() >= 0.7 * docs[["n_0", "n_1", "n_2", "n_3"]].to_numpy().sum()


def test_per_label_ratios_hold_on_a_large_corpus():
    docs = _docs(2000)
    docs["n_rare"] = [1 if i % 17 == 0 else 0 for i in range(len(docs))]
    out = docs.merge(assign_documents(docs, (0.8, 0.1, 0.1), seed=7), on=["corpus", "doc_id"])
    rare = out.groupby("split")["n_rare"].sum() / out["n_rare"].sum()
    assert rare["test"] == pytest.approx(0.1, abs=0.02) and rare["train"] == pytest.approx(0.8, abs=0.02)


def _summaries(premises, hypotheses, seed=0, **columns):
    import pyarrow as pa

    from extractor.splits.pair_tables import summaries

    n = len(premises)
    table = pa.table({"pair_id": [f"p{i}" for i in range(n)], "doc_id": ["d:1"] * n, "corpus": ["c"] * n,
                      "premise": premises, "hypothesis": hypotheses, "label": ["neutral"] * n, **columns})
    return summaries(table, seed).to_pydict()


def test_summary_keys_fold_case_space_and_order():
    k = _summaries(["The  River", "the bridge"], ["the bridge", "The river"])
    assert k["_skey"][0] == k["_skey"][1] and k["_pkey"][0] != k["_pkey"][1]
    assert k["_hkey"][0] != k["_hkey"][1] and all(len(v) == 16 for v in k["_hkey"])
    assert all(len(v) == 32 for v in k["_skey"] + k["_pkey"])  # the two texts' digests
    assert k["_h"] != _summaries(["x", "y"], ["z", "w"], seed=1)["_h"]
    assert k["_unit"] == [0, 0] and k["_row"] == [0, 1]


def test_summary_rejects_rows_kept_for_inspection_and_marks_test_only_roles():
    k = _summaries(["a", "b", "c", "d"], ["e", "f", "g", "h"], pos_ok=[True, False, None, True],
                   keep=[True, True, True, False], role=["train", None, "test-only", "train"])
    assert k["_reject"] == [None, "not_pos_ok", "not_pos_ok", "not_keep"]
    assert k["_test_only"] == [False, False, True, False]


def test_split_settings_fail_when_the_command_line_is_parsed():
    import argparse

    from extractor.splits import stage as splits_stage

    parser = argparse.ArgumentParser()
    splits_stage.add_arguments(parser)
    for bad in (["--split-ratios", "0.8,0.3,0.1"], ["--max-eval-per-corpus", "-3"]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
    args = parser.parse_args(["--balance", "cap", "zero"])
    with pytest.raises(ValueError, match="--balance"):
        splits_stage.Options.from_args(args)


def test_levers_name_what_would_fill_a_small_corpus_s_splits():
    # the counts of a 300 KB slice of the Romanian news (the job's splits stage, --balance downsample)
    counts = {("train", "news", "contrasting"): 3, ("train", "news", "entailment"): 1, ("train", "news", "neutral"): 6,
              ("train", "news", "reasoning"): 4, ("validation", "news", "neutral"): 2,
              ("validation", "news", "reasoning"): 1, ("test", "news", "neutral"): 1, ("test", "news", "reasoning"): 1}
    labels = ["contrasting", "entailment", "neutral", "reasoning"]
    way = sp.levers(counts, labels, "downsample", (0.8, 0.1, 0.1), ["extended"])
    assert way == ("--balance none: train 14 / validation 3 / test 2 pairs; --split-ratios 0.6,0.2,0.2: larger "
                   "validation and test shares; --phrase-set extended: more of the lexicon's phrases; "
                   "more text (--input)")
    # already natural, already large shares, no phrase set left, no pair at all: only more text helps
    assert sp.levers(counts, labels, "none", (0.6, 0.2, 0.2)).startswith("--phrase-set") is False
    assert sp.levers({}, labels, "downsample", (0.8, 0.1, 0.1)) == "more text (--input)"
