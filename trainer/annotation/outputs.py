"""What `annotate import` writes: agreement.json, report.md, confusion_matrix.png, the
validated split (loadable with ``datasets.load_dataset``) and the dataset card section."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

POLICIES = {
    "majority": "items without a majority are dropped; the gold label is the majority (RoNLI §3)",
    "agree": "items are kept where the majority equals the automatic label (ESNLIR §3.6)",
}


def fmt(x, digits: int = 3) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def md_table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- plot


def plot_confusion(cm: dict, path: Path, title: str) -> Path | None:
    """Rows: human majority; columns: automatic label; counts with row shares as colour."""
    counts = cm.get("counts") or []
    if not counts:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from sklearn.metrics import ConfusionMatrixDisplay

    labels = cm["labels"]
    arr = np.array(counts)
    fig, ax = plt.subplots(figsize=(1.6 + 1.35 * len(labels), 1.2 + 1.2 * len(labels)))
    disp = ConfusionMatrixDisplay(arr, display_labels=labels)
    disp.plot(ax=ax, cmap="Blues", colorbar=False, values_format="d")
    ax.set_ylabel("human majority")
    ax.set_xlabel("automatic label (linking phrase / neutral sampling)")
    ax.set_title(title, fontsize=10)
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- validated split


def validated_frames(data: pd.DataFrame, items: pd.DataFrame, policy: str) -> dict[str, pd.DataFrame]:
    """split -> the kept rows: the data's columns, ``label`` = gold, ``auto_label``, the votes."""
    kept = items[items["kept"]]
    rows = data.set_index("pair_id").loc[list(kept.index)]
    rows.index.name = "pair_id"
    out = rows.reset_index()
    out["auto_label"] = kept["auto_label"].to_numpy()
    out["label"] = kept["majority"].to_numpy()
    out["human_votes"] = kept["votes"].to_numpy()
    out["human_agreement"] = (kept["top_votes"] / kept["n_votes"]).to_numpy()
    front = ["pair_id", "premise", "hypothesis", "label", "auto_label", "human_votes", "human_agreement"]
    out = out[front + [c for c in out.columns if c not in front and c != "split"] + ["split"]]
    frames = {}
    for split, g in out.groupby("split", sort=False):
        name = "test" if split == "data" else str(split)  # a single file: call the set "test"
        frames[name] = g.drop(columns=["split"]).reset_index(drop=True)
    return frames


def write_validated(folder: Path, frames: dict[str, pd.DataFrame], card_section: str, lang: str) -> list[str]:
    """One Parquet file per split under ``folder/<split>/`` (the layout `datasets` reads) and a README.md.

    The card has no ``configs:`` block on purpose: with one, `datasets` (4.x) keys its cache
    on the relative file patterns only, so a second validated folder (another round) would be
    answered from the first one's cache. Split folders are found without it.
    """
    folder.mkdir(parents=True)
    written = []
    for split, df in frames.items():
        (folder / split).mkdir()
        path = folder / split / f"{split}-00000-of-00001.parquet"
        pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
        written.append(path.relative_to(folder).as_posix())
    header = (f"---\nlanguage:\n- {lang}\ntask_categories:\n- text-classification\n"
              "task_ids:\n- natural-language-inference\n---\n")
    splits = ", ".join(f"`{s}` ({len(df)} pairs)" for s, df in frames.items()) or "none (no pair was kept)"
    body = ("# Human-validated NLI pairs\n\n"
            "Written by `python -m trainer annotate import` (docs/annotation.md). Splits: " + splits + ". "
            "`label` is the human gold label; `auto_label` the distant-supervision label; `human_votes` the "
            "annotators' votes; `human_agreement` the share of votes for the gold label.\n\n" + card_section)
    (folder / "README.md").write_text(header + "\n" + body, encoding="utf-8")
    return written


# --------------------------------------------------------------------------- card section and report


def card_section(summary: dict) -> str:
    """The "Human validation" section of the dataset card (markdown)."""
    c, a = summary["counts"], summary["auto_vs_majority"]
    fl, ka = summary["fleiss"], summary["krippendorff"]
    lines = [
        "## Human validation", "",
        f"{c['items_in_batch']} pairs ({', '.join(summary['splits'])}) were relabelled by "
        f"{len(summary['annotators'])} annotators ({', '.join(summary['annotators'])}) in "
        f"{len(summary['rounds'])} round(s), without seeing the automatic label, the linking phrase or "
        "the pair's source.",
        "",
        f"- Fleiss' κ among annotators: {fmt(fl['kappa'])} ({fl['items']} pairs with "
        f"{fl['raters_per_item']} labels each, round {summary['fleiss_round']}); Krippendorff's α (nominal, "
        f"all rounds): {fmt(ka['alpha'])}.",
        f"- Pairs with a majority label: {c['with_majority']} of {c['items_labelled']} labelled "
        f"({pct(c['with_majority'] / c['items_labelled'] if c['items_labelled'] else None)}); "
        f"without: {c['without_majority']}; too few votes: {c['too_few_votes']}; nobody labelled: {c['unlabelled']}.",
        f"- Automatic vs majority label: Cohen's κ {fmt(a['cohen_kappa'])}, micro F1 {fmt(a['micro_f1'])}, "
        f"macro F1 {fmt(a['macro_f1'])} over {a['items']} pairs.",
        f"- Validated set (policy `{summary['policy']}`: {POLICIES[summary['policy']]}): "
        f"{c['kept']} pairs kept, {c['dropped']} dropped"
        + (" (" + ", ".join(f"{k}: {v}" for k, v in summary["kept_by_split"].items()) + ")."
           if summary.get("kept_by_split") else "."),
        "",
    ]
    return "\n".join(lines)


def report(summary: dict) -> str:
    """report.md: every figure of agreement.json, as tables."""
    c, a = summary["counts"], summary["auto_vs_majority"]
    labels = summary["labels"]
    out = ["# Human validation report", "",
           f"Data: `{summary['data']}` (splits: {', '.join(summary['splits'])}); "
           f"annotation files: {len(summary['files'])}; policy: `{summary['policy']}`; "
           f"majority: more than half of an item's votes, at least {summary['min_votes']} votes.", ""]
    out += ["## Counts", "", md_table(["what", "count"], [[k.replace("_", " "), v] for k, v in c.items()]), ""]
    if summary["bad_input"]:
        out += ["Bad input counted (not errors):", ""]
        out += [f"- {line}" for line in summary["bad_input"]] + [""]
    fl, ka = summary["fleiss"], summary["krippendorff"]
    out += ["## Agreement among annotators", "",
            f"- Fleiss' κ: **{fmt(fl['kappa'])}** on {fl['items']} items with {fl['raters_per_item']} labels each "
            f"(round {summary['fleiss_round']}; {fl['items_left_out']} items with another number of labels left out)",
            f"- Krippendorff's α (nominal, all rounds, missing labels allowed): **{fmt(ka['alpha'])}** "
            f"({ka['annotators']} annotators, {ka['pairable_items']} items with two or more labels)", "",
            md_table(["annotator A", "annotator B", "items", "observed agreement", "Cohen κ"],
                     [[p["a"], p["b"], p["items"], p["observed_agreement"], p["kappa"]]
                      for p in summary["cohen_pairwise"]]), ""]
    out += ["## Rounds", "", md_table(
        ["round", "items", "annotations", "annotators", "cumulative with majority", "cumulative share"],
        [[r["round"], r["items"], r["annotations"], ", ".join(r["annotators"]), r["cumulative_with_majority"],
          pct(r["cumulative_share"])] for r in summary["rounds"]]), ""]
    ct = summary["consensus"]
    out += ["## Consensus (IndoNLI Table 3 layout; the automatic label in the author's place)", "",
            md_table(["figure", "share"], [[k.replace("_", " "), pct(v) if k != "items_labelled" else v]
                                           for k, v in ct.items()]), ""]
    out += ["## Automatic label vs human majority", "",
            f"Cohen's κ **{fmt(a['cohen_kappa'])}**, accuracy {fmt(a['accuracy'])}, micro F1 {fmt(a['micro_f1'])}, "
            f"macro F1 {fmt(a['macro_f1'])} over {a['items']} items with a majority (automatic labels as "
            "predictions, the majority as truth).", "",
            md_table(["label", "precision", "recall", "F1", "human", "automatic"],
                     [[l, v["precision"], v["recall"], v["f1"], v["support_human"], v["automatic"]]
                      for l, v in a["per_class"].items()]), ""]
    cm = a["confusion_matrix"]
    if cm["counts"]:
        out += ["Confusion matrix (rows: human majority; columns: automatic label); "
                "![confusion matrix](confusion_matrix.png)", "",
                md_table(["human \\ automatic", *labels], [[l, *row] for l, row in zip(labels, cm["counts"])]), ""]
    out += ["## Annotators", "", md_table(
        ["annotator", "labels", "rounds", "= majority", "= automatic", "κ vs automatic", *labels],
        [[r["annotator"], r["labels"], ",".join(map(str, r["rounds"])), r["equals_majority"], r["equals_automatic"],
          r["cohen_kappa_vs_automatic"], *[r["distribution"][l] for l in labels]]
         for r in summary["annotators_table"]]),
        ""]
    for key, title in (("by_cartography_group", "Per cartography group (RoNLI Table 12)"),
                       ("by_genre", "Per genre (ESNLIR Table 11)"), ("by_split", "Per split")):
        rows = summary.get(key)
        if rows:
            out += [f"## {title}", ""]
            if key == "by_cartography_group":
                out += [f"Cartography: `{summary['cartography']['source']}`; {summary['cartography']['mapped']} of "
                        f"{c['items_in_batch']} items mapped. Fleiss κ on first-round labels.", ""]
            out += [md_table(["group", "items", "Fleiss κ", "Krippendorff α", "with majority", "majority = automatic",
                              "κ automatic vs majority"],
                             [[r["group"], r["items"], r["fleiss_kappa"], r["krippendorff_alpha"], r["with_majority"],
                               r["majority_equals_automatic"], r["cohen_kappa_auto_vs_majority"]] for r in rows]), ""]
    grp = summary.get("by_annotator_group")
    if grp:
        out += ["## Per annotator group (IndoNLI lay vs expert)", "",
                md_table(["group", "annotators", "labels", "items", "Fleiss κ", "Krippendorff α", "with majority",
                          "majority = automatic", "κ automatic vs majority"],
                         [[r["group"], ", ".join(r["annotators"]), r["labels"], r["items_labelled"], r["fleiss_kappa"],
                           r["krippendorff_alpha"], pct(r["with_majority"]), pct(r["majority_equals_automatic"]),
                           r["cohen_kappa_auto_vs_majority"]] for r in grp["groups"]]), ""]
        if grp["between_majorities"]:
            out += ["Between the groups' majority labels:", "",
                    md_table(["group A", "group B", "items", "observed agreement", "Cohen κ"],
                             [[r["a"], r["b"], r["items"], r["observed_agreement"], r["cohen_kappa"]]
                              for r in grp["between_majorities"]]), ""]
    out += ["## Validated split", "",
            f"Policy `{summary['policy']}`: {POLICIES[summary['policy']]}. Kept {c['kept']}, dropped {c['dropped']}. "
            "`validated/` loads with `datasets.load_dataset(\"<out>/validated\")`.", ""]
    out += ["## Files", ""] + [f"- `{f['file']}` ({f['kind']}, {f['records']} records, {f['labels']} labels)"
                                for f in summary["files"]] + [""]
    return "\n".join(out)


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
