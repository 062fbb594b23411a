"""`python -m trainer stress`: templates, the seeded spelling rule, outputs, and SciNLI."""
from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from tests.conftest import shared_file
from tests.trainer_fixtures import synthetic_nli, write_jsonl
from trainer.cli import UserError, main
from trainer.analysis.stress import (TESTS, append_phrase, build_sets, load_templates, misspell, stress_report,
                            table_markdown, validate_templates)


def test_lexicon_templates_are_esnlir_s_for_spanish_and_exist_for_ro_en():
    es, path = load_templates("es")
    assert path.endswith("phrase_lexicons/es.yaml")
    assert es["length_mismatch"] == {"target": "premise", "text": "y verdadero es verdadero", "times": 5}
    assert es["negation"] == {"target": "hypothesis", "text": "y falso no es verdadero", "times": 1}
    assert es["overlap"]["text"] == "y verdadero es verdadero" and es["overlap"]["target"] == "hypothesis"
    ro, _ = load_templates("ro")
    en, _ = load_templates("en")
    assert ro["negation"]["text"] == "și fals nu este adevărat"
    assert en["length_mismatch"]["text"] == "and true is true" and en["spelling"]["min_word_length"] == 4


@pytest.mark.parametrize("raw, message", [
    (None, "no stress_tests entry"),
    ({"negation": {"text": "x"}}, "stress_tests.length_mismatch is missing"),
    ({t: {"text": "x"} for t in TESTS} | {"typo": {}}, "unknown test 'typo'"),
    ({t: {"text": "x", "target": "label"} for t in TESTS}, "target must be premise or hypothesis"),
    ({t: {"text": "", "times": 1} for t in TESTS}, "length_mismatch.text is missing or empty"),
    ({t: {"text": "x", "times": 0} for t in TESTS}, "times must be a positive integer"),
])
def test_template_errors_are_one_line(raw, message):
    with pytest.raises(UserError, match=re.escape(message)):
        validate_templates(raw, "phrase_lexicons/xx.yaml")


def test_append_keeps_the_final_punctuation_and_repeats():
    assert append_phrase("The cat sat.", "and true is true") == "The cat sat and true is true."
    assert append_phrase("no stop", "y verdadero es verdadero", 2) == \
        "no stop y verdadero es verdadero y verdadero es verdadero"
    assert append_phrase("Why?  ", "and true is true") == "Why and true is true?"


def test_spelling_rule_swaps_two_inner_letters_of_one_word_seeded():
    s = "The encoder was trained on noisy sentences."
    out = misspell(s, "id-1", seed=0)
    assert out != s and len(out) == len(s)
    changed = [(a, b) for a, b in zip(s.split(), out.split()) if a != b]
    assert len(changed) == 1
    before, after = changed[0]
    assert sorted(before) == sorted(after) and before[0] == after[0] and before[-1] == after[-1]
    diff = [i for i, (x, y) in enumerate(zip(before, after)) if x != y]
    assert len(diff) == 2 and diff[1] == diff[0] + 1  # two neighbouring letters swapped
    assert misspell(s, "id-1", seed=0) == out  # deterministic
    outs = {misspell(s, "id-1", seed=k) for k in range(12)}
    assert len(outs) > 3  # the seed moves the word and the position
    assert misspell("a bb ccc 12345", "x") is None  # no word of 4 letters: row unchanged
    assert misspell("aaaa", "x") is None  # swapping equal letters changes nothing: skipped


def test_sets_are_parallel_and_report_changes():
    df = synthetic_nli(40)
    templates, _ = load_templates("en")
    sets = build_sets(df, templates, seed=0)
    assert set(sets) == set(TESTS)
    for name, s in sets.items():
        assert list(s["pair_id"]) == list(df["pair_id"]) and list(s["label"]) == list(df["label"])
    assert all(p.endswith(" and true is true" * 5) for p in sets["length_mismatch"]["premise"])
    assert (sets["length_mismatch"]["hypothesis"] == df["hypothesis"]).all()
    assert all(h.endswith("and false is not true") for h in sets["negation"]["hypothesis"])
    assert (sets["spelling"]["premise"] != df["premise"]).sum() == sets["spelling"]["changed"].sum() == 40
    labels = ["a", "b"]

    def m(acc, fa, fb):
        return {"n": 10, "accuracy": acc, "macro_f1": (fa + fb) / 2, "confusion_matrix": {},
                "per_class": {"a": {"f1": fa}, "b": {"f1": fb}}}
    report = stress_report({"original": m(0.8, 0.8, 0.6), "negation": m(0.5, 0.4, 0.6)}, labels)
    assert report["negation"]["change"]["macro_f1"] == pytest.approx(-0.2)
    assert report["negation"]["change"]["per_class_f1"] == {"a": pytest.approx(-0.4), "b": pytest.approx(0.0)}
    table = table_markdown(report, labels)
    assert table.splitlines()[0] == "| stress test | a | b | accuracy | macro-F1 | Δ macro-F1 |"
    assert "| test_negation | 0.400 | 0.600 | 0.500 | 0.500 | -0.200 |" in table


def test_stress_command_writes_metrics_sets_and_table(tmp_path, capsys):
    train = write_jsonl(synthetic_nli(200), tmp_path / "train.jsonl")
    test = write_jsonl(synthetic_nli(60, seed=1), tmp_path / "test.jsonl")
    run = tmp_path / "run"
    assert main(["train", "--train", str(train), "--test", str(test), "--model", "tfidf-lr", "--output", str(run)]) == 0
    assert main(["stress", str(run), "--data", str(test), "--lang", "en"]) == 0
    out = run / "stress"
    metrics = json.loads((out / "metrics.json").read_text())
    assert list(metrics) == ["original", *TESTS]
    base = json.loads((run / "metrics.json").read_text())["test"]
    assert metrics["original"]["accuracy"] == pytest.approx(base["accuracy"])
    for name in TESTS:
        e = metrics[name]
        assert e["change"]["accuracy"] == pytest.approx(e["accuracy"] - metrics["original"]["accuracy"])
        assert set(e["per_class_f1"]) == {"contrasting", "entailment", "neutral", "reasoning"}
        s = pd.read_parquet(out / "sets" / f"{name}.parquet")
        assert len(s) == 60 and "changed" in s.columns
    assert (out / "table.md").read_text().count("| test_") == 4
    assert not list(tmp_path.glob("run/stress.inprogress*"))
    # an unknown language is one line
    capsys.readouterr()
    assert main(["stress", str(run), "--data", str(test), "--lang", "xx"]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_scinli_negation_moves_predictions_more_than_spelling(tmp_path):
    train, dev = shared_file("nli/scinli-train-2k-human.jsonl"), shared_file("nli/scinli-dev.jsonl")
    run = tmp_path / "scinli"
    cols = ["--premise", "sentence1", "--hypothesis", "sentence2"]
    assert main(["train", "--train", str(train), "--test", str(dev), *cols, "--model", "tfidf-lr",
                 "--output", str(run)]) == 0
    assert main(["stress", str(run), "--data", str(dev), "--lang", "en"]) == 0
    m = json.loads((run / "stress" / "metrics.json").read_text())
    assert m["original"]["n"] == 2000
    # appending a phrase to every hypothesis moves a bag-of-words model far more than one typo
    assert m["negation"]["predictions_changed"] > 2 * m["spelling"]["predictions_changed"]
    assert m["spelling"]["changed_rows"] > 1900


def test_stress_label_map_is_evaluate_s_repeatable_flag(tmp_path, capsys):
    """A 4-label run stressed on a 3-label file: --label-map as `evaluate` parses it; repeated
    flags add up, a label mapped to two names is an error, an unmapped label says --label-map."""
    train = write_jsonl(synthetic_nli(200), tmp_path / "train.jsonl")
    run = tmp_path / "run"
    assert main(["train", "--train", str(train), "--model", "tfidf-lr", "--output", str(run)]) == 0
    three = synthetic_nli(80, seed=1)
    three = three[three.label != "reasoning"].copy()
    three["label"] = three["label"].replace({"contrasting": "contradiction"})
    data = write_jsonl(three, tmp_path / "three.jsonl")
    base = ["stress", str(run), "--data", str(data), "--lang", "en"]
    capsys.readouterr()
    assert main(base) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "'contradiction'" in err and "--label-map" in err
    assert main([*base, "--label-map", "contradiction=contrasting", "--label-map", "reasoning=entailment"]) == 0
    metrics = json.loads((run / "stress" / "metrics.json").read_text())
    lm = metrics["original"]["label_map"]
    assert lm["map"] == {"contradiction": "contrasting", "reasoning": "entailment"}  # both flags kept
    assert lm["mapped_model_labels"] == ["contrasting", "entailment", "neutral"] and lm["unmapped_gold"] == {}
    for name in ("original", *TESTS):
        assert set(metrics[name]["per_class_f1"]) == {"contrasting", "entailment", "neutral"}
        assert metrics[name]["n"] == len(three)
    assert metrics["original"]["accuracy"] > 0.9
    config = json.loads((run / "stress" / "config.json").read_text())
    assert config["label_map"] == lm["map"] and config["unmapped"] == "keep"
    s = pd.read_parquet(run / "stress" / "sets" / "negation.parquet")
    assert set(s["label"]) == {"contrasting", "entailment", "neutral"} and "orig_label" in s.columns
    # gold labels no model label maps to: reported, and dropped on request
    # the output of the first run is there: a second run replaces it only with --overwrite
    assert main([*base, "--label-map", "entailment=contrasting", "--unmapped", "drop", "--overwrite"]) == 0
    lm = json.loads((run / "stress" / "metrics.json").read_text())["original"]["label_map"]
    assert lm["unmapped_gold"] == {"contradiction": int((three.label == "contradiction").sum())}
    assert lm["rows_dropped"] == lm["unmapped_gold"]["contradiction"]
    assert "note: original: gold labels the model cannot predict" in capsys.readouterr().err
    assert main([*base, "--label-map", "contradiction=contrasting", "--label-map", "contradiction=neutral"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --label-map: 'contradiction' is mapped twice") and err.count("\n") == 1
