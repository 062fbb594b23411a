"""End to end on real SciNLI pairs with a tiny cbow-softmax: dynamics -> cartography -> subset,
curriculum and compare. Small on purpose (240 training pairs, 3 epochs)."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.conftest import shared_file
from trainer.cli import main

pytest.importorskip("torch")
pytest.importorskip("gensim")


@pytest.fixture(scope="module")
def scinli(tmp_path_factory):
    train = pd.read_json(shared_file("nli/scinli-train-2k-human.jsonl"), lines=True)
    dev = pd.read_json(shared_file("nli/scinli-dev.jsonl"), lines=True)
    d = tmp_path_factory.mktemp("scinli")
    # 60 pairs per class: small, balanced, real text
    train.groupby("label").head(60).to_json(d / "train.jsonl", orient="records", lines=True)
    dev.groupby("label").head(40).to_json(d / "dev.jsonl", orient="records", lines=True)
    return d


def train_args(d, out, *extra):
    return ["train", "--train", str(d / "train.jsonl"), "--validation", str(d / "dev.jsonl"),
            "--test", str(d / "dev.jsonl"), "--premise", "sentence1", "--hypothesis", "sentence2",
            "--model", "cbow-softmax", "--epochs", "3", "--batch-size", "16", "--vector-size", "16",
            "--no-progress", "--output", str(out), *extra]


@pytest.fixture(scope="module")
def base_run(scinli):
    out = scinli / "base"
    assert main(train_args(scinli, out)) == 0
    return out


def test_cartography_of_a_real_run(base_run, capsys):
    assert main(["cartography", str(base_run)]) == 0
    m = pd.read_parquet(base_run / "cartography" / "metrics.parquet")
    train_ids = set(pd.read_json(base_run.parent / "train.jsonl", lines=True)["id"])
    assert set(m["pair_id"]) == train_ids and (m["epochs"] == 3).all()
    # the measures are those of the dynamics files, recomputed here by hand for one id
    one = m["pair_id"].iloc[7]
    probs = [pd.read_parquet(base_run / "dynamics" / f"epoch_{e}.parquet").set_index("pair_id").loc[one, "gold_prob"]
             for e in range(3)]
    mean = sum(probs) / 3
    assert m.set_index("pair_id").loc[one, "confidence"] == pytest.approx(mean, abs=1e-6)
    assert m.set_index("pair_id").loc[one, "variability"] == pytest.approx(
        (sum((p - mean) ** 2 for p in probs) / 3) ** 0.5, abs=1e-6)
    assert m[["e2l", "a", "h2l"]].sum().tolist() == [79, 79, 79]  # round(0.33 * 240)
    summary = json.loads((base_run / "cartography" / "summary.json").read_text())
    assert summary["in_no_group"] + summary["in_two_groups"] > 0
    assert summary["dynamics_cost"]["seconds"] > 0 and 0 < summary["dynamics_cost"]["share"] < 5
    assert (base_run / "cartography" / "data_map.png").stat().st_size > 20_000


def test_subset_and_curriculum_runs_and_compare(scinli, base_run, capsys):
    if not (base_run / "cartography").exists():
        assert main(["cartography", str(base_run)]) == 0
    sub = scinli / "e2l_a"
    assert main(train_args(scinli, sub, "--subset", "e2l+a", "--cartography-from", str(base_run))) == 0
    m = pd.read_parquet(base_run / "cartography" / "metrics.parquet")
    expected = set(m.loc[m["e2l"] | m["a"], "pair_id"])
    dyn = pd.read_parquet(sub / "dynamics" / "epoch_0.parquet")
    assert set(dyn["pair_id"]) == expected  # trained (and mapped) on exactly the union of the groups
    cur = scinli / "cart_stra"
    assert main(train_args(scinli, cur, "--curriculum", "cart-stra++", "--cartography-from", str(base_run))) == 0
    cfg = json.loads((cur / "config.json").read_text())
    assert cfg["curriculum"]["total_steps"] == 3 * 15  # the baseline's iterations: 3 epochs of 240 / 16 steps
    capsys.readouterr()
    assert main(["compare", str(base_run), str(cur)]) == 0
    out = capsys.readouterr().out
    assert "| base |" in out and "| cart_stra |" in out and "McNemar" in out
