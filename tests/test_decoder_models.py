"""Decoder checkpoints (GPT-2 style, RoNLI's RoGPT2) in both encodings.

A 2-layer GPT-2 built from a config, with a byte-level BPE tokenizer trained here and no
padding token, is saved like a real checkpoint and loaded by `from_pretrained`.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests.trainer_fixtures import synthetic_nli, write_jsonl  # noqa: E402
from trainer.cli import main  # noqa: E402
from trainer.runs import load_run  # noqa: E402

DEVICE = os.environ.get("NLI_TEST_DEVICE", "cpu")
FAST = ["--epochs", "3", "--patience", "0", "--lr", "3e-3", "--batch-size", "16", "--max-length", "32",
        "--no-progress", "--seed", "0", "--device", DEVICE, "--precision", "fp32"]


def make_tiny_gpt2(folder, texts):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, GPT2TokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = GPT2TokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                             unk_token="<|endoftext|>")
    assert fast.pad_token is None  # as GPT-2 and RoGPT2 ship
    import torch

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(fast), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=fast.eos_token_id, eos_token_id=fast.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(str(folder))
    fast.save_pretrained(str(folder))
    return folder


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpt2")
    train, dev = synthetic_nli(320), synthetic_nli(64, seed=1)
    gpt2 = make_tiny_gpt2(root / "tiny-gpt2", train["premise"].tolist() + train["hypothesis"].tolist())
    return {"root": root, "gpt2": gpt2, "train": write_jsonl(train, root / "train.jsonl"),
            "dev": write_jsonl(dev, root / "dev.jsonl")}


def _train(data, out, *extra):
    argv = ["train", "--train", str(data["train"]), "--validation", str(data["dev"]), "--test", str(data["dev"]),
            "--model", "transformer", "--pretrained", str(data["gpt2"]), "--out", str(out), *FAST, *extra]
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
