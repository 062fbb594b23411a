"""Shared helpers of the trainer tests: a tiny BERT saved like a real checkpoint, NLI data."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

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
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, BertTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=400, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    fast = BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                             sep_token="[SEP]", mask_token="[MASK]")
    config = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    folder.mkdir(parents=True, exist_ok=True)
    BertModel(config).save_pretrained(str(folder))
    fast.save_pretrained(str(folder))
    return folder
