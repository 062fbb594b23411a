"""Decoder checkpoints (GPT-2 style, RoNLI's RoGPT2) in both encodings.

A 2-layer GPT-2 built from a config, with a byte-level BPE tokenizer trained here and no
padding token (`tests.trainer_fixtures.build_untrained_gpt2`, through the
`tiny_nli_checkpoint` fixture of conftest.py), is saved like a real checkpoint and loaded by
`from_pretrained`; a GPT-2 sequence classifier built the same way is evaluated zero-shot.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from trainer.cli import main  # noqa: E402
from trainer.training.runs import load_run  # noqa: E402

DEVICE = os.environ.get("NLI_TEST_DEVICE", "cpu")
FAST = ["--epochs", "3", "--patience", "0", "--lr", "3e-3", "--batch-size", "16", "--max-length", "32",
        "--no-progress", "--seed", "0", "--device", DEVICE, "--precision", "fp32"]


@pytest.fixture(scope="module")
def data(tiny_nli_checkpoint):
    return tiny_nli_checkpoint("gpt2", "gpt2", "tiny-gpt2", n_train=320, n_dev=64)


def _train(data, out, *extra):
    argv = ["train", "--train", str(data["train"]), "--validation", str(data["dev"]), "--test", str(data["dev"]),
            "--model", "transformer", "--pretrained", str(data["gpt2"]), "--output", str(out), *FAST, *extra]
    assert main(argv) == 0
    return out


@pytest.mark.parametrize("encoding", ["cross", "separate"])
def test_gpt2_trains_and_reloads_in_both_encodings(data, tmp_path, encoding):
    out = _train(data, tmp_path / encoding, "--encoding", encoding)
    config = json.loads((out / "config.json").read_text())
    assert config["params"]["pooling"] == "last"
    losses = [h["train_loss"] for h in config["history"]]
    assert losses[-1] < losses[0] - 0.1
    assert json.loads((out / "metrics.json").read_text())["dev"]["macro_f1"] > 0.3
    run = load_run(out)
    assert run.model.tokenizer.pad_token == "<|endoftext|>"  # saved with the run
    df = pd.read_json(data["dev"], lines=True)
    saved = pd.read_parquet(out / "predictions.parquet").query("split == 'dev'")
    probs = run.predict_proba(df)
    np.testing.assert_allclose(probs, saved[[f"prob_{l}" for l in run.labels]].to_numpy(), atol=1e-5)
    # a row scores the same alone as in a padded batch: the pooled position is never a pad
    np.testing.assert_allclose(run.predict_proba(df.iloc[:1]), probs[:1], atol=1e-5)
    np.testing.assert_allclose(run.predict_proba(df.iloc[[5]]), probs[[5]], atol=1e-5)


def test_cross_encoding_joins_the_pair_with_end_of_text(data):
    from trainer.models.transformer import Transformer

    m = Transformer(["a", "b"], "pair", {"pretrained": str(data["gpt2"]), "max_length": 64})
    m._build(str(data["gpt2"]))
    tok = m.tokenizer
    df = pd.DataFrame({"premise": ["our model is robust", " ".join(["long"] * 40)],
                       "hypothesis": ["however it is not", "short one"], "label": ["a", "b"]})
    ids = m.encode(df).fields[0]["input_ids"]
    assert ids[0] == tok("our model is robust")["input_ids"] + [tok.eos_token_id] + tok("however it is not")["input_ids"]
    m.params["max_length"] = 12
    ids = m.encode(df).fields[0]["input_ids"]
    assert len(ids[1]) == 12 and ids[1].count(tok.eos_token_id) == 1
    assert ids[1][-len(tok("short one")["input_ids"]):] == tok("short one")["input_ids"]  # the short side is kept


def test_separate_encoding_pools_the_last_token(data):
    """A causal model's first token has seen nothing after it: token-0 pooling would make
    every sentence starting with the same word identical."""
    import torch
    from trainer.models.transformer import Transformer

    m = Transformer(["a", "b"], "pair", {"pretrained": str(data["gpt2"]), "encoding": "separate"})
    m._build(str(data["gpt2"]))
    m.device = torch.device("cpu")
    emb = m.embed(["the model is robust", "the weather was cold yesterday", "the"])
    assert not np.allclose(emb[0], emb[1], atol=1e-4)
    ref = m.embed(["the model is robust"])  # alone: no padding
    np.testing.assert_allclose(emb[0], ref[0], atol=1e-5)


XNLI = ["entailment", "neutral", "contradiction"]


@pytest.fixture(scope="module")
def gpt2_classifier(data):
    """An outside GPT-2 sequence classifier (XNLI's label names), no padding token, saved locally."""
    from tests.trainer_fixtures import build_untrained_gpt2

    train = pd.read_json(data["train"], lines=True)
    return build_untrained_gpt2(data["root"] / "gpt2-xnli", train["premise"].tolist() + train["hypothesis"].tolist(),
                                labels=XNLI)


def test_outside_gpt2_classifier_pads_with_end_of_text(data, gpt2_classifier, tmp_path):
    from transformers import AutoConfig, AutoTokenizer

    assert AutoTokenizer.from_pretrained(str(gpt2_classifier)).pad_token is None  # as saved
    assert AutoConfig.from_pretrained(str(gpt2_classifier)).pad_token_id is None
    run = load_run(gpt2_classifier)
    assert run.config["model"] == "hf-checkpoint" and run.labels == XNLI
    tok, model = run.model.tokenizer, run.model.model
    assert tok.pad_token == tok.eos_token == "<|endoftext|>"
    assert model.config.pad_token_id == tok.eos_token_id
    df = pd.read_json(data["dev"], lines=True)
    lengths = {len(ids) for ids in tok(df["premise"].tolist(), df["hypothesis"].tolist())["input_ids"]}
    assert len(lengths) > 1  # one padded batch of rows of different lengths
    probs = run.predict_proba(df)
    assert probs.shape == (len(df), 3) and np.allclose(probs.sum(1), 1, atol=1e-5)
    # the classifier pools each row's last non-padding token: a row scores the same alone
    for i in (0, 5, int(np.argmin([len(p) for p in df["premise"]]))):
        np.testing.assert_allclose(run.predict_proba(df.iloc[[i]]), probs[[i]], atol=1e-5)
    # zero-shot evaluation of our 4-label file through the label map
    out = tmp_path / "ev"
    assert main(["evaluate", str(gpt2_classifier), "--data", str(data["dev"]), "--label-map",
                 "contradiction=contrasting", "--output", str(out)]) == 0
    m = json.loads((out / "metrics.json").read_text())["dev"]
    assert m["n"] == len(df) and m["label_map"]["unmapped_gold"] == {"reasoning": int((df.label == "reasoning").sum())}


def test_outside_checkpoint_pad_id_follows_the_tokenizer(data, gpt2_classifier, tmp_path):
    """A config whose pad_token_id is not the token the tokenizer pads with would pool at the
    wrong position: the model is given the tokenizer's padding id."""
    import shutil

    from transformers import AutoConfig

    copy = tmp_path / "other-pad"
    shutil.copytree(gpt2_classifier, copy)
    config = AutoConfig.from_pretrained(str(copy))
    config.pad_token_id = 5
    config.save_pretrained(str(copy))
    run = load_run(copy)
    assert run.model.model.config.pad_token_id == run.model.tokenizer.pad_token_id == run.model.tokenizer.eos_token_id
    df = pd.read_json(data["dev"], lines=True)
    np.testing.assert_allclose(run.predict_proba(df.iloc[[3]]), run.predict_proba(df)[[3]], atol=1e-5)
