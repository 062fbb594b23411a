"""Run directories: writing results, reading a saved run back (`load_run`).

The layout is the contract of docs/trainer.md ("Run directory contract").
"""
from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from extractor.io.atomic import WorkFile
from trainer.errors import RunError, RunFileNotFound
from trainer.analysis.metrics import compute_metrics, plot_confusion, slice_metrics, slice_values, slices_markdown
from trainer.models import MODELS, model_class

log = logging.getLogger("trainer")


def write_json(path: Path, obj) -> None:
    """Write JSON beside `path` and rename it over `path`, so a reader never sees half a file."""
    with WorkFile(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=False, default=_jsonable) + "\n")


def _jsonable(o):
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    return str(o)


def read_json(path: Path):
    path = Path(path)
    if not path.exists():
        raise RunFileNotFound(f"{path}: no such file")
    return json.loads(path.read_text())


def resolve_run_dir(run_dir) -> Path:
    """The directory that holds the model: a `--seeds` run points to its selected seed."""
    run_dir = Path(run_dir)
    config_path = run_dir / "config.json"
    if not config_path.exists():
        raise RunFileNotFound(f"{run_dir}: not a run directory (no config.json)")
    config = read_json(config_path)
    if config.get("selected_seed") is not None and not (run_dir / "model").exists():
        return run_dir / f"seed_{config['selected_seed']}"
    return run_dir


class LoadedRun:
    """A saved run's model: ``labels``, ``predict_proba(df)``, ``embed(texts)``, ``config``."""

    def __init__(self, run_dir: Path, model, config: dict):
        self.run_dir, self.model, self.config = run_dir, model, config

    @property
    def labels(self) -> list[str]:
        return list(self.model.labels)

    @property
    def input_mode(self) -> str:
        return self.model.input_mode

    def predict_proba(self, df: pd.DataFrame) -> np.ndarray:
        """(len(df), len(labels)) probabilities; df needs `premise` and `hypothesis`."""
        if len(df) == 0:
            return np.zeros((0, len(self.labels)), dtype=np.float32)
        return np.asarray(self.model.predict_proba(df), dtype=np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Sentence embeddings: mean word vectors (cbow), [CLS] vectors (transformer)."""
        return np.asarray(self.model.embed(list(texts)), dtype=np.float32)


def is_hf_checkpoint(path) -> bool:
    """A Hugging Face model directory (config.json with a model_type), not a run of ours."""
    path = Path(path)
    cfg = path / "config.json"
    if not cfg.exists() or (path / "model").exists():
        return False
    try:
        return "model_type" in json.loads(cfg.read_text())
    except (json.JSONDecodeError, OSError):
        return False


class HFSequenceClassifier:
    """A local Hugging Face sequence-classification checkpoint the trainer did not train
    (zero-shot evaluation, e.g. an XNLI model): its own ``id2label`` names are its labels.

    Pairs are encoded ``premise [SEP] hypothesis`` (the checkpoint's tokenizer template);
    a tokenizer without a pad token (GPT-2 style) pads with its end-of-text token.
    """

    kind = "hf-checkpoint"

    def __init__(self, path, *, input_mode: str = "pair", batch_size: int = 64, max_length: int = 256,
                 device: str = "auto"):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.path = Path(path)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.path))
            self.model = AutoModelForSequenceClassification.from_pretrained(str(self.path))
        except (OSError, ValueError) as exc:  # transformers: files missing or unreadable, an unknown config
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise RunError(f"{self.path}: cannot load as a sequence-classification checkpoint: {first}") from exc
        self._set_pad_token()
        id2label = self.model.config.id2label or {}
        self.labels = [str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}")))
                       for i in range(self.model.config.num_labels)]
        if len(set(self.labels)) != len(self.labels):
            raise RunError(f"{self.path}: id2label names are not distinct: {self.labels}")
        self.input_mode = input_mode
        self.batch_size, self.max_length = batch_size, max_length
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        self.model.to(self.device).eval()

    def _set_pad_token(self) -> None:
        """Decoder checkpoints (GPT-2 style) ship no padding token: pad with the end-of-text
        token, as the transformers docs recommend, and give the model the same id, which
        GPT-2-style classifiers use to find each row's last non-padding token."""
        # lazy: trainer.models.transformer imports torch at its top (start-up time of the
        # commands that never load a transformer)
        from trainer.models.transformer import ensure_pad_token

        try:
            if ensure_pad_token(self.tokenizer):
                log.info("%s: the tokenizer has no padding token: padding with %r", self.path,
                         self.tokenizer.pad_token)
        except ValueError as exc:
            raise RunError(f"{self.path}: {exc}") from exc
        if self.model.config.pad_token_id != self.tokenizer.pad_token_id:
            self.model.config.pad_token_id = self.tokenizer.pad_token_id

    def predict_proba(self, df: pd.DataFrame) -> np.ndarray:
        import torch

        prem, hyp = df["premise"].astype(str).tolist(), df["hypothesis"].astype(str).tolist()
        out = []
        with torch.no_grad():
            for i in range(0, len(df), self.batch_size):
                a, b = prem[i:i + self.batch_size], hyp[i:i + self.batch_size]
                if self.input_mode == "hypothesis":
                    enc = self.tokenizer(b, truncation=True, max_length=self.max_length, padding=True,
                                         return_tensors="pt")
                elif self.input_mode == "premise":
                    enc = self.tokenizer(a, truncation=True, max_length=self.max_length, padding=True,
                                         return_tensors="pt")
                else:
                    enc = self.tokenizer(a, b, truncation=True, max_length=self.max_length, padding=True,
                                         return_tensors="pt")
                logits = self.model(**{k: v.to(self.device) for k, v in enc.items()}).logits
                out.append(torch.softmax(logits.float(), dim=-1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, len(self.labels)), dtype=np.float32)

    def embed(self, texts: list[str]) -> np.ndarray:
        raise RunError(f"{self.path}: embeddings of an outside checkpoint are not supported")


def load_run(run_dir) -> LoadedRun:
    """A run directory of ours, or a local Hugging Face sequence-classification checkpoint."""
    if is_hf_checkpoint(run_dir):
        model = HFSequenceClassifier(run_dir)
        return LoadedRun(Path(run_dir), model, {"model": "hf-checkpoint", "pretrained": str(run_dir),
                                                "labels": model.labels, "data": {}})
    base = resolve_run_dir(run_dir)
    model_dir = base / "model"
    meta_path = model_dir / "model.json"
    if not meta_path.exists():
        raise RunFileNotFound(f"{base}: no saved model (model/model.json missing)")
    meta = read_json(meta_path)
    if meta.get("kind") not in MODELS:
        raise RunError(f"{meta_path}: unknown model kind {meta.get('kind')!r}")
    model = model_class(meta["kind"]).load(model_dir, meta)
    return LoadedRun(base, model, read_json(base / "config.json"))


# ---------------------------------------------------------------------------- evaluation

def predictions_frame(df: pd.DataFrame, split: str, probs: np.ndarray, labels: list[str]) -> pd.DataFrame:
    names = np.asarray(labels, dtype=object)
    out = pd.DataFrame({"pair_id": df["pair_id"].astype(str).to_numpy(), "split": split,
                        "gold": df["label"].to_numpy() if "label" in df.columns else None,
                        "pred": names[probs.argmax(1)] if len(probs) else []})
    for i, lab in enumerate(labels):
        out[f"prob_{lab}"] = probs[:, i].astype(np.float32)
    return out


def with_row_columns(preds: pd.DataFrame, df: pd.DataFrame) -> pd.DataFrame:
    """The prediction columns followed by the evaluated rows' own columns (premise, hypothesis,
    genre, tags, ...), so that any slice can be recomputed from predictions.parquet. A data
    column whose name is taken (``split``, ``pred``, ...) is kept as ``data_<name>``."""
    out = preds.copy()
    for c in df.columns:
        if c in ("pair_id", "label"):
            continue
        name = c if c not in out.columns else f"data_{c}"
        out[name] = df[c].to_numpy()
    return out


def evaluate_splits(model, frames: dict[str, pd.DataFrame], keep_columns: bool = True) -> tuple[dict, pd.DataFrame]:
    """Metrics per split name and the predictions of every row (with the rows' columns)."""
    metrics, preds = {}, []
    for split, df in frames.items():
        probs = np.asarray(model.predict_proba(df), dtype=np.float32)
        p = predictions_frame(df, split, probs, list(model.labels))
        if keep_columns:
            p = with_row_columns(p, df)
        metrics[split] = compute_metrics(p["gold"], p["pred"], model.labels)
        preds.append(p)
        log.info("%s: accuracy %.4f, macro-F1 %.4f (n=%d)", split, metrics[split]["accuracy"],
                 metrics[split]["macro_f1"], len(df), extra=LOG_FILE_ONLY)  # printed by the command
    return metrics, pd.concat(preds, ignore_index=True) if preds else pd.DataFrame()


def write_evaluation(out_dir: Path, metrics: dict, preds: pd.DataFrame) -> None:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_json(out_dir / "metrics.json", metrics)
    write_parquet(preds, out_dir / "predictions.parquet")
    for split, m in metrics.items():
        plot_confusion(m, out_dir / f"confusion_matrix_{split}.png", title=f"{split}: accuracy {m['accuracy']:.3f}, "
                                                                         f"macro-F1 {m['macro_f1']:.3f}")


def arrow_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Columns pyarrow cannot type (mixed ints and strings, dicts of varying keys...) as JSON text."""
    out = df
    for c in df.columns:
        if df[c].dtype != object:
            continue
        try:
            pa.array(df[c].tolist(), from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            if out is df:
                out = df.copy()
            out[c] = df[c].map(lambda v: None if v is None else json.dumps(v, default=str, ensure_ascii=False)
                               if not isinstance(v, str) else v)
    return out


def write_parquet(df: pd.DataFrame, path: Path) -> None:
    """A Parquet file written beside `path` and renamed over it (a reader never sees half a file)."""
    with WorkFile(path) as tmp:
        arrow_safe(df).to_parquet(tmp, index=False)


def write_slices(out_dir: Path, preds: pd.DataFrame, by: list[str], labels: list[str],
                 train: pd.DataFrame | None = None) -> dict:
    """``slices.json`` and ``slices.md``: metrics per value of each `--by` column, per evaluated split."""
    columns = [c for item in by for c in str(item).split(",") if c]
    result: dict = {}
    for split, part in preds.groupby("split", sort=False):
        for col in columns:
            name = col if col in part.columns else f"data_{col}"
            if name not in part.columns or part[name].isna().all():
                continue
            counts = None
            if train is not None and col in train.columns:
                counts = slice_values(train[col]).value_counts().to_dict()
            result.setdefault(split, {})[col] = slice_metrics(part.reset_index(drop=True), name, labels, counts)
    out_dir = Path(out_dir)
    write_json(out_dir / "slices.json", result)
    with WorkFile(out_dir / "slices.md") as tmp:
        tmp.write_text(slices_markdown(result))
    return result


def check_labels(df: pd.DataFrame, labels: list[str], where: str) -> None:
    """Gold labels of evaluation data must be labels the model knows."""
    if "label" not in df.columns:
        return
    unknown = sorted(set(df["label"].dropna()) - set(labels))
    if unknown:
        raise RunError(f"{where}: label {unknown[0]!r} is not one of the model's labels {labels}"
                         + (f" ({len(unknown)} unknown labels)" if len(unknown) > 1 else ""))


class _CurrentStderr:
    """sys.stderr as it is at each write (not when the handler was made): a caller that swaps
    stderr (tests, notebooks) never gets a write to a closed stream."""

    def write(self, text):
        return sys.stderr.write(text)

    def flush(self):
        sys.stderr.flush()


def _not_for_console(record: logging.LogRecord) -> bool:
    """Records logged with ``extra=LOG_FILE_ONLY`` go to the run's train.log only: the
    command prints them itself (each split's scores, once)."""
    return getattr(record, "console", True)


LOG_FILE_ONLY = {"console": False}


def file_logger(run_dir: Path) -> logging.Handler:
    """Send the trainer's log to RUN_DIR/train.log (and stderr at INFO)."""
    logger = logging.getLogger("trainer")
    logger.setLevel(logging.INFO)
    if not any(isinstance(h, logging.StreamHandler) and not isinstance(h, logging.FileHandler)
               for h in logger.handlers):
        console = logging.StreamHandler(_CurrentStderr())
        console.setFormatter(logging.Formatter("%(message)s"))
        console.addFilter(_not_for_console)
        logger.addHandler(console)
    handler = logging.FileHandler(Path(run_dir) / "train.log", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logger.addHandler(handler)
    return handler
