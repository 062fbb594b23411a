"""Markdown tables of a `dataset_statistics` result (`trainer stats`, the dataset card)."""
from __future__ import annotations


def _fmt(v, digits: int = 2) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _label_order(result: dict) -> list[str]:
    seen: list[str] = []
    for split in result["splits"].values():
        for label in split["labels"]:
            if label not in seen:
                seen.append(label)
    return seen


def class_distribution_table(result: dict) -> str:
    """Rows: labels + overall; columns: count (share) per split."""
    splits = list(result["splits"])
    lines = ["| label | " + " | ".join(splits) + " |", "|---|" + "---:|" * len(splits)]
    for label in _label_order(result) + ["all"]:
        cells = []
        for s in splits:
            block = result["splits"][s]
            total = block["all"]["count"]
            n = (block["all"] if label == "all" else block["labels"].get(label, {"count": 0}))["count"]
            cells.append(f"{n:,}" + (f" ({n / total:.1%})" if total and label != "all" else ""))
        lines.append(f"| {label if label != 'all' else '**overall**'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _mean_std(b: dict, key: str, digits: int) -> str:
    """'mean (std)', IndoNLI Table 4 style; just the mean where the std is undefined."""
    mean, std = b.get(f"{key}_mean"), b.get(f"{key}_std")
    return _fmt(mean, digits) + (f" ({_fmt(std, digits)})" if mean is not None and std is not None else "")


# (column group, statistic key, digits) of the RoNLI Table 2 layout.
RONLI_GROUPS = (("#pairs", "count", 0), ("premise words", "premise_words", 1),
                ("hypothesis words", "hypothesis_words", 1), ("overlap (RoNLI)", "overlap_jaccard_raw", 2),
                ("overlap (normalised)", "overlap_jaccard", 2))

RONLI_NOTE = ("Mean (sample standard deviation in brackets, as IndoNLI Table 4). Words are whitespace "
              "tokens of the raw text. *overlap (RoNLI)* is RoNLI's own measure: the Jaccard index of the "
              "two sentences' raw whitespace-token sets, case and punctuation kept, so its numbers compare "
              "with RoNLI Table 2. *overlap (normalised)* is the Jaccard index of case-folded tokens with "
              "edge punctuation stripped (IndoNLI style; higher on the same data).")


def ronli_table(result: dict) -> str:
    """The layout of RoNLI Table 2: per label, count, mean premise and hypothesis words and
    mean word overlap (RoNLI's raw-token Jaccard), one column per split for each, with
    standard deviations in brackets, plus the normalised overlap as its own column group."""
    splits = list(result["splits"])
    groups = RONLI_GROUPS
    head = "| label | " + " | ".join(f"{g} {s}" for g, _, _ in groups for s in splits) + " |"
    lines = [head, "|---|" + "---:|" * (len(groups) * len(splits))]
    for label in _label_order(result) + ["all"]:
        cells = []
        for _, key, digits in groups:
            for s in splits:
                block = result["splits"][s]
                b = block["all"] if label == "all" else block["labels"].get(label)
                if b is None:
                    cells.append("-")
                elif key == "count":
                    cells.append(_fmt(b["count"]))
                elif f"{key}_mean" not in b:  # statistics written before this column existed
                    cells.append("-")
                else:
                    cells.append(_mean_std(b, key, digits))
        lines.append(f"| {label if label != 'all' else '**overall**'} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def artefact_table(result: dict) -> str:
    """Per split and label: the bias indicators (overlap, LCS, new tokens, casing leak)."""
    lines = ["| split | label | count | Jaccard mean | Jaccard median | LCS ratio median | "
             "new-token rate median | hypothesis inner-capital share |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for s, block in result["splits"].items():
        for label, b in [*block["labels"].items(), ("**all**", block["all"])]:
            lines.append(f"| {s} | {label} | {b['count']:,} | {_fmt(b['overlap_jaccard_mean'], 3)} | "
                         f"{_fmt(b['overlap_jaccard_median'], 3)} | {_fmt(b['lcs_ratio_median'], 3)} | "
                         f"{_fmt(b['new_token_rate_median'], 3)} | {_fmt(b['hypothesis_inner_capital_share'], 3)} |")
    return "\n".join(lines)


def pmi_markdown(result: dict, k: int = 5, side: str = "hypothesis") -> str:
    """Top PMI words per split and label, of hypotheses (``side="hypothesis"``, the label
    blocks' ``top_pmi_words``) or of premises (``"premise"``, the split's
    ``premise_top_pmi_words``)."""
    plural = {"hypothesis": "hypotheses", "premise": "premises"}.get(side, side + "s")
    lines = [f"| split | label | top {side} words by PMI (PMI, count/{plural} with the word) |", "|---|---|---|"]
    for s, block in result["splits"].items():
        for label, b in block["labels"].items():
            if side == "premise":
                tops = (block.get("premise_top_pmi_words") or {}).get(label) or []
            else:
                tops = b.get("top_pmi_words") or []
            cell = ", ".join(f"{t['word']} ({t['pmi']:.2f}, {t['count']}/{t['word_count']})" for t in tops[:k])
            lines.append(f"| {s} | {label} | {cell or '-'} |")
    return "\n".join(lines)


def leakage_markdown(result: dict) -> str:
    leak = result.get("leakage") or {}
    dup_lines = ["| split | duplicate pairs | duplicate sentence pairs (either order) |", "|---|---:|---:|"]
    for s, block in result["splits"].items():
        d = block.get("duplicates", {})
        dup_lines.append(f"| {s} | {d.get('pairs', 0):,} | {d.get('sentence_pairs', 0):,} |")
    text = "\n".join(dup_lines)
    if leak:
        lines = ["| splits | shared pairs | shared sentence pairs (either order) | shared hypotheses |",
                 "|---|---:|---:|---:|"]
        for key, v in leak.items():
            lines.append(f"| {key.replace('|', ' / ')} | {v['pairs']:,} | {v['sentence_pairs']:,} "
                         f"| {v['hypotheses']:,} |")
        text += "\n\nCross-split leakage:\n\n" + "\n".join(lines)
    return text


def markdown_report(result: dict, title: str = "NLI dataset statistics", source: str | None = None) -> str:
    parts = [f"# {title}", ""]
    if source:
        parts += [f"Data: `{source}`", ""]
    parts += ["## Class distribution", "", class_distribution_table(result), "",
              "## Lengths and overlap (RoNLI Table 2 layout)", "",
              RONLI_NOTE, "",
              ronli_table(result), "",
              "## Annotation-artefact indicators", "", artefact_table(result), "",
              "## Top PMI words of hypotheses per label (IndoNLI Table 9)", "", pmi_markdown(result), "",
              "## Top PMI words of premises per label", "", pmi_markdown(result, side="premise"), "",
              "## Duplicates and leakage", "", leakage_markdown(result), ""]
    unl = {s: b.get("unlabeled", 0) for s, b in result["splits"].items() if b.get("unlabeled")}
    if unl:
        parts += ["Rows without a gold label (counted in *all* only): "
                  + ", ".join(f"{s}: {n:,}" for s, n in unl.items()), ""]
    return "\n".join(parts)
