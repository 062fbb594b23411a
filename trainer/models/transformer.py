"""Transformer fine-tuning: any AutoModel checkpoint, two pair encodings.

- ``cross``: ``[CLS] premise [SEP] hypothesis`` through AutoModelForSequenceClassification;
- ``separate`` (RoNLI): each sentence encoded alone, the ``[CLS]`` vectors concatenated
  into an MLP head; ``--freeze-encoder`` trains the head only, as RoNLI did.

Pooling (``--pooling``, default ``auto``): ``cls`` is the first token (under ``cross``, the
checkpoint's own sequence-classification head); ``mean`` averages the last hidden states
over the non-padding tokens (under ``cross``, into a dropout + linear head of ours); ``auto``
is what the checkpoint was trained with: ``mean`` or ``cls`` for a sentence-transformers
checkpoint (its ``modules.json`` names a Pooling module, e.g. ``1_Pooling/config.json``),
``last`` for decoders, ``cls`` otherwise.

Decoder checkpoints (GPT-2 style, RoNLI's RoGPT2) work in both: the end-of-text token pads
when the tokenizer has no padding token, ``cross`` joins the sentences with it, and
vectors are taken at the last non-padding token instead of the first (pooling ``last``).

Texts are tokenized once (no padding); batches are padded to their longest row.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn

from extractor.encoder import cache
from trainer.errors import ModelError
from trainer.models.loop import DynamicsWriter, LoopConfig, fit, predict_proba, select_device
from trainer.models import FitContext, balanced_weights, sides, write_meta

log = logging.getLogger("trainer")
POOLINGS = ("auto", "cls", "mean", "last")
# a sentence-transformers Pooling config's modes, and ours
ST_POOLING_MODES = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
                    "pooling_mode_lasttoken": "last"}
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                "pytorch_model.bin.index.json", "tf_model.h5", "flax_model.msgpack")


SMALL_WIDTH = 512  # MiniLM (384), BERT-mini/small (256/512), ELECTRA-small (256)


def default_lr(hidden_size: int | None) -> float:
    """Peak learning rate of full fine-tuning when --lr is not given (docs/trainer.md, "Defaults").

    Small encoders need a larger step than BERT-base's 2e-5: Turc et al. (2019) fine-tune
    their small BERTs at up to 1e-4 and ELECTRA-small uses 3e-4, while 2e-5 left a 384-wide
    MiniLM barely moved after three epochs of 2,000 pairs (loss 1.38 -> 1.31, issue 31).
    Base and large encoders keep 2e-5, inside BERT's {2, 3, 5}e-5 range and safe for large
    models.
    """
    if hidden_size is not None and hidden_size <= SMALL_WIDTH:
        return 1e-4
    return 2e-5


HEAD_LR = 1e-3  # a new head on a pretrained encoder (docs/trainer.md, "Defaults")


def resolve_pretrained(name: str) -> str:
    """A name of an encoder the set-up builds (``multilingual-e5-small``, extractor/encoder)
    -> its cache folder, or the one-line error telling to run the set-up; a directory of
    that name here wins; anything else is returned as it is."""
    if cache.resolve(name) is None or Path(name).exists():
        return name
    try:
        return str(cache.require(name))
    except cache.EncoderMissingError as exc:
        raise ModelError(str(exc)) from None


def check_pretrained(name: str) -> None:
    """A local checkpoint directory must hold a config and weights: say so in one line."""
    path = Path(resolve_pretrained(name))
    if path.exists():
        if not path.is_dir():
            raise ModelError(f"{path}: --pretrained must be a model directory or a hub name")
        if not (path / "config.json").exists():
            raise ModelError(f"{path}: no config.json in the --pretrained directory")
        if not any((path / f).exists() for f in WEIGHT_FILES) and not list(path.glob("*.safetensors")):
            raise ModelError(f"{path}: no model weights in the --pretrained directory "
                             f"(expected model.safetensors or pytorch_model.bin)")


def sentence_transformers_pooling(folder: str | Path) -> str | None:
    """The pooling a sentence-transformers checkpoint folder was trained with: its
    ``modules.json`` names a ``sentence_transformers.models.Pooling`` module (without one, a
    ``1_Pooling`` folder), whose ``config.json`` sets one ``pooling_mode_*``. ``mean``,
    ``cls`` or ``last``; None when the folder is no such checkpoint (or a hub name), or its
    mode is one we do not have (max, mean-sqrt-len, weighted mean) or several at once."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    config = None
    modules = folder / "modules.json"
    try:
        if modules.is_file():
            for module in json.loads(modules.read_text(encoding="utf-8")):
                if str(module.get("type", "")).endswith("models.Pooling"):
                    config = folder / module.get("path", "") / "config.json"
                    break
        elif (folder / "1_Pooling" / "config.json").is_file():
            config = folder / "1_Pooling" / "config.json"
        if config is None or not config.is_file():
            return None
        settings = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError, AttributeError, TypeError):  # not a sentence-transformers layout we read
        return None
    if not isinstance(settings, dict):
        return None
    modes = [k for k, v in settings.items() if k.startswith("pooling_mode_") and v is True]
    if len(modes) != 1 or modes[0] not in ST_POOLING_MODES:
        return None
    return ST_POOLING_MODES[modes[0]]


def _one_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class TokenData:
    """Tokenized rows (one or more sentences per row for `separate`), padded per batch."""

    def __init__(self, fields: list[dict[str, list[list[int]]]], labels: np.ndarray | None, n_classes: int,
                 pad_id: int, pad_multiple: int = 8):
        self.fields = fields  # one dict (input_ids [, token_type_ids]) per encoded side
        n = len(fields[0]["input_ids"])
        self.labels = labels if labels is not None else np.zeros(n, dtype=np.int64)
        self.n_classes = n_classes
        self.pad_id = pad_id
        self.pad_multiple = pad_multiple
        self.lengths = np.max([[len(x) for x in f["input_ids"]] for f in fields], axis=0)

    def __len__(self) -> int:
        return len(self.lengths)

    def batch(self, indices):
        width = int(max(self.lengths[i] for i in indices))
        if self.pad_multiple > 1:  # tensor-core friendly shapes
            width = -(-width // self.pad_multiple) * self.pad_multiple
        out: dict[str, list] = {}
        for f in self.fields:
            ids = torch.full((len(indices), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(indices), width), dtype=torch.long)
            types = torch.zeros((len(indices), width), dtype=torch.long) if "token_type_ids" in f else None
            for r, i in enumerate(indices):
                seq = f["input_ids"][i]
                ids[r, :len(seq)] = torch.as_tensor(seq)
                mask[r, :len(seq)] = 1
                if types is not None:
                    types[r, :len(seq)] = torch.as_tensor(f["token_type_ids"][i])
            out.setdefault("input_ids", []).append(ids)
            out.setdefault("attention_mask", []).append(mask)
            if types is not None:
                out.setdefault("token_type_ids", []).append(types)
        if len(self.fields) == 1:
            return {k: v[0] for k, v in out.items()}
        return {k: torch.stack(v) for k, v in out.items()}  # (sides, batch, width)


def pool(hidden: torch.Tensor, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """One vector per row: the first token (``cls``, encoders), the mean over the non-padding
    tokens (``mean``, sentence-transformers checkpoints) or the last non-padding token
    (``last``, decoders such as GPT-2, whose first token has seen nothing else); either
    padding side."""
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
    positions = torch.arange(hidden.shape[1], device=hidden.device)
    last = (positions * attention_mask.to(positions.dtype)).argmax(-1)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


def is_decoder_tokenizer(tok) -> bool:
    """GPT-2-style tokenizers have no [CLS]/<s> classification token and no separator."""
    return getattr(tok, "cls_token", None) is None and getattr(tok, "sep_token", None) is None


def ensure_pad_token(tok) -> bool:
    """Decoder tokenizers often have no padding token: use the end-of-text token (as is usual
    for GPT-2), else the unknown token. Returns True when one was set."""
    if tok.pad_token is not None:
        return False
    fallback = tok.eos_token or tok.unk_token or tok.bos_token
    if fallback is None:
        raise ModelError("the tokenizer has no padding, end-of-text or unknown token to pad with")
    tok.pad_token = fallback
    return True


class CrossModel(nn.Module):
    """The pair in one sequence through AutoModelForSequenceClassification. Pooling ``mean``:
    the mean of the encoder's last hidden states over the pair's tokens into a dropout +
    linear head of ours (``head.safetensors`` beside the saved model), instead of the
    checkpoint's first-token head, which a mean-pooled sentence encoder never trained."""

    def __init__(self, inner, pooling: str = "cls", dropout: float = 0.1):
        super().__init__()
        self.inner = inner
        self.pooling = pooling
        if pooling == "mean":
            self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(inner.config.hidden_size, inner.config.num_labels))

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        kw = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        if self.pooling != "mean":
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, **kw).logits
        hidden = self.inner.base_model(input_ids=input_ids, attention_mask=attention_mask, **kw).last_hidden_state
        return self.head(pool(hidden, attention_mask, "mean"))

    def encoder(self):
        return self.inner.base_model


class SeparateModel(nn.Module):
    """Each sentence through the encoder alone; pooled vectors (``[CLS]`` by default) concatenated into an MLP."""

    def __init__(self, encoder, n_sides: int, n_classes: int, hidden: int, dropout: float, frozen: bool,
                 pooling: str = "cls"):
        super().__init__()
        self.enc = encoder
        self.frozen = frozen
        self.pooling = pooling
        if frozen:
            self.enc.requires_grad_(False)
        dim = encoder.config.hidden_size
        self.head = nn.Sequential(nn.Dropout(dropout), nn.Linear(n_sides * dim, hidden), nn.ReLU(),
                                  nn.Dropout(dropout), nn.Linear(hidden, n_classes))

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        if input_ids.dim() == 2:  # one side (hypothesis- or premise-only)
            input_ids, attention_mask = input_ids[None], attention_mask[None]
        sides_, batch, width = input_ids.shape
        # all sides in one encoder call: better GPU use than one call per side
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.frozen):
            mask = attention_mask.reshape(-1, width)
            hidden = pool(self.enc(input_ids=input_ids.reshape(-1, width), attention_mask=mask).last_hidden_state,
                          mask, self.pooling)
        hidden = hidden.reshape(sides_, batch, -1).permute(1, 0, 2).reshape(batch, -1)
        return self.head(hidden)

    def encoder(self):
        return self.enc


class Transformer:
    kind = "transformer"
    GRID: dict[str, list] = {}
    DEFAULTS = {"pretrained": None, "encoding": "cross", "freeze_encoder": False, "max_length": 128,
                "epochs": 3, "batch_size": 16, "grad_accum": 1, "lr": None, "head_lr": None, "weight_decay": 0.01,
                "warmup_ratio": 0.1, "max_grad_norm": 1.0, "patience": 0, "head_hidden": 256,
                "dropout": 0.1, "precision": "auto", "group_by_length": True, "device": "auto",
                "eval_batch_size": 128, "progress": True, "pooling": "auto",
                "prefetch": None, "compile": False, "deterministic": False, "dynamics": "forward"}

    def __init__(self, labels: list[str], input_mode: str = "pair", params: dict | None = None):
        self.labels = list(labels)
        self.input_mode = input_mode
        self.params = {**self.DEFAULTS, **{k: v for k, v in (params or {}).items() if v is not None}}
        if self.params["lr"] is None and self.params["freeze_encoder"]:  # RoNLI trained heads at 1e-3
            self.params["lr"] = 1e-3
        # otherwise the learning rate follows the encoder's width, known once it is loaded (default_lr)
        # built by _build (a pretrained encoder) or _load (a saved run): CrossModel or SeparateModel,
        # and a Hugging Face tokenizer; Any, as every use comes after one of them
        self.model: Any = None
        self.tokenizer: Any = None

    # ------------------------------------------------------------------ building
    def _build(self, pretrained: str) -> None:
        from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

        check_pretrained(pretrained)
        pretrained = resolve_pretrained(pretrained)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(pretrained)
        except (OSError, ValueError) as exc:  # transformers: not found, unreadable, an unknown tokenizer
            raise ModelError(f"{pretrained}: cannot load a tokenizer: {_one_line(exc)}") from exc
        self._prepare_tokenizer(pretrained)
        n = len(self.labels)
        try:
            if self.params["encoding"] == "cross":
                inner = AutoModelForSequenceClassification.from_pretrained(
                    pretrained, num_labels=n, id2label=dict(enumerate(self.labels)),
                    label2id={l: i for i, l in enumerate(self.labels)})
                inner.config.pad_token_id = self.tokenizer.pad_token_id  # decoders pool at the last non-pad
                if self.params["freeze_encoder"]:
                    inner.base_model.requires_grad_(False)
                self.model = CrossModel(inner, self.params["pooling"], float(self.params["dropout"]))
            else:
                enc = AutoModel.from_pretrained(pretrained)
                self.model = SeparateModel(enc, 2 if self.input_mode == "pair" else 1, n,
                                           int(self.params["head_hidden"]), float(self.params["dropout"]),
                                           bool(self.params["freeze_encoder"]), self.params["pooling"])
        except ModelError:
            raise
        except (OSError, ValueError) as exc:  # transformers: weights missing or unreadable, an unknown config
            raise ModelError(f"{pretrained}: cannot load the model: {_one_line(exc)}") from exc
        if self.params["lr"] is None:
            width = getattr(self.model.encoder().config, "hidden_size", None)
            self.params["lr"] = default_lr(width)
            log.info("learning rate %g: the default for an encoder of width %s (--lr sets it)",
                     self.params["lr"], width)
        if self.params["head_lr"] is None and hasattr(self.model, "head"):
            self.params["head_lr"] = max(float(self.params["lr"]), HEAD_LR)
            log.info("learning rate of the new head %g (--head-lr sets it)", self.params["head_lr"])

    def _prepare_tokenizer(self, checkpoint: str | None = None) -> None:
        """Decoder checkpoints (GPT-2 style): a padding token and last-token pooling. Pooling
        ``auto`` becomes the checkpoint's: a sentence-transformers folder's own (`checkpoint`,
        when training starts from it), ``last`` for decoders, ``cls`` otherwise."""
        decoder = is_decoder_tokenizer(self.tokenizer)
        if ensure_pad_token(self.tokenizer):
            log.info("the tokenizer has no padding token: padding with %r", self.tokenizer.pad_token)
        pooling = self.params.get("pooling") or "auto"
        if pooling not in POOLINGS:
            raise ModelError(f"pooling {pooling!r}: unknown (choose from {', '.join(POOLINGS)})")
        if pooling == "auto":
            trained = sentence_transformers_pooling(checkpoint) if checkpoint is not None else None
            pooling = trained or ("last" if decoder else "cls")
            if trained:
                log.info("pooling %s: the sentence-transformers checkpoint's (--pooling sets it)", trained)
        self.params["pooling"] = pooling
        self.decoder = decoder

    def _decoder_pairs(self, premises: list[str], hypotheses: list[str], max_len: int) -> list[list[int]]:
        """premise, end-of-text, hypothesis: a decoder tokenizer adds no separator of its own.
        Longest side truncated first, as the tokenizers' "longest_first"."""
        tok = self.tokenizer
        sep = tok.eos_token_id if tok.eos_token_id is not None else tok.pad_token_id
        ps = tok(premises, add_special_tokens=False)["input_ids"]
        hs = tok(hypotheses, add_special_tokens=False)["input_ids"]
        budget = max(2, max_len - 1)
        out = []
        for p, h in zip(ps, hs):
            lp, lh = len(p), len(h)
            if lp + lh > budget:
                short = min(lp, lh, budget - budget // 2)  # the shorter side whole when it fits in half
                if lp <= lh:
                    lp, lh = short, budget - short
                else:
                    lp, lh = budget - short, short
            out.append(p[:lp] + [sep] + h[:lh])
        return out

    def encode(self, df: pd.DataFrame, with_labels: bool = True) -> TokenData:
        tok, max_len = self.tokenizer, int(self.params["max_length"])
        cols = sides(df, self.input_mode)
        if self.params["encoding"] == "cross" and getattr(self, "decoder", False) and len(cols) > 1:
            fields = [{"input_ids": self._decoder_pairs(cols[0], cols[1], max_len)}]
        elif self.params["encoding"] == "cross":
            enc = tok(cols[0], cols[1] if len(cols) > 1 else None, truncation=True, max_length=max_len)
            fields = [{k: enc[k] for k in ("input_ids", "token_type_ids") if k in enc}]
        else:
            fields = []
            for col in cols:
                enc = tok(col, truncation=True, max_length=max_len)
                fields.append({"input_ids": enc["input_ids"]})
        labels = None
        if with_labels and "label" in df.columns:
            index = {lab: i for i, lab in enumerate(self.labels)}
            labels = df["label"].map(index).to_numpy(dtype=np.int64)
        return TokenData(fields, labels, len(self.labels), tok.pad_token_id or 0)

    def loop_config(self, seed: int):
        p = self.params
        return LoopConfig(epochs=int(p["epochs"]), batch_size=int(p["batch_size"]), grad_accum=int(p["grad_accum"]),
                          lr=float(p["lr"]), head_lr=None if p.get("head_lr") is None else float(p["head_lr"]),
                          weight_decay=float(p["weight_decay"]),
                          warmup_ratio=float(p["warmup_ratio"]), max_grad_norm=float(p["max_grad_norm"]),
                          patience=int(p["patience"]), eval_batch_size=int(p["eval_batch_size"]),
                          precision=p["precision"], group_by_length=bool(p["group_by_length"]), seed=seed,
                          device=p["device"], progress=bool(p["progress"]), prefetch=p.get("prefetch"),
                          compile=bool(p.get("compile", False)),
                          deterministic=bool(p.get("deterministic", False)))

    # ------------------------------------------------------------------ interface
    def fit(self, train: pd.DataFrame, val: pd.DataFrame | None, ctx: FitContext) -> None:
        if not self.params.get("pretrained"):
            raise ModelError("--model transformer needs --pretrained NAME_OR_DIR")
        torch.manual_seed(ctx.seed)  # the head's initial weights
        self._build(self.params["pretrained"])
        data = self.encode(train)
        callbacks = list(ctx.callbacks)
        if ctx.dynamics_df is not None and ctx.out_dir is not None:
            dyn = ctx.dynamics_df
            mode = self.params.get("dynamics", "forward")
            if mode != "off":
                # "forward" records the training forward pass (free); "pass" scores after each epoch
                dyn_data = data if dyn is train else self.encode(dyn)
                callbacks.insert(0, DynamicsWriter(dyn_data, dyn["pair_id"], self.labels, ctx.out_dir / "dynamics",
                                                   mode=mode, train_ids=train["pair_id"]))
        val_data = self.encode(val) if val is not None and len(val) else None
        cw = balanced_weights(data.labels, len(self.labels)) if ctx.class_weights else None
        self.state = fit(self.model, data, config=self.loop_config(ctx.seed), val=val_data, callbacks=callbacks,
                         schedule=ctx.schedule, class_weights=cw,
                         checkpoint_dir=ctx.out_dir / "checkpoint" if ctx.out_dir else None, resume=ctx.resume)
        self.device = self.state.device

    def predict_proba(self, df: pd.DataFrame) -> np.ndarray:
        device = getattr(self, "device", None) or select_device(self.params["device"])
        self.model.to(device)
        return predict_proba(self.model, self.encode(df, with_labels=False), device=device,
                             batch_size=int(self.params["eval_batch_size"]), precision=self.params["precision"])

    @torch.no_grad()
    def embed(self, texts: list[str]) -> np.ndarray:
        """Pooled vectors (the run's pooling) of the (fine-tuned) encoder, one sentence at a time."""
        device = getattr(self, "device", None) or select_device(self.params["device"])
        enc = self.model.encoder().to(device).eval()
        out = []
        bs = int(self.params["eval_batch_size"])
        for i in range(0, len(texts), bs):
            t = self.tokenizer(list(texts[i:i + bs]), truncation=True, max_length=int(self.params["max_length"]),
                               padding=True, return_tensors="pt")
            mask = t["attention_mask"].to(device)
            h = enc(input_ids=t["input_ids"].to(device), attention_mask=mask)
            out.append(pool(h.last_hidden_state, mask, self.params.get("pooling", "cls")).float().cpu())
        return torch.cat(out).numpy() if out else np.zeros((0, 0), dtype=np.float32)

    def save(self, model_dir: Path) -> None:
        from safetensors.torch import save_file

        model_dir.mkdir(parents=True, exist_ok=True)
        params = {**self.params, "device": "auto"}
        write_meta(model_dir, {"kind": self.kind, "labels": self.labels, "input_mode": self.input_mode,
                               "params": params})
        self.tokenizer.save_pretrained(str(model_dir))
        if isinstance(self.model, CrossModel):
            self.model.inner.save_pretrained(str(model_dir))
            if self.model.pooling == "mean":
                save_file({k: v.detach().cpu().contiguous() for k, v in self.model.head.state_dict().items()},
                          str(model_dir / "head.safetensors"))
        else:
            self.model.enc.save_pretrained(str(model_dir / "encoder"))
            save_file({k: v.detach().cpu().contiguous() for k, v in self.model.head.state_dict().items()},
                      str(model_dir / "head.safetensors"))

    @classmethod
    def load(cls, model_dir: Path, meta: dict):
        from safetensors.torch import load_file
        from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer

        m = cls(meta["labels"], meta["input_mode"], meta.get("params"))
        m.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        # runs saved before pooling was recorded: "auto" resolves as it did in their training
        # (last for decoders, else cls: the checkpoint's own head under cross), never from
        # the saved folder, which holds no sentence-transformers files
        m._prepare_tokenizer()
        if m.params["encoding"] == "cross":
            m.model = CrossModel(AutoModelForSequenceClassification.from_pretrained(str(model_dir)),
                                 m.params["pooling"], float(m.params["dropout"]))
            if m.params["pooling"] == "mean":
                m.model.head.load_state_dict(load_file(str(model_dir / "head.safetensors")))
        else:
            enc = AutoModel.from_pretrained(str(model_dir / "encoder"))
            n_sides = 2 if m.input_mode == "pair" else 1
            m.model = SeparateModel(enc, n_sides, len(m.labels), int(m.params["head_hidden"]),
                                    float(m.params["dropout"]), bool(m.params["freeze_encoder"]),
                                    m.params["pooling"])
            m.model.head.load_state_dict(load_file(str(model_dir / "head.safetensors")))
        m.model.eval()
        return m
