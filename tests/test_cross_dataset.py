"""Cross-dataset and zero-shot evaluation (`--label-map`, outside HF checkpoints) and training-set
composition (several `--train` files, `--train-size`), and the transformer's `--grid`."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.trainer_fixtures import synthetic_nli, write_jsonl
from trainer.cli import UserError, main
from trainer.data.loading import NLIDataError, parse_file_spec, parse_label_map, stratified_subsample
from trainer.training.evaluation import mapped_space, score_mapped

XNLI = {0: "entailment", 1: "neutral", 2: "contradiction"}


def three_label(n: int, seed: int) -> pd.DataFrame:
    """An SNLI-style file: sentence1/sentence2/gold_label with entailment, neutral, contradiction."""
    df = synthetic_nli(n, seed=seed)
    df = df[df.label != "reasoning"].copy()
    df["label"] = df["label"].replace({"contrasting": "contradiction"})
    return df.rename(columns={"premise": "sentence1", "hypothesis": "sentence2", "label": "gold_label"})


def test_label_map_parsing():
    assert parse_label_map("contradiction=contrasting, reasoning=entailment,entailment=entailment") == {
        "contradiction": "contrasting", "reasoning": "entailment", "entailment": "entailment"}
    with pytest.raises(NLIDataError, match="is not SOURCE=TARGET"):
        parse_label_map("contradiction:contrasting")
    with pytest.raises(NLIDataError, match="mapped twice"):
        parse_label_map("a=b,a=c")
    path, over = parse_file_spec("x.jsonl::premise=sentence1,label=gold_label,label_map=contradiction:contrasting")
    assert str(path) == "x.jsonl" and over == {"premise": "sentence1", "label": "gold_label",
                                               "label_map": {"contradiction": "contrasting"}}
    with pytest.raises(NLIDataError, match="unknown key 'colour'"):
        parse_file_spec("x.jsonl::colour=red")


def test_score_mapped_sums_many_to_one_and_reports_unmapped():
    model_labels = ["entailment", "neutral", "contradiction"]
    space, merge = mapped_space(model_labels, {"contradiction": "contrasting"})
    assert space == ["entailment", "neutral", "contrasting"] and merge.sum() == 3
    probs = np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7], [0.2, 0.5, 0.3], [0.5, 0.1, 0.4]], dtype=np.float32)
    gold = pd.Series(["entailment", "contrasting", "neutral", "reasoning"])
    m, keep, mapped, labels = score_mapped(gold, probs, model_labels, {"contradiction": "contrasting"})
    assert keep.all() and labels == ["entailment", "neutral", "contrasting", "reasoning"]
    assert m["accuracy"] == 0.75  # the reasoning row is kept and counted as an error
    assert m["label_map"]["unmapped_gold"] == {"reasoning": 1}
    assert set(m["label_map"]["averaged_over"]) == {"entailment", "neutral", "contrasting", "reasoning"}
    m2, keep2, _, _ = score_mapped(gold, probs, model_labels, {"contradiction": "contrasting"}, unmapped="drop")
    assert keep2.tolist() == [True, True, True, False] and m2["accuracy"] == 1.0 and m2["n"] == 3
    with pytest.raises(UserError, match="gold label 'reasoning' \\(1 rows\\)"):
        score_mapped(gold, probs, model_labels, {"contradiction": "contrasting"}, unmapped="error")
    # many-to-one: reasoning and entailment both become entailment; probabilities are summed
    four = ["contrasting", "entailment", "neutral", "reasoning"]
    p4 = np.array([[0.1, 0.3, 0.35, 0.25]], dtype=np.float32)
    m3, _, mapped3, _ = score_mapped(pd.Series(["entailment"]), p4, four, {"reasoning": "entailment"})
    assert mapped3[0].tolist() == pytest.approx([0.1, 0.55, 0.35]) and m3["accuracy"] == 1.0


@pytest.fixture(scope="module")
def four_label_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("x")
    train = write_jsonl(synthetic_nli(200), root / "train.jsonl")
    run = root / "run"
    assert main(["train", "--train", str(train), "--model", "tfidf-lr", "--output", str(run)]) == 0
    return root, run


def test_four_label_run_on_a_three_label_file(four_label_run, capsys):
    root, run = four_label_run
    snli = write_jsonl(three_label(90, 1), root / "snli.jsonl")
    cols = ["--premise", "sentence1", "--hypothesis", "sentence2", "--label", "gold_label"]
    capsys.readouterr()
    assert main(["evaluate", str(run), "--data", str(snli), *cols]) == 2
    assert "map the file's labels with --label-map" in capsys.readouterr().err
    assert main(["evaluate", str(run), "--data", str(snli), *cols, "--label-map", "contradiction=contrasting",
                 "--output", str(root / "ev")]) == 0
    m = json.loads((root / "ev" / "metrics.json").read_text())["snli"]
    lm = m["label_map"]
    assert lm["unmapped_gold"] == {} and sorted(lm["averaged_over"]) == ["contrasting", "entailment", "neutral"]
    preds = pd.read_parquet(root / "ev" / "predictions.parquet")
    assert set(preds["orig_label"]) == {"entailment", "neutral", "contradiction"}
    assert set(preds["gold"]) == {"entailment", "neutral", "contrasting"}
    # the synthetic cues transfer: far above the 1/3 of chance on the three mapped labels
    assert m["accuracy"] > 0.8 and m["n"] == len(preds)
    assert lm["predicted_outside_gold"].get("reasoning", 0) == int((preds["pred"] == "reasoning").sum())


@pytest.fixture(scope="module")
def tiny_xnli(tiny_nli_checkpoint):
    """A sequence-classification checkpoint with XNLI's label names, built from a config, saved locally."""
    pytest.importorskip("transformers")
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tiny = tiny_nli_checkpoint("bert", root_name="xnli", folder="base", n_train=100)
    root, base = tiny["root"], tiny["bert"]
    cfg = BertConfig.from_pretrained(str(base), num_labels=3, id2label=XNLI,
                                     label2id={v: k for k, v in XNLI.items()})
    torch.manual_seed(0)
    model = BertForSequenceClassification(cfg)
    ckpt = root / "tiny-xnli"
    model.save_pretrained(str(ckpt))
    AutoTokenizer.from_pretrained(str(base)).save_pretrained(str(ckpt))
    return ckpt


def test_zero_shot_outside_checkpoint_with_its_own_labels(tiny_xnli, tmp_path, capsys):
    from trainer.training.runs import load_run

    run = load_run(tiny_xnli)
    assert run.labels == ["entailment", "neutral", "contradiction"]
    ours = write_jsonl(synthetic_nli(48, seed=3), tmp_path / "ours.jsonl")
    out = tmp_path / "zs"
    capsys.readouterr()
    assert main(["evaluate", str(tiny_xnli), "--data", str(ours), "--label-map", "contradiction=contrasting",
                 "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "gold labels the model cannot predict after --label-map: {'reasoning': 12}" in err
    m = json.loads((out / "metrics.json").read_text())["ours"]
    assert m["n"] == 48 and m["label_map"]["unmapped_gold"] == {"reasoning": 12}
    assert m["label_map"]["mapped_model_labels"] == ["entailment", "neutral", "contrasting"]
    preds = pd.read_parquet(out / "predictions.parquet")
    assert set(preds["model_pred"]) <= set(XNLI.values())
    assert np.allclose(preds[["prob_entailment", "prob_neutral", "prob_contrasting"]].sum(1), 1, atol=1e-5)
    # the RoNLI reading: reasoning is a kind of entailment (many-to-one), nothing unmapped
    assert main(["evaluate", str(tiny_xnli), "--data", str(ours), "--output", str(tmp_path / "zs2"),
                 "--label-map", "contradiction=contrasting,reasoning=entailment"]) == 0
    m2 = json.loads((tmp_path / "zs2" / "metrics.json").read_text())["ours"]
    assert m2["label_map"]["unmapped_gold"] == {} and m2["confusion_matrix"]["labels"] == \
        ["entailment", "neutral", "contrasting"]


def test_several_train_files_each_with_its_mapping(tmp_path):
    a = write_jsonl(synthetic_nli(120), tmp_path / "ours.jsonl")
    b = write_jsonl(three_label(90, 5), tmp_path / "snli.jsonl")
    dev = write_jsonl(synthetic_nli(40, seed=1), tmp_path / "dev.jsonl")
    run = tmp_path / "run"
    spec = f"{b}::premise=sentence1,hypothesis=sentence2,label=gold_label,label_map=contradiction:contrasting"
    assert main(["train", "--train", str(a), "--train", spec, "--validation", str(dev), "--model", "tfidf-lr",
                 "--output", str(run)]) == 0
    cfg = json.loads((run / "config.json").read_text())
    n_b = len(three_label(90, 5))
    assert cfg["n_train"] == 120 + n_b and cfg["data"]["train"] == [str(a), spec]
    assert cfg["labels"] == ["contrasting", "entailment", "neutral", "reasoning"]
    assert cfg["label_counts_train"]["contrasting"] == 30 + int((three_label(90, 5).gold_label == "contradiction").sum())


def test_train_size_is_a_stratified_seeded_subsample(tmp_path):
    df = synthetic_nli(400)
    df = pd.concat([df, df[df.label == "neutral"].assign(pair_id=lambda d: d.pair_id + "b")], ignore_index=True)  # 200 neutral
    sub = stratified_subsample(df, 100, seed=1)
    assert len(sub) == 100
    assert sub["label"].value_counts().to_dict() == {"neutral": 40, "contrasting": 20, "entailment": 20,
                                                     "reasoning": 20}
    assert sub["pair_id"].tolist() == stratified_subsample(df.sample(frac=1, random_state=3), 100, seed=1)["pair_id"].tolist() \
        or set(sub["pair_id"]) == set(stratified_subsample(df.sample(frac=1, random_state=3), 100, seed=1)["pair_id"])
    assert set(sub["pair_id"]) != set(stratified_subsample(df, 100, seed=2)["pair_id"])
    train = write_jsonl(synthetic_nli(200), tmp_path / "t.jsonl")
    assert main(["train", "--train", str(train), "--train-size", "50", "--model", "tfidf-lr",
                 "--output", str(tmp_path / "r")]) == 0
    cfg = json.loads((tmp_path / "r" / "config.json").read_text())
    assert cfg["n_train"] == 50 and cfg["train_size"] == {"n": 50, "n_before": 200, "seed": 0}
    assert set(cfg["label_counts_train"].values()) == {12, 13}


def test_transformer_grid_over_lr_batch_dropout_head(tiny_nli_checkpoint, tmp_path):
    pytest.importorskip("transformers")
    import argparse

    from trainer.training.pipeline import model_grid

    ns = dict(model="transformer", grid_values=[], freeze_encoder=False)
    cross = model_grid(argparse.Namespace(**ns, encoding="cross"))
    sep = model_grid(argparse.Namespace(**ns, encoding="separate"))
    assert set(cross) == {"lr", "batch_size"} and set(sep) == {"lr", "batch_size", "dropout", "head_hidden"}
    assert len(sep["lr"]) * len(sep["batch_size"]) * len(sep["dropout"]) * len(sep["head_hidden"]) == 24

    tiny = tiny_nli_checkpoint("bert", root_name="grid", n_train=48, n_dev=24)
    train, dev, bert = tiny["train"], tiny["dev"], tiny["bert"]
    out = tmp_path / "grid"
    assert main(["train", "--train", str(train), "--validation", str(dev), "--model", "transformer",
                 "--pretrained", str(bert), "--encoding", "separate", "--epochs", "1", "--max-length", "32",
                 "--no-progress", "--device", "cpu", "--grid", "--grid-values", "lr=1e-3,3e-3",
                 "--grid-values", "batch_size=16", "--grid-values", "dropout=0.1", "--grid-values",
                 "head_hidden=32,64", "--output", str(out)]) == 0
    cfg = json.loads((out / "config.json").read_text())
    assert len(cfg["grid"]) == 4
    best = max(cfg["grid"], key=lambda g: g["validation_macro_f1"])
    assert cfg["params"]["lr"] == best["lr"] and cfg["params"]["head_hidden"] == best["head_hidden"]
