"""An independent pandas version of stage 3's decisions (no Spark, no bucketing): whole
documents per corpus (`assign_documents`), pairs spanning two splits dropped, one copy of
each sentence pair (test, else validation, else train; then the lowest hash), quotas per
(split, corpus, label) filled with the lowest hashes, over one pyarrow table of pairs. The
stage's tests compare its splits and drop counts with this reference.
"""
from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from extractor import statistics as st
from extractor.core.hashing import stable_hashes
from extractor.splits import assign as sp
from extractor.splits import pair_tables as bt


def assign_documents(docs: pd.DataFrame, ratios: Sequence[float], seed: int) -> pd.DataFrame:
    """Assign whole documents of ONE corpus to splits, stratified by label: the pandas
    definition of what the stage computes with Arrow kernels (`decisions.assign_corpus`).

    ``docs`` has columns ``corpus, doc_id, test_only`` and one count column per label
    (``n_<label>``; a plain ``n_pairs`` column is one label). Documents are visited in
    the order of the hash of (doc_id, seed); each goes to the split with the largest
    remaining deficit for the labels it holds: sum over labels of
    count x (target - assigned) / label total, targets being ratio x label total. This is
    the greedy of scikit-learn's StratifiedGroupKFold in a deterministic order: the ratios
    hold in pairs, every split gets every label as far as the documents allow, even for
    small corpora. ``test_only`` corpora go to test whole. Returns ``corpus, doc_id, split``.
    """
    if docs.empty:
        return pd.DataFrame({"corpus": pd.Series(dtype=str), "doc_id": pd.Series(dtype=str),
                             "split": pd.Series(dtype=str)})
    count_cols = sorted(c for c in docs.columns if c.startswith("n_"))
    docs = docs.copy()
    docs["_h"] = stable_hashes([str(d) for d in docs["doc_id"]], seed=seed)
    docs = docs.sort_values(["_h", "doc_id"], kind="mergesort").reset_index(drop=True)
    out = sp.greedy_splits(docs[count_cols].fillna(0).to_numpy(dtype="float64"),
                           docs["test_only"].astype(bool).tolist(), ratios)
    return pd.DataFrame({"corpus": docs["corpus"].astype(str), "doc_id": docs["doc_id"].astype(str),
                         "split": pd.Series(out, dtype=object).astype(str)})



def run_reference(pairs: pa.Table, seed: int = 0, ratios=(0.8, 0.1, 0.1), balance: str = "downsample",
              max_eval_per_corpus: int | None = sp.DEFAULT_MAX_EVAL_PER_CORPUS, test_only: set | None = None):
    """-> ({split: pyarrow Table sorted by pair_id}, stats)."""
    df = bt.summaries(pairs, seed, frozenset(test_only or ())).to_pandas()
    drops: dict = {k: int(v) for k, v in df["_reject"].value_counts().items()}
    df = df[df["_reject"].isna()]
    labels = sorted(df["label"].unique())
    own = df[["corpus", "doc_id", "label", "_test_only"]].assign(w=1)
    lent = pd.concat([df[["corpus", "_pdoc", "label", "_test_only"]].rename(columns={"_pdoc": "doc_id"}),
                      df[["corpus", "_hdoc", "label", "_test_only"]].rename(columns={"_hdoc": "doc_id"})]).assign(w=0)
    weights = pd.concat([own, lent])
    docs = weights.pivot_table(index=["corpus", "doc_id"], columns="label", values="w", aggfunc="sum", fill_value=0)
    docs.columns = [f"n_{labels.index(c):03d}" for c in docs.columns]
    docs["test_only"] = weights.groupby(["corpus", "doc_id"])["_test_only"].max()
    docs = docs.reset_index()
    doc_split = pd.concat([assign_documents(g, ratios, seed) for _, g in docs.groupby("corpus", sort=True)])
    where = dict(zip(doc_split["doc_id"], doc_split["split"]))
    df = df.assign(_split=df["doc_id"].map(where))
    cross = (df["_pdoc"].map(where) != df["_split"]) | (df["_hdoc"].map(where) != df["_split"])
    drops["pair_spans_documents_of_two_splits"] = int(cross.sum())
    df = df[~cross].copy()
    df["_prio"] = df["_split"].map(sp.KEEP_PRIORITY)
    df = df.sort_values(["_skey", "_prio", "_h", "pair_id"], kind="mergesort")
    first = ~df["_skey"].duplicated()
    best = df.groupby("_skey")["_prio"].transform("min")
    gone = df[~first]
    drops["identical_pair_in_other_split"] = int((gone["_prio"] > best[~first]).sum())
    drops["identical_pair_in_same_split"] = int((gone["_prio"] == best[~first]).sum())
    df = df[first]
    counts = df.groupby(["_split", "corpus", "label"]).size().to_dict()
    quotas = sp.compute_quotas(counts, sp.parse_balance(balance), sorted({k[2] for k in counts}), max_eval_per_corpus)
    drops["balance"] = sp.quota_drops(counts, quotas)
    df = df.sort_values(["_h", "pair_id"], kind="mergesort")
    rank = df.groupby(["_split", "corpus", "label"]).cumcount()
    quota = pd.Series([quotas.get(k, 0) for k in zip(df["_split"], df["corpus"], df["label"])], index=df.index)
    df = df[rank < quota]
    kept = bt.kept_rows(pairs, df["_row"].tolist(), df["_split"].tolist())
    split_col = kept.column("_split").to_pylist()
    splits = {}
    for name in sp.SPLITS:
        part = kept.filter(pa.array([s == name for s in split_col])).drop_columns(["_split"])
        if part.num_rows:
            keys = [(k, "ascending") for k in bt.SORT_KEYS if k in part.column_names]
            splits[name] = part.take(pc.sort_indices(part, sort_keys=keys))
    dataset = st.dataset_statistics({k: v.to_pandas() for k, v in splits.items()})
    return splits, {"dropped": drops, "splits": {k: v.num_rows for k, v in splits.items()}, "statistics": dataset}
