"""Near-duplicate pairs in stage 2 (extractor/pairs/stage.py, its rounds in one process):
the hand-made documents of tests/test_pairs_stage.py plus copies of two of them with one
word of every sentence changed. With near-duplicates on, of marked pairs near-duplicate on
both sides one stays (`rejected.near_duplicate_pair` counts the others); off, all stay."""
from __future__ import annotations

import pandas as pd

from extractor.engine.runner import InProcessRunner
from extractor.lexicon.lexicon import load_lexicon
from extractor.pairs import stage as ps
from tests.one_process import build_pairs
from test_neardup import word_set_jaccard
from test_pairs_stage import DOCS, write_sentences


def altered(text: str, k: int) -> str:
    """One word in the middle of the sentence replaced (the linking phrase at its start kept)."""
    tokens = text.split()
    if len(tokens) < 6:  # a short sentence stays as it is
        return text
    tokens[len(tokens) // 2 + 1] = f"changed{k}"
    return " ".join(tokens)


def rows_with_copies() -> list[tuple]:
    docs = dict(DOCS)
    for n, src in enumerate(("c1:A", "c1:B", "c1:A")):
        docs[f"c1:copy{n}"] = [(section, [altered(s, n) for s in sents]) for section, sents in DOCS[src]]
    rows = []
    for doc_id, paras in docs.items():
        for para_idx, (section, sents) in enumerate(paras):
            for sent_idx, text in enumerate(sents):
                rows.append(("c1", "test", "en", doc_id, doc_id[3:], section, para_idx, sent_idx, text, len(text) < 50))
    return rows


def run(tmp_path, near: str):
    table = write_sentences(tmp_path / near, files=2, rows=rows_with_copies())
    options = ps.Options(min_chars=50, seed=0, pos_filter="off", neutral_ratio=0.0, near_duplicates=near)
    write, stats, cleanup = build_pairs(InProcessRunner(), table, load_lexicon("en"), options,
                                           work=str(tmp_path / near / "work"), files=2)
    try:
        write(str(tmp_path / near / "pairs"))
    finally:
        cleanup()
    pairs = pd.read_parquet(tmp_path / near / "pairs")
    return pairs[pairs["source"] == "marker"], stats


def near_duplicate_pairs(pairs: pd.DataFrame) -> int:
    rows = list(zip(pairs["premise"], pairs["hypothesis"]))
    return sum(word_set_jaccard(p1, p2) >= 0.8 and word_set_jaccard(h1, h2) >= 0.8
               for i, (p1, h1) in enumerate(rows) for p2, h2 in rows[i + 1:])


def test_near_duplicate_pairs_keep_one(tmp_path):
    on, stats_on = run(tmp_path, "on")
    off, stats_off = run(tmp_path, "off")
    rejected = stats_on["rejected"]["near_duplicate_pair"]
    print(f"\nmarked pairs off {len(off)} (near-duplicate pairs among them {near_duplicate_pairs(off)}), "
          f"on {len(on)} (near-duplicate pairs among them {near_duplicate_pairs(on)}); "
          f"rejected.near_duplicate_pair {rejected}; {stats_on['near_duplicates']}")
    assert near_duplicate_pairs(off) >= 6
    assert near_duplicate_pairs(on) == 0
    assert rejected == len(off) - len(on) > 0
    assert set(on["pair_id"]) < set(off["pair_id"])
    assert "near_duplicate_pair" not in stats_off["rejected"] and "near_duplicates" not in stats_off
    assert stats_on["total"] == stats_off["total"] - rejected
