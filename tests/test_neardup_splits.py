"""Near-duplicates in stage 3 (extractor/splits/stage.py rounds, in one process): a pairs
table from the planted ELTeC corpus of tests/test_neardup.py (pairs of consecutive
sentences; 400 paragraphs copied with one word of each sentence changed into other
documents of their group). With near-duplicates on, no hypothesis and no pair has a
near-duplicate in another split (checked exhaustively on the written split files); with
them off, the same splits leak."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from extractor.engine import scratch
from extractor.engine.runner import InProcessRunner
from extractor import statistics as st
from extractor.core.hashing import stable_hex
from extractor.neardup.settings import Settings
from extractor.splits import assign as sp
from extractor.splits import decisions as dc
from extractor.splits import pair_tables as bt
from extractor.splits import stage as splits_stage
from extractor.splits.plan import SplitsPlan, SplitsScratch
from tests.one_process import run_rounds
from test_neardup import _other_split_max_jaccard, planted_corpus, word_set_jaccard

LABELS = ["contrasting", "entailment", "reasoning", "neutral"]


@pytest.fixture(scope="module")
def pairs_dir(tmp_path_factory):
    sentences, doc_of, _ = planted_corpus()
    rows = []
    for i in range(len(sentences) - 1):
        if doc_of[i] != doc_of[i + 1]:
            continue
        doc = f"d{doc_of[i]:04d}"
        label = LABELS[i % 4]
        ref = {"doc_id": doc, "section": "", "para_idx": 0, "sent_idx": i}
        rows.append(dict(pair_id=stable_hex(doc, i), corpus="eltec", doc_id=doc, premise=sentences[i],
                         hypothesis=sentences[i + 1], label=label, premise_ref=ref,
                         hypothesis_ref=dict(ref, sent_idx=i + 1)))
    out = tmp_path_factory.mktemp("neardup_pairs") / "pairs"
    pq.write_to_dataset(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), str(out),
                        partition_cols=["label"])
    return out


def split_files(pairs_dir, out, near):
    schema, units = bt.list_units(str(pairs_dir))
    plan = SplitsPlan(units=units, schema=schema, seed=0, scratch=SplitsScratch(str(out / "work")), buckets=3,
                      test_only=frozenset(), ratios=(0.8, 0.1, 0.1), near=near)
    found = run_rounds(InProcessRunner(), plan, sp.parse_balance("none"), None, 2, str(out / "splits"))
    return found, {s: pd.read_parquet(out / "splits" / s) for s in sp.SPLITS if (out / "splits" / s).exists()}


def leaks(splits, threshold):
    """Test rows whose hypothesis (and whose pair: premise and hypothesis) has a
    near-duplicate in another split, by brute force over the split files."""
    assert threshold == 0.8  # the brute force's matches are at 0.8
    names = list(splits)
    hyps = [h for s in names for h in splits[s]["hypothesis"]]
    prems = [p for s in names for p in splits[s]["premise"]]
    split_of = np.array([s for s in names for _ in range(len(splits[s]))])
    matches: list = []
    best = _other_split_max_jaccard(hyps, split_of, "test", matches)
    mine = np.nonzero(split_of == "test")[0]
    pair_leaks = sum(any(word_set_jaccard(prems[i], prems[j]) >= threshold for j in found)
                     for i, found in zip(mine, matches) if len(found))
    return int((best >= threshold).sum()), int(pair_leaks)


def test_no_near_duplicate_crosses_splits(pairs_dir, tmp_path):
    settings = Settings()
    found, splits = split_files(pairs_dir, tmp_path / "on", settings)
    near = found["near"]
    sizes = {s: len(df) for s, df in splits.items()}
    hyp_leaks, pair_leaks = leaks(splits, settings.threshold)
    found_off, splits_off = split_files(pairs_dir, tmp_path / "off", None)
    hyp_off, pair_off = leaks(splits_off, settings.threshold)
    print(f"\nnear-duplicates on: {near}; split sizes {sizes}; test hypotheses with a near-duplicate in "
          f"another split (exhaustive) {hyp_leaks}, test pairs {pair_leaks}\n"
          f"near-duplicates off: split sizes { {s: len(df) for s, df in splits_off.items()} }; "
          f"test hypotheses {hyp_off}, test pairs {pair_off}")
    assert near["hypotheses"] > 1000 and near["documents_joined"] > 100
    assert near["leakage"] == {"hypotheses_in_two_splits": 0, "pairs_in_two_splits": 0}
    assert hyp_leaks == 0 and pair_leaks == 0
    assert hyp_off > 20 and pair_off > 10  # the planted copies leak without it
    assert sizes["test"] > 0.05 * sum(sizes.values())
    assert found_off["near"] is None


def test_same_bytes_whatever_the_buckets(pairs_dir, tmp_path, monkeypatch):
    """With near-duplicates on, 1 bucket and 5 buckets (of band keys, slim rows, keys) give
    the same split files, byte for byte, and the same near-duplicate counts; with the
    documents of the verified pairs joined by the driver (the default for this corpus's
    few thousand pairs) and by a round of one task (`NEAR_GROUPS_IN_DRIVER` 0) alike."""
    settings = Settings()
    rounds_run = []

    class Recording(InProcessRunner):
        def map(self, fn, tasks, spread=False, costs=None, name=None, reuse_memory=False):
            rounds_run.append(name)
            return super().map(fn, tasks, spread, costs, name, reuse_memory)

    outs = {}
    for in_driver, buckets in ((True, 1), (True, 5), (False, 1), (False, 5)):
        monkeypatch.setattr(splits_stage, "NEAR_GROUPS_IN_DRIVER", 100_000 if in_driver else 0)
        rounds_run.clear()
        schema, units = bt.list_units(str(pairs_dir))
        out = tmp_path / f"b{buckets}-{in_driver}"
        plan = SplitsPlan(units=units, schema=schema, seed=0, scratch=SplitsScratch(str(out / "work")), buckets=buckets,
                          test_only=frozenset(), ratios=(0.8, 0.1, 0.1), near=settings)
        found = run_rounds(Recording(), plan, sp.parse_balance("none"), None, 2, str(out / "splits"))
        files = {p.relative_to(out / "splits").as_posix(): p.read_bytes() for p in sorted((out / "splits").rglob("*.parquet"))}
        outs[in_driver, buckets] = (files, found["near"])
        assert ("near-groups" in rounds_run) is not in_driver, rounds_run
    assert outs[True, 1][0] and outs[True, 1][1]["documents_joined"] > 100
    assert 1000 < outs[True, 1][1]["hypotheses"] <= 100_000
    assert outs[True, 1] == outs[True, 5] == outs[False, 1] == outs[False, 5]


def test_near_duplicates_across_corpora_are_counted_when_their_splits_differ(tmp_path):
    """Documents of two corpora are never joined (each corpus is assigned on its own), so a
    hypothesis copied into another corpus can land in another split: the stage's
    near-duplicate leakage (`near["leakage"]`, one task of the last round) counts such
    verified hypotheses, and pairs whose premises are near-duplicates too. Checked against
    brute force over every pair of rows of the table (word-set Jaccard >= 0.8 across
    documents whose splits differ)."""
    sentences, doc_of, _ = planted_corpus()
    rows = []
    for i in range(len(sentences) - 1):
        if doc_of[i] != doc_of[i + 1] or doc_of[i] >= 40:
            continue
        doc = f"d{doc_of[i]:04d}"
        rows.append(dict(pair_id=stable_hex(doc, i), corpus="eltec", doc_id=doc, premise=sentences[i],
                         hypothesis=sentences[i + 1], label=LABELS[i % 4]))
        if doc_of[i] % 4 == 0:  # a second corpus: the same hypotheses, every other one with the same premise
            rows.append(dict(pair_id=stable_hex("copy", doc, i), corpus="copy", doc_id=f"c{doc}",
                             premise=sentences[i] if i % 2 else sentences[(i + 7) % len(sentences)],
                             hypothesis=sentences[i + 1], label=LABELS[i % 4]))
    pairs = tmp_path / "pairs"
    pq.write_to_dataset(pa.Table.from_pandas(pd.DataFrame(rows), preserve_index=False), str(pairs))
    found, _ = split_files(pairs, tmp_path, Settings())
    assigned = scratch.read_arrow(str(tmp_path / "work" / "assigned"), dc.ASSIGNED_SCHEMA)  # every document's split
    split_of = dict(zip(zip(assigned.column("corpus").to_pylist(), assigned.column("doc_id").to_pylist()),
                        assigned.column("split").to_pylist()))
    words = [(set(st.norm_words(r["hypothesis"])), set(st.norm_words(r["premise"]))) for r in rows]

    def jaccard(x, y):
        return len(x & y) / len(x | y) if x | y else 0.0

    hyps = both = 0
    for a in range(len(rows)):
        for b in range(a + 1, len(rows)):
            if jaccard(words[a][0], words[b][0]) < 0.8:
                continue
            sa, sb = split_of[(rows[a]["corpus"], rows[a]["doc_id"])], split_of[(rows[b]["corpus"], rows[b]["doc_id"])]
            if sa != sb:
                hyps += 1
                both += jaccard(words[a][1], words[b][1]) >= 0.8
    near = found["near"]
    print(f"\nbrute force: {hyps} hypotheses, {both} pairs in two splits; the stage: {near['leakage']}; "
          f"{near['hypotheses_across_corpora']} verified hypotheses across corpora")
    assert near["hypotheses_across_corpora"] > 50 and hyps > 10 and both > 5
    assert near["leakage"] == {"hypotheses_in_two_splits": hyps, "pairs_in_two_splits": both}
