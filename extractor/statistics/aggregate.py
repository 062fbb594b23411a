"""Aggregation: which row column is reduced how (:data:`AGGREGATES`), reductions of
numpy columns (exact medians) and of pandas frames, and blocks from aggregated rows."""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc


# output name -> (row column, reduction). "share" is the mean of a boolean.
AGGREGATES: dict[str, tuple[str, str]] = {
    "premise_words_mean": ("premise_words", "mean"),
    "premise_words_std": ("premise_words", "std"),
    "hypothesis_words_mean": ("hypothesis_words", "mean"),
    "hypothesis_words_std": ("hypothesis_words", "std"),
    "overlap_jaccard_raw_mean": ("overlap_jaccard_raw", "mean"),
    "overlap_jaccard_raw_std": ("overlap_jaccard_raw", "std"),
    "overlap_jaccard_mean": ("overlap_jaccard", "mean"),
    "overlap_jaccard_std": ("overlap_jaccard", "std"),
    "overlap_jaccard_median": ("overlap_jaccard", "median"),
    "lcs_ratio_median": ("lcs_ratio", "median"),
    "new_token_rate_median": ("new_token_rate", "median"),
    "hypothesis_inner_capital_share": ("hypothesis_inner_capital", "share"),
}


# Means are rounded so that the summation order (Spark partitions) cannot change the last
# bits: stats.json is byte-identical across runs, like the tables.
DIGITS = 10


def _reduce(values: np.ndarray, how: str) -> float | None:
    if len(values) == 0:
        return None
    values = np.asarray(values, dtype="float64")
    if how == "median":
        return round(float(np.median(values)), DIGITS)
    if how == "std":
        return sample_std(values)
    return round(float(values.mean()), DIGITS)  # numpy's pairwise sum, as pandas' mean


def sample_std(values) -> float | None:
    """Sample standard deviation (n - 1), rounded like the means; None below two values."""
    arr = np.asarray(values, dtype="float64")
    if arr.size < 2:
        return None
    return round(float(np.std(arr, ddof=1)), DIGITS)


def missing_labels(labels) -> np.ndarray:
    """True where a label is missing (None or NaN)."""
    return np.fromiter((v is None or (isinstance(v, float) and v != v) for v in labels), bool, len(labels))


def aggregate_columns(columns: dict, labels=None) -> dict:
    """``{"labels": {LABEL: {count, ...}}, "all": {count, ...}}`` for one split.

    ``columns`` holds the :data:`ROW_COLUMNS` of the split as arrays of equal length, in
    the order the sums take them; ``labels`` is aligned with them (rows without a gold
    label count in ``all`` only): Python values, or an Arrow string array whose nulls are
    the missing labels (stage 3's rows: no Python object per row).
    """
    arrays = {c: np.asarray(v) for c, v in columns.items()}
    n = len(next(iter(arrays.values()))) if arrays else 0

    def block(rows) -> dict:
        out: dict[str, float | None] = {"count": int(n if rows is None else len(rows))}
        for name, (col, how) in AGGREGATES.items():
            out[name] = _reduce(arrays[col] if rows is None else arrays[col][rows], how)
        return out

    result = {"labels": {}, "all": block(None)}
    if isinstance(labels, (pa.Array, pa.ChunkedArray)):
        encoded = pc.dictionary_encode(labels.combine_chunks() if isinstance(labels, pa.ChunkedArray) else labels)
        codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False)
        names = [str(v) for v in encoded.dictionary.to_pylist()]
        for code in sorted(range(len(names)), key=names.__getitem__):
            result["labels"][names[code]] = block(np.nonzero(codes == code)[0])
    elif labels is not None:
        labels = np.array(list(labels), dtype=object)
        known = ~missing_labels(labels)
        for label in sorted(set(labels[known].tolist()), key=str):
            result["labels"][str(label)] = block(np.nonzero(known & (labels == label))[0])
    return result


def aggregate_pandas(stats: pd.DataFrame, labels=None) -> dict:
    """`aggregate_columns` of a pandas frame of the :data:`ROW_COLUMNS` (``trainer stats``)."""
    return aggregate_columns({c: stats[c].to_numpy() for c in stats.columns},
                             None if labels is None else list(labels))


def blocks_from_rows(rows: Iterable[dict], label_key: str = "label") -> dict:
    """Turn aggregated rows (one per label, ``label`` None for the whole split) into
    the ``{"labels": ..., "all": ...}`` shape of :func:`aggregate_pandas`."""
    result: dict = {"labels": {}, "all": None}
    for row in rows:
        row = dict(row)
        label = row.pop(label_key, None)
        block: dict[str, float | None] = {"count": int(row.pop("count"))}
        for name in AGGREGATES:
            v = row.get(name)
            block[name] = None if v is None or v != v else round(float(v), DIGITS)  # NaN: none
        if label is None:
            result["all"] = block
        else:
            result["labels"][str(label)] = block
    result["labels"] = dict(sorted(result["labels"].items()))
    return result
