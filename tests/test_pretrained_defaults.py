"""The transformer's defaults (issue 31, item 5) and the training dynamics recorded from the
training forward pass. The benchmark that scores the defaults on SciNLI against tfidf-lr
and the HF Trainer is benchmarks/pretrained_baseline.py (not a timed test)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from trainer.cartography import DYNAMICS_COLUMNS
from trainer.cli import main
from trainer.loop import DynamicsWriter, LoopConfig, fit, linear_warmup_decay
from trainer.models.transformer import Transformer, default_lr

ID = DYNAMICS_COLUMNS[0]  # the id column of the dynamics files
LABELS = ["contrasting", "entailment", "neutral", "reasoning"]


def test_default_learning_rate_follows_the_encoder_width():
    assert default_lr(384) == 1e-4  # MiniLM-L6-H384, the checkpoint
    assert default_lr(256) == 1e-4 and default_lr(512) == 1e-4
    assert default_lr(768) == 2e-5 and default_lr(1024) == 2e-5 and default_lr(None) == 2e-5
    assert Transformer(LABELS, params={"freeze_encoder": True}).params["lr"] == 1e-3  # RoNLI's frozen heads
    assert Transformer(LABELS, params={"lr": 3e-5}).params["lr"] == 3e-5
    p = Transformer(LABELS).params
    assert p["lr"] is None  # resolved when the checkpoint is loaded
    assert (p["batch_size"], p["epochs"], p["warmup_ratio"], p["weight_decay"], p["patience"], p["dynamics"]) == \
        (16, 3, 0.1, 0.01, 0, "forward")


def test_learning_rate_is_resolved_from_the_loaded_checkpoint(tmp_path):
    from tests.trainer_fixtures import make_tiny_bert, synthetic_nli

    texts = synthetic_nli(40)["premise"].tolist()
    ckpt = make_tiny_bert(tmp_path / "bert", texts)  # hidden 32: a small encoder
    m = Transformer(LABELS, params={"pretrained": str(ckpt)})
    m._build(str(ckpt))
    assert m.params["lr"] == 1e-4 and m.loop_config(0).lr == 1e-4
    given = Transformer(LABELS, params={"pretrained": str(ckpt), "lr": 5e-5})
    given._build(str(ckpt))
    assert given.params["lr"] == 5e-5


def test_warm_up_then_the_hf_linear_decay():
    """10 % warm-up, then the same linear decay to 0 as transformers' scheduler."""
    from transformers import get_linear_schedule_with_warmup

    total, peak = 100, 1e-4
    warm = int(0.1 * total)
    ours = torch.optim.AdamW([nn.Parameter(torch.zeros(1))], lr=peak)
    theirs = torch.optim.AdamW([nn.Parameter(torch.zeros(1))], lr=peak)
    s_ours, s_theirs = linear_warmup_decay(ours, warm, total), get_linear_schedule_with_warmup(theirs, warm, total)
    lrs, hf = [], []
    for _ in range(total):
        lrs.append(ours.param_groups[0]["lr"])
        hf.append(theirs.param_groups[0]["lr"])
        ours.step()  # no gradients: the weights stay, the order is the loop's
        theirs.step()
        s_ours.step()
        s_theirs.step()
    assert lrs[0] == pytest.approx(peak / warm)  # the first step already moves (HF's first step has lr 0)
    assert lrs[warm - 1] == pytest.approx(peak) and max(lrs) == pytest.approx(peak)
    assert np.allclose(lrs[warm:], hf[warm:])  # the decay is HF's
    assert lrs[-1] == pytest.approx(peak / (total - warm)) and all(np.diff(lrs[warm:]) < 0)


class _Dense:
    """Encoded data over fixed features (the loop's Encoded protocol)."""

    def __init__(self, x: np.ndarray, y: np.ndarray, n_classes: int):
        self.x, self.labels, self.n_classes = torch.as_tensor(x, dtype=torch.float32), y, n_classes
        self.lengths = None

    def __len__(self):
        return len(self.labels)

    def batch(self, indices):
        return {"x": self.x[list(indices)]}


class _Linear(nn.Module):
    def __init__(self, d: int, k: int):
        super().__init__()
        self.lin = nn.Linear(d, k)

    def forward(self, x):
        return self.lin(x)


def _run_dynamics(tmp_path, mode, *, lr, schedule=None, oversample=False):
    rng = np.random.default_rng(0)
    n, d, k = 24, 6, 3
    x, y = rng.normal(size=(n, d)), rng.integers(0, k, size=n)
    ids = [f"r{i}" for i in range(n)]
    train_rows = list(range(n)) + ([0, 0, 5] if oversample else [])  # --oversample copies rows, ids kept
    train = _Dense(x[train_rows], y[train_rows], k)
    distinct = _Dense(x, y, k)
    torch.manual_seed(0)
    model = _Linear(d, k)
    out = tmp_path / mode
    writer = DynamicsWriter(distinct, ids, ["a", "b", "c"], out, mode=mode, train_ids=[ids[i] for i in train_rows])
    cfg = LoopConfig(epochs=2, batch_size=5, lr=lr, weight_decay=0.0, warmup_ratio=0.0, patience=0, progress=False,
                     device="cpu", group_by_length=False)
    state = fit(model, train, config=cfg, callbacks=[writer], schedule=schedule)
    return out, state


def test_forward_dynamics_equal_the_extra_pass_when_the_weights_do_not_move(tmp_path):
    """lr 0 and no dropout: the training forward pass sees the end-of-epoch weights, so both
    modes must write the same probabilities for every id (oversampled rows averaged)."""
    fwd, state = _run_dynamics(tmp_path, "forward", lr=0.0, oversample=True)
    ref, _ = _run_dynamics(tmp_path, "pass", lr=0.0, oversample=True)
    for epoch in (0, 1):
        a = pd.read_parquet(fwd / f"epoch_{epoch}.parquet")
        b = pd.read_parquet(ref / f"epoch_{epoch}.parquet")
        assert list(a[ID]) == list(b[ID]) and len(a) == 24
        assert np.allclose(a["gold_prob"], b["gold_prob"], atol=1e-6)
        assert (a["pred"] == b["pred"]).all() and (a["correct"] == b["correct"]).all()
    d = state.extra["dynamics"]
    assert d["mode"] == "forward" and [e["scored_after_epoch"] for e in d["epochs"]] == [0, 0]


def test_rows_a_schedule_leaves_out_are_scored_after_the_epoch(tmp_path):
    """A curriculum that skips rows in an epoch: those rows come from a pass, the others from training."""
    schedule = [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9], [10, 11, 12, 13, 14], [15, 16, 17, 18, 19], [0, 1, 2, 3, 4]] + \
        [list(range(i, i + 5)) for i in (0, 5, 10, 15)] + [[20, 21, 22, 23]]
    fwd, state = _run_dynamics(tmp_path, "forward", lr=0.0, schedule=schedule)
    ref, _ = _run_dynamics(tmp_path, "pass", lr=0.0, schedule=schedule)
    assert [e["scored_after_epoch"] for e in state.extra["dynamics"]["epochs"]] == [4, 0]
    a, b = pd.read_parquet(fwd / "epoch_0.parquet"), pd.read_parquet(ref / "epoch_0.parquet")
    assert np.allclose(a["gold_prob"], b["gold_prob"], atol=1e-6)


def test_forward_dynamics_are_those_of_the_training_step(tmp_path):
    """With lr > 0 the two modes differ: forward records each row before its own update."""
    fwd, state = _run_dynamics(tmp_path, "forward", lr=0.5)
    ref, _ = _run_dynamics(tmp_path, "pass", lr=0.5)
    a, b = pd.read_parquet(fwd / "epoch_1.parquet"), pd.read_parquet(ref / "epoch_1.parquet")
    assert not np.allclose(a["gold_prob"], b["gold_prob"], atol=1e-3)
    assert a["gold_prob"].between(0, 1).all()


def test_train_dynamics_off_and_the_recorded_mode(tiny_nli_checkpoint):
    data = tiny_nli_checkpoint("bert", "defaults", "tiny-bert", n_train=64, n_dev=16)
    base = ["train", "--train", str(data["train"]), "--test", str(data["dev"]), "--model", "transformer",
            "--pretrained", str(data["bert"]), "--epochs", "2", "--max-length", "32", "--no-progress",
            "--device", "cpu"]
    off = data["root"] / "off"
    assert main(base + ["--out", str(off), "--dynamics", "off"]) == 0
    config = json.loads((off / "config.json").read_text())
    assert not (off / "dynamics").exists() and "dynamics" not in config
    assert config["params"]["lr"] == 1e-4 and config["params"]["batch_size"] == 16  # the defaults, resolved
    on = data["root"] / "on"
    assert main(base + ["--out", str(on)]) == 0
    config = json.loads((on / "config.json").read_text())
    assert config["dynamics"]["mode"] == "forward" and len(config["dynamics"]["epochs"]) == 2
    assert sorted(p.name for p in (on / "dynamics").glob("*.parquet")) == ["epoch_0.parquet", "epoch_1.parquet"]
