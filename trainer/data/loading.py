"""The one NLI loader: any NLI file or folder -> {split name: DataFrame(id, premise, hypothesis, label, ...)}.

Used by `train`, `evaluate`, `predict`, `stats` and cartography, so every command maps
columns and labels the same way. Inputs:

- our splits folder (``train/ validation/ test/`` Parquet sub-folders) and any folder laid
  out the way ``datasets.load_dataset(folder)`` reads it (split sub-folders, or files
  named ``train*``/``validation*``/``dev*``/``test*`` at the top or under ``data/``);
- a Hugging Face ``save_to_disk`` folder (``dataset_dict.json`` + Arrow files), whose
  ``ClassLabel`` names are used for integer labels;
- one file: JSONL, JSON array, CSV, TSV or Parquet (split ``data``), or several files
  (each split named after its file stem).

Bad input raises :class:`NLIDataError` (a ``UserError``, and a ``ValueError``) with one line naming the file.
"""
from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from extractor.core.errors import UserError
from extractor.core.hashing import stable_hex
from extractor.core.names import SPLITS

log = logging.getLogger(__name__)

SUFFIXES = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv",
            ".tsv": "tsv", ".parquet": "parquet", ".arrow": "arrow"}
# Split names as the HF `datasets` library recognises them in file and folder names.
SPLIT_ALIASES = {"train": "train", "training": "train", "validation": "validation",
                 "valid": "validation", "val": "validation", "dev": "validation",
                 "test": "test", "testing": "test", "eval": "test"}
# Labels that mean "no gold label" in public NLI sets (SNLI "-", GLUE -1).
UNLABELED = {"-", "", "-1"}
CORE_COLUMNS = ["pair_id", "premise", "hypothesis", "label"]  # pair_id: the pairs table's id, kept end to end


class NLIDataError(UserError, ValueError):
    """Bad NLI input: the message is one line and names the file (a user error; still a
    ``ValueError`` for older callers)."""


class NLIFileNotFound(NLIDataError, FileNotFoundError):
    """A data path that does not exist."""


class EmptyDataFile(NLIDataError):
    """A data file with no bytes or no rows (skipped when other files of its split have rows)."""


# ---------------------------------------------------------------------------- reading

def _data_suffix(path: Path) -> str | None:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in {".gz", ".bz2", ".xz", ".zst"}:
        suffixes = suffixes[:-1]
    return SUFFIXES.get(suffixes[-1]) if suffixes else None


def read_parquet_frame(path, columns=None) -> pd.DataFrame:
    """A Parquet file (or hive folder) as a DataFrame, decoded on the calling thread.

    A threaded Arrow read can leave pool threads that abort the interpreter at exit
    ("terminate called without an active exception", apache/arrow#34314): 4 of 80 short
    processes reading two predictions files on a loaded machine, 0 of 100 this way. The
    trainer's Parquet files are small, so nothing is lost by reading them on one thread."""
    return pq.read_table(path, columns=columns, use_threads=False).to_pandas(use_threads=False)


def read_table(path: Path) -> pd.DataFrame:
    """One data file as a DataFrame, format from the suffix; one-line errors."""
    path = Path(path)
    if not path.exists():
        raise NLIFileNotFound(f"{path}: no such file")
    kind = _data_suffix(path)
    if kind is None:
        raise NLIDataError(f"{path}: unknown file type (expected one of {', '.join(sorted(SUFFIXES))})")
    if path.stat().st_size == 0:
        raise EmptyDataFile(f"{path}: empty file")
    try:
        if kind == "jsonl":
            df = pd.read_json(path, lines=True, dtype=False)
        elif kind == "json":
            df = _read_json(path)
        elif kind in ("csv", "tsv"):
            df = pd.read_csv(path, sep="\t" if kind == "tsv" else ",", dtype=str,
                             keep_default_na=False, quoting=3 if kind == "tsv" else 0)
        elif kind == "parquet":
            df = read_parquet_frame(path)
        else:
            df = _read_arrow(path).to_pandas()
    except NLIDataError:
        raise
    except (ValueError, OSError, pa.ArrowException) as exc:  # pandas'/pyarrow's parser errors: one line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise NLIDataError(f"{path}: cannot read as {kind}: {first}") from exc
    if len(df) == 0:
        raise EmptyDataFile(f"{path}: empty file (no rows)")
    return df


def _read_json(path: Path) -> pd.DataFrame:
    text = path.read_text(encoding="utf-8")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return pd.read_json(path, lines=True, dtype=False)  # JSON lines named .json
    if isinstance(obj, dict):
        # {"data": [...]} (SQuAD-style) or {"col": [...]} (column-oriented)
        lists = [v for v in obj.values() if isinstance(v, list)]
        if len(obj) == 1 and lists and lists[0] and isinstance(lists[0][0], dict):
            obj = lists[0]
        elif lists and all(isinstance(v, list) for v in obj.values()):
            return pd.DataFrame(obj)
        else:
            raise NLIDataError(f"{path}: JSON object is neither a list of records nor columns")
    if not isinstance(obj, list):
        raise NLIDataError(f"{path}: JSON top level must be a list of records")
    return pd.DataFrame.from_records(obj)


def _read_arrow(path: Path) -> pa.Table:
    # `datasets` writes Arrow IPC streams; plain Arrow files use the file format.
    with pa.memory_map(str(path)) as source:
        try:
            return pa.ipc.open_stream(source).read_all()
        except pa.ArrowInvalid:
            pass
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def _hf_label_names_from_parquet(path: Path, label: str) -> list[str] | None:
    """ClassLabel names stored by `datasets` in Parquet schema metadata, if any."""
    try:
        meta = pq.read_schema(path).metadata or {}
        info = json.loads(meta.get(b"huggingface", b"{}"))
        feature = info.get("info", {}).get("features", {}).get(label, {})
        names = feature.get("names")
        return list(names) if names else None
    except Exception:  # metadata is a convenience, never a reason to fail
        return None


# ---------------------------------------------------------------------------- layouts

def _split_name(name: str) -> str | None:
    """Split name of a file or folder name following HF conventions, or None."""
    stem = name.split(".")[0].lower()
    # as `datasets`: the keyword may stand anywhere between delimiters ("scinli-dev.jsonl")
    for token in [stem, *re.split(r"[-_. 0-9]+", stem)]:
        if token in SPLIT_ALIASES:
            return SPLIT_ALIASES[token]
    return None


def _data_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir()
                  if p.is_file() and _data_suffix(p) and not p.name.startswith((".", "_"))
                  and p.name not in {"dataset_info.json", "state.json", "dataset_dict.json", "stats.json"})


def discover(path: Path) -> dict[str, list[Path]]:
    """Split name -> data files for a folder, following the layouts HF `datasets` reads."""
    path = Path(path)
    if (path / "dataset_dict.json").exists():  # save_to_disk of a DatasetDict
        splits = json.loads((path / "dataset_dict.json").read_text())["splits"]
        return {s: sorted((path / s).glob("*.arrow")) for s in splits}
    if (path / "state.json").exists():  # save_to_disk of one Dataset
        state = json.loads((path / "state.json").read_text())
        return {state.get("_split") or "data": [path / f["filename"] for f in state["_data_files"]]}
    found: dict[str, list[Path]] = {}
    for sub in sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
        files = sorted(f for f in sub.rglob("*") if f.is_file() and _data_suffix(f)
                       and not f.name.startswith((".", "_")))
        if files and sub.name != "data":
            found.setdefault(_split_name(sub.name) or sub.name, []).extend(files)
    if not found:
        for folder in (path, path / "data"):
            if folder.is_dir():
                for f in _data_files(folder):
                    # unnamed files are the train split, as in `datasets`
                    found.setdefault(_split_name(f.name) or "train", []).append(f)
    if not found:
        raise NLIDataError(f"{path}: no data files (expected split folders or *.jsonl/*.json/*.csv/*.tsv/*.parquet)")
    return found


def _read_files(files: list[Path]) -> tuple[pd.DataFrame, Path]:
    if not files:
        raise NLIDataError("no data files")
    frames = []
    for f in files:
        try:
            frames.append(read_table(f))
        except EmptyDataFile:
            if len(files) > 1:
                continue  # an empty shard beside others: nothing to lose
            raise
    if not frames:
        raise NLIDataError(f"{files[0].parent}: empty split (all files empty)")
    return (frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)), files[0]


# ---------------------------------------------------------------------------- mapping

def _map_labels(values: pd.Series, label_names: Sequence[str] | None, where: str,
                allow_unknown: bool = False) -> pd.Series:
    """Labels as str names; ints by position in label_names; unlabeled -> None.

    A string label outside ``label_names`` is an error unless ``allow_unknown``.
    """
    def one(v):
        if v is None or (isinstance(v, float) and pd.isna(v)):
            return None
        if isinstance(v, bool):
            v = int(v)
        if isinstance(v, (int,)) or (hasattr(v, "dtype") and getattr(v.dtype, "kind", "") in "iu"):
            v = int(v)
            if v < 0:
                return None
            if label_names is not None:
                if v >= len(label_names):
                    raise NLIDataError(f"{where}: label {v} out of range for label names {list(label_names)}")
                return label_names[v]
            return str(v)
        if isinstance(v, float) and v.is_integer():
            return one(int(v))
        s = str(v).strip()
        if s in UNLABELED:
            return None
        if label_names is not None and s not in label_names:
            if s.lstrip("-").isdigit():
                return one(int(s))
            if allow_unknown:
                return s
            raise NLIDataError(f"{where}: label {s!r} not in label names {list(label_names)} "
                               f"(fix the row, or pass --allow-new-labels to train it as a new class)")
        return s
    return values.map(one).astype(object)


def text_kind(v) -> str:
    """"text", or why a premise/hypothesis value is unusable: missing_text, empty_text, non_text."""
    if v is None or (isinstance(v, float) and v != v) or v is pd.NA or v is pd.NaT:
        return "missing_text"
    if isinstance(v, str):
        return "text" if v.strip() else "empty_text"
    if isinstance(v, (bool, np.bool_)):
        return "non_text"
    if isinstance(v, (int, float, np.integer, np.floating)):
        return "text"
    return "non_text"  # lists, dicts, arrays, bytes


def as_text(v) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _missing(where: str, column: str, flag: str, df: pd.DataFrame) -> NLIDataError:
    return NLIDataError(f"{where}: no column {column!r} (use {flag}); columns are: {', '.join(map(str, df.columns))}")


def normalize(df: pd.DataFrame, where: str, *, premise: str = "premise", hypothesis: str = "hypothesis",
              label: str | None = "label", id_col: str | None = None,
              label_names: Sequence[str] | None = None, require_label: bool = True,
              allow_unknown_labels: bool = False) -> pd.DataFrame:
    """Map a raw table to the canonical columns, keeping the others.

    Rows whose premise or hypothesis is missing (None/NaN), empty or blank, or not text (a
    list, a dict) are dropped, counted by reason in ``df.attrs["dropped"]``
    (``missing_text``, ``empty_text``, ``non_text``); numbers are kept as their text.
    No text is ever turned into the string "nan"/"None".
    rows whose gold label is missing/"-"/-1 keep ``label = None`` so `stats` can count
    them and `train` drops them with a logged count.
    """
    if premise not in df.columns:
        raise _missing(where, premise, "--premise", df)
    if hypothesis not in df.columns:
        raise _missing(where, hypothesis, "--hypothesis", df)
    has_label = label is not None and label in df.columns
    if require_label and not has_label:
        raise _missing(where, label or "label", "--label", df)
    if id_col is not None and id_col not in df.columns:
        raise _missing(where, id_col, "--id-col", df)

    out = df.reset_index(drop=True).copy()
    prem, hyp = out[premise], out[hypothesis]
    if has_label:
        gold = _map_labels(out[label], label_names, where, allow_unknown_labels)
    id_source = id_col or next((c for c in ("pair_id", "id") if c in out.columns), None)
    if id_source is not None:
        ids = out[id_source].astype(str)
    else:
        # stable across machines and runs; the row index keeps duplicates apart
        ids = pd.Series([stable_hex(p, h, i) for i, (p, h) in enumerate(zip(prem, hyp))], dtype=object)
    # canonical columns replace same-named ones; other columns stay
    for src, dst in ((premise, "premise"), (hypothesis, "hypothesis"), (label, "label")):
        if src is not None and src != dst and dst in out.columns and src in out.columns:
            out = out.rename(columns={dst: f"orig_{dst}"})
    # the mapped source columns would only duplicate the canonical ones
    out = out.drop(columns=[c for c in (premise, hypothesis, label if has_label else None)
                            if c is not None and c not in CORE_COLUMNS and c in out.columns])
    if id_source == "id":  # an `id` column becomes pair_id (it is not kept twice)
        out = out.drop(columns=["id"])
    out["pair_id"] = ids.values
    out["premise"] = prem.values
    out["hypothesis"] = hyp.values
    if has_label:
        out["label"] = gold.values
    # real datasets repeat rows (IndoNLI's val.jsonl holds one row twice): an exact repeat of
    # an id is dropped and counted; an id repeated with other content is left to check_ids
    out, dropped, id_rows = drop_identical_repeats(out, where) if id_source is not None else (out, {}, {})
    kinds = pd.DataFrame({c: out[c].map(text_kind) for c in ("premise", "hypothesis")})
    no_text: dict[str, int] = {}
    # one reason per row: the first of missing, empty, non-text on the premise, then the hypothesis
    row_reason = kinds["premise"].where(kinds["premise"] != "text", kinds["hypothesis"])
    for reason, n in row_reason[row_reason != "text"].value_counts().items():
        no_text[str(reason)] = int(n)
    if no_text:
        log.warning("%s: dropped %d rows without usable premise or hypothesis %s", where,
                    sum(no_text.values()), no_text)
        out = out[(row_reason == "text").to_numpy()].reset_index(drop=True)
        dropped.update(no_text)
    out["premise"] = out["premise"].map(as_text)
    out["hypothesis"] = out["hypothesis"].map(as_text)
    front = [c for c in CORE_COLUMNS if c in out.columns]
    out = out[front + [c for c in out.columns if c not in front]]
    out.attrs["dropped"] = dropped
    out.attrs["source"] = where
    if id_rows:
        out.attrs["id_rows"] = id_rows
    return out


def drop_identical_repeats(df: pd.DataFrame, where: str) -> tuple[pd.DataFrame, dict[str, int], dict[str, list[int]]]:
    """Rows that repeat an earlier row's id with the same content in every column, dropped.

    Returns the frame without them, ``{"duplicate_identical": n}`` (empty when none) and, for
    every id still repeated (with different content), the rows that hold it, counted from 1
    in the order read (a JSONL file's line numbers; a CSV's data rows after the header), so
    that :func:`check_ids` can name both rows. One ``note:`` line per file says what was dropped.
    """
    ids = df["pair_id"].astype(str)
    repeated = np.flatnonzero(ids.duplicated(keep=False).to_numpy())
    if not len(repeated):
        return df, {}, {}
    # only the rows whose id repeats are compared: nothing to do for the usual unique file
    content = df.iloc[repeated].astype(str).agg("\x1f".join, axis=1).to_numpy()
    again = pd.Series(content).duplicated(keep="first").to_numpy()
    dropped: dict[str, int] = {}
    out = df
    if again.any():
        k = int(np.flatnonzero(again)[0])
        earlier = int(repeated[np.flatnonzero(content == content[k])[0]])
        n = int(again.sum())
        log.warning("note: %s: %d row%s repeat%s an earlier row exactly (same id and content) and %s dropped, "
                    "counted as duplicate_identical (first: id %r, row %d again at row %d)", where, n,
                    "" if n == 1 else "s", "s" if n == 1 else "", "was" if n == 1 else "were",
                    ids.iloc[repeated[k]], earlier + 1, int(repeated[k]) + 1)
        keep = np.ones(len(df), dtype=bool)
        keep[repeated[again]] = False
        out = df[keep].reset_index(drop=True)
        dropped["duplicate_identical"] = n
    kept = repeated[~again]
    kept_ids = ids.iloc[kept]
    conflicting = kept_ids[kept_ids.duplicated(keep=False)]
    id_rows = {str(i): [int(r) + 1 for r in kept[(kept_ids == i).to_numpy()]] for i in conflicting.unique()}
    return out, dropped, id_rows


def load_split_file(path, *, premise: str = "premise", hypothesis: str = "hypothesis",
                    label: str | None = "label", id_col: str | None = None,
                    label_names: Sequence[str] | None = None, require_label: bool = True,
                    allow_unknown_labels: bool = False) -> pd.DataFrame:
    """One file (or one split folder) as a canonical DataFrame."""
    path = Path(path)
    if not path.exists():
        raise NLIFileNotFound(f"{path}: no such file")
    if path.is_dir():
        splits = load_nli(path, premise=premise, hypothesis=hypothesis, label=label, id_col=id_col,
                          label_names=label_names, require_label=require_label,
                          allow_unknown_labels=allow_unknown_labels)
        if len(splits) != 1:
            raise NLIDataError(f"{path}: holds several splits ({', '.join(splits)}); name one file or split folder")
        return next(iter(splits.values()))
    df = read_table(path)
    if label_names is None and label and _data_suffix(path) == "parquet":
        label_names = _hf_label_names_from_parquet(path, label)
    return normalize(df, str(path), premise=premise, hypothesis=hypothesis, label=label, id_col=id_col,
                     label_names=label_names, require_label=require_label, allow_unknown_labels=allow_unknown_labels)


def load_nli(path, *, premise: str = "premise", hypothesis: str = "hypothesis", label: str | None = "label",
             id_col: str | None = None, label_names: Sequence[str] | None = None,
             require_label: bool = True, allow_unknown_labels: bool = False) -> dict[str, pd.DataFrame]:
    """Split name -> canonical DataFrame for a file, several files, or a dataset folder.

    Columns: ``id`` (str), ``premise``, ``hypothesis``, ``label`` (str names, None where
    the data has no gold label), then the input's other columns.
    """
    mapping: dict[str, Any] = dict(premise=premise, hypothesis=hypothesis, label=label, id_col=id_col,
                                   label_names=label_names, require_label=require_label,
                                   allow_unknown_labels=allow_unknown_labels)
    if isinstance(path, (list, tuple)):
        out: dict[str, pd.DataFrame] = {}
        for p in path:
            name = Path(p).name.split(".")[0]
            if name in out:
                raise NLIDataError(f"{p}: two inputs share the split name {name!r}")
            out[name] = load_split_file(p, **mapping)
        return out
    path = Path(path)
    if not path.exists():
        raise NLIFileNotFound(f"{path}: no such file or folder")
    if path.is_file():
        return {"data": load_split_file(path, **mapping)}
    result = {}
    names_from_info = label_names or _hf_label_names_from_info(path, label)
    for split, files in discover(path).items():
        result[split] = _load_split_files(files, mapping, names_from_info)
    order = {name: i for i, name in enumerate(SPLITS)}
    return dict(sorted(result.items(), key=lambda kv: (order.get(kv[0], 3), kv[0])))


def _load_split_files(files: list[Path], mapping: dict, label_names: Sequence[str] | None) -> pd.DataFrame:
    """The files of one discovered split as one canonical frame (ClassLabel names from Parquet metadata)."""
    df, first = _read_files(files)
    names = label_names
    if names is None and mapping.get("label") and _data_suffix(first) == "parquet":
        names = _hf_label_names_from_parquet(first, mapping["label"])
    where = str(first.parent if len(files) > 1 else first)
    return normalize(df, where, **{**mapping, "label_names": names})


def load_one_split(path, split: str | None = None, *, flag: str | None = "--split", premise: str = "premise",
                   hypothesis: str = "hypothesis", label: str | None = "label", id_col: str | None = None,
                   label_names: Sequence[str] | None = None, require_label: bool = True,
                   allow_unknown_labels: bool = False) -> tuple[str, pd.DataFrame]:
    """(split name, frame) of one evaluation input: a data file (split ``data``), a split folder,
    or a dataset folder in any layout :func:`discover` reads (our extractor's splits folder,
    ``test.parquet`` / ``test/*.parquet``, ``data/test-*.parquet``, a ``save_to_disk`` folder).

    A dataset folder gives ``split`` when named, else its ``test`` split, else its only split;
    only that split's files are read. Anything else is one-line :class:`NLIDataError` naming
    the path and what is expected.
    """
    mapping: dict[str, Any] = dict(premise=premise, hypothesis=hypothesis, label=label, id_col=id_col,
                                   label_names=label_names, require_label=require_label,
                                   allow_unknown_labels=allow_unknown_labels)
    path = Path(path)
    if not path.exists():
        raise NLIFileNotFound(f"{path}: no such file or folder")
    if path.is_file():
        return "data", load_split_file(path, **mapping)
    if not path.is_dir():
        raise NLIDataError(f"{path}: not a data file or folder")
    try:
        found = discover(path)
    except (OSError, KeyError, TypeError, json.JSONDecodeError) as exc:  # a broken dataset_dict.json/state.json
        raise NLIDataError(f"{path}: unreadable dataset folder ({type(exc).__name__}: {exc}); expected a data "
                           f"file, a split folder or a dataset folder with a test split") from exc
    how = f"name one with {flag} or give" if flag else "give"
    if split is not None:
        if split not in found:
            raise NLIDataError(f"{path}: no split {split!r} (splits: {', '.join(found)}); {how} a split folder or file")
        name = split
    elif "test" in found:
        name = "test"
    elif len(found) == 1:
        name = next(iter(found))
    else:
        raise NLIDataError(f"{path}: several splits ({', '.join(found)}) and none is 'test'; expected a data file, "
                           f"a split folder or a dataset folder with a test split: {how} a split folder or file")
    files = found[name]
    if not files:
        raise NLIDataError(f"{path}: split {name!r} has no data files")
    return name, _load_split_files(files, mapping, label_names or _hf_label_names_from_info(path, label))


def _hf_label_names_from_info(path: Path, label: str | None) -> list[str] | None:
    """ClassLabel names from a save_to_disk folder's dataset_info.json, if any."""
    if not label:
        return None
    for info in [path / "dataset_info.json", *sorted(path.glob("*/dataset_info.json"))]:
        if info.exists():
            try:
                names = json.loads(info.read_text()).get("features", {}).get(label, {}).get("names")
            except (json.JSONDecodeError, AttributeError):
                continue
            if names:
                return list(names)
    return None


def drop_unlabeled(df: pd.DataFrame, where: str = "") -> tuple[pd.DataFrame, int]:
    """Rows with a gold label, and how many were dropped (logged)."""
    if "label" not in df.columns:
        return df, 0
    keep = df["label"].notna()
    n = int((~keep).sum())
    if n:
        log.warning("%s: dropped %d rows without a gold label", where or df.attrs.get("source", "data"), n)
    out = df[keep].reset_index(drop=True)
    out.attrs = dict(df.attrs)
    return out, n


# ---------------------------------------------------------------------------- CLI glue

def add_column_arguments(parser, from_run: bool = False) -> None:
    """The column and label flags shared by `stats`, `train`, `evaluate`, `predict`, `stress`...

    With ``from_run`` (commands that read a saved run) every default is None, meaning "as the
    run was trained" (:func:`trainer.training.evaluation.run_mapping`), then the canonical names.
    """
    g = parser.add_argument_group("columns and labels")
    run = " as the run was trained, else" if from_run else ""
    g.add_argument("--premise", default=None if from_run else "premise", help=f"premise column (default:{run} premise)")
    g.add_argument("--hypothesis", default=None if from_run else "hypothesis",
                   help=f"hypothesis column (default:{run} hypothesis)")
    g.add_argument("--label", default=None if from_run else "label", help=f"gold label column (default:{run} label)")
    g.add_argument("--id-col", default=None,
                   help=f"example id column (default:{run} pair_id or id if present, else a hash of the pair)")
    g.add_argument("--label-names", default=None,
                   help="comma-separated label names: integer labels map to them by position"
                        + (" (default: as the run was trained)" if from_run else ""))


def column_mapping(args) -> dict:
    """Keyword arguments of load_nli from parsed flags."""
    names = getattr(args, "label_names", None)
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    return dict(premise=args.premise, hypothesis=args.hypothesis, label=args.label,
                id_col=getattr(args, "id_col", None), label_names=names or None)


# ---------------------------------------------------------------------------- integrity and composition

def check_ids(df: pd.DataFrame, where: str, policy: str = "error") -> tuple[pd.DataFrame, int]:
    """Ids must be unique within a split: ``error`` (one line naming the id) or ``drop``
    (keep each id's first row; returns how many rows went)."""
    dup = df["pair_id"].duplicated(keep="first")
    n = int(dup.sum())
    if not n:
        return df, 0
    first = df.loc[dup, "pair_id"].iloc[0]
    # rows as read from the file (normalize records them before any row is dropped)
    rows = (df.attrs.get("id_rows") or {}).get(str(first)) or [int(i) + 1 for i in df.index[df["pair_id"] == first]]
    if policy != "drop":
        raise NLIDataError(f"{where}: id {first!r} occurs more than once with different content (rows {rows[0]} "
                           f"and {rows[1]}; {n} conflicting rows in all; exact repeats are dropped by themselves); "
                           f"ids must be unique: fix the file, name a unique column with --id-col, or pass "
                           f"--duplicate-ids drop to keep each id's first row")
    log.warning("%s: dropped %d rows whose id was already used (first: %r)", where, n, first)
    out = df[~dup].reset_index(drop=True)
    out.attrs = dict(df.attrs)
    return out, n


def parse_label_map(text, flag: str = "--label-map") -> dict[str, str]:
    """``a=b,c=d`` -> {"a": "b", "c": "d"}; many-to-one allowed, one source twice is an error.

    A list (a repeated flag, ``--label-map a=b --label-map c=d``) accumulates into one map.
    """
    if isinstance(text, (list, tuple)):
        merged: dict[str, str] = {}
        for item in text:
            for src, dst in parse_label_map(item, flag).items():
                if src in merged and merged[src] != dst:
                    raise NLIDataError(f"{flag}: {src!r} is mapped twice ({merged[src]!r} and {dst!r})")
                merged[src] = dst
        return merged
    if not text:
        return {}
    out: dict[str, str] = {}
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        if "=" not in item:
            raise NLIDataError(f"{flag} {text!r}: {item!r} is not SOURCE=TARGET (e.g. contradiction=contrasting)")
        src, dst = (x.strip() for x in item.split("=", 1))
        if not src or not dst:
            raise NLIDataError(f"{flag} {text!r}: {item!r} has an empty label name")
        if src in out and out[src] != dst:
            raise NLIDataError(f"{flag} {text!r}: {src!r} is mapped twice ({out[src]!r} and {dst!r})")
        out[src] = dst
    return out


SPEC_KEYS = ("premise", "hypothesis", "label", "id_col", "label_names", "label_map")


def parse_file_spec(spec) -> tuple[Path, dict]:
    """``FILE`` or ``FILE::premise=sentence1,hypothesis=sentence2,label=gold,label_map=a:b;c:d``.

    Returns the path and the per-file overrides of the column mapping (``label_names``
    separated by ``;``; ``label_map`` pairs ``source:target`` separated by ``;``).
    """
    text = str(spec)
    if "::" not in text:
        return Path(text), {}
    path, opts = text.split("::", 1)
    out: dict = {}
    for item in filter(None, (x.strip() for x in opts.split(","))):
        if "=" not in item:
            raise NLIDataError(f"{text}: {item!r} is not KEY=VALUE (keys: {', '.join(SPEC_KEYS)})")
        key, value = (x.strip() for x in item.split("=", 1))
        key = key.replace("-", "_")
        if key not in SPEC_KEYS:
            raise NLIDataError(f"{text}: unknown key {key!r} (keys: {', '.join(SPEC_KEYS)})")
        if key == "label_names":
            out[key] = [v for v in value.split(";") if v]
        elif key == "label_map":
            out[key] = parse_label_map(value.replace(";", ",").replace(":", "="), f"{path}::label_map")
        else:
            out[key] = value
    return Path(path), out


def apply_label_map(df: pd.DataFrame, label_map: dict[str, str]) -> pd.DataFrame:
    """Gold labels renamed through ``label_map`` (labels not in it stay); original kept in ``orig_label``."""
    if not label_map or "label" not in df.columns:
        return df
    out = df.copy()
    if "orig_label" not in out.columns:
        out["orig_label"] = out["label"]
    out["label"] = out["label"].map(lambda v: label_map.get(v, v) if v is not None else None).astype(object)
    out.attrs = dict(df.attrs)
    return out


def merge_frames(frames: list[tuple[str, pd.DataFrame]]) -> pd.DataFrame:
    """Several training files as one frame: ids become ``<name>:<id>`` and ``train_file`` names the file."""
    if len(frames) == 1:
        return frames[0][1]
    parts = []
    for name, df in frames:
        part = df.copy()
        part["pair_id"] = name + ":" + part["pair_id"].astype(str)
        part["train_file"] = name
        parts.append(part)
    out = pd.concat(parts, ignore_index=True)
    out.attrs = {"source": " + ".join(n for n, _ in frames),
                 "dropped": {n: d.attrs.get("dropped", {}) for n, d in frames if d.attrs.get("dropped")}}
    return out


def stratified_subsample(df: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """``n`` rows with the label shares of ``df`` (largest remainder), chosen per label by a
    stable hash of ``id`` and ``seed``: the same rows on every machine, independent of row order."""
    if n >= len(df):
        return df
    counts = df["label"].value_counts().sort_index()
    exact = counts / counts.sum() * n
    take = exact.astype(int)
    rest = n - int(take.sum())
    # largest remainders first; ties by label name
    order = sorted(counts.index, key=lambda lab: (-(exact[lab] - take[lab]), str(lab)))
    for lab in order[:rest]:
        take[lab] += 1
    keep = []
    for lab, k in take.items():
        rows = df.index[df["label"] == lab]
        ranked = sorted(rows, key=lambda i: stable_hex(str(df.at[i, "pair_id"]), "train-size", str(seed)))
        keep.extend(ranked[: int(k)])
    out = df.loc[sorted(keep)].reset_index(drop=True)
    out.attrs = dict(df.attrs)
    return out
