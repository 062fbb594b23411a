"""Blind annotation batches: seeded selection, per-annotator CSVs, Label Studio tasks.

Annotators see ``item_id``, ``premise`` and ``hypothesis`` only: never the automatic label,
the linking phrase (``marker``), the pair's ``source`` or its document (RoNLI §3: "we
preclude them from viewing the automatically generated labels (and the linking phrases)").
The coordinator keeps ``manifest.json`` (selection, seed, counts); annotators get the files
under ``annotators/`` or the Label Studio project.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path

import pandas as pd

from extractor.core.errors import UserError
from extractor.core.hashing import stable_hash
from trainer.annotation.guidelines import Guidelines, instructions_html, instructions_markdown, labeling_config

MANIFEST = "manifest.json"
MANIFEST_KIND = "nli-annotation-batch"
CSV_COLUMNS = ("item_id", "premise", "hypothesis", "label")
# Files written for annotators: round<R>-<name>.csv; the reader takes round and name from it.
CSV_NAME = re.compile(r"^round(\d+)-(.+)$")
NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]*$")


# --------------------------------------------------------------------------- selection


def _allocate_balanced(available: dict[str, int], n: int) -> dict[str, int]:
    """n split as evenly as possible over the labels, capped by what each label has
    (water-filling: a short label's share goes to the others; the remainder to the first labels)."""
    alloc = {label: 0 for label in available}
    open_labels = [label for label in available if available[label] > 0]
    remaining = n
    while remaining > 0 and open_labels:
        per = max(1, remaining // len(open_labels))
        for label in list(open_labels):
            take = min(per, available[label] - alloc[label], remaining)
            alloc[label] += take
            remaining -= take
            if alloc[label] == available[label]:
                open_labels.remove(label)
            if remaining == 0:
                break
    return alloc


def _allocate_natural(available: dict[str, int], n: int) -> dict[str, int]:
    """n split in proportion to the label counts (largest remainder; ties in label order)."""
    total = sum(available.values())
    exact = {label: n * count / total for label, count in available.items()}
    alloc = {label: int(math.floor(v)) for label, v in exact.items()}
    order = sorted(available, key=lambda l: -(exact[l] - alloc[l]))  # stable: label order on ties
    for label in order[: n - sum(alloc.values())]:
        alloc[label] += 1
    return alloc


def select_items(df: pd.DataFrame, n: int | None, sample: str, seed: int,
                 labels: tuple[str, ...]) -> tuple[pd.DataFrame, dict]:
    """The rows to annotate and how they were chosen.

    Within a label, rows are taken in the order of ``stable_hash(id, seed)``: the same data
    and seed give the same batch on every machine, whatever the row order.
    """
    keyed = df.assign(_key=[stable_hash(i, "annotate-select", seed=seed) for i in df["pair_id"]])
    info: dict = {"sample": sample, "seed": seed, "n_requested": n, "available": int(len(df))}
    strata = keyed["label"].where(keyed["label"].notna(), None)
    order = [l for l in labels if (strata == l).any()] + sorted(
        {str(x) for x in strata.dropna() if x not in labels})
    available = {label: int((strata == label).sum()) for label in order}
    unlabelled = int(strata.isna().sum())
    if n is None or n >= len(df):
        chosen = keyed
        if n is not None and n > len(df):
            info["note"] = f"--n {n} is more than the {len(df)} items available: all are taken"
    elif sample == "balanced":
        if not available:
            raise UserError("--sample balanced needs automatic labels in the data; use --sample natural")
        alloc = _allocate_balanced(available, n)
        short = {label: available[label] for label in order if available[label] < n // len(order)}
        if short:
            info["short_labels"] = short
        if sum(alloc.values()) < n:
            info["note"] = f"only {sum(alloc.values())} labelled items for --n {n}"
        parts = [keyed[strata == label].nsmallest(k, "_key") for label, k in alloc.items() if k]
        chosen = pd.concat(parts) if parts else keyed.iloc[:0]
        info["allocation"] = alloc
    elif sample == "natural":
        groups = dict(available)
        if unlabelled:
            groups["(none)"] = unlabelled
        alloc = _allocate_natural(groups, n)
        parts = []
        for label, k in alloc.items():
            rows = keyed[strata.isna()] if label == "(none)" else keyed[strata == label]
            if k:
                parts.append(rows.nsmallest(k, "_key"))
        chosen = pd.concat(parts)
        info["allocation"] = alloc
    else:
        raise UserError(f"unknown --sample {sample!r}; choose balanced or natural")
    chosen = chosen.sort_values("_key", kind="stable").drop(columns="_key").reset_index(drop=True)
    counts = chosen["label"].value_counts(dropna=False)
    info["selected"] = int(len(chosen))
    info["label_counts"] = {("(none)" if pd.isna(k) else str(k)): int(v) for k, v in counts.items()}
    return chosen, info


def annotator_names(spec: list[str] | None, start: int = 1) -> list[str]:
    """``--annotators 3`` -> annotator1..3 (numbered from ``start``); or the names given."""
    values = [v.strip() for s in (spec or ["3"]) for v in str(s).split(",") if v.strip()]
    if len(values) == 1 and values[0].isdigit():
        k = int(values[0])
        if k < 1:
            raise UserError("--annotators must be at least 1")
        return [f"annotator{i}" for i in range(start, start + k)]
    bad = [v for v in values if not NAME_OK.match(v) or v.isdigit()]
    if bad:
        raise UserError(f"--annotators: {bad[0]!r} is not a usable name (letters, digits, _ . @ + -; "
                        "not only digits)")
    if len(set(values)) != len(values):
        raise UserError(f"--annotators: a name is given twice in {values}")
    return values


def shuffled(items: pd.DataFrame, seed: int, who: str) -> pd.DataFrame:
    """The batch in an order of its own for each annotator (order effects do not line up)."""
    key = [stable_hash(i, "annotate-order", who, seed=seed) for i in items["pair_id"]]
    return items.assign(_o=key).sort_values("_o", kind="stable").drop(columns="_o").reset_index(drop=True)


# --------------------------------------------------------------------------- writing


def csv_text(items: pd.DataFrame) -> str:
    """An annotator CSV: item_id, premise, hypothesis, label (empty), UTF-8 with BOM (spreadsheets)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for row in items.itertuples(index=False):
        w.writerow([row.pair_id, row.premise, row.hypothesis, ""])
    return "\ufeff" + buf.getvalue()


def label_studio_tasks(items: pd.DataFrame, round_no: int) -> list[dict]:
    """Label Studio tasks: only what the annotator may see, plus the item id and the round."""
    return [{"data": {"item_id": str(r.pair_id), "premise": r.premise, "hypothesis": r.hypothesis, "round": round_no}}
            for r in items.itertuples(index=False)]


def write_batch(out: Path, items: pd.DataFrame, *, annotators: list[str], round_no: int, seed: int,
                guidelines: Guidelines, manifest: dict) -> dict:
    """Write a batch into ``out`` (an empty work folder, extractor/io/atomic.py); returns the manifest written."""
    (out / "annotators").mkdir(parents=True)
    (out / "label_studio").mkdir()
    files = []
    for name in annotators:
        path = out / "annotators" / f"round{round_no}-{name}.csv"
        path.write_text(csv_text(shuffled(items, seed, name)), encoding="utf-8")
        files.append(path.relative_to(out).as_posix())
    tasks = label_studio_tasks(shuffled(items, seed, "label-studio"), round_no)
    (out / "label_studio" / "tasks.json").write_text(json.dumps(tasks, ensure_ascii=False, indent=1) + "\n",
                                                     encoding="utf-8")
    (out / "label_studio" / "config.xml").write_text(labeling_config(guidelines), encoding="utf-8")
    (out / "label_studio" / "instructions.html").write_text(instructions_html(guidelines) + "\n", encoding="utf-8")
    (out / "instructions.md").write_text(instructions_markdown(guidelines, [Path(f).name for f in files]),
                                         encoding="utf-8")
    manifest = {
        "kind": MANIFEST_KIND,
        "version": 1,
        "round": round_no,
        **manifest,
        "annotators": annotators,
        "files": {"annotators": files, "label_studio": ["label_studio/tasks.json", "label_studio/config.xml",
                                                        "label_studio/instructions.html"],
                  "instructions": "instructions.md"},
        "items": [{"item_id": str(r.pair_id), "split": r.split} for r in items.itertuples(index=False)],
    }
    (out / MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return manifest


def read_manifest(path: Path) -> dict | None:
    """A batch manifest, or None when ``path`` is not one."""
    try:
        m = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return m if isinstance(m, dict) and m.get("kind") == MANIFEST_KIND else None


def manifest_near(file: Path) -> tuple[Path, dict] | None:
    """The manifest of the batch a file was written into (its folder or the one above)."""
    for folder in (file.parent, file.parent.parent):
        m = read_manifest(folder / MANIFEST)
        if m is not None:
            return folder / MANIFEST, m
    return None
