"""Transformers through the real loading path: a tiny BERT saved to disk, loaded by from_pretrained."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.trainer_fixtures import PROB_ATOL, TEST_DEVICE  # noqa: E402
from trainer.commands import train as train_cmd  # noqa: E402
from trainer.cli import build_parser, main  # noqa: E402
from trainer.models.loop import Callback  # noqa: E402
from trainer.training.runs import load_run  # noqa: E402

FAST = ["--epochs", "3", "--patience", "0", "--lr", "2e-3", "--batch-size", "16", "--max-length", "32",
        "--no-progress", "--seed", "3", "--device", TEST_DEVICE]


@pytest.fixture(scope="module")
def data(tiny_nli_checkpoint):
    return tiny_nli_checkpoint("bert", "tf", "tiny-bert")


def _argv(data, out, *extra):
    """The test's train command; a flag in `extra` replaces the same flag's value (flags are given once)."""
    argv = ["train", "--train", str(data["train"]), "--validation", str(data["dev"]), "--test", str(data["dev"]),
            "--model", "transformer", "--pretrained", str(data["bert"]), "--output", str(out), *FAST]
    extra = list(extra)
    i = 0
    while i < len(extra):
        flag = extra[i]
        has_value = i + 1 < len(extra) and not extra[i + 1].startswith("--")
        if flag in argv and has_value:
            argv[argv.index(flag) + 1] = extra[i + 1]
        else:
            argv += extra[i:i + 1 + has_value]
        i += 1 + has_value
    return argv


def _args(argv):
    return build_parser(argv).parse_args(argv)


def _check_dynamics(run_dir, data, epochs):
    ids = set(pd.read_json(data["train"], lines=True)["pair_id"])
    for n in range(epochs):
        dyn = pd.read_parquet(run_dir / "dynamics" / f"epoch_{n}.parquet")
        assert list(dyn.columns) == ["pair_id", "gold", "gold_prob", "pred", "correct"]
        assert set(dyn["pair_id"]) == ids and len(dyn) == len(ids)
        assert dyn["gold_prob"].between(0, 1).all()
        assert (dyn["correct"] == (dyn["pred"] == dyn["gold"])).all()


@pytest.fixture(scope="module")
def cross_run(data):
    out = data["root"] / "cross"
    assert main(_argv(data, out)) == 0
    return out


def test_cross_encoding_trains_and_lowers_loss(cross_run, data):
    config = json.loads((cross_run / "config.json").read_text())
    losses = [h["train_loss"] for h in config["history"]]
    assert len(losses) == 3 and losses[-1] < losses[0] - 0.1
    assert config["params"]["encoding"] == "cross" and config["labels"] == sorted(config["labels"])
    metrics = json.loads((cross_run / "metrics.json").read_text())
    assert set(metrics) == {"validation", "dev"}
    m = metrics["dev"]
    assert m["macro_f1"] > 0.3  # chance is 0.25 accuracy on four balanced labels
    assert sum(c["support"] for c in m["per_class"].values()) == 80
    assert np.asarray(m["confusion_matrix"]["matrix"]).sum() == 80
    # dynamics: every training id at every epoch, cost recorded
    _check_dynamics(cross_run, data, 3)
    assert [e["epoch"] for e in config["dynamics"]["epochs"]] == [0, 1, 2]
    assert 0 < config["dynamics"]["share"]
    assert (cross_run / "confusion_matrix_dev.png").stat().st_size > 1000
    assert not (cross_run / "checkpoint").exists()


def test_saved_run_evaluates_identically_after_reload(cross_run, data, tmp_path):
    assert main(["evaluate", str(cross_run), "--data", str(data["dev"]), "--output", str(tmp_path)]) == 0
    before = json.loads((cross_run / "metrics.json").read_text())["dev"]
    after = json.loads((tmp_path / "metrics.json").read_text())["dev"]
    assert after == before
    p0 = pd.read_parquet(cross_run / "predictions.parquet").query("split == 'dev'").reset_index(drop=True)
    p1 = pd.read_parquet(tmp_path / "predictions.parquet")
    prob_cols = [c for c in p0.columns if c.startswith("prob_")]
    np.testing.assert_allclose(p0[prob_cols].to_numpy(), p1[prob_cols].to_numpy(), atol=1e-5)
    run = load_run(cross_run)
    emb = run.embed(["our model is robust", "however the parser is not slow"])
    assert emb.shape == (2, 32) and np.isfinite(emb).all()


def test_separate_encoding_trains_and_reloads(data, tmp_path):
    out = tmp_path / "sep"
    assert main(_argv(data, out, "--encoding", "separate", "--head-hidden", "64")) == 0
    config = json.loads((out / "config.json").read_text())
    losses = [h["train_loss"] for h in config["history"]]
    assert losses[-1] < losses[0] - 0.1
    assert (out / "model" / "encoder" / "config.json").exists() and (out / "model" / "head.safetensors").exists()
    run = load_run(out)
    df = pd.read_json(data["dev"], lines=True)
    probs = run.predict_proba(df)
    saved = pd.read_parquet(out / "predictions.parquet").query("split == 'dev'")
    np.testing.assert_allclose(probs, saved[[f"prob_{l}" for l in run.labels]].to_numpy(), atol=1e-5)


def test_frozen_encoder_only_trains_the_head(data, tmp_path):
    import torch
    from safetensors.torch import load_file

    out = tmp_path / "frozen"
    assert main(_argv(data, out, "--encoding", "separate", "--freeze-encoder", "--epochs", "1")) == 0
    before = load_file(str(data["bert"] / "model.safetensors"))
    after = load_file(str(out / "model" / "encoder" / "model.safetensors"))
    key = next(k for k in before if "layer.0.attention.self.query.weight" in k)
    key_after = next(k for k in after if "layer.0.attention.self.query.weight" in k)
    assert torch.equal(before[key], after[key_after])


class CrashAfter(Callback):
    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, state):
        if state.epoch == self.epoch:
            raise RuntimeError("simulated crash")


def test_run_resumes_from_its_checkpoint(cross_run, data, tmp_path):
    out = tmp_path / "crashed"
    with pytest.raises(RuntimeError, match="simulated crash"):
        train_cmd.run(_args(_argv(data, out)), callbacks=[CrashAfter(1)])
    # the checkpoint is written after the callbacks: the crash leaves epoch 0's
    # runs are staged: the unfinished run (and its checkpoint) is in OUT.inprogress until published
    assert (out.with_name(out.name + ".inprogress") / "checkpoint" / "state.pt").exists()
    assert not (out / "metrics.json").exists()
    assert train_cmd.run(_args(_argv(data, out, "--resume"))) == 0
    ref = pd.read_parquet(cross_run / "predictions.parquet")
    got = pd.read_parquet(out / "predictions.parquet")
    prob_cols = [c for c in ref.columns if c.startswith("prob_")]
    diff = np.abs(ref[prob_cols].to_numpy() - got[prob_cols].to_numpy()).max()
    print(f"resume: largest probability difference from the uninterrupted run {diff:.2e} on {TEST_DEVICE}")
    assert diff <= PROB_ATOL
    history = json.loads((out / "config.json").read_text())["history"]
    assert [h["epoch"] for h in history] == [0, 1, 2]
    _check_dynamics(out, data, 3)


def test_pretrained_dir_without_weights_is_a_clear_error(data, tmp_path, capsys):
    empty = tmp_path / "no-weights"
    empty.mkdir()
    (empty / "config.json").write_text((data["bert"] / "config.json").read_text())
    rc = main(_argv(data, tmp_path / "out", "--pretrained", str(empty)))
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.startswith("error: ") and str(empty) in err and "no model weights" in err
    assert len(err.splitlines()) == 1


def test_hypothesis_only_transformer_sees_one_sentence(data, tmp_path):
    out = tmp_path / "hyp"
    assert main(_argv(data, out, "--input-mode", "hypothesis", "--epochs", "1")) == 0
    run = load_run(out)
    assert run.input_mode == "hypothesis"
    df = pd.read_json(data["dev"], lines=True)
    # the premise is ignored: changing it changes nothing
    p1 = run.predict_proba(df)
    p2 = run.predict_proba(df.assign(premise="completely different words here"))
    np.testing.assert_allclose(p1, p2, atol=1e-6)


class SeesDeterminism(Callback):
    """Records whether torch's deterministic algorithms are on at each training step."""

    def __init__(self):
        self.seen = set()

    def on_step_end(self, state):
        import torch

        self.seen.add((torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.deterministic))


def test_deterministic_flag_holds_during_training_only(cross_run, data, tmp_path):
    import torch

    assert not torch.are_deterministic_algorithms_enabled()
    seen = SeesDeterminism()
    out = tmp_path / "det"
    assert train_cmd.run(_args(_argv(data, out, "--deterministic")), callbacks=[seen]) == 0
    assert seen.seen == {(True, True)}  # on at every step, cuDNN included
    assert not torch.are_deterministic_algorithms_enabled()  # the process's settings are back
    assert not torch.backends.cudnn.deterministic
    assert json.loads((out / "config.json").read_text())["params"]["deterministic"] is True
    # the same numbers as the run without the flag (deterministic on this device already)
    ref = pd.read_parquet(cross_run / "predictions.parquet")
    got = pd.read_parquet(out / "predictions.parquet")
    cols = [c for c in ref.columns if c.startswith("prob_")]
    assert np.abs(ref[cols].to_numpy() - got[cols].to_numpy()).max() <= PROB_ATOL
