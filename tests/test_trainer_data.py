"""The one NLI loader: every input layout, column mapping, labels, one-line errors."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.conftest import shared_file
from trainer.data.loading import NLIDataError, load_nli, load_split_file

SCINLI = dict(premise="sentence1", hypothesis="sentence2")


def _rows():
    return pd.DataFrame({
        "pair_id": ["p1", "p2", "p3"],
        "premise": ["The cat sat.", "It rained all day.", "Prices rose."],
        "hypothesis": ["A cat is sitting.", "The ground is dry.", "Demand fell."],
        "label": ["entailment", "contrasting", "reasoning"],
        "marker": ["In other words,", "However,", "Therefore,"],
    })


def test_scinli_jsonl_with_column_mapping():
    df = load_nli(shared_file("nli/scinli-dev.jsonl"), **SCINLI)["data"]
    assert len(df) == 2000
    assert list(df.columns[:4]) == ["pair_id", "premise", "hypothesis", "label"]
    assert df["pair_id"].is_unique and df["pair_id"].iloc[0] == "dev_0"
    assert df["label"].value_counts().to_dict() == {"contrasting": 500, "entailment": 500,
                                                   "reasoning": 500, "neutral": 500}
    assert "sentence1" not in df.columns  # mapped, not duplicated


def test_several_files_are_named_by_stem():
    files = [shared_file("nli/scinli-train-2k-human.jsonl"), shared_file("nli/scinli-dev.jsonl")]
    splits = load_nli(files, **SCINLI)
    assert list(splits) == ["scinli-train-2k-human", "scinli-dev"]
    assert len(splits["scinli-train-2k-human"]) == 2000


def test_our_splits_folder(tmp_path):
    for split in ("train", "validation", "test"):
        (tmp_path / split).mkdir()
        _rows().to_parquet(tmp_path / split / "part-0000.parquet")
    splits = load_nli(tmp_path)
    assert list(splits) == ["train", "validation", "test"]
    df = splits["validation"]
    assert df["pair_id"].tolist() == ["p1", "p2", "p3"]  # pair_id is the key
    assert df["marker"].tolist()[0] == "In other words,"  # other columns kept


def test_hf_data_files_layout(tmp_path):
    (tmp_path / "data").mkdir()
    _rows().to_csv(tmp_path / "data" / "train-00000-of-00001.csv", index=False)
    _rows().to_json(tmp_path / "data" / "dev.jsonl", orient="records", lines=True)
    splits = load_nli(tmp_path)
    assert set(splits) == {"train", "validation"}
    assert splits["train"]["label"].tolist() == ["entailment", "contrasting", "reasoning"]


def test_split_keyword_anywhere_in_file_names(tmp_path):
    _rows().to_json(tmp_path / "scinli-dev.jsonl", orient="records", lines=True)
    _rows().to_json(tmp_path / "scinli-train-2k.jsonl", orient="records", lines=True)
    _rows().to_csv(tmp_path / "my_test_00.csv", index=False)
    assert list(load_nli(tmp_path)) == ["train", "validation", "test"]


def test_hf_save_to_disk_uses_classlabel_names(tmp_path):
    datasets = pytest.importorskip("datasets")
    feats = datasets.Features({"premise": datasets.Value("string"), "hypothesis": datasets.Value("string"),
                               "label": datasets.ClassLabel(names=["entailment", "neutral", "contradiction"])})
    ds = datasets.Dataset.from_dict({"premise": ["a b", "c d", "e f"], "hypothesis": ["x", "y", "z"],
                                     "label": [0, 2, -1]}, features=feats)
    datasets.DatasetDict({"train": ds, "test": ds}).save_to_disk(str(tmp_path / "hf"))
    splits = load_nli(tmp_path / "hf")
    assert list(splits) == ["train", "test"]
    # -1 is "no gold label" (GLUE/SNLI): kept as None for the caller to count
    assert splits["train"]["label"].tolist() == ["entailment", "contradiction", None]
    assert splits["train"]["pair_id"].is_unique


def test_json_array_csv_tsv_and_integer_labels(tmp_path):
    rows = _rows().drop(columns="pair_id").assign(label=[0, 1, 2])
    (tmp_path / "a.json").write_text(json.dumps(rows.to_dict(orient="records")))
    rows.to_csv(tmp_path / "a.csv", index=False)
    rows.to_csv(tmp_path / "a.tsv", index=False, sep="\t")
    names = ["entailment", "contrasting", "reasoning"]
    for f in ("a.json", "a.csv", "a.tsv"):
        df = load_split_file(tmp_path / f, label_names=names)
        assert df["label"].tolist() == names, f
        assert df["premise"].tolist()[1] == "It rained all day."
    # hashed ids: stable across loads and formats
    assert load_split_file(tmp_path / "a.csv")["pair_id"].tolist() == load_split_file(tmp_path / "a.tsv")["pair_id"].tolist()


def test_errors_are_one_line_and_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        load_nli(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(NLIDataError, match=r"empty\.jsonl: empty file"):
        load_nli(tmp_path / "empty.jsonl")
    with pytest.raises(NLIDataError) as exc:
        load_nli(shared_file("nli/scinli-dev.jsonl"))
    msg = str(exc.value)
    assert "scinli-dev.jsonl" in msg and "'premise'" in msg and "sentence1, sentence2" in msg
    assert "\n" not in msg
    _rows().to_csv(tmp_path / "x.csv", index=False)
    with pytest.raises(NLIDataError, match="x.csv: label 'reasoning' not in label names"):
        load_nli(tmp_path / "x.csv", label_names=["entailment", "contrasting"])
    (tmp_path / "bad.json").write_text('{"premise": "a"')
    with pytest.raises(NLIDataError, match="bad.json"):
        load_nli(tmp_path / "bad.json")


def test_unlabeled_file_for_prediction(tmp_path):
    _rows().drop(columns="label").to_json(tmp_path / "u.jsonl", orient="records", lines=True)
    df = load_split_file(tmp_path / "u.jsonl", require_label=False)
    assert "label" not in df.columns and len(df) == 3
