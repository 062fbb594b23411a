"""The statistics of whole splits and datasets, from the layers below."""
from __future__ import annotations

import pandas as pd

from extractor.statistics.aggregate import missing_labels, aggregate_pandas
from extractor.statistics.keys import duplicate_counts, leakage_counts
from extractor.statistics.kernels import batch_statistics
from extractor.statistics.pmi import PMI_MIN_COUNT, top_pmi_from_counts


def split_statistics(df: pd.DataFrame, top_k: int = 10, min_count: int = PMI_MIN_COUNT) -> dict:
    """Statistics of one split given as a DataFrame with premise, hypothesis, label."""
    labels = df["label"].reset_index(drop=True) if "label" in df.columns else None
    stats, counts = batch_statistics(list(df["premise"]), list(df["hypothesis"]),
                                     list(labels) if labels is not None else [None] * len(df))
    unlabeled = int(missing_labels(list(labels)).sum()) if labels is not None else 0
    pmi = {side: top_pmi_from_counts(counts[side], k=top_k, min_count=min_count) for side in ("hypothesis", "premise")}
    return assemble_split_statistics(aggregate_pandas(stats, labels), pmi if labels is not None else None,
                                     unlabeled, duplicate_counts(list(df["premise"]), list(df["hypothesis"])))


def assemble_split_statistics(result: dict, pmi: dict | None, unlabeled: int, duplicates: dict) -> dict:
    """The statistics block of one split from its parts: ``result`` the aggregates
    (``{"labels": ..., "all": ...}`` of `aggregate_pandas` or `blocks_from_rows`), the top
    PMI words per side (``{"hypothesis": {label: [...]}, "premise": {...}}`` of
    `top_pmi_from_counts`; None when the split has no label column), the rows without a
    label and the `duplicate_counts`. The Spark stage gathers these parts from many tasks;
    `split_statistics` computes them in one go."""
    if pmi is not None:
        result["unlabeled"] = int(unlabeled)
        for label, words_ in pmi["hypothesis"].items():
            if label in result["labels"]:
                result["labels"][label]["top_pmi_words"] = words_
        # premise side: a premise that announces its label is an artefact too
        result["premise_top_pmi_words"] = {label: words_ for label, words_ in pmi["premise"].items()
                                           if label in result["labels"]}
    result["duplicates"] = duplicates
    return result


def dataset_statistics(splits: dict[str, pd.DataFrame], top_k: int = 10,
                       min_count: int = PMI_MIN_COUNT) -> dict:
    """``{"splits": {SPLIT: {...}}, "leakage": {"A|B": {...}}}`` for a dict of splits."""
    out: dict = {"splits": {name: split_statistics(df, top_k, min_count) for name, df in splits.items()}}
    if len(splits) > 1:
        out["leakage"] = leakage_counts({n: (list(df["premise"]), list(df["hypothesis"]))
                                         for n, df in splits.items()})
    return out
