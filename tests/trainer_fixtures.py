"""Shared helpers of the trainer tests: a tiny BERT saved like a real checkpoint, NLI data."""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

# The device the trainer tests train on: `NLI_TEST_DEVICE=cuda pytest ...` on a GPU host puts
# every test that allows it on the GPU (precision "auto": bf16 autocast there); default CPU.
TEST_DEVICE = os.environ.get("NLI_TEST_DEVICE", "cpu")
ON_GPU = TEST_DEVICE.startswith("cuda")
# probabilities compared between two runs: equal up to rounding on CPU (fp32); on a GPU, bf16
# autocast and non-deterministic kernels (atomic adds in the backward pass) move them a little
PROB_ATOL = 2e-2 if ON_GPU else 1e-5

NOUNS = ["model", "corpus", "parser", "encoder", "dataset", "baseline", "tagger", "metric", "sampler", "lexicon"]
ADJS = ["robust", "slow", "accurate", "small", "noisy", "sparse", "stable", "large", "biased", "fast"]
# one surface cue per label plus content overlap, as distant supervision produces
TEMPLATES = {
    "entailment": "in other words the {n} is {a}",
    "contrasting": "however the {n} is not {a}",
    "reasoning": "therefore we use the {n} again",
    "neutral": "the weather was {b} yesterday",
}


def synthetic_nli(n: int, seed: int = 0) -> pd.DataFrame:
    """n premise/hypothesis pairs over four labels, learnable from the hypothesis and the overlap."""
    rows = []
    labels = list(TEMPLATES)
    for i in range(n):
        noun, adj, other = NOUNS[(i * 7 + seed) % 10], ADJS[(i * 3 + seed) % 10], ADJS[(i * 5 + 1 + seed) % 10]
        label = labels[(i + seed) % 4]
        rows.append({"pair_id": f"s{seed}_{i}", "premise": f"our {noun} is {adj} on long inputs",
                     "hypothesis": TEMPLATES[label].format(n=noun, a=adj, b=other), "label": label})
    return pd.DataFrame(rows)


def write_jsonl(df: pd.DataFrame, path: Path) -> Path:
    df.to_json(path, orient="records", lines=True)
    return path


def make_tiny_bert(folder: Path, texts: list[str]) -> Path:
    """A 2-layer, hidden-32 BERT and a WordPiece tokenizer trained here, saved with save_pretrained."""
    from trainer.models.transformer import build_untrained_bert

    return build_untrained_bert(folder, texts, tokenizer_vocab=400, hidden=32, layers=2, heads=2,
                                intermediate=64, max_positions=128)
