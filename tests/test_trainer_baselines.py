"""Baselines, the train/evaluate/predict commands, protocols (seeds, grid, oversampling), hooks."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from tests.conftest import shared_file
from tests.trainer_fixtures import synthetic_nli, write_jsonl
from trainer.commands import train as train_cmd
from trainer.cli import build_parser, main
from trainer.models.loop import Callback, LoopConfig, default_schedule, fit
from trainer.analysis.metrics import compute_metrics, mean_std
from trainer.models.cbow import DenseData
from trainer.training.runs import load_run
from trainer.training.pipeline import oversample

SCINLI = ["--premise", "sentence1", "--hypothesis", "sentence2"]


@pytest.fixture(scope="module")
def syn(tmp_path_factory):
    root = tmp_path_factory.mktemp("syn")
    return {"root": root, "train": write_jsonl(synthetic_nli(400), root / "train.jsonl"),
            "dev": write_jsonl(synthetic_nli(120, seed=1), root / "dev.jsonl")}


def _train(syn, out, model, *extra):
    return main(["train", "--train", str(syn["train"]), "--validation", str(syn["dev"]), "--test", str(syn["dev"]),
                 "--model", model, "--output", str(out), "--no-progress", "--vector-size", "20", *extra])


@pytest.mark.parametrize("model", ["majority", "tfidf-lr", "tfidf-svm", "bow-xgboost", "cbow-svm", "cbow-softmax"])
def test_every_baseline_trains_saves_and_reloads(syn, tmp_path, model):
    out = tmp_path / model
    extra = ["--epochs", "4"] if model == "cbow-softmax" else []
    assert _train(syn, out, model, *extra) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == {"validation", "dev"}
    if model == "majority":
        assert metrics["dev"]["accuracy"] == pytest.approx(0.25)
    else:  # the synthetic cues are easy: every real model beats chance clearly
        assert metrics["dev"]["macro_f1"] > 0.5, metrics["dev"]
    preds = pd.read_parquet(out / "predictions.parquet")
    assert list(preds.columns[:4]) == ["pair_id", "split", "gold", "pred"]
    run = load_run(out)
    dev = pd.read_json(syn["dev"], lines=True)
    saved = preds.query("split == 'dev'")[[f"prob_{l}" for l in run.labels]].to_numpy()
    np.testing.assert_allclose(run.predict_proba(dev), saved, atol=1e-5)
    has_dynamics = (out / "dynamics").exists()
    assert has_dynamics == (model == "cbow-softmax")
    if has_dynamics:
        files = sorted((out / "dynamics").glob("epoch_*.parquet"))
        assert len(files) == len(json.loads((out / "config.json").read_text())["history"])
        assert all(len(pd.read_parquet(f)) == 400 for f in files)
        assert run.embed(["our model is robust"]).shape == (1, 20)


def test_scinli_pair_beats_hypothesis_only(tmp_path):
    train, dev = shared_file("nli/scinli-train-2k-human.jsonl"), shared_file("nli/scinli-dev.jsonl")
    scores = {}
    for mode in ("pair", "hypothesis"):
        out = tmp_path / mode
        assert main(["train", "--train", str(train), "--validation", str(dev), *SCINLI, "--model", "tfidf-lr",
                     "--input-mode", mode, "--output", str(out)]) == 0
        scores[mode] = json.loads((out / "metrics.json").read_text())["validation"]["macro_f1"]
    assert scores["pair"] > scores["hypothesis"] + 0.03, scores
    assert scores["hypothesis"] > 0.3  # SciNLI hypotheses do leak their label (the artifact RoNLI measures)


def test_clear_errors(syn, tmp_path, capsys):
    def err_of(argv):
        rc = main(argv)
        err = capsys.readouterr().err.strip()
        assert rc == 2 and len(err.splitlines()) == 1, err
        return err

    base = ["train", "--model", "tfidf-lr", "--output", str(tmp_path / "o")]
    dev = shared_file("nli/scinli-dev.jsonl")
    err = err_of(base + ["--train", str(dev)])
    assert "scinli-dev.jsonl: no column 'premise' (use --premise)" in err and "sentence1, sentence2" in err
    odd = synthetic_nli(20, seed=2)
    odd.loc[3, "label"] = "contradiction"
    bad = write_jsonl(odd, tmp_path / "odd.jsonl")
    err = err_of(base + ["--train", str(syn["train"]), "--test", str(bad)])
    assert "odd.jsonl" in err and "'contradiction' is not one of the model's labels" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert "empty.jsonl: empty file" in err_of(base + ["--train", str(empty)])
    assert "no such file" in err_of(base + ["--train", str(tmp_path / "missing.jsonl")])
    # evaluate checks labels against the saved run
    assert _train(syn, tmp_path / "run", "majority") == 0
    capsys.readouterr()
    err = err_of(["evaluate", str(tmp_path / "run"), "--data", str(bad)])
    assert "'contradiction' is not one of the model's labels" in err
    # an existing run directory is never overwritten silently
    assert "not empty" in err_of(["train", "--train", str(syn["train"]), "--model", "majority",
                                  "--output", str(tmp_path / "run")])


def test_seeds_protocol_selects_on_validation(syn, tmp_path):
    out = tmp_path / "seeds"
    assert _train(syn, out, "cbow-softmax", "--seeds", "3", "--seed", "10", "--epochs", "2") == 0
    summary = json.loads((out / "seeds.json").read_text())
    assert summary["seeds"] == [10, 11, 12]
    val = {int(s): r["validation"]["macro_f1"] for s, r in summary["runs"].items()}
    assert summary["selected_seed"] == max(val, key=lambda s: (val[s], -s))
    scores = [summary["runs"][str(s)]["dev"]["macro_f1"] for s in (10, 11, 12)]
    assert summary["mean"]["dev"]["macro_f1"] == pytest.approx(np.mean(scores))
    assert summary["std"]["dev"]["macro_f1"] == pytest.approx(np.std(scores, ddof=1))
    sel = out / f"seed_{summary['selected_seed']}"
    assert json.loads((out / "metrics.json").read_text()) == json.loads((sel / "metrics.json").read_text())
    assert sorted(p.name for p in (out / "dynamics").iterdir()) == sorted(p.name for p in (sel / "dynamics").iterdir())
    assert load_run(out).run_dir == sel


def test_grid_selects_best_validation_setting(syn, tmp_path):
    out = tmp_path / "grid"
    assert _train(syn, out, "tfidf-svm", "--grid") == 0
    config = json.loads((out / "config.json").read_text())
    grid = config["grid"]
    assert sorted(g["C"] for g in grid) == [0.1, 0.5, 1.0, 10.0, 100.0, 1000.0]
    best = max(grid, key=lambda g: g["validation_macro_f1"])
    assert config["params"]["C"] == best["C"]


def test_oversample_balances_deterministically():
    df = synthetic_nli(40)
    df = pd.concat([df, df[df.label == "neutral"].assign(pair_id=lambda d: d.pair_id + "x")]).reset_index(drop=True)
    df = df[~((df.label == "reasoning") & (df.index % 2 == 0))].reset_index(drop=True)
    counts = df.label.value_counts()
    out = oversample(df, seed=1)
    assert out.label.value_counts().to_dict() == {lab: counts.max() for lab in counts.index}
    assert set(out.pair_id) == set(df.pair_id) and out.iloc[: len(df)].equals(df)
    again = oversample(df.sample(frac=1, random_state=0).reset_index(drop=True), seed=1)
    assert sorted(again.pair_id) == sorted(out.pair_id)  # the same copies whatever the row order


def test_metrics_layout():
    gold = ["a", "a", "b", "b", "c"]
    pred = ["a", "b", "b", "b", "a"]
    m = compute_metrics(gold, pred, ["a", "b", "c"])
    assert m["accuracy"] == pytest.approx(0.6) and m["micro_f1"] == pytest.approx(0.6)
    assert m["per_class"]["b"] == {"precision": pytest.approx(2 / 3), "recall": 1.0, "f1": pytest.approx(0.8),
                                   "support": 2}
    assert m["per_class"]["c"]["f1"] == 0.0
    assert m["macro_f1"] == pytest.approx((0.5 + 0.8 + 0.0) / 3)
    assert m["confusion_matrix"] == {"labels": ["a", "b", "c"], "matrix": [[1, 1, 0], [0, 2, 0], [1, 0, 0]]}
    mean, std = mean_std({"1": {"t": {"accuracy": 0.5, "micro_f1": 0.5, "macro_f1": 0.4}},
                          "2": {"t": {"accuracy": 0.7, "micro_f1": 0.7, "macro_f1": 0.6}}})
    assert mean["t"]["accuracy"] == pytest.approx(0.6) and std["t"]["macro_f1"] == pytest.approx(0.1414, abs=1e-4)


def test_predict_labels_an_unlabelled_file(syn, tmp_path):
    assert _train(syn, tmp_path / "run", "tfidf-lr") == 0
    df = pd.read_json(syn["dev"], lines=True).drop(columns="label")
    src = write_jsonl(df, tmp_path / "unlabelled.jsonl")
    assert main(["predict", str(tmp_path / "run"), "--data", str(src), "--output", str(tmp_path / "p.csv")]) == 0
    out = pd.read_csv(tmp_path / "p.csv")
    assert len(out) == len(df) and out["pair_id"].tolist() == df["pair_id"].tolist()
    probs = out[[c for c in out.columns if c.startswith("prob_")]].to_numpy()
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-5)


# ---------------------------------------------------------------------------- the loop

class IndexModel(torch.nn.Module):
    """Logits from features; records which rows (feature 0 = row index) it is trained on."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 4)
        self.seen: list[list[int]] = []

    def forward(self, x):
        if self.training:
            self.seen.append(x[:, 0].long().tolist())
        return self.linear(x)


def test_loop_follows_a_batch_schedule_and_default_epochs_cover_every_row():
    n = 30
    X = np.column_stack([np.arange(n), np.random.default_rng(0).normal(size=n)]).astype(np.float32)
    data = DenseData(X, np.arange(n) % 4, 4)
    schedule = [[0, 1, 2], [3, 4], [0, 1, 2], [5], [6, 7, 8, 9]]
    model = IndexModel()
    state = fit(model, data, config=LoopConfig(batch_size=4, epochs=1, lr=0.1, device="cpu", progress=False),
                schedule=schedule)
    assert model.seen == schedule and state.global_step == len(schedule)
    # default: every row exactly once per epoch, same order for the same seed, steps of the batch size
    s1 = default_schedule(n, step_size=4, epochs=2, seed=5)
    assert s1 == default_schedule(n, step_size=4, epochs=2, seed=5) != default_schedule(n, step_size=4, epochs=2, seed=6)
    per_epoch = len(s1) // 2
    assert sorted(sum(s1[:per_epoch], [])) == list(range(n)) == sorted(sum(s1[per_epoch:], []))
    lengths = np.random.default_rng(1).integers(5, 100, size=n)
    grouped = default_schedule(n, step_size=4, epochs=1, seed=5, lengths=lengths)
    pad = lambda sched: sum(len(b) * lengths[b].max() - lengths[b].sum() for b in map(np.asarray, sched))  # noqa: E731
    assert pad(grouped) < pad(s1[:per_epoch])


def test_grad_accumulation_splits_steps_into_micro_batches():
    n = 16
    X = np.column_stack([np.arange(n), np.zeros(n)]).astype(np.float32)
    model = IndexModel()
    fit(model, DenseData(X, np.arange(n) % 4, 4),
        config=LoopConfig(batch_size=4, grad_accum=2, epochs=1, device="cpu", progress=False, group_by_length=False))
    assert len(model.seen) == 4 and all(len(b) == 4 for b in model.seen)  # 2 steps x 2 micro-batches


def test_cartography_and_curriculum_hooks(syn, tmp_path, monkeypatch):
    calls = {}

    def select_subset(train_df, source, subset):
        calls["subset"] = (str(source), subset, len(train_df))
        return train_df[train_df["label"] != "neutral"]

    def make_schedule(name, train_df, *, total_steps, batch_size, seed, cartography_from=None, sts_from=None):
        calls["schedule"] = dict(name=name, n=len(train_df), total_steps=total_steps, batch_size=batch_size,
                                 seed=seed, cartography_from=str(cartography_from))
        return [list(range(i % len(train_df), i % len(train_df) + 1)) * batch_size for i in range(total_steps)]

    monkeypatch.setattr("trainer.training.pipeline.select_subset", select_subset)  # train imports both at its top
    monkeypatch.setattr("trainer.training.pipeline.make_schedule", make_schedule)
    out = tmp_path / "cl"
    (tmp_path / "carto").mkdir()  # --cartography-from must exist: checked before any work
    assert _train(syn, out, "cbow-softmax", "--epochs", "2", "--batch-size", "50", "--patience", "0",
                  "--subset", "e2l", "--cartography-from", str(tmp_path / "carto"),
                  "--curriculum", "cart++") == 0
    assert calls["subset"] == (str(tmp_path / "carto"), "e2l", 400)
    assert calls["schedule"] == dict(name="cart++", n=300, total_steps=2 * 6, batch_size=50, seed=0,
                                     cartography_from=str(tmp_path / "carto"))
    config = json.loads((out / "config.json").read_text())
    assert config["subset"]["n"] == 300 and config["curriculum"]["total_steps"] == 12
    dyn = pd.read_parquet(out / "dynamics" / "epoch_1.parquet")
    assert len(dyn) == 300 and "neutral" not in set(dyn["gold"])
