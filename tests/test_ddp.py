"""`torchrun --nproc_per_node 2 -m trainer train`: two CPU processes (gloo) equal one process.

A tiny BERT without dropout (dropout masks are drawn per process, so only a model without
dropout can match exactly) is trained once in this process and once by two torchrun
processes. The step size (2 x 8 rows, gradient accumulation) and the odd number of
training rows make the last step short and unevenly shared, which is where a
DistributedSampler would pad with duplicated rows.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
import torch  # noqa: E402

from trainer.cli import main  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.distributed.is_available() or not torch.distributed.is_gloo_available(),
                                reason="torch.distributed with gloo is not available")


@pytest.fixture(scope="module")
def setup(tiny_nli_checkpoint):
    # 101 training rows (odd) and 37 dev rows; the checkpoint folder is this module's own copy,
    # so its dropout can be switched off here
    s = tiny_nli_checkpoint("bert", root_name="ddp", folder="bert", n_train=101, n_dev=37)
    config = json.loads((s["bert"] / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (s["bert"] / "config.json").write_text(json.dumps(config))
    return s


def _argv(s, out, *extra):
    return ["train", "--train", str(s["train"]), "--validation", str(s["dev"]), "--test", str(s["dev"]),
            "--model", "transformer", "--pretrained", str(s["bert"]), "--output", str(out), "--epochs", "2",
            "--patience", "0", "--lr", "2e-3", "--batch-size", "8", "--grad-accum", "2", "--max-length", "32",
            "--no-progress", "--seed", "1", "--device", "cpu", "--precision", "fp32", *extra]


def _torchrun(s, out, *extra):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "trainer", *_argv(s, out, *extra)]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def runs(setup):
    one = setup["root"] / "one"
    assert main(_argv(setup, one)) == 0
    two = setup["root"] / "two"
    proc = _torchrun(setup, two)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return one, two, proc


def _probs(run_dir):
    p = pd.read_parquet(run_dir / "predictions.parquet").sort_values(["split", "pair_id"]).reset_index(drop=True)
    return p, p[[c for c in p.columns if c.startswith("prob_")]].to_numpy()


def test_two_processes_equal_one(runs):
    one, two, proc = runs
    c1 = json.loads((one / "config.json").read_text())
    c2 = json.loads((two / "config.json").read_text())
    l1 = [h["train_loss"] for h in c1["history"]]
    l2 = [h["train_loss"] for h in c2["history"]]
    assert len(l2) == 2
    np.testing.assert_allclose(l2, l1, rtol=1e-4)
    np.testing.assert_allclose([h["validation_macro_f1"] for h in c2["history"]],
                               [h["validation_macro_f1"] for h in c1["history"]], atol=1e-9)
    p1, probs1 = _probs(one)
    p2, probs2 = _probs(two)
    assert p2["pair_id"].tolist() == p1["pair_id"].tolist() and p2["pred"].tolist() == p1["pred"].tolist()
    np.testing.assert_allclose(probs2, probs1, atol=1e-4)
    assert json.loads((two / "metrics.json").read_text()) == json.loads((one / "metrics.json").read_text())


def test_dynamics_gathered_once_per_example(runs, setup):
    one, two, _ = runs
    ids = pd.read_json(setup["train"], lines=True)["pair_id"].astype(str)
    for epoch in range(2):
        d1 = pd.read_parquet(one / "dynamics" / f"epoch_{epoch}.parquet")
        d2 = pd.read_parquet(two / "dynamics" / f"epoch_{epoch}.parquet")
        assert len(d2) == len(ids) and d2["pair_id"].is_unique and set(d2["pair_id"]) == set(ids)
        assert d2["pair_id"].tolist() == d1["pair_id"].tolist()
        np.testing.assert_allclose(d2["gold_prob"], d1["gold_prob"], atol=1e-4)
    # each prediction split holds every row exactly once (no sampler padding)
    preds = pd.read_parquet(two / "predictions.parquet")
    assert preds.groupby("split")["pair_id"].apply(lambda s: s.is_unique).all()
    assert (preds["split"] == "dev").sum() == 37


def test_rank_zero_alone_writes_and_prints(runs):
    _, two, proc = runs
    assert proc.stdout.count("dev: accuracy") == 1  # rank 1 prints nothing
    assert not (two / "checkpoint").exists()
    assert sorted(p.name for p in two.iterdir() if p.name.startswith(".")) == []
