"""Annotations from annotator CSVs and Label Studio exports, as one long table.

Accepted files:

- the annotator CSVs of ``annotate export`` (``round<R>-<name>.csv``: item_id, premise,
  hypothesis, label; comma, semicolon or tab separated, as spreadsheets save them), the
  annotator and round taken from the file name;
- Label Studio exports through its API or UI: ``JSON`` (tasks with their annotations),
  ``JSON_MIN`` (one record per annotation) and ``CSV`` (one row per annotation, with an
  ``annotator`` column). Label Studio names annotators by user id (``ls-user-<id>``) unless
  the export expands ``completed_by`` (then the e-mail is used).

Bad input, decided per case (docs/annotation.md):

- a label outside the label set -> error naming file and line (the cell has to be fixed:
  dropping it would bias the majority);
- an empty label or a skipped (cancelled) Label Studio task -> counted, not an error;
- one annotator labelling an item twice -> counted and kept once when the labels are the
  same (a file given twice, a re-submitted task); an error naming both places when they differ;
- item ids that are not in the data -> error (:func:`check_known`);
- items that nobody labelled -> counted (in agreement.json and the report).
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import pandas as pd

from extractor.core.errors import UserError
from trainer.annotation.blind_batches import CSV_NAME, MANIFEST, manifest_near, read_manifest
from trainer.annotation.guidelines import fold

COLUMNS = ["item_id", "annotator", "label", "round", "where"]


@dataclass
class Annotations:
    table: pd.DataFrame                                   # COLUMNS, one row per (item, annotator)
    seen: dict[str, str] = field(default_factory=dict)    # item_id -> first place it was seen (labelled or not)
    batch_items: dict[str, str] = field(default_factory=dict)  # item_id -> split, from batch manifests
    manifests: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    duplicates: list[dict] = field(default_factory=list)  # identical repeats, kept once
    files: list[dict] = field(default_factory=list)


class _Collector:
    def __init__(self, lookup: dict[str, str], labels: tuple[str, ...]):
        self.lookup, self.labels = lookup, labels
        self.rows: list[tuple] = []
        self.seen: dict[str, str] = {}
        self.counts = {"empty_labels": 0, "cancelled": 0}

    def label(self, raw, where: str) -> str | None:
        if raw is None:
            return None
        text = str(raw)
        if not text.strip():
            return None
        label = self.lookup.get(fold(text))
        if label is None:
            raise UserError(f"{where}: label {text.strip()!r} is not one of {', '.join(self.labels)}; "
                            "correct it (or pass --labels if the label set is another)")
        return label

    def add(self, item_id, annotator: str, raw_label, round_no: int, where: str) -> None:
        item = str(item_id).strip() if item_id is not None else ""
        if not item:
            raise UserError(f"{where}: empty item_id; keep the item_id column as it was exported")
        self.seen.setdefault(item, where)
        label = self.label(raw_label, where)
        if label is None:
            self.counts["empty_labels"] += 1
            return
        self.rows.append((item, annotator, label, int(round_no), where))


def _ls_user(value) -> str:
    if isinstance(value, dict):
        return str(value.get("email") or f"ls-user-{value.get('id')}")
    if value is None or value == "":
        return "ls-user-unknown"
    text = str(value)
    return f"ls-user-{text}" if text.isdigit() else text


def _round_of(value, where: str, default: int) -> int:
    if value is None or value == "":
        return default
    try:
        r = int(value)
    except (TypeError, ValueError):
        raise UserError(f"{where}: round {value!r} is not a number") from None
    if r < 1:
        raise UserError(f"{where}: round {r} must be 1 or more")
    return r


# --------------------------------------------------------------------------- CSV


def read_csv(path: Path, col: _Collector, default_round: int) -> int:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}); save it as 'CSV UTF-8'") from None
    if not text.strip():
        raise UserError(f"{path}: empty file")
    first = text.splitlines()[0]
    delimiter = max(",;\t", key=first.count) if any(c in first for c in ",;\t") else ","
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header = [h.strip().lower() for h in next(reader)]
    for need in ("item_id", "label"):
        if need not in header:
            raise UserError(f"{path}: no column {need!r} (columns: {', '.join(header)}); an annotator CSV has "
                            "item_id, premise, hypothesis, label")
    i_item, i_label = header.index("item_id"), header.index("label")
    i_annot = header.index("annotator") if "annotator" in header else None  # Label Studio CSV export
    i_round = header.index("round") if "round" in header else None
    m = CSV_NAME.match(path.stem)
    file_annotator = m.group(2) if m else path.stem
    file_round = int(m.group(1)) if m else default_round
    n = 0
    line = reader.line_num  # the line the next record starts after
    for cells in reader:
        where = f"{path} line {line + 1}"
        line = reader.line_num
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise UserError(f"{where}: {len(cells)} cells for {len(header)} columns; a cell with the separator "
                            f"{delimiter!r} must be quoted")
        annotator = _ls_user(cells[i_annot]) if i_annot is not None else file_annotator
        round_no = _round_of(cells[i_round], where, file_round) if i_round is not None else file_round
        col.add(cells[i_item], annotator, cells[i_label], round_no, where)
        n += 1
    if n == 0:
        raise UserError(f"{path}: no rows")
    return n


# --------------------------------------------------------------------------- Label Studio JSON


def _choices(result) -> list[str]:
    out: list[str] = []
    for r in result or []:
        if not isinstance(r, dict) or r.get("type") != "choices":
            continue
        if r.get("from_name", "label") != "label":
            continue
        out.extend((r.get("value") or {}).get("choices") or [])
    return out


def read_label_studio_json(path: Path, col: _Collector, default_round: int) -> int:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, list):
        raise UserError(f"{path}: not a Label Studio export (expected a JSON list of tasks; "
                        "export as JSON or JSON_MIN)")
    if not data:
        raise UserError(f"{path}: the export holds no task")
    n = 0
    full = all(isinstance(t, dict) and "annotations" in t for t in data)
    for k, task in enumerate(data):
        if not isinstance(task, dict):
            raise UserError(f"{path}: record {k} is not an object")
        if full:
            task_data = task.get("data") or {}
            where_task = f"{path} task {task.get('id', k)}"
            if "item_id" not in task_data:
                raise UserError(f"{where_task}: no data.item_id (import the label_studio/tasks.json that "
                                "annotate export wrote)")
            round_no = _round_of(task_data.get("round"), where_task, default_round)
            col.seen.setdefault(str(task_data["item_id"]).strip(), where_task)
            for ann in task.get("annotations") or []:
                where = f"{where_task} annotation {ann.get('id', '?')}"
                if ann.get("was_cancelled"):
                    col.counts["cancelled"] += 1
                    continue
                choices = _choices(ann.get("result"))
                if len(choices) > 1:
                    raise UserError(f"{where}: {len(choices)} choices {choices}; the labeling config asks for one")
                col.add(task_data["item_id"], _ls_user(ann.get("completed_by")), choices[0] if choices else None,
                        round_no, where)
                n += 1
        else:  # JSON_MIN: one record per annotation, data fields at the top level
            where = f"{path} record {k} (annotation {task.get('annotation_id', '?')})"
            if "item_id" not in task:
                raise UserError(f"{where}: no item_id (import the label_studio/tasks.json that annotate export wrote)")
            label = task.get("label")
            if isinstance(label, dict):
                label = label.get("choices") or []
            if isinstance(label, list):
                if len(label) > 1:
                    raise UserError(f"{where}: {len(label)} choices {label}; the labeling config asks for one")
                label = label[0] if label else None
            col.add(task["item_id"], _ls_user(task.get("annotator")), label,
                    _round_of(task.get("round"), where, default_round), where)
            n += 1
    return n


# --------------------------------------------------------------------------- all files


def find_manifests(files: list[Path], batch_dirs: Sequence[Path] = ()) -> dict[str, dict]:
    """{path: manifest} of the ``--batch`` folders or manifest files (each must be one), then of
    the batches the annotation files lie in (their folder or the one above); the first seen wins."""
    found: dict[str, dict] = {}
    for d in batch_dirs:
        p = Path(d) / MANIFEST if Path(d).is_dir() else Path(d)
        m = read_manifest(p)
        if m is None:
            raise UserError(f"{p}: not a batch manifest written by annotate export (--batch)")
        found[str(p)] = m
    for f in files:
        near = manifest_near(Path(f))
        if near is not None:
            found.setdefault(str(near[0]), near[1])
    return found


def read_annotations(files: list[Path], lookup: dict[str, str], labels: tuple[str, ...],
                     batch_dirs: Sequence[Path] = ()) -> Annotations:
    """Every file's annotations; duplicates and batch manifests resolved."""
    col = _Collector(lookup, labels)
    manifests = find_manifests([], batch_dirs)
    file_info = []
    for f in files:
        f = Path(f)
        if not f.is_file():
            raise UserError(f"{f}: no such file")
        near = manifest_near(f)
        if near is not None:
            manifests.setdefault(str(near[0]), near[1])
        default_round = int(near[1].get("round", 1)) if near else 1
        suffix = f.suffix.lower()
        before = len(col.rows)
        if suffix in (".csv", ".tsv", ".txt"):
            kind, n = "csv", read_csv(f, col, default_round)
        elif suffix == ".json":
            kind, n = "label-studio-json", read_label_studio_json(f, col, default_round)
        else:
            raise UserError(f"{f}: unknown annotation file type (expected .csv or a Label Studio .json export)")
        file_info.append({"file": str(f), "kind": kind, "records": n, "labels": len(col.rows) - before})
    table = pd.DataFrame(col.rows, columns=COLUMNS)
    table, duplicates = _resolve_duplicates(table)
    batch_items: dict[str, str] = {}
    for m in manifests.values():
        for it in m.get("items", []):
            batch_items.setdefault(str(it["item_id"]), it.get("split"))
    counts = {**col.counts, "files": len(files), "annotations": int(len(table)),
              "duplicates_identical": len(duplicates)}
    return Annotations(table=table, seen=col.seen, batch_items=batch_items, manifests=sorted(manifests),
                       counts=counts, duplicates=duplicates, files=file_info)


def _resolve_duplicates(table: pd.DataFrame) -> tuple[pd.DataFrame, list[dict]]:
    dup = table.duplicated(["item_id", "annotator"], keep=False)
    if not dup.any():
        return table.reset_index(drop=True), []
    repeats = []
    for (item, annotator), g in table[dup].groupby(["item_id", "annotator"], sort=True):
        if g["label"].nunique() > 1:
            a, b = g.iloc[0], g[g["label"] != g.iloc[0]["label"]].iloc[0]
            raise UserError(f"{b['where']}: annotator {annotator!r} labels item {item!r} {b['label']!r}, but "
                            f"{a['label']!r} at {a['where']}; keep one of the two")
        repeats.append({"item_id": item, "annotator": annotator, "label": g.iloc[0]["label"],
                        "times": int(len(g)), "where": list(g["where"])})
    kept = table.drop_duplicates(["item_id", "annotator"], keep="first").reset_index(drop=True)
    return kept, repeats


def check_known(ann: Annotations, known_ids: set[str], data_desc: str) -> None:
    """Every annotated (or batch) item must be in the data the labels are compared with."""
    unknown = [(i, w) for i, w in ann.seen.items() if i not in known_ids]
    unknown += [(i, "batch manifest") for i in ann.batch_items if i not in known_ids and i not in ann.seen]
    if unknown:
        item, where = unknown[0]
        raise UserError(f"{where}: item {item!r} is not in {data_desc} ({len(unknown)} unknown item id(s)); "
                        "pass the data the batch was exported from (--data, --split)")
