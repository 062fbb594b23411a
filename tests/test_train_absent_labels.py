"""Macro-F1 over a split that lacks some of the run's labels (SciNLI rows): averaged over
the labels present, the absent ones named on the console and in metrics.json."""
from __future__ import annotations

import json

from sklearn.metrics import f1_score

from tests.conftest import shared_file
from trainer.analysis.metrics import compute_metrics
from trainer.cli import main


def two_label_rows(tmp_path, n: int = 40) -> tuple:
    """`n` scinli-dev rows of each of two labels, as a JSONL file of SciNLI's columns."""
    rows, seen = [], {"contrasting": 0, "entailment": 0}
    for line in shared_file("nli/scinli-dev.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if seen.get(r["label"], n) < n:
            seen[r["label"]] += 1
            rows.append(r)
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, rows


FOUR = ["contrasting", "entailment", "reasoning", "neutral"]


def test_a_perfect_split_of_two_of_four_labels_scores_macro_f1_one(tmp_path):
    _, rows = two_label_rows(tmp_path, 3)
    gold = [r["label"] for r in rows]
    m = compute_metrics(gold, gold, FOUR)
    assert m["accuracy"] == 1.0 and m["macro_f1"] == 1.0  # was 0.5: two F1s of 0 averaged in
    assert m["macro_f1_labels"] == ["contrasting", "entailment"] and m["absent_labels"] == ["reasoning", "neutral"]
    full = compute_metrics(gold + ["neutral"], gold + ["neutral"], FOUR)
    assert "absent_labels" in full and full["absent_labels"] == ["reasoning"]
    every = compute_metrics(["reasoning", "neutral"] + gold, ["reasoning", "neutral"] + gold, FOUR)
    assert "absent_labels" not in every and "macro_f1_labels" not in every


def test_train_reports_macro_f1_over_the_labels_a_test_file_holds(tmp_path, capsys):
    test, rows = two_label_rows(tmp_path)
    argv = ["train", "--train", str(shared_file("nli/scinli-train-2k-human.jsonl")), "--premise", "sentence1",
            "--hypothesis", "sentence2", "--test", str(test), "--model", "tfidf-lr", "--output", str(tmp_path / "run")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    m = json.loads((tmp_path / "run" / "metrics.json").read_text())["two"]
    assert m["absent_labels"] == ["neutral", "reasoning"] and m["macro_f1_labels"] == ["contrasting", "entailment"]
    line = next(l for l in out.splitlines() if l.startswith("two: "))
    assert (f"macro-F1 {m['macro_f1']:.4f} over the 2 labels present (contrasting, entailment; absent from this "
            f"split: neutral, reasoning) (n={len(rows)})") in line
    # the two present labels' F1 averaged, from the predictions written
    import pandas as pd

    preds = pd.read_parquet(tmp_path / "run" / "predictions.parquet")
    preds = preds[preds["split"] == "two"]
    expected = f1_score(preds["gold"], preds["pred"], labels=["contrasting", "entailment"], average="macro")
    assert abs(m["macro_f1"] - expected) < 1e-12
    assert m["macro_f1"] > f1_score(preds["gold"], preds["pred"], labels=m["macro_f1_labels"] + m["absent_labels"],
                                    average="macro", zero_division=0)
