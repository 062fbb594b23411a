"""The trainer's CUDA paths: bf16 and fp16 autocast (gradient scaler), pinned-memory prefetch,
checkpoint and resume on the GPU. The GPU tests skip without CUDA; the prefetch test runs anywhere.

On a GPU host: ``NLI_TEST_DEVICE=cuda pytest -q tests/test_trainer_cuda.py tests/test_trainer_transformer.py``.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from trainer.commands import train as train_cmd  # noqa: E402
from trainer.cli import build_parser, main  # noqa: E402
from trainer.models.loop import Callback, iter_batches  # noqa: E402

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")


class _Rows:
    labels = np.zeros(50, dtype=np.int64)
    n_classes = 2
    lengths = None

    def __len__(self):
        return 50

    def batch(self, idx):
        if 13 in idx:
            raise KeyError("row 13 is unreadable")
        return {"x": torch.as_tensor(idx, dtype=torch.float32)[:, None]}


def test_prefetch_thread_gives_the_same_batches_in_order():
    steps = [[i, i + 1] for i in range(0, 12, 2)] + [[], [20]]
    plain = list(iter_batches(_Rows(), steps, ahead=0))
    ahead = list(iter_batches(_Rows(), steps, ahead=3))
    assert [r for r, _ in ahead] == steps
    for (_, a), (_, b) in zip(plain, ahead):
        assert (a is None and b is None) or torch.equal(a["x"], b["x"])
    with pytest.raises(KeyError, match="row 13"):  # an error in the thread reaches the loop
        list(iter_batches(_Rows(), [[0], [13], [2]], ahead=2))
    gen = iter_batches(_Rows(), [[i] for i in range(40)], ahead=2)
    next(gen)
    gen.close()  # stopping early ends the thread (it would otherwise block on a full queue)


@pytest.fixture(scope="module")
def data(tiny_nli_checkpoint):
    return tiny_nli_checkpoint("bert", "cuda", "bert")


def _argv(data, out, *extra):
    return ["train", "--train", str(data["train"]), "--validation", str(data["dev"]), "--test", str(data["dev"]),
            "--model", "transformer", "--pretrained", str(data["bert"]), "--output", str(out), "--epochs", "3",
            "--patience", "0", "--lr", "2e-3", "--batch-size", "16", "--max-length", "32", "--no-progress",
            "--seed", "5", "--device", "cuda", *extra]


@cuda
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("encoding", ["cross", "separate"])
def test_trains_on_the_gpu(data, tmp_path, precision, encoding):
    if precision == "bf16" and not torch.cuda.is_bf16_supported():
        pytest.skip("this GPU has no bf16")
    out = tmp_path / f"{encoding}-{precision}"
    assert main(_argv(data, out, "--precision", precision, "--encoding", encoding, "--keep-checkpoint")) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["device"].startswith("cuda")
    losses = [h["train_loss"] for h in config["history"]]
    assert all(np.isfinite(losses)) and losses[-1] < losses[0] - 0.1
    assert json.loads((out / "metrics.json").read_text())["dev"]["macro_f1"] > 0.3
    preds = pd.read_parquet(out / "predictions.parquet")
    probs = preds[[c for c in preds.columns if c.startswith("prob_")]].to_numpy()
    assert np.isfinite(probs).all() and np.allclose(probs.sum(1), 1, atol=1e-3)
    saved = torch.load(out / "checkpoint" / "state.pt", map_location="cpu", weights_only=False)
    assert saved["cuda_rng"] is not None
    if precision == "fp16":  # the gradient scaler runs, and its state is in the checkpoint
        assert saved["scaler"] and saved["scaler"]["scale"] > 0
    else:
        assert not saved["scaler"]


class CrashAfter(Callback):
    def on_epoch_end(self, state):
        if state.epoch == 1:
            raise RuntimeError("simulated crash")


@cuda
def test_resume_on_the_gpu_with_the_gradient_scaler(data, tmp_path):
    ref = tmp_path / "ref"
    assert main(_argv(data, ref, "--precision", "fp16")) == 0
    out = tmp_path / "crashed"
    argv = _argv(data, out, "--precision", "fp16")
    with pytest.raises(RuntimeError, match="simulated crash"):
        train_cmd.run(build_parser(argv).parse_args(argv), callbacks=[CrashAfter()])
    argv = _argv(data, out, "--precision", "fp16", "--resume")
    assert train_cmd.run(build_parser(argv).parse_args(argv)) == 0
    history = json.loads((out / "config.json").read_text())["history"]
    assert [h["epoch"] for h in history] == [0, 1, 2]
    a = pd.read_parquet(ref / "predictions.parquet")
    b = pd.read_parquet(out / "predictions.parquet")
    cols = [c for c in a.columns if c.startswith("prob_")]
    diff = np.abs(a[cols].to_numpy() - b[cols].to_numpy()).max()
    print(f"resume on the GPU: largest probability difference {diff:.2e}")
    assert diff < 2e-2  # fp16 and non-deterministic GPU kernels: not bit-identical
    assert (a["pred"] == b["pred"]).mean() > 0.95
