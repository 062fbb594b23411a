"""extractor.statistics against values computed by hand on small, realistic Romanian pairs:
RoNLI's raw-token overlap, the normalised (IndoNLI-style) overlap, sample standard
deviations (IndoNLI Table 4) and premise-side PMI."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from extractor import statistics as st
from tests.conftest import shared_file

# Raw whitespace tokens (13 distinct each):
#   P: Râul a inundat orașul în fiecare primăvară, așa că s-a construit un baraj.
#   H: Orașul a fost ferit de inundații, iar râul nu a mai ieșit din matcă.
# Raw sets share only "a" ("Râul" != "râul", "orașul" != "Orașul"): 1 / (13 + 13 - 1) = 1/25.
# Normalised (case-folded, edge punctuation stripped) sets share râul, a, orașul:
#   P 13 distinct, H 13 distinct ("a" twice) -> 3 / (13 + 13 - 3) = 3/23.
P1 = "Râul a inundat orașul în fiecare primăvară, așa că s-a construit un baraj."
H1 = "Orașul a fost ferit de inundații, iar râul nu a mai ieșit din matcă."


def test_ronli_overlap_keeps_case_and_punctuation():
    assert st.overlap_jaccard_raw(P1, H1) == pytest.approx(1 / 25)
    assert st.overlap_jaccard(P1, H1) == pytest.approx(3 / 23)
    # punctuation glued to a word makes another token: "baraj." != "baraj"
    assert st.overlap_jaccard_raw("S-a construit un baraj.", "Un baraj nou") == pytest.approx(0 / 7)
    assert st.overlap_jaccard_raw("S-a construit un baraj.", "un baraj. nou") == pytest.approx(2 / 5)
    assert st.overlap_jaccard_raw("", "") == 0.0
    row = st.row_statistics([P1], [H1]).iloc[0]
    assert row["overlap_jaccard_raw"] == pytest.approx(1 / 25)
    assert row["overlap_jaccard"] == pytest.approx(3 / 23)
    assert (row["premise_words"], row["hypothesis_words"]) == (13, 14)


def _three_pairs() -> pd.DataFrame:
    # premise words 13, 9, 20 -> mean 14, sample variance (1 + 25 + 36) / 2 = 31
    # hypothesis words 14, 6, 7 -> mean 9, sample variance (25 + 9 + 4) / 2 = 19
    return pd.DataFrame({
        "premise": [P1,
                    "Guvernul a anunțat ieri mai multe măsuri economice importante.",
                    "În anul 1877 România și-a proclamat independența, iar războiul care a urmat "
                    "a durat aproape un an întreg și greu."],
        "hypothesis": [H1,
                       "Prețurile au început să scadă încet.",
                       "Independența a fost recunoscută apoi la Berlin."],
        "label": ["reasoning", "contrasting", "reasoning"],
    })


def test_means_and_sample_standard_deviations_by_hand():
    res = st.split_statistics(_three_pairs(), min_count=1)
    both = res["all"]
    assert [len(p.split()) for p in _three_pairs()["premise"]] == [13, 9, 20]
    assert both["premise_words_mean"] == pytest.approx(14.0)
    assert both["premise_words_std"] == pytest.approx(math.sqrt(31))
    assert both["hypothesis_words_mean"] == pytest.approx(9.0)
    assert both["hypothesis_words_std"] == pytest.approx(math.sqrt(19))
    reasoning = res["labels"]["reasoning"]
    # premise words 13 and 20: sample std = |13 - 20| / sqrt(2)
    assert reasoning["premise_words_std"] == pytest.approx(7 / math.sqrt(2))
    # one row: the sample std is undefined, reported as None (never 0 or NaN)
    assert res["labels"]["contrasting"]["premise_words_std"] is None
    assert st.sample_std([4.0]) is None and st.sample_std([]) is None
    assert st.sample_std([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]) == pytest.approx(2.1380899353)
    # the RoNLI-layout table gives mean (std), IndoNLI Table 4 style, and both overlaps
    table = st.ronli_table({"splits": {"train": res}})
    assert "| **overall** | 3 | 14.0 (5.6) | 9.0 (4.4) |" in table
    assert "overlap (RoNLI) train" in table and "overlap (normalised) train" in table
    assert "| contrasting | 1 | 9.0 | 6.0 |" in table  # no std for one row


def test_premise_side_pmi_by_hand():
    # "ploua" is in 3 premises (2 contrasting, 1 reasoning); p(c) = 2/4.
    # PMI(ploua, c) = ln(((2 + 1) / (3 + 2)) / (2/4)) = ln 1.2;
    # PMI(azi, r) = ln(((2 + 1) / (2 + 2)) / (2/4)) = ln 1.5; PMI(soare, r) = ln((2/3) / (1/2)).
    df = pd.DataFrame({"premise": ["Ploua tare.", "Ploua mult.", "Soare azi.", "Ploua azi."],
                       "hypothesis": ["Am rămas acasă.", "Am ieșit totuși.", "Am plecat.", "Am stat."],
                       "label": ["contrasting", "contrasting", "reasoning", "reasoning"]})
    res = st.split_statistics(df, min_count=1)
    prem = res["premise_top_pmi_words"]
    assert [t["word"] for t in prem["contrasting"]] == ["mult", "tare", "ploua"]
    assert prem["contrasting"][2] == {"word": "ploua", "pmi": round(math.log(1.2), 4), "count": 2, "word_count": 3}
    assert [t["word"] for t in prem["reasoning"]] == ["azi", "soare"]  # ploua points away from reasoning
    assert prem["reasoning"][0]["pmi"] == pytest.approx(math.log(1.5), abs=1e-4)
    assert prem["reasoning"][1]["pmi"] == pytest.approx(math.log(4 / 3), abs=1e-4)
    md = st.pmi_markdown({"splits": {"train": res}}, side="premise")
    assert "| train | reasoning | azi (0.41, 2/2), soare (0.29, 1/1) |" in md
    assert "premise" in st.markdown_report({"splits": {"train": res}})


def _per_row(premises, hypotheses, labels) -> tuple[list, dict]:
    """The definitions: every ROW_COLUMN from its per-row function, PMI counts from `word_counts`."""
    rows = []
    for p, h in zip(premises, hypotheses):
        p, h = ("" if p is None else str(p)), ("" if h is None else str(h))
        rows.append((st.word_count(p), st.word_count(h), st.overlap_jaccard(p, h), st.lcs_ratio(p, h),
                     st.new_token_rate(p, h), st.inner_capital(h), st.overlap_jaccard_raw(p, h)))
    return rows, {"hypothesis": st.word_counts(hypotheses, labels), "premise": st.word_counts(premises, labels)}


def _assert_batch_is_per_row(premises, hypotheses, labels, given=None) -> pd.DataFrame:
    """batch_statistics (of `given`, the same texts and labels as Arrow arrays, if set) equals
    the per-row definitions: every column exactly (floats bit for bit), and the PMI counts."""
    frame, counts = st.batch_statistics(*(given or (premises, hypotheses, labels)))
    rows, expected = _per_row(premises, hypotheses, labels)
    assert list(frame.columns) == list(st.ROW_COLUMNS) and len(frame) == len(rows)
    got = [tuple(r) for r in frame.itertuples(index=False, name=None)]
    wrong = [(i, premises[i], hypotheses[i], g, e) for i, (g, e) in enumerate(zip(got, rows)) if g != e]
    assert not wrong, wrong[:3]
    for side in ("hypothesis", "premise"):
        assert counts[side]["labels"] == expected[side]["labels"]
        assert {l: dict(c) for l, c in counts[side]["words"].items()} == \
            {l: dict(c) for l, c in expected[side]["words"].items()}
    return frame


def test_arrow_splits_text_at_exactly_the_characters_python_does():
    """batch_statistics and the near-duplicate shingles tokenise with
    `charclasses.split_whitespace` (Arrow's ASCII split after the other whitespace
    characters became " "); the per-row definitions use str.split(). Every code point,
    alone between two letters; then texts of real words joined by runs of every kind of
    whitespace, beside texts with none but " ", with nulls: the same non-empty tokens as
    str.split() and as Arrow's utf8_split_whitespace."""
    import random

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from extractor.statistics import charclasses

    points = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    texts = ["a" + chr(c) + "b" for c in points]
    python = np.array([len(t.split()) != 1 for t in texts])
    assert python.sum() == 29  # \t-\r, \x1c-\x1f, space, NEL, NBSP, the Zs spaces, LS, PS
    for split in (pc.utf8_split_whitespace, charclasses.split_whitespace):
        arrow = pc.list_value_length(split(pa.array(texts))).to_numpy() != 1
        assert (arrow == python).all(), [hex(points[i]) for i in np.nonzero(arrow != python)[0]]
    spaces = [chr(points[i]) for i in np.nonzero(python)[0]]
    rng = random.Random(3)
    words = "Prin urmare , armata a trecut râul în zori ; ΣΊΣΥΦΟΣ straße İstanbul".split()
    mixed = ["".join(rng.choice(words) + "".join(rng.choice(spaces) for _ in range(rng.randint(1, 3)))
                     for _ in range(rng.randint(0, 12))) if i % 3 else " ".join(rng.sample(words, 5))
             for i in range(600)] + [None, "", "\u3000"]
    def tokens(split):  # the callers drop empty tokens (Arrow leaves one after some trailing runs)
        return [None if t is None else [w for w in t if w] for t in split(pa.array(mixed, pa.large_string())).to_pylist()]

    got = tokens(charclasses.split_whitespace)
    assert got == [None if t is None else t.split() for t in mixed] == tokens(pc.utf8_split_whitespace)


def test_batch_statistics_equal_the_per_row_functions_on_awkward_texts():
    """Case folding that changes length (ß, İ), final sigma, Unicode spaces, edge punctuation
    that leaves nothing, a capital after a leading space, empty and missing texts,
    hypotheses of 64 and of more than 64 words (one 64-bit word of the bit-parallel LCS),
    repeated words (LCS), labels that are None, NaN or not strings."""
    premises = ["  The Army crossed  the river.", "", None, "ß STRASSE straße", "x\u00a0Y z\x1fw",
                "İstanbul ΣΊΣΥΦΟΣ ΟΔΟΣ", "a " * 70, "(§4.3) -- !! ...", "Hello", "b a b a b a c",
                "one two three", "Ana are mere.", "x " * 200]
    hypotheses = ["the ARMY, crossed", " Leading Cap", "x", "Strasse ss", "Y\u2028zZ", "istanbul σίσυφος οδος",
                  "a b " * 40, "4.3", "  ", "a b c a b", "three two One", "ana ARE mere", "x y " * 32]
    labels = ["entailment", "contrasting", None, float("nan"), "entailment", 3, "neutral", "contrasting",
              "entailment", "reasoning", "reasoning", "neutral", "neutral"]
    frame = _assert_batch_is_per_row(premises, hypotheses, labels)
    assert frame["hypothesis_words"][6] == 80 and frame["lcs_ratio"][6] == 40 / 80
    assert frame["hypothesis_words"][12] == 64 and frame["lcs_ratio"][12] == 32 / 64
    assert frame["hypothesis_inner_capital"].tolist()[:2] == [True, True]  # ARMY; L after a leading space


def test_batch_statistics_equal_the_per_row_functions_on_random_and_real_text():
    """Thousands of pairs: random word sequences over a small vocabulary (many repeated
    words, every premise and hypothesis length from 0 to 70, so the rows of the batch's
    LCS steps stop at every position), and neighbouring sentences of a real Romanian
    novel, also given as Arrow arrays as the stage gives them."""
    import random
    import re

    import pyarrow as pa

    rng = random.Random(7)
    vocab = ["a", "A", "b,", "(b)", "c", "Ç", "ß", "ss", "—", "x1", "Şi", "și"]
    premises = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 70))) for _ in range(3000)]
    hypotheses = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 70))) for _ in range(3000)]
    labels = [rng.choice(["entailment", "neutral", None]) for _ in range(3000)]
    _assert_batch_is_per_row(premises, hypotheses, labels)
    # hypotheses of up to 300 words over three words, half of them in runs of one word of
    # up to 150 (LCS rows of more than one 64-bit word)
    def runs(n):
        out = []
        while len(out) < n:
            out += [rng.choice("abc")] * rng.randint(1, 150)
        return " ".join(out[:n])

    premises = [" ".join(rng.choice("abc") for _ in range(rng.randint(0, 300))) for _ in range(600)]
    hypotheses = [runs(rng.randint(0, 300)) if i % 2 else " ".join(rng.choice("abc") for _ in range(rng.randint(0, 300)))
                  for i in range(600)]
    _assert_batch_is_per_row(premises, hypotheses, [None] * 600)

    text = shared_file("text/eltec-rom-20/ROM001.txt").read_text(encoding="utf-8")
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()][:4000]
    premises, hypotheses = sentences[:-1], sentences[1:]
    labels = ["reasoning" if i % 3 else None for i in range(len(premises))]
    arrow = (pa.chunked_array([pa.array(premises[:9]), pa.array(premises[9:])]), pa.array(hypotheses),
             pa.array(labels, pa.string()))
    _assert_batch_is_per_row(premises, hypotheses, labels, given=arrow)


def test_batch_lcs_of_word_ids_past_the_surrogates_and_of_ids_that_cannot_be_characters(monkeypatch):
    """The batch's LCS (rapidfuzz) compares each row's words as a string of one character
    per word id; ids from 0xD800 on skip the 2,048 surrogates. 70,000 distinct words in one
    batch (the first premise holds them all, so the ids follow it), then pairs drawn from
    the words around the surrogates and around the end of the Basic Multilingual Plane,
    with repeats; and the same batch when no id may be a character (the path of a batch of
    over 1.1 M distinct words: `lcs_length` over ids)."""
    import random

    from extractor.statistics import kernels

    rng = random.Random(11)
    words = [f"w{i}" for i in range(70_000)]
    astral = 0x10000 - 0x800  # the first id past the Basic Multilingual Plane, once shifted
    near = (words[0xD800 - 20:0xD800 + 20] + words[0xD800 + 2_048 - 10:0xD800 + 2_048 + 10]
            + words[astral - 10:astral + 10])

    def text():
        return " ".join(rng.choice(near) for _ in range(rng.randint(0, 90)))

    premises = [" ".join(words)] + [text() for _ in range(400)]
    hypotheses = ["w5 w0xD800 w55296 w69999"] + [text() for _ in range(400)]
    labels = ["neutral"] * len(premises)
    frame = _assert_batch_is_per_row(premises, hypotheses, labels)
    assert frame["lcs_ratio"][0] == 3 / 4 and frame["lcs_ratio"][1:].mean() > 0.1, frame["lcs_ratio"].describe()
    monkeypatch.setattr(kernels, "_CODE_POINTS", 0)
    assert _assert_batch_is_per_row(premises, hypotheses, labels).equals(frame)


@pytest.mark.parametrize("bins", ["counted", "sorted"])
def test_key_sums_counts_and_sums_every_distinct_key_on_both_paths(bins):
    """`key_sums`: each distinct key once, in order, with its occurrences or the sum of its
    weights, the same when the keys are counted into an array and when a key range too
    large for that makes it sort (keys spread over 2**40)."""
    from collections import Counter

    import numpy as np

    rng = np.random.default_rng(5)
    keys = rng.zipf(1.3, 50_000).astype(np.int64) % 4_000
    if bins == "sorted":
        keys = keys * (1 << 28) + 3
    weights = rng.integers(1, 1_000, len(keys))
    span = int(keys.max()) + 1
    got_keys, got_counts = st.key_sums(keys, span)
    want = Counter(keys.tolist())
    assert got_keys.tolist() == sorted(want) and got_counts.tolist() == [want[k] for k in sorted(want)]
    sums = Counter()
    for k, w in zip(keys.tolist(), weights.tolist()):
        sums[k] += w
    got_keys, got_sums = st.key_sums(keys, span, weights)
    assert got_keys.tolist() == sorted(sums) and got_sums.tolist() == [sums[k] for k in sorted(sums)]
    assert got_sums.dtype == np.int64 and st.key_sums(keys[:0], 0, weights[:0])[0].tolist() == []


def test_fold_texts_is_fold_text_of_each_text():
    """The batch fold (Arrow split and join, Python case folding per distinct token) gives
    `fold_text`; it may fold token by token because no character case-folds to whitespace
    or from it (checked over every code point)."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    assert not [c for c in points if c.casefold().split() != ([c.casefold()] if c.split() else [])]
    texts = ["  The Army\u00a0crossed\tthe river. ", "", None, "ß STRASSE straße İ", "x\x1fY\u2028Z", "ΣΊΣΥΦΟΣ",
             "Ştiu  că\n\nnu"]
    assert st.fold_texts(texts).to_pylist() == [st.fold_text(t) for t in texts]


def test_pmi_table_is_the_formula_sorted_with_ties_by_word():
    """numpy only picks candidates: the lists equal scoring every (label, word) with `pmi`
    in Python and sorting by (-PMI, word), on counts full of ties, words below the minimum
    count, and a label without texts."""
    import random

    rng = random.Random(3)
    totals = {"entailment": 40, "neutral": 25, "reasoning": 40, "empty": 0}
    rows = [(label, f"w{w}", rng.choice([1, 2, 2, 3, 5, 8])) for label in totals for w in range(60)
            if rng.random() < 0.7]
    labels, words, counts = (list(x) for x in zip(*rows))
    got = st.pmi_table(labels, words, counts, totals, k=10, min_count=4)
    per_word: dict = {}
    for w, c in zip(words, counts):
        per_word[w] = per_word.get(w, 0) + c
    live = {l: n for l, n in totals.items() if n}
    want = {}
    for label in sorted(live):
        scored = sorted((-st.pmi(c, per_word[w], live[label], sum(live.values()), len(live)), w, c)
                        for l, w, c in rows if l == label and per_word[w] >= 4)
        want[label] = [{"word": w, "pmi": round(-v, 4), "count": c, "word_count": per_word[w]}
                       for v, w, c in scored if v < 0][:10]
    assert got == want and all(len(v) == 10 for v in got.values())


def test_aggregate_columns_takes_labels_as_an_arrow_array_with_the_same_result():
    """Stage 3 hands `aggregate_columns` its labels as an Arrow column (nulls: no label);
    the blocks are those of the same labels as Python values, bit for bit."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(5)
    n = 5000
    draw = {"bool": lambda: rng.random(n) < 0.3, "int64": lambda: rng.integers(0, 40, n), "float64": lambda: rng.random(n)}
    columns = {c: draw[st.ROW_DTYPES[c]]() for c in st.ROW_COLUMNS}
    labels = [None if i % 7 == 0 else ["neutral", "contrasting", "entailment", "reasoning"][i % 4] for i in range(n)]
    python = st.aggregate_columns(columns, labels)
    assert sorted(python["labels"]) == ["contrasting", "entailment", "neutral", "reasoning"]
    arrow = st.aggregate_columns(columns, pa.chunked_array([pa.array(labels[:100]), pa.array(labels[100:])]))
    assert arrow == python
