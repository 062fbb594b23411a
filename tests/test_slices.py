"""`--by COL` slices (ESNLIR Tables 7-8, IndoNLI Table 11) and predictions that keep the rows' columns."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.trainer_fixtures import synthetic_nli, write_jsonl
from trainer.cli import main
from trainer.analysis.metrics import slice_metrics, slices_markdown

GENRES = ["news", "books", "talks"]


def tagged(n: int, seed: int, genres=GENRES) -> pd.DataFrame:
    df = synthetic_nli(n, seed=seed)
    df["genre"] = [genres[i % len(genres)] for i in range(n)]
    df["tags"] = [["NEG"] if i % 3 == 0 else (["NUM", "NEG"] if i % 3 == 1 else []) for i in range(n)]
    return df


def test_slice_metrics_by_value_and_by_tag():
    preds = pd.DataFrame({
        "gold": ["a", "a", "b", "b", "a", "b"],
        "pred": ["a", "b", "b", "b", "a", "a"],
        "genre": ["x", "x", "x", "y", "y", None],
        "tags": [["NEG"], ["NEG", "NUM"], [], ["NUM"], ["NEG"], ["NUM"]],
    })
    by_genre = {r["value"]: r for r in slice_metrics(preds, "genre", ["a", "b"])}
    assert by_genre["x"]["n"] == 3 and by_genre["x"]["accuracy"] == pytest.approx(2 / 3)
    assert by_genre["y"]["n"] == 2 and by_genre["y"]["accuracy"] == 1.0
    assert by_genre["(none)"]["n"] == 1 and by_genre["(none)"]["accuracy"] == 0.0
    by_tag = {r["value"]: r for r in slice_metrics(preds, "tags", ["a", "b"], train_counts={"NEG": 7})}
    # a row counts under each of its tags; a row without tags under "(none)"
    assert by_tag["NEG"]["n"] == 3 and by_tag["NEG"]["accuracy"] == pytest.approx(2 / 3)
    assert by_tag["NUM"]["n"] == 3 and by_tag["NUM"]["accuracy"] == pytest.approx(1 / 3)
    assert by_tag["NUM"]["label_counts"] == {"a": 1, "b": 2}
    assert by_tag["NEG"]["n_train"] == 7 and by_tag["NUM"]["n_train"] == 0  # test-only value
    assert by_tag["(none)"]["n"] == 1
    md = slices_markdown({"test": {"tags": list(by_tag.values())}})
    assert "| tags | n | n_train | accuracy | macro-F1 |" in md and "| NEG | 3 | 7 | 0.667 |" in md


def test_train_and_evaluate_report_slices_and_keep_columns(tmp_path):
    train = write_jsonl(tagged(200, 0, genres=["news", "books"]), tmp_path / "train.jsonl")
    test = write_jsonl(tagged(60, 1), tmp_path / "test.jsonl")
    run = tmp_path / "run"
    assert main(["train", "--train", str(train), "--test", str(test), "--model", "tfidf-lr", "--output", str(run),
                 "--by", "genre", "--by", "tags"]) == 0
    slices = json.loads((run / "slices.json").read_text())
    genre = {r["value"]: r for r in slices["test"]["genre"]}
    assert {k: v["n"] for k, v in genre.items()} == {"news": 20, "books": 20, "talks": 20}
    assert genre["talks"]["n_train"] == 0 and genre["news"]["n_train"] == 100  # test-only genre, Table 8
    tags = {r["value"]: r for r in slices["test"]["tags"]}
    assert tags["NEG"]["n"] == 40 and tags["NUM"]["n"] == 20 and tags["(none)"]["n"] == 20
    preds = pd.read_parquet(run / "predictions.parquet")
    assert {"premise", "hypothesis", "genre", "tags", "pair_id"} <= set(preds.columns)
    # any slice can be recomputed from predictions.parquet alone
    talks = preds[(preds.split == "test") & (preds.genre == "talks")]
    assert (talks.gold == talks.pred).mean() == pytest.approx(genre["talks"]["accuracy"])
    assert list(preds.loc[preds.split == "test", "tags"].iloc[1]) == ["NUM", "NEG"]
    assert "### test by genre" in (run / "slices.md").read_text()
    # evaluate: the same slices on another file, several --by at once (comma form)
    assert main(["evaluate", str(run), "--data", str(test), "--by", "genre,tags", "--output", str(tmp_path / "ev")]) == 0
    ev = json.loads((tmp_path / "ev" / "slices.json").read_text())
    assert {r["value"]: r["n"] for r in ev["test"]["genre"]} == {"news": 20, "books": 20, "talks": 20}
    assert ev["test"]["tags"] == [{k: v for k, v in r.items() if k != "n_train"} for r in slices["test"]["tags"]]
