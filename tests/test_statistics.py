"""extractor.statistics against values computed by hand on small, realistic Romanian pairs:
RoNLI's raw-token overlap, the normalised (IndoNLI-style) overlap, sample standard
deviations (IndoNLI Table 4) and premise-side PMI."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from extractor import statistics as st

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


def test_batch_statistics_pauses_the_cyclic_collector_and_restores_it(monkeypatch):
    """The collector is off while the rows are computed (they hold no cycles; its passes
    cost 18% of the batch) and back as it was afterwards, also after an error."""
    import gc

    seen = []
    real = st._row

    def spy(*args):
        seen.append(gc.isenabled())
        return real(*args)

    monkeypatch.setattr(st, "_row", spy)
    assert gc.isenabled()
    st.batch_statistics(["The army crossed the river."], ["The river was crossed."], ["entailment"])
    st.row_statistics(["The army crossed the river."], ["The river was crossed."])
    assert seen == [False, False] and gc.isenabled()
    gc.disable()
    try:
        st.batch_statistics(["a b"], ["b"], ["neutral"])
        assert not gc.isenabled()  # left off when the caller had it off
    finally:
        gc.enable()
    monkeypatch.setattr(st, "_row", lambda *args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        st.batch_statistics(["a b"], ["b"], ["neutral"])
    assert gc.isenabled()
