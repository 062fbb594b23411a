"""Lexicon discovery (extractor/lexicon/phrase_mining.py, `python -m extractor.lexicon.discover`): candidates,
scores computed by hand, label pre-filling, the draft and its promotion."""
from __future__ import annotations

import math
import subprocess
import sys
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from extractor.lexicon import phrase_mining as dsc
from extractor.lexicon.lexicon import load_lexicon
from tests.conftest import REPO


@pytest.mark.parametrize("text, expected", [
    ("Totuși, el a plecat.", ("Totuși", "el a plecat.")),
    ("Cu toate acestea,  ploua.", ("Cu toate acestea", "ploua.")),
    ("Într-o zi, a venit.", ("Într-o zi", "a venit.")),
    ("Pe de altă parte — altceva", ("Pe de altă parte", "altceva")),
    ("Astfel: ceva", ("Astfel", "ceva")),
    ("Однак, це не так.", ("Однак", "це не так.")),
    ("— Da, zise el.", None),                              # dialogue dash first: the matcher never matches there
    ("În 1877, România și-a proclamat independența.", None),  # a number is no phrase
    ("Unu doi trei patru cinci șase, x", None),            # more than five words
    ("Nimic aici.", None),
    ("Da,", None),                                          # nothing after the separator
    ("zise el, și plecă.", None),                           # lower case: the tail of a split sentence
])
def test_sentence_prefix(text, expected):
    assert dsc.sentence_prefix(text) == expected


def _docs():
    S = dsc.Sentence
    a = [S("a", None, 0, 0, "ana are mere"), S("a", None, 0, 1, "Totuși, ana are pere"),
         S("a", None, 1, 0, "cerul este senin")]
    b = [S("b", None, 0, 0, "Totuși, nimic nou"), S("b", None, 0, 1, "vine ploaia mare"),
         S("b", None, 0, 2, "Totuși, ploaia mare vine")]
    return [a, b]


def test_scores_by_hand():
    cands, totals = dsc.mine_documents(_docs(), key=dsc.make_key(True, True))
    c = cands["totusi"]
    # doc a: J({ana, are, mere}, {ana, are, pere}) = 2/4; the only other sentence ("cerul este
    # senin") shares nothing. doc b: J(prev, rest) = 3/3 vs the first sentence: 0.
    assert (c.count, c.pairs, dict(c.doc_counts)) == (3, 2, {"a": 1, "b": 2})
    assert c.adj_sum == pytest.approx(1.5) and c.rand_sum == 0.0
    # baseline: the three consecutive pairs; b's second sentence against its previous one
    # shares nothing, against the drawn one ("Totuși, ploaia mare vine") 3/4.
    base = dsc.baseline(totals)
    assert (base["documents"], base["sentences"], base["pairs"]) == (2, 6, 3)
    assert base["overlap_prev"] == pytest.approx(0.5) and base["overlap_random"] == pytest.approx(0.25)
    assert base["lift_all"] == pytest.approx(round(0.51 / 0.26, 4))
    row = dsc.rank(cands, totals, min_count=1, min_docs=1, prior_pairs=0)[0]
    spread = -(1 / 3 * math.log(1 / 3) + 2 / 3 * math.log(2 / 3)) / math.log(2)
    assert row["phrase"] == "Totuși" and row["lift"] == pytest.approx(0.76 / 0.01)
    assert row["spread"] == pytest.approx(spread, abs=1e-4)
    assert row["score"] == pytest.approx(math.log(4) * spread * 76, rel=1e-4)
    assert len(row["examples"]) == 2  # only the two with a previous sentence
    # shrunk by 10 pseudo-pairs at the baseline (0.5, 0.25): (1.5 + 5) / 12 vs (0 + 2.5) / 12
    shrunk = dsc.rank(cands, totals, min_count=1, min_docs=1)[0]
    assert shrunk["lift"] == pytest.approx(round((6.5 / 12 + 0.01) / (2.5 / 12 + 0.01), 4))
    assert dsc.rank(cands, totals, min_count=4) == [] and dsc.rank(cands, totals, min_docs=3) == []
    with pytest.raises(ValueError, match="--sort"):
        dsc.rank(cands, totals, sort="nope")


def test_spellings_group_under_the_matching_key():
    S = dsc.Sentence
    doc = [S("d", None, 0, i, t) for i, t in enumerate(
        ["Prima frază e aici.", "Totuşi, cedilla.", "Totuși, virgulă.", "Totusi, fără.", "TOTUȘI, mari."])]
    cands, _ = dsc.mine_documents([doc], key=dsc.make_key(True, True))
    assert list(cands) == ["totusi"]
    assert cands["totusi"].count == 4 and cands["totusi"].phrase == "TOTUȘI"  # ties: alphabetical
    spread = dsc.spread(Counter({"d": 4}), 1)
    assert spread == 0.0 and dsc.spread(Counter({"a": 1, "b": 1}), 2) == pytest.approx(1.0)


def test_known_labels_from_own_lexicon_and_translations():
    lexicons = {code: load_lexicon(code) for code in ("ro", "en", "es")}
    table = [{"label": ["contrasting"], "en": ["However"], "ro": ["Totuși"], "uk": ["Однак", "Проте"]},
             {"label": ["entailment"], "en": ["Nowhere listed"], "uk": ["Тобто"]},
             {"label": ["reasoning"], "en": ["Therefore"], "uk": ["Тому"]}]
    uk = dsc.known_labels("uk", lexicons, table)
    assert uk[dsc._loose("Однак")] == ("contrasting", "translates en 'However' (en.yaml: contrasting)")
    assert uk[dsc._loose("Тобто")][0] == "entailment" and "translation table" in uk[dsc._loose("Тобто")][1]
    assert uk[dsc._loose("Тому")][0] == "reasoning"
    ro = dsc.known_labels("ro", lexicons, table)
    assert ro[dsc._loose("Prin urmare")] == ("reasoning", "ro.yaml lists 'Prin urmare'")
    assert ro[dsc._loose("Totusi")][0] == "contrasting"
    rows = dsc.prefill([{"phrase": "Однак"}, {"phrase": "Так"}], uk)
    assert rows[0]["label"] == "contrasting" and rows[1]["label"] is None
    # the shipped table reads, and every label in it is canonical
    shipped = dsc.read_translations()
    assert len(shipped) >= 20 and all(r["label"][0] in ("contrasting", "entailment", "reasoning") for r in shipped)


def test_promote_and_bad_label():
    draft = {"candidates": [{"phrase": "Однак", "label": "contrasting"}, {"phrase": "Так", "label": None},
                            {"phrase": "Тому", "label": "reasoning"}, {"phrase": "Проте", "label": "contrasting"}]}
    assert dsc.promote(draft) == {"contrasting": ["Однак", "Проте"], "reasoning": ["Тому"]}
    with pytest.raises(ValueError, match="'contrast' is not one of"):
        dsc.promote({"candidates": [{"phrase": "X", "label": "contrast"}]})


def test_command_writes_a_draft(tmp_path):
    rows = []
    texts = ["Ploua tare în oraș de trei zile.", "Totuși, oamenii ieșeau la plimbare în oraș.",
             "Prin urmare, străzile erau pline de lume.", "Cu alte cuvinte, nimeni nu stătea acasă."]
    for d in range(3):
        for i, t in enumerate(texts):
            rows.append({"corpus": "c", "doc_id": f"d{d}", "section": None, "para_idx": 0, "sent_idx": i, "text": t})
    folder = tmp_path / "sentences" / "corpus=c"
    folder.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([{k: v for k, v in r.items() if k != "corpus"} for r in rows]),
                   folder / "part-0.parquet")
    out = tmp_path / "draft.yaml"
    cmd = [sys.executable, "-m", "extractor.lexicon.discover", "--sentences", str(tmp_path / "sentences"), "--lang", "ro",
           "--out", str(out), "--min-count", "2"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "| 1 |" in proc.stdout and "Totuși" in proc.stdout
    draft = yaml.safe_load(out.read_text())
    by_phrase = {c["phrase"]: c for c in draft["candidates"]}
    assert by_phrase["Prin urmare"]["label"] == "reasoning" and by_phrase["Prin urmare"]["count"] == 3
    assert by_phrase["Cu alte cuvinte"]["label"] == "entailment"
    assert by_phrase["Totuși"]["label"] == "contrasting"  # translation table: ro Totuși <-> en However
    assert len(by_phrase["Totuși"]["examples"]) == 3
    assert by_phrase["Totuși"]["examples"][0]["previous"] == texts[0]
    promoted = subprocess.run([sys.executable, "-m", "extractor.lexicon.discover", "--promote", str(out)], cwd=REPO,
                              capture_output=True, text=True)
    assert promoted.returncode == 0 and "reasoning:\n  - Prin urmare" in promoted.stdout
    missing = subprocess.run([sys.executable, "-m", "extractor.lexicon.discover", "--sentences", str(tmp_path / "nope"),
                              "--lang", "ro"], cwd=REPO, capture_output=True, text=True)
    assert missing.returncode == 2 and missing.stderr.startswith("error: ") and len(missing.stderr.splitlines()) == 1
