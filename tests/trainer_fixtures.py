"""Shared helpers of the trainer tests: a tiny BERT and a tiny GPT-2 saved like real checkpoints, NLI data."""
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


def build_untrained_bert(folder: Path, texts: list[str], *, tokenizer_vocab: int, hidden: int, layers: int,
                         heads: int, intermediate: int, max_positions: int = 512, config_vocab: int | None = None,
                         seed: int | None = None) -> Path:
    """A BERT built from a config (random weights) with a WordPiece tokenizer trained on `texts`,
    saved with save_pretrained: for tests and benchmarks where nothing can be downloaded."""
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    # transformers 5 exports BertTokenizerFast (an alias of BertTokenizer) lazily, and its typed
    # top level does not list it
    from transformers import BertConfig, BertModel, BertTokenizerFast  # type: ignore[attr-defined]

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=tokenizer_vocab, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    fast = BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                             sep_token="[SEP]", mask_token="[MASK]")
    config = BertConfig(vocab_size=config_vocab or tok.get_vocab_size(), hidden_size=hidden,
                        num_hidden_layers=layers, num_attention_heads=heads, intermediate_size=intermediate,
                        max_position_embeddings=max_positions)
    if seed is not None:
        torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    BertModel(config).save_pretrained(str(folder))
    fast.save_pretrained(str(folder))
    return folder


def make_tiny_bert(folder: Path, texts: list[str]) -> Path:
    """A 2-layer, hidden-32 BERT and a WordPiece tokenizer trained here, saved with save_pretrained."""
    return build_untrained_bert(folder, texts, tokenizer_vocab=400, hidden=32, layers=2, heads=2,
                                intermediate=64, max_positions=128)


def build_untrained_gpt2(folder: Path, texts: list[str], *, tokenizer_vocab: int = 300, hidden: int = 32,
                         layers: int = 2, heads: int = 2, max_positions: int = 64, seed: int | None = 0,
                         labels: list[str] | None = None) -> Path:
    """A GPT-2 built from a config (random weights) with a byte-level BPE tokenizer trained on
    `texts` and, as GPT-2 and RoGPT2 ship, no padding token; saved with save_pretrained. With
    `labels`, a sequence-classification checkpoint with those ``id2label`` names (an outside
    checkpoint for zero-shot evaluation), else the language model."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2ForSequenceClassification, GPT2LMHeadModel, GPT2TokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=tokenizer_vocab, special_tokens=["<|endoftext|>"],
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = GPT2TokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                             unk_token="<|endoftext|>")
    assert fast.pad_token is None
    if seed is not None:
        torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(fast), n_positions=max_positions, n_embd=hidden, n_layer=layers, n_head=heads,
                        bos_token_id=fast.eos_token_id, eos_token_id=fast.eos_token_id)
    if labels:
        config.num_labels = len(labels)
        config.id2label = dict(enumerate(labels))
        config.label2id = {lab: i for i, lab in enumerate(labels)}
        model = GPT2ForSequenceClassification(config)
    else:
        model = GPT2LMHeadModel(config)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    fast.save_pretrained(str(folder))
    return folder
