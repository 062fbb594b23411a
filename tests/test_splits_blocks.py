"""Blocks (docs/splits.md "Blocks"): when whole documents leave a split short of a label,
stage 3 assigns runs of consecutive paragraphs instead. Pure functions first (no Spark),
then the stage's rounds in one process on real ELTeC novels."""
from __future__ import annotations

import re

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import shared_file
from extractor.neardup.settings import Settings
from extractor.engine.runner import InProcessRunner
from extractor.core.hashing import stable_hex
from extractor.splits import assign as sp
from extractor.splits import card as card_mod
from extractor.splits import decisions as dc
from extractor.splits import pair_tables as bt
from extractor.splits.plan import SplitsPlan, SplitsScratch
from tests.one_process import run_rounds

LABELS = ["contrasting", "entailment", "reasoning", "neutral"]


def test_block_starts_cut_between_paragraphs_at_about_the_size():
    # paragraphs 0, 1, 2, 5, 9 hold 2, 1, 3, 1, 4 pairs; blocks of at least 3 pairs
    assert sp.block_starts([0, 1, 2, 5, 9], [2, 1, 3, 1, 4], 3) == [0, 2, 5]
    assert sp.block_starts([], [], 3) == [0]  # a document lending sentences only: one block
    assert sp.block_starts([4, 7], [10, 10], 1) == [0, 7]


def test_block_size_gives_the_smallest_split_about_ten_blocks():
    assert sp.block_size(1000, (0.8, 0.1, 0.1)) == 10
    assert sp.block_size(5, (0.8, 0.1, 0.1)) == 1


def test_shortfall_names_the_split_and_label_whole_documents_starve():
    counts = [[50, 10], [40, 0]]  # two large documents, both in train
    assert sp.shortfall(counts, ["train", "train"], (0.8, 0.1, 0.1)) == [
        ("validation", 0), ("validation", 1), ("test", 0), ("test", 1)]
    assert sp.shortfall(counts, ["train", "test"], (0.5, 0.0, 0.5)) == [("test", 1)]
    assert sp.shortfall([[1, 0]], ["train"], (0.8, 0.1, 0.1)) == []  # a tenth of a pair is no target


def test_missing_labels_per_split():
    counts = {("train", "c", "neutral"): 5, ("train", "c", "reasoning"): 5, ("test", "c", "neutral"): 2}
    quotas = {("train", "c", "neutral"): 5, ("train", "c", "reasoning"): 5, ("test", "c", "neutral"): 0}
    assert sp.missing_labels(counts, quotas, ["neutral", "reasoning"], (0.8, 0.1, 0.1)) == {
        "validation": ["neutral", "reasoning"], "test": ["neutral", "reasoning"]}


def _slim(rows):
    base = {"_unit": 0, "corpus": "c", "marker": None, "source": None, "_test_only": False, "_reject": None}
    full = [dict(base, _row=i, _h=i, pair_id=f"p{i}", _pkey=bytes([i]) * 16, _skey=bytes([i]) * 16,
                 _hkey=bytes([i]) * 16, **r) for i, r in enumerate(rows)]
    return pa.Table.from_pylist(full, schema=bt.SUMMARY_SCHEMA)


def test_a_pair_straddling_blocks_of_two_splits_is_dropped_and_counted():
    rows = _slim([
        dict(doc_id="d", _pdoc="d", _hdoc="d", _ppara=1, _hpara=1, label="reasoning"),  # block 0
        dict(doc_id="d", _pdoc="d", _hdoc="d", _ppara=1, _hpara=8, label="neutral"),  # blocks of two splits
        dict(doc_id="d", _pdoc="d", _hdoc="d", _ppara=6, _hpara=9, label="neutral"),  # two blocks, one split
    ])
    paragraphs = dc.paragraph_weights(rows)
    blocks = dc.cut_blocks(paragraphs, 1)
    # a pair weighs in its hypothesis's paragraph: 1 | 8 | 9 (6 only lends a premise)
    assert blocks.column("start").to_pylist() == [0, 8, 9]
    keyed = dc.with_blocks(rows, blocks)
    assert keyed.column("doc_id").to_pylist() == ["d#p0", "d#p8", "d#p9"]
    assert keyed.column("_pdoc").to_pylist() == ["d#p0", "d#p0", "d#p0"]
    assigned = pa.table({"corpus": ["c"] * 3, "doc_id": ["d#p0", "d#p8", "d#p9"], "split": ["train", "test", "train"]},
                        schema=dc.ASSIGNED_SCHEMA)
    why = dc.rank_identical(keyed, assigned, frozenset({"c"})).sort_by("_row").column("_why").to_pylist()
    assert why == [None, "pair_spans_blocks_of_two_splits", None]
    # without blocks, the document is one unit and nothing straddles
    whole = pa.table({"corpus": ["c"], "doc_id": ["d"], "split": ["train"]}, schema=dc.ASSIGNED_SCHEMA)
    assert dc.rank_identical(rows, whole).column("_why").to_pylist() == [None] * 3


def test_a_private_second_random_premise_follows_its_pair_into_the_hypothesis_block():
    rows = _slim([
        dict(doc_id="d", _pdoc="d", _hdoc="d", _ppara=1, _hpara=1, label="reasoning", source="marker"),
        dict(doc_id="d", _pdoc="d", _hdoc="d", _ppara=1, _hpara=8, label="neutral", source="second_random"),
        dict(doc_id="d", _pdoc="d", _hdoc="d", _ppara=1, _hpara=8, label="neutral", source="first_random"),
    ])
    blocks = dc.cut_blocks(dc.paragraph_weights(rows), 1)
    assigned = pa.table({"corpus": ["c"] * 2, "doc_id": ["d#p0", "d#p8"], "split": ["train", "test"]},
                        schema=dc.ASSIGNED_SCHEMA)
    keyed = dc.with_blocks(rows, blocks, frozenset({"c"}))
    # the unused premise of second_random takes the hypothesis's block; a marked premise never does
    assert keyed.column("_pdoc").to_pylist() == ["d#p0", "d#p8", "d#p0"]
    why = dc.rank_identical(keyed, assigned, frozenset({"c"})).sort_by("_row").column("_why").to_pylist()
    assert why == [None, None, "pair_spans_blocks_of_two_splits"]
    # another corpus (or none known): the premise keeps its own block and the pair goes
    assert dc.with_blocks(rows, blocks, frozenset({"other"})).column("_pdoc").to_pylist() == ["d#p0"] * 3


def test_premises_are_private_only_where_second_random_is_the_only_unused_draw():
    allocated = {"ro": {"second_random": 40, "first_random": 0},
                 "es": {"second_random": 10, "first_random": 10, "marked_different_paragraphs": 5},
                 "en": {"second_random": 10, "adjacent_unmarked": 3},
                 "x": {"marked_different_paragraphs": 5, "second_random": 2}}
    assert sp.private_premise_corpora(allocated) == frozenset({"ro", "x"})
    assert sp.private_premise_corpora(None) == frozenset()


def test_block_weights_sum_a_documents_pairs_per_block():
    rows = _slim([dict(doc_id="d", _pdoc="d", _hdoc="d", _ppara=p, _hpara=p, label=l)
                  for p, l in ((0, "neutral"), (0, "reasoning"), (3, "neutral"), (7, "neutral"))])
    paragraphs = dc.paragraph_weights(rows)
    blocks = dc.cut_blocks(paragraphs, 2)
    weights = dc.block_weights(paragraphs, blocks).sort_by([("doc_id", "ascending"), ("label", "ascending")])
    assert weights.select(["doc_id", "label", "w"]).to_pylist() == [
        {"doc_id": "d#p0", "label": "neutral", "w": 1}, {"doc_id": "d#p0", "label": "reasoning", "w": 1},
        {"doc_id": "d#p3", "label": "neutral", "w": 2}]


def test_card_says_where_blocks_were_used_and_which_labels_a_split_lacks():
    stats = {"unit": {"a": {"unit": "document"},
                      "b": {"unit": "block", "pairs_per_block": 7, "blocks": 40, "documents": 2}},
             "missing_labels": {"test": ["contrasting"]}}
    assert card_mod._unit_lines(stats) == [
        "- unit of assignment in corpus b: blocks of consecutive paragraphs of about 7 pairs (40 blocks of 2 "
        "documents) instead of whole documents", "- warning: the test split holds no contrasting pairs"]
    assert card_mod._unit_lines({"unit": {"a": {"unit": "document"}}}) == []


# ---------------------------------------------------------------------------- real novels

def _novel_pairs(paths, paragraphs=400):
    """Pairs of three real novels, as the pairs stage lays them out: marked-like pairs of
    consecutive sentences of one paragraph (labels in turn) and neutral pairs of two
    paragraphs of one document (`both_random`-like, 3 paragraphs apart)."""
    rows = []
    for path in paths:
        doc = path.stem
        paras = [p for p in path.read_text(encoding="utf-8").split("\n\n") if len(p) > 200][:paragraphs]
        sents = [[s for s in re.split(r"(?<=[.!?])\s+", p.replace("\n", " ")) if len(s) > 30] for p in paras]
        k = 0
        for i, ss in enumerate(sents):
            for j in range(len(ss) - 1):
                label = LABELS[k % 3]
                k += 1
                ref = {"doc_id": doc, "section": "", "para_idx": i, "sent_idx": j}
                rows.append(dict(pair_id=stable_hex(doc, i, j), corpus="eltec", doc_id=doc, premise=ss[j],
                                 hypothesis=ss[j + 1], label=label, source="marker",
                                 premise_ref=ref, hypothesis_ref=dict(ref, sent_idx=j + 1)))
            if i >= 3 and ss and sents[i - 3]:
                rows.append(dict(pair_id=stable_hex(doc, i, "n"), corpus="eltec", doc_id=doc, premise=sents[i - 3][0],
                                 hypothesis=ss[-1], label="neutral", source="both_random",
                                 premise_ref={"doc_id": doc, "section": "", "para_idx": i - 3, "sent_idx": 0},
                                 hypothesis_ref={"doc_id": doc, "section": "", "para_idx": i,
                                                 "sent_idx": len(ss) - 1}))
    return rows


@pytest.fixture(scope="module")
def novels():
    return [shared_file(f"text/eltec-rom-20/ROM00{i}.txt") for i in (1, 2, 3)]


def _run(tmp_path, rows, near, buckets=3):
    pairs = tmp_path / "pairs"
    pq.write_to_dataset(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), str(pairs),
                        partition_cols=["label"])
    schema, units = bt.list_units(str(pairs))
    plan = SplitsPlan(units=units, schema=schema, seed=0, scratch=SplitsScratch(str(tmp_path / "work")), buckets=buckets,
                      test_only=frozenset(), ratios=(0.8, 0.1, 0.1), near=near)
    found = run_rounds(InProcessRunner(), plan, sp.parse_balance("downsample"), None, 2, str(tmp_path / "splits"))
    return found, {s: pd.read_parquet(tmp_path / "splits" / s) for s in sp.SPLITS if (tmp_path / "splits" / s).exists()}


def test_three_real_novels_get_blocks_and_every_split_every_label(tmp_path, novels):
    rows = _novel_pairs(novels)
    found, splits = _run(tmp_path, rows, Settings())
    unit = found["units"]["eltec"]
    assert unit["unit"] == "block" and unit["documents"] == 3 and unit["blocks"] >= 30
    assert set(splits) == set(sp.SPLITS)
    for name, frame in splits.items():
        assert set(frame["label"]) == set(LABELS), name
    # no sentence (by its place) and no block in two splits; the straddling pairs counted
    where = {}
    for name, frame in splits.items():
        for ref in list(frame["premise_ref"]) + list(frame["hypothesis_ref"]):
            where.setdefault((ref["doc_id"], ref["para_idx"], ref["sent_idx"]), set()).add(name)
    assert all(len(s) == 1 for s in where.values())
    assert found["leakage"]["checks"]["documents_in_two_splits"] == 0  # (blocks, here)
    assert found["drops"]["pair_spans_blocks_of_two_splits"] > 0
    # the whole novels do go to several splits: that is what blocks are for
    docs = {}
    for name, frame in splits.items():
        for d in frame["doc_id"]:
            docs.setdefault(d, set()).add(name)
    assert any(len(s) > 1 for s in docs.values())


def test_many_small_documents_stay_whole(tmp_path, novels):
    rows = _novel_pairs(novels, paragraphs=400)
    for r in rows:  # every paragraph its own document
        para = r["hypothesis_ref"]["para_idx"]
        r["doc_id"] = f"{r['doc_id']}-{para}"
        r["premise_ref"] = dict(r["premise_ref"], doc_id=r["doc_id"])
        r["hypothesis_ref"] = dict(r["hypothesis_ref"], doc_id=r["doc_id"])
    found, splits = _run(tmp_path, rows, None)
    assert found["units"] == {"eltec": {"unit": "document"}}
    assert "pair_spans_blocks_of_two_splits" not in found["drops"]


def test_blocks_write_the_same_bytes_whatever_the_buckets(tmp_path, novels):
    rows = _novel_pairs(novels, paragraphs=150)
    files = []
    for buckets, order in ((1, rows), (5, rows[::-1])):
        out = tmp_path / f"b{buckets}"
        found, _ = _run(out, order, Settings(), buckets=buckets)
        assert found["units"]["eltec"]["unit"] == "block"
        files.append({p.relative_to(out / "splits"): p.read_bytes() for p in sorted((out / "splits").rglob("*.parquet"))})
    assert files[0] == files[1] and files[0]
