"""Agreement figures, all from libraries: statsmodels (Fleiss κ), scikit-learn (Cohen κ,
precision/recall/F1, confusion matrix), krippendorff (α with missing annotations).

Inputs are the long annotation table (item_id, annotator, label, round) and an items table
(item_id -> automatic label). Undefined values (a κ whose chance agreement is 1, a class
without support) are ``None``, never a made-up number.
"""
from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import pandas as pd


def _num(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else x


# --------------------------------------------------------------------------- votes and majority


def vote_counts(ann: pd.DataFrame, labels: tuple[str, ...], items=None) -> pd.DataFrame:
    """item_id x label vote counts (ints); ``items`` adds rows of zeros for items without votes."""
    counts = pd.crosstab(ann["item_id"], ann["label"]) if len(ann) else pd.DataFrame()
    counts = counts.reindex(columns=list(labels), fill_value=0)
    if items is not None:
        counts = counts.reindex(pd.Index(list(items), name="item_id"), fill_value=0)
    return counts.fillna(0).astype("int64")


def majority(counts: pd.DataFrame, min_votes: int = 2) -> pd.DataFrame:
    """Per item: n_votes, majority (a label chosen by more than half of the votes) and status.

    status: ``majority``; ``no_majority`` (e.g. 1-1-1, or 2-2 after a fourth vote);
    ``too_few_votes`` (fewer than ``min_votes``); ``unlabelled`` (nobody labelled it).
    """
    n = counts.sum(axis=1)
    top = counts.max(axis=1)
    arg = counts.idxmax(axis=1) if counts.shape[1] else pd.Series(None, index=counts.index)
    has = (top * 2 > n) & (n >= min_votes)
    status = np.select([n == 0, n < min_votes, has], ["unlabelled", "too_few_votes", "majority"], "no_majority")
    return pd.DataFrame({"n_votes": n.astype("int64"), "top_votes": top.astype("int64"),
                         "majority": arg.where(has, None).astype(object), "status": status},
                        index=counts.index)


# --------------------------------------------------------------------------- among annotators


def fleiss(ann: pd.DataFrame, labels: tuple[str, ...]) -> dict:
    """Fleiss' κ (statsmodels ``aggregate_raters`` + ``fleiss_kappa``).

    Fleiss' κ needs the same number of ratings per item (the raters may differ from item to
    item, as in Fleiss 1971). It is computed on the items with the most common number of
    ratings (ties: the larger); how many items that is, and how many were left out, is returned.
    """
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    out: dict[str, Any] = {"kappa": None, "items": 0, "raters_per_item": None, "items_left_out": 0}
    if ann.empty:
        return out
    per_item = ann.groupby("item_id")["label"].agg(list)
    sizes = per_item.map(len)
    freq = sizes[sizes >= 2].value_counts()
    if freq.empty:
        out["items_left_out"] = int(len(per_item))
        return out
    m = int(max(freq.index, key=lambda k: (freq[k], k)))
    rows = per_item[sizes == m]
    code = {label: i for i, label in enumerate(labels)}
    data = np.array([[code[x] for x in r] for r in rows], dtype=int)
    table, _ = aggregate_raters(data, n_cat=len(labels))
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kappa = fleiss_kappa(table, method="fleiss")
    out.update(kappa=_num(kappa), items=int(len(rows)), raters_per_item=m,
               items_left_out=int(len(per_item) - len(rows)))
    return out


def cohen(a, b, labels: tuple[str, ...]) -> float | None:
    """Cohen's κ (scikit-learn), None where undefined (both raters constant and equal)."""
    from sklearn.metrics import cohen_kappa_score

    if len(a) == 0:
        return None
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _num(cohen_kappa_score(list(a), list(b), labels=list(labels)))


def cohen_pairwise(ann: pd.DataFrame, labels: tuple[str, ...]) -> list[dict]:
    """Cohen's κ of every pair of annotators on the items both labelled."""
    wide = ann.pivot(index="item_id", columns="annotator", values="label")
    out = []
    for x, y in itertools.combinations(sorted(wide.columns), 2):
        both = wide[[x, y]].dropna()
        agree = float((both[x] == both[y]).mean()) if len(both) else None
        out.append({"a": x, "b": y, "items": int(len(both)), "observed_agreement": agree,
                    "kappa": cohen(both[x], both[y], labels) if len(both) >= 2 else None})
    return out


def krippendorff_alpha(ann: pd.DataFrame, labels: tuple[str, ...]) -> dict:
    """Krippendorff's α, nominal, over every annotator and item (missing annotations allowed)."""
    import krippendorff

    out: dict[str, Any] = {"alpha": None, "annotators": int(ann["annotator"].nunique()) if len(ann) else 0,
           "items": int(ann["item_id"].nunique()) if len(ann) else 0, "pairable_items": 0}
    if ann.empty:
        return out
    code = {label: float(i) for i, label in enumerate(labels)}
    wide = ann.assign(c=ann["label"].map(code)).pivot(index="annotator", columns="item_id", values="c")
    data = wide.to_numpy(dtype=float)
    pairable = int((np.sum(~np.isnan(data), axis=0) >= 2).sum())
    out["pairable_items"] = pairable
    if pairable == 0 or len(np.unique(data[~np.isnan(data)])) < 2:
        return out  # no pair of values, or one value only: α undefined
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out["alpha"] = _num(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal",
                                               value_domain=[float(i) for i in range(len(labels))]))
    return out


# --------------------------------------------------------------------------- automatic vs human


def auto_vs_majority(auto, gold, labels: tuple[str, ...]) -> dict:
    """The automatic labels as predictions, the human majority as truth (RoNLI Appendix A)."""
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support

    auto, gold = list(auto), list(gold)
    out: dict[str, Any] = {
        "items": len(gold), "cohen_kappa": None, "accuracy": None, "micro_f1": None, "macro_f1": None,
        "per_class": {}, "confusion_matrix": {"labels": list(labels), "rows": "human majority",
                                              "columns": "automatic label", "counts": []}}
    if not gold:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p, r, f, s = precision_recall_fscore_support(gold, auto, labels=list(labels), zero_division=0)
        present = [l for l in labels if l in set(gold) | set(auto)]
        out.update(
            cohen_kappa=cohen(auto, gold, labels),
            accuracy=_num(accuracy_score(gold, auto)),
            micro_f1=_num(f1_score(gold, auto, labels=list(labels), average="micro", zero_division=0)),
            macro_f1=_num(f1_score(gold, auto, labels=present, average="macro", zero_division=0)),
        )
    auto_counts = pd.Series(auto).value_counts()
    for i, label in enumerate(labels):
        out["per_class"][label] = {
            "precision": _num(p[i]) if auto_counts.get(label, 0) else None,
            "recall": _num(r[i]) if s[i] else None,
            "f1": _num(f[i]) if (s[i] or auto_counts.get(label, 0)) else None,
            "support_human": int(s[i]), "automatic": int(auto_counts.get(label, 0)),
        }
    out["confusion_matrix"]["counts"] = confusion_matrix(gold, auto, labels=list(labels)).tolist()
    return out


# --------------------------------------------------------------------------- tables of the papers


def rounds_table(ann: pd.DataFrame, items: list[str], labels, min_votes: int) -> list[dict]:
    """IndoNLI Table 2: per round, pairs labelled, annotations, cumulative share with a majority."""
    out = []
    rounds = sorted(ann["round"].unique()) if len(ann) else []
    for r in rounds:
        upto = ann[ann["round"] <= r]
        st = majority(vote_counts(upto, labels, items), min_votes)
        cur = ann[ann["round"] == r]
        out.append({"round": int(r), "items": int(cur["item_id"].nunique()), "annotations": int(len(cur)),
                    "annotators": sorted(cur["annotator"].unique().tolist()),
                    "cumulative_with_majority": int((st["status"] == "majority").sum()),
                    "cumulative_share": _num((st["status"] == "majority").mean()) if len(st) else None})
    return out


def consensus_table(ann: pd.DataFrame, items: pd.DataFrame) -> dict:
    """IndoNLI Table 3 figures with the automatic label in the author's place.

    ``items``: index item_id, columns auto_label, majority, status.
    """
    labelled = items[items["status"] != "unlabelled"]
    n = len(labelled)
    joined = ann.join(items[["auto_label", "majority"]], on="item_id")
    with_gold = joined[joined["majority"].notna()]
    has_auto = labelled["auto_label"].notna()

    def share(mask_sum, total):
        return _num(mask_sum / total) if total else None

    gold = labelled["majority"].notna()
    return {
        "items_labelled": int(n),
        "with_majority": share(int(gold.sum()), n),
        "individual_equals_majority": share(int((with_gold["label"] == with_gold["majority"]).sum()), len(with_gold)),
        "individual_equals_automatic": share(int((joined["label"] == joined["auto_label"]).sum()),
                                             int(joined["auto_label"].notna().sum())),
        "majority_equals_automatic": share(
            int((gold & has_auto & (labelled["majority"] == labelled["auto_label"])).sum()), n),
        "majority_differs_from_automatic": share(
            int((gold & has_auto & (labelled["majority"] != labelled["auto_label"])).sum()), n),
        "no_majority": share(int((~gold).sum()), n),
    }


def annotator_table(ann: pd.DataFrame, items: pd.DataFrame, labels: tuple[str, ...]) -> list[dict]:
    """Per annotator: labels given, agreement with the majority, Cohen κ with the automatic labels."""
    joined = ann.join(items[["auto_label", "majority"]], on="item_id")
    out = []
    for name, g in joined.groupby("annotator", sort=True):
        wm = g[g["majority"].notna()]
        wa = g[g["auto_label"].notna()]
        out.append({
            "annotator": name, "labels": int(len(g)), "rounds": sorted(int(r) for r in g["round"].unique()),
            "equals_majority": _num((wm["label"] == wm["majority"]).mean()) if len(wm) else None,
            "equals_automatic": _num((wa["label"] == wa["auto_label"]).mean()) if len(wa) else None,
            "cohen_kappa_vs_automatic": cohen(wa["auto_label"], wa["label"], labels) if len(wa) >= 2 else None,
            "distribution": {l: int((g["label"] == l).sum()) for l in labels},
        })
    return out


def group_table(ann: pd.DataFrame, items: pd.DataFrame, group_of: pd.Series, labels: tuple[str, ...],
                first_round_only: bool = True) -> list[dict]:
    """Agreement per group of items (cartography group, genre): RoNLI Table 12, ESNLIR Table 11.

    ``group_of``: item_id -> group name (an item may appear under several groups: pass a
    Series with a repeated index).
    """
    out = []
    base = ann[ann["round"] == ann["round"].min()] if (first_round_only and len(ann)) else ann
    for group, ids in group_of.groupby(group_of, sort=False):
        idx = pd.Index(ids.index.unique())
        sub_items = items.loc[items.index.intersection(idx)]
        sub_ann = base[base["item_id"].isin(idx)]
        gold = sub_items[sub_items["majority"].notna()]
        gold_auto = gold[gold["auto_label"].notna()]
        out.append({
            "group": str(group), "items": int(len(sub_items)),
            "fleiss_kappa": fleiss(sub_ann, labels)["kappa"],
            "krippendorff_alpha": krippendorff_alpha(ann[ann["item_id"].isin(idx)], labels)["alpha"],
            "with_majority": int(len(gold)),
            "majority_equals_automatic": int((gold_auto["majority"] == gold_auto["auto_label"]).sum()),
            "cohen_kappa_auto_vs_majority": cohen(gold_auto["auto_label"], gold_auto["majority"], labels)
            if len(gold_auto) >= 2 else None,
        })
    return out


def annotator_group_table(ann: pd.DataFrame, auto: pd.Series, groups: dict[str, list[str]],
                          labels: tuple[str, ...], min_votes: int) -> dict:
    """Agreement within each group of annotators (IndoNLI Table 3: lay vs expert), and Cohen's κ
    between the groups' majority labels. ``auto``: item_id -> automatic label."""
    rows, majorities = [], {}
    items = list(auto.index)
    for name, members in groups.items():
        sub = ann[ann["annotator"].isin(members)]
        st = majority(vote_counts(sub, labels, items), min_votes).join(auto.rename("auto_label"))
        labelled = st[st["status"] != "unlabelled"]
        gold = labelled[labelled["majority"].notna() & labelled["auto_label"].notna()]
        first = sub[sub["round"] == sub["round"].min()] if len(sub) else sub
        majorities[name] = st["majority"]
        rows.append({
            "group": name, "annotators": list(members), "labels": int(len(sub)),
            "items_labelled": int(len(labelled)),
            "fleiss_kappa": fleiss(first, labels)["kappa"],
            "krippendorff_alpha": krippendorff_alpha(sub, labels)["alpha"],
            "with_majority": _num(labelled["majority"].notna().mean()) if len(labelled) else None,
            "majority_equals_automatic": _num((gold["majority"] == gold["auto_label"]).mean()) if len(gold) else None,
            "cohen_kappa_auto_vs_majority": cohen(gold["auto_label"], gold["majority"], labels)
            if len(gold) >= 2 else None,
        })
    between = []
    for x, y in itertools.combinations(groups, 2):
        both = pd.concat([majorities[x], majorities[y]], axis=1, keys=[x, y]).dropna()
        between.append({"a": x, "b": y, "items": int(len(both)),
                        "observed_agreement": _num((both[x] == both[y]).mean()) if len(both) else None,
                        "cohen_kappa": cohen(both[x], both[y], labels) if len(both) >= 2 else None})
    return {"groups": rows, "between_majorities": between}
