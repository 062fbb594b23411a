"""`evaluate --test`, `train --test`, `predict --input` and `stress --data` on every accepted
input layout (issue 15: a dataset folder raised KeyError 'data'), and one-line errors
(exit status 2, naming the path and what is expected) for the others."""
from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.trainer_fixtures import synthetic_nli, write_jsonl
from trainer.cli import main
from trainer.data.loading import NLIDataError, load_one_split

LABELS = ["contrasting", "entailment", "neutral", "reasoning"]
N = 40


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("evin")
    train = write_jsonl(synthetic_nli(160), root / "train.jsonl")
    out = root / "run"
    assert main(["train", "--train", str(train), "--model", "tfidf-lr", "--output", str(out)]) == 0
    return out


def _test_rows(seed: int = 1) -> pd.DataFrame:
    return synthetic_nli(N, seed=seed)


def _hf_parquet(df: pd.DataFrame, path) -> None:
    """As the extractor (and `datasets`) write a split: integer labels, ClassLabel names in the
    Parquet schema's `huggingface` metadata."""
    df = df.assign(label=df["label"].map(LABELS.index).astype("int64"))
    info = {"info": {"features": {"label": {"names": LABELS, "_type": "ClassLabel"}}}}
    table = pa.Table.from_pandas(df, preserve_index=False)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"huggingface": json.dumps(info).encode()})
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)


def _layout(kind: str, root):
    """A folder or file of the given layout whose test rows are `_test_rows()`."""
    test, other = _test_rows(), synthetic_nli(24, seed=7)
    if kind == "jsonl":
        return write_jsonl(test, root / "test-file.jsonl")
    if kind == "parquet":
        test.to_parquet(root / "test-file.parquet")
        return root / "test-file.parquet"
    if kind == "csv":
        test.to_csv(root / "test-file.csv", index=False)
        return root / "test-file.csv"
    folder = root / kind
    if kind == "top-files":  # test.parquet beside train.parquet
        folder.mkdir()
        test.to_parquet(folder / "test.parquet")
        other.to_parquet(folder / "train.parquet")
    elif kind == "split-folders":  # train/ validation/ test/ with Parquet parts
        for split, df in (("train", other), ("validation", other), ("test", test)):
            (folder / split).mkdir(parents=True)
            df.iloc[: len(df) // 2].to_parquet(folder / split / "part-00000.parquet")
            df.iloc[len(df) // 2:].to_parquet(folder / split / "part-00001.parquet")
    elif kind == "split-folder":  # the test folder itself
        (folder / "test").mkdir(parents=True)
        test.to_parquet(folder / "test" / "part-0.parquet")
        return folder / "test"
    elif kind == "hub-data":  # data/test-00000-of-00001.parquet, as the Hub lays out Parquet datasets
        (folder / "data").mkdir(parents=True)
        test.to_parquet(folder / "data" / "test-00000-of-00001.parquet")
        other.to_parquet(folder / "data" / "train-00000-of-00001.parquet")
    elif kind == "extractor":  # our extractor's splits folder: ClassLabel ints, card and stats beside
        for split, df in (("train", other), ("validation", other), ("test", test)):
            _hf_parquet(df, folder / split / "part-00000-abc.snappy.parquet")
            (folder / split / "_SUCCESS").write_text("")
        (folder / "README.md").write_text("---\nlanguage:\n- en\n---\n# card\n")
        (folder / "stats.json").write_text("{}")
        (folder / "leakage.json").write_text("{}")
    elif kind == "only-validation":  # one split, not named test: that split
        (folder / "validation").mkdir(parents=True)
        test.to_parquet(folder / "validation" / "part-0.parquet")
    elif kind == "unnamed-files":  # files with no split name: `datasets` reads them as train
        folder.mkdir()
        write_jsonl(test, folder / "pairs.jsonl")
    else:
        raise AssertionError(kind)
    return folder


LAYOUTS = ["jsonl", "parquet", "csv", "top-files", "split-folders", "split-folder", "hub-data", "extractor",
           "only-validation", "unnamed-files"]


@pytest.mark.parametrize("kind", LAYOUTS)
def test_evaluate_reads_every_accepted_layout(run, tmp_path, kind, capsys):
    path = _layout(kind, tmp_path)
    out = tmp_path / "ev"
    capsys.readouterr()
    assert main(["evaluate", str(run), "--data", str(path), "--output", str(out)]) == 0, capsys.readouterr().err
    metrics = json.loads((out / "metrics.json").read_text())
    name = path.name.split(".")[0]
    assert list(metrics) == [name]
    assert metrics[name]["n"] == N and metrics[name]["accuracy"] > 0.9
    preds = pd.read_parquet(out / "predictions.parquet")
    assert sorted(preds["pair_id"]) == sorted(_test_rows()["pair_id"])  # the test rows, never the train split


def test_the_extractor_layout_uses_the_class_label_names(tmp_path):
    split, df = load_one_split(_layout("extractor", tmp_path))
    assert split == "test" and len(df) == N
    assert df["label"].tolist() == _test_rows()["label"].tolist()  # ints mapped back to names


def test_split_flag_names_another_split(run, tmp_path):
    folder = _layout("split-folders", tmp_path)
    out = tmp_path / "ev"
    assert main(["evaluate", str(run), "--data", str(folder), "--split", "validation", "--output", str(out)]) == 0
    assert json.loads((out / "metrics.json").read_text())["split-folders"]["n"] == 24


def _one_line_error(capsys, argv, *expected):
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    assert "Traceback" not in err and "KeyError" not in err
    for text in expected:
        assert text in err, err
    return err


def test_bad_inputs_are_one_line_errors(run, tmp_path, capsys):
    two = tmp_path / "two"
    for split in ("train", "validation"):
        (two / split).mkdir(parents=True)
        _test_rows().to_parquet(two / split / "part-0.parquet")
    ev = ["evaluate", str(run), "--output", str(tmp_path / "ev"), "--data"]
    _one_line_error(capsys, [*ev, str(two)], str(two), "several splits (train, validation)", "none is 'test'",
                    "--split")
    _one_line_error(capsys, [*ev, str(two), "--split", "test"], str(two), "no split 'test'",
                    "splits: train, validation")
    empty = tmp_path / "empty"
    empty.mkdir()
    _one_line_error(capsys, [*ev, str(empty)], str(empty), "no data files", "expected")
    txt = tmp_path / "pairs.txt"
    txt.write_text("a b c\n")
    _one_line_error(capsys, [*ev, str(txt)], str(txt), "unknown file type", ".jsonl")
    _one_line_error(capsys, [*ev, str(tmp_path / "missing")], str(tmp_path / "missing"), "no such file")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "dataset_dict.json").write_text("{not json")
    _one_line_error(capsys, [*ev, str(broken)], str(broken), "expected")
    # the same check in the other commands that read one evaluation input
    _one_line_error(capsys, ["predict", str(run), "--data", str(two), "--output", str(tmp_path / "p.jsonl")],
                    str(two), "several splits")
    _one_line_error(capsys, ["stress", str(run), "--data", str(two), "--lang", "en"], str(two), "--split")


def test_train_predict_and_stress_take_a_dataset_folder(run, tmp_path):
    folder = _layout("extractor", tmp_path)
    train = write_jsonl(synthetic_nli(160), tmp_path / "train.jsonl")
    out = tmp_path / "run2"
    assert main(["train", "--train", str(train), "--test", str(folder), "--model", "tfidf-lr", "--output", str(out)]) == 0
    assert json.loads((out / "metrics.json").read_text())["extractor"]["n"] == N
    pred = tmp_path / "pred.jsonl"
    assert main(["predict", str(run), "--data", str(folder), "--output", str(pred)]) == 0
    assert len(pd.read_json(pred, lines=True)) == N
    assert main(["stress", str(run), "--data", str(folder), "--lang", "en", "--output", str(tmp_path / "st")]) == 0
    config = json.loads((tmp_path / "st" / "config.json").read_text())
    assert config["split"] == "test" and config["n"] == N


def test_load_one_split_errors_are_nli_data_errors(tmp_path):
    folder = _layout("split-folders", tmp_path)
    assert load_one_split(folder)[0] == "test"
    assert load_one_split(folder, "train")[0] == "train"
    with pytest.raises(NLIDataError, match="no split 'dev'"):
        load_one_split(folder, "dev")


def test_evaluate_label_map_flags_add_up(run, tmp_path, capsys):
    three = _test_rows()
    three = three[three.label != "reasoning"].copy()
    three["label"] = three["label"].replace({"contrasting": "contradiction", "neutral": "unrelated"})
    data = write_jsonl(three, tmp_path / "three.jsonl")
    out = tmp_path / "ev"
    assert main(["evaluate", str(run), "--data", str(data), "--output", str(out),
                 "--label-map", "contradiction=contrasting", "--label-map", "unrelated=neutral"]) == 0
    lm = json.loads((out / "metrics.json").read_text())["three"]["label_map"]
    assert lm["map"] == {"contradiction": "contrasting", "unrelated": "neutral"} and lm["unmapped_gold"] == {}
    capsys.readouterr()
    assert main(["evaluate", str(run), "--data", str(data), "--output", str(out), "--label-map", "a=b",
                 "--label-map", "a=c"]) == 2
    assert "'a' is mapped twice ('b' and 'c')" in capsys.readouterr().err
