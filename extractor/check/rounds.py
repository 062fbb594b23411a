"""The check's rounds and the pure functions over one batch of pairs they run (no Spark):

- `judge` (per slice of a unit of the pairs table): each distinct sentence of the slice
  embedded once, in batches (`distinct_embeddings`), each pair judged by the head
  (`verdicts`); the verdicts to a scratch file; returns counts per label and reason;
- `write_file` (per file of the pairs table): its rows less the dropped ones, written under
  the same name in the check's table (a filter keeps the rows' order: the same files the
  pairs stage's layout gives).

A verdict is a function of the pair's two texts and label only, so the table does not
depend on how the rows are cut into slices, tasks or batches.
"""
from __future__ import annotations

import os
from typing import Callable, Sequence, TypedDict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extractor.check import head as check_head
from extractor.check.plan import CheckPlan, Output
from extractor.core.names import LABELS, NEUTRAL
from extractor.core.schemas import PAIRS
from extractor.engine import scratch
from extractor.engine.rounds import Round
from extractor.io import fs
from extractor.io.parquet_writer import task_attempt, write_sorted
from extractor.pairs.matching import matcher_for
from extractor.splits import pair_tables

UNLIKELY_LABEL = "unlikely_label"    # a marked pair whose label the model finds unlikely
RELATED_NEUTRAL = "related_neutral"  # a neutral pair whose sentences the model finds related
REASONS = (UNLIKELY_LABEL, RELATED_NEUTRAL)
VERDICTS = pa.schema([("row", pa.int32()), ("p", pa.float64()), ("reason", pa.string())])
OUTPUT_COLUMNS = tuple(f.name for f in PAIRS)


class JudgeResult(TypedDict):
    counts: list      # [label, reason or None, pairs]
    sentences: int    # distinct sentences embedded


class FileResult(TypedDict):
    files: list       # {"path", "rows", "bytes"} of each file written


# ---------------------------------------------------------------------------- pure functions

def distinct_embeddings(texts: Sequence[str], embed: Callable[[list[str]], np.ndarray]) -> np.ndarray:
    """The embedding of each of `texts`, each distinct text embedded once (a sentence is the
    premise of one pair and the hypothesis of another, or of several)."""
    order: dict[str, int] = {}
    index = np.fromiter((order.setdefault(t, len(order)) for t in texts), dtype=np.int64, count=len(texts))
    vectors = embed(list(order)) if order else np.zeros((0, 1), np.float32)
    return vectors[index] if len(texts) else vectors


def verdicts(premises: Sequence[str], hypotheses: Sequence[str], labels: Sequence[str], phrases: Sequence,
             embed: Callable[[list[str]], np.ndarray], head: check_head.Head, threshold: float,
             neutral_threshold: float) -> tuple[np.ndarray, list]:
    """(p, reason) per pair: for a marked pair p(its label is right), dropped below `threshold`
    (`UNLIKELY_LABEL`); for a neutral pair p(its sentences are related), dropped at or above
    `neutral_threshold` (`RELATED_NEUTRAL`); reason None: kept. `phrases`: each pair's linking
    phrase as the lexicon spells it (`phrase_of`; None for a neutral pair)."""
    n = len(premises)
    vectors = distinct_embeddings([*premises, *hypotheses], embed)
    u, v = vectors[:n], vectors[n:]
    neutral = np.array([lab == NEUTRAL for lab in labels], dtype=bool)
    p = np.zeros(n, dtype=np.float64)
    if (~neutral).any():
        p[~neutral] = head.p_right(u[~neutral], v[~neutral], [lab for lab in labels if lab != NEUTRAL],
                                   [ph for ph, lab in zip(phrases, labels) if lab != NEUTRAL])
    if neutral.any():
        p[neutral] = head.p_related(u[neutral], v[neutral])
    reasons = [(RELATED_NEUTRAL if q >= neutral_threshold else None) if is_neutral
               else (UNLIKELY_LABEL if q < threshold else None) for q, is_neutral in zip(p, neutral)]
    return p, reasons


def tally(labels: Sequence[str], reasons: Sequence) -> list:
    """[label, reason, pairs] rows, in a fixed order."""
    counts: dict = {}
    for lab, why in zip(labels, reasons):
        counts[lab, why] = counts.get((lab, why), 0) + 1
    return [[lab, why, n] for (lab, why), n in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))]


def slices(units: Sequence[dict], rows: int) -> list[tuple]:
    """(unit, first row, row after the last) of every slice of at most `rows` rows."""
    return [(k, start, min(start + rows, u["rows"]))
            for k, u in enumerate(units) for start in range(0, u["rows"], rows)]


# ---------------------------------------------------------------------------- the models, once per process

_LOADED: dict = {}  # (encoder, head sha256) -> (Encoder, Head): loaded once per Python worker


def task_cores() -> int:
    """The cores of the task this runs in: Spark sets OMP_NUM_THREADS to spark.task.cpus in its
    Python workers; elsewhere every core of the machine."""
    return max(1, int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1)


def models(plan: CheckPlan):
    """The encoder (float32 on CPU and CUDA alike: the same verdicts on either) and the head,
    loaded once per process."""
    key = (plan.encoder, plan.head_sha256)
    if key not in _LOADED:
        # torch and transformers (seconds, hundreds of MB) only where a task of the check runs:
        # the job imports this module with every stage's, check on or off
        import torch

        from extractor.encoder import cache
        from extractor.encoder.embed import Encoder

        torch.set_num_threads(task_cores())
        found = check_head.load()
        if found.sha256 != plan.head_sha256:
            raise RuntimeError(f"the check's head file changed during the run ({found.sha256[:12]}, planned "
                               f"{plan.head_sha256[:12]})")
        _LOADED.clear()
        _LOADED[key] = (Encoder(cache.require(plan.encoder), dtype="float32"), found)
    return _LOADED[key]


# ---------------------------------------------------------------------------- rounds

def judge(plan: CheckPlan, task) -> JudgeResult:
    """One slice of a unit: the verdict of each of its pairs to a scratch file; counts."""
    k, start, stop = task
    rows = pair_tables.read_unit(plan.units[k], plan.schema, ["premise", "hypothesis", "label", "marker"])
    rows = rows.slice(start, stop - start)
    encoder, found = models(plan)
    premises = [t or "" for t in rows.column("premise").to_pylist()]
    hypotheses = [t or "" for t in rows.column("hypothesis").to_pylist()]
    labels = rows.column("label").to_pylist()
    matcher = matcher_for(plan.lexicon)
    phrases = [None if m is None else matcher.phrase_of(m) or m for m in rows.column("marker").to_pylist()]
    embedded = 0

    def embed(texts: list[str]) -> np.ndarray:
        nonlocal embedded
        embedded += len(texts)
        return encoder.embed(texts, kind=check_head.KIND, batch_size=plan.batch)

    p, reasons = verdicts(premises, hypotheses, labels, phrases, embed, found, plan.threshold, plan.neutral_threshold)
    table = pa.Table.from_arrays([pa.array(np.arange(start, stop, dtype=np.int32)), pa.array(p, pa.float64()),
                                  pa.array(reasons, pa.string())], schema=VERDICTS)
    scratch.write_arrow(table, plan.scratch.verdicts(k, start))
    return {"counts": tally(labels, reasons), "sentences": embedded}


def write_file(step: Output, path: str) -> FileResult:
    """One file of the pairs table: its kept rows (in their order) under the same name in the
    target folder."""
    plan = step.plan
    source = fs.canonical(step.source).rstrip("/")
    rel = path[len(source) + 1:] if path.startswith(source + "/") else fs.basename(path)
    parts = []
    for k, unit in enumerate(plan.units):
        if unit["path"] != path:
            continue
        rows = pair_tables.read_unit(unit, plan.schema, list(OUTPUT_COLUMNS))
        judged = scratch.read_arrow(plan.scratch.verdicts(k), VERDICTS)
        if judged.num_rows != rows.num_rows:
            raise RuntimeError(f"check: unit {k} has {rows.num_rows} rows and {judged.num_rows} verdicts (a bug)")
        parts.append(rows.filter(pc.is_null(judged.column("reason"))))
    if not parts:
        return {"files": []}
    kept = pa.concat_tables(parts).cast(PAIRS)
    name = fs.basename(rel)
    written = write_sorted(kept.to_batches(), step.target, ["label"], name, task_attempt())
    return {"files": [{"path": p, "rows": n, "bytes": size} for p, n, size in written]}


def empty_counts() -> dict:
    """The stats block's per-label counts before any pair is counted."""
    return {lab: {"pairs": 0, "kept": 0, "dropped": {r: 0 for r in REASONS}} for lab in LABELS}


JUDGE = Round("check-judge", judge)
# not recorded: the files are written whole into the table's folder, after the verdicts
FILES = Round(None, write_file, spread=True)
