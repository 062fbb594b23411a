"""`python -m trainer stats` and extractor.statistics: checked against independent,
deliberately naive computations written here, on the real SciNLI files."""
from __future__ import annotations

import json
import statistics as pystats
import subprocess
import sys

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from extractor import statistics as st
from tests.conftest import REPO, shared_file

SCINLI_ARGS = ["--premise", "sentence1", "--hypothesis", "sentence2"]


def run_stats(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "trainer", "stats", *args, "--json"], cwd=REPO,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


# --- independent reference implementations (plain loops, DP table) -------------------

def ref_tokens(text: str) -> list[str]:
    out = []
    for tok in text.casefold().split():
        while tok and not tok[0].isalnum():
            tok = tok[1:]
        while tok and not tok[-1].isalnum():
            tok = tok[:-1]
        if tok:
            out.append(tok)
    return out


def ref_lcs(a: list[str], b: list[str]) -> int:
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1] else max(table[i - 1][j], table[i][j - 1])
    return table[-1][-1]


def ref_row(p: str, h: str) -> dict:
    pt, ht = ref_tokens(p), ref_tokens(h)
    union = set(pt) | set(ht)
    return {"pw": len(p.split()), "hw": len(h.split()),
            "jac": len(set(pt) & set(ht)) / len(union) if union else 0.0,
            "lcs": ref_lcs(pt, ht) / len(ht) if ht else 0.0,
            "new": sum(w not in set(pt) for w in ht) / len(ht) if ht else 0.0,
            "cap": any(c.isupper() for c in h[1:])}


# --- unit checks ------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(hs.lists(hs.sampled_from("a b c d e f".split()), max_size=30),
       hs.lists(hs.sampled_from("a b c d e f".split()), max_size=30))
def test_bit_parallel_lcs_equals_dynamic_programming(a, b):
    assert st.lcs_length(a, b) == ref_lcs(a, b)


def test_row_functions_on_a_realistic_pair():
    p = "The river floods every spring, so the town built a dam in 1952."
    h = "Therefore the town was spared; the River did not flood again."
    assert st.word_count(h) == 11
    assert st.norm_words("Thus, the (River) isn't.") == ["thus", "the", "river", "isn't"]
    # word sets: p has 12 distinct, h 10, shared {the, town, river}
    assert st.overlap_jaccard(p, h) == pytest.approx(3 / 19)
    assert st.lcs_ratio(p, h) == pytest.approx(2 / 11)  # "the town" in order (or "the river")
    assert st.new_token_rate(p, h) == pytest.approx(7 / 11)
    assert st.inner_capital(h) and not st.inner_capital("Therefore the town was spared.")
    assert st.pair_text_key("A  b", "C") == st.pair_text_key("a b", "c")
    assert st.pair_text_key("x", "y", ordered=False) == st.pair_text_key("Y", "X", ordered=False)


def test_pmi_formula_and_top_words():
    hyps = ["not here"] * 8 + ["here again"] * 8 + ["not again"] * 2
    labels = ["contradiction"] * 8 + ["entailment"] * 8 + ["entailment"] * 2
    top = st.top_pmi(hyps, labels, k=3, min_count=1)
    assert top["contradiction"][0]["word"] == "not"
    assert (top["contradiction"][0]["count"], top["contradiction"][0]["word_count"]) == (8, 10)
    # log p(C|not) / p(C), p(C|not) add-1 smoothed over 2 labels: (8+1)/(10+2), p(C) = 8/18
    assert top["contradiction"][0]["pmi"] == pytest.approx(__import__("math").log((9 / 12) / (8 / 18)), abs=1e-4)


# --- SciNLI, whole tool -------------------------------------------------------------------

@pytest.mark.parametrize("name", ["nli/scinli-dev.jsonl", "nli/scinli-train-2k-human.jsonl"])
def test_stats_on_scinli_match_an_independent_computation(name):
    path = shared_file(name)
    got = run_stats("--data", str(path), *SCINLI_ARGS)
    raw = pd.read_json(path, lines=True)
    rows = pd.DataFrame([ref_row(p, h) for p, h in zip(raw["sentence1"], raw["sentence2"])])
    rows["label"] = raw["label"]
    split = got["splits"]["data"]
    assert set(split["labels"]) == {"contrasting", "entailment", "reasoning", "neutral"}
    for label, grp in [*rows.groupby("label"), ("all", rows)]:
        block = split["all"] if label == "all" else split["labels"][label]
        assert block["count"] == len(grp) == (2000 if label == "all" else 500)
        assert block["premise_words_mean"] == pytest.approx(grp["pw"].mean())
        assert block["hypothesis_words_mean"] == pytest.approx(grp["hw"].mean())
        assert block["overlap_jaccard_mean"] == pytest.approx(grp["jac"].mean())
        assert block["overlap_jaccard_median"] == pytest.approx(pystats.median(grp["jac"]))
        assert block["lcs_ratio_median"] == pytest.approx(pystats.median(grp["lcs"]))
        assert block["new_token_rate_median"] == pytest.approx(pystats.median(grp["new"]))
        assert block["hypothesis_inner_capital_share"] == pytest.approx(grp["cap"].mean())
    for label in split["labels"]:
        tops = split["labels"][label]["top_pmi_words"]
        assert len(tops) == 10 and tops == sorted(tops, key=lambda t: -t["pmi"])
        # the count beside each word is the number of the label's hypotheses holding it
        word = tops[0]["word"]
        holds = rows.index[[word in set(ref_tokens(h)) for h in raw["sentence2"]]]
        assert tops[0]["word_count"] == len(holds)
        assert tops[0]["count"] == int((raw.loc[holds, "label"] == label).sum())


def test_leakage_between_two_files_that_share_rows(tmp_path):
    dev = pd.read_json(shared_file("nli/scinli-dev.jsonl"), lines=True)
    train = pd.read_json(shared_file("nli/scinli-train-2k-human.jsonl"), lines=True)
    base = run_stats("--data", str(shared_file("nli/scinli-dev.jsonl")),
                     str(shared_file("nli/scinli-train-2k-human.jsonl")), *SCINLI_ARGS)
    before = base["leakage"]["scinli-dev|scinli-train-2k-human"]["pairs"]
    # 37 dev rows copied into a train file, 5 of them reversed and re-spaced/cased
    shared = dev.iloc[100:137].copy()
    shared.iloc[:5, shared.columns.get_loc("sentence1")], shared.iloc[:5, shared.columns.get_loc("sentence2")] = (
        [s.upper() + "  " for s in dev.iloc[100:105]["sentence2"]], list(dev.iloc[100:105]["sentence1"]))
    mixed = pd.concat([train.iloc[:500], shared], ignore_index=True)
    mixed["id"] = range(len(mixed))
    (tmp_path / "dev.jsonl").write_text(dev.to_json(orient="records", lines=True))
    (tmp_path / "train.jsonl").write_text(mixed.to_json(orient="records", lines=True))
    got = run_stats("--data", str(tmp_path / "train.jsonl"), str(tmp_path / "dev.jsonl"), *SCINLI_ARGS)
    leak = got["leakage"]["train|dev"]
    assert leak["pairs"] == before + 32          # identical pairs only
    assert leak["sentence_pairs"] == before + 37  # reversed, re-cased ones too
    assert got["splits"]["train"]["all"]["count"] == 537
    assert got["splits"]["train"]["duplicates"] == {"pairs": 0, "sentence_pairs": 0}


def test_integer_labels_are_named_by_position_and_markdown_report(tmp_path):
    f = tmp_path / "mini.csv"
    pd.DataFrame({"s1": ["The dam held.", "Rain fell all day long.", "A cat sat."],
                  "s2": ["Hence the town stayed dry.", "However the river stayed low.", "Stocks rose."],
                  "gold": [2, 0, 3]}).to_csv(f, index=False)
    got = run_stats("--data", str(f), "--premise", "s1", "--hypothesis", "s2", "--label", "gold",
                    "--label-names", "contrasting,entailment,reasoning,neutral")
    assert {k: v["count"] for k, v in got["splits"]["data"]["labels"].items()} == \
        {"contrasting": 1, "neutral": 1, "reasoning": 1}
    md = subprocess.run([sys.executable, "-m", "trainer", "stats", "--data", str(f), "--premise", "s1",
                         "--hypothesis", "s2", "--label", "gold"], cwd=REPO, capture_output=True, text=True)
    assert md.returncode == 0 and "| **overall** |" in md.stdout and "RoNLI Table 2" in md.stdout


def test_missing_column_is_a_one_line_error():
    proc = subprocess.run([sys.executable, "-m", "trainer", "stats", "--data",
                           str(shared_file("nli/scinli-dev.jsonl"))], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ") and "scinli-dev.jsonl" in proc.stderr and "--premise" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
