"""One implementation of every NLI statistic, for the Spark job and for `trainer stats`.

Three layers, each written once:

- per-row functions on plain strings (`words`, `overlap_jaccard`, `lcs_ratio`, ...);
  `batch_statistics` applies them to a batch of pairs. The Spark stage calls it per work
  unit (`extractor.splits.batches.unit_statistics`); `trainer stats` on the whole split.
- aggregation: :data:`AGGREGATES` says which row column is reduced how; `aggregate_pandas`
  reduces a pandas frame (exact medians). The Spark stage calls it once per split
  (`extractor.splits.batches.split_aggregates`), so the card and `trainer stats` agree.
- PMI between hypothesis words and labels (IndoNLI Table 9, after Gururangan et al. 2018):
  `pmi` is the formula over counts.

Word definitions (documented in docs/stats.md):
- *length* counts whitespace tokens of the raw text (RoNLI Table 2 "#words");
- *RoNLI overlap* (`overlap_jaccard_raw`, the overlap column of the RoNLI Table 2 layout)
  is the Jaccard index of the two sentences' raw whitespace-token sets, case and
  punctuation kept, as RoNLI's own code computes it ("Thus," != "thus");
- the other *overlap* statistics (`overlap_jaccard`, IndoNLI style, LCS, new tokens)
  compare normalised words: case-folded whitespace tokens with leading/trailing
  characters that are not letters or digits stripped, empty tokens dropped
  ("Thus," == "thus", "(§4.3)" == "4.3");
- standard deviations (IndoNLI Table 4's numbers in brackets) are sample standard
  deviations (n - 1 in the denominator; None below two rows), as pandas' ``std()`` and
  Spark's ``stddev_samp``.
"""
from __future__ import annotations

import contextlib
import gc
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import repeat

import numpy as np
import pandas as pd

_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")


# ---------------------------------------------------------------------------- per row

def words(text: str) -> list[str]:
    """Whitespace tokens of the raw text (the length unit of RoNLI Table 2)."""
    return text.split() if text else []


def word_count(text: str) -> int:
    return len(words(text))


def norm_words(text: str) -> list[str]:
    """Tokens for overlap statistics: case-folded, edge punctuation stripped, empties dropped."""
    return _norm_tokens(text.casefold().split()) if text else []


def _norm_tokens(folded: list[str]) -> list[str]:
    """`norm_words` of already case-folded whitespace tokens. ``[\\W_]`` is exactly "not
    str.isalnum()", so a token with alphanumeric ends is kept as is without the regex."""
    out = []
    for tok in folded:
        if tok[0].isalnum() and tok[-1].isalnum():
            out.append(tok)
        else:
            tok = _EDGE_PUNCT.sub("", tok)
            if tok:
                out.append(tok)
    return out


def overlap_jaccard(premise: str, hypothesis: str) -> float:
    """Jaccard index of the two sentences' normalised word sets (0 when both are empty)."""
    p, h = set(norm_words(premise)), set(norm_words(hypothesis))
    union = p | h
    return len(p & h) / len(union) if union else 0.0


def overlap_jaccard_raw(premise: str, hypothesis: str) -> float:
    """RoNLI's word overlap: Jaccard index of the raw whitespace-token sets, case and
    punctuation kept (0 when both are empty)."""
    p, h = set(words(premise)), set(words(hypothesis))
    union = p | h
    return len(p & h) / len(union) if union else 0.0


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences.

    Bit-parallel (Allison-Dix / Hyyro 2004): one big-integer step per token of ``b``
    instead of a len(a) x len(b) table, so the Spark job can afford it on every pair.
    """
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for tok in b:
        u = v & masks.get(tok, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def lcs_ratio(premise: str, hypothesis: str) -> float:
    """LCS of normalised words over the hypothesis length in normalised words (0 if empty)."""
    h = norm_words(hypothesis)
    return lcs_length(h, norm_words(premise)) / len(h) if h else 0.0


def new_token_rate(premise: str, hypothesis: str) -> float:
    """Share of hypothesis word tokens (normalised) that do not occur in the premise."""
    h = norm_words(hypothesis)
    if not h:
        return 0.0
    p = set(norm_words(premise))
    return sum(1 for w in h if w not in p) / len(h)


def inner_capital(text: str) -> bool:
    """A capital letter after the first character: the casing leak of the RoNLI release."""
    if not text:
        return False
    rest = text[1:]
    if rest.islower():  # every cased character is lower case: no capital (fast path)
        return False
    return any(ch.isupper() for ch in rest)


def fold_text(text: str) -> str:
    """A text as pairs and hypotheses are compared: case-folded, whitespace collapsed."""
    return " ".join(text.casefold().split()) if text else ""


def pair_text_key(premise: str, hypothesis: str, ordered: bool = True) -> str:
    """Comparison key of a pair: case-folded, whitespace collapsed; ``ordered=False`` also
    matches the reversed pair (an identical *sentence pair* in either order)."""
    return folded_pair_key(fold_text(premise), fold_text(hypothesis), ordered)


def folded_pair_key(p: str, h: str, ordered: bool = True) -> str:
    """`pair_text_key` of two texts already folded by `fold_text`."""
    if not ordered and h < p:
        p, h = h, p
    return p + "\x1f" + h


# Row columns produced by row_statistics, in order.
ROW_COLUMNS = ("premise_words", "hypothesis_words", "overlap_jaccard", "lcs_ratio",
               "new_token_rate", "hypothesis_inner_capital", "overlap_jaccard_raw")
# Their types (pandas dtype names).
ROW_DTYPES = {"premise_words": "int64", "hypothesis_words": "int64", "overlap_jaccard": "float64",
              "lcs_ratio": "float64", "new_token_rate": "float64", "hypothesis_inner_capital": "bool",
              "overlap_jaccard_raw": "float64"}


def _row(p: str, h: str, pn: list[str], hn: list[str]) -> tuple:
    """The :data:`ROW_COLUMNS` of one pair, from the raw texts and their `norm_words`."""
    ps, hs = set(pn), set(hn)
    union = ps | hs
    pw, hw = p.split(), h.split()
    pr, hr = set(pw), set(hw)
    raw_union = pr | hr
    return (len(pw), len(hw),
            len(ps & hs) / len(union) if union else 0.0,
            lcs_length(hn, pn) / len(hn) if hn else 0.0,
            sum(1 for w in hn if w not in ps) / len(hn) if hn else 0.0,
            inner_capital(h),
            len(pr & hr) / len(raw_union) if raw_union else 0.0)


def _rows_frame(rows: list) -> pd.DataFrame:
    return pd.DataFrame.from_records(rows, columns=list(ROW_COLUMNS)).astype(ROW_DTYPES)


@contextlib.contextmanager
def _collector_paused():
    """Python's cyclic garbage collector off while a batch's statistics are computed: they
    allocate millions of small objects (token lists, sets, tuples) in which no reference
    cycle can form, so reference counting frees them all, and the collector's passes over
    them cost 18% of `batch_statistics` on 100,000 pairs (3.8 -> 3.1 CPU-s). Restored
    as it was, also on an exception."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def row_statistics(premises: Iterable[str], hypotheses: Iterable[str]) -> pd.DataFrame:
    """The per-row statistics of a batch of pairs (one row per pair, :data:`ROW_COLUMNS`):
    `batch_statistics` without labels (so without word counts)."""
    return batch_statistics(premises, hypotheses, repeat(None))[0]


def batch_statistics(premises: Sequence, hypotheses: Sequence, labels: Sequence) -> tuple[pd.DataFrame, dict]:
    """One pass over a batch of pairs: the per-row statistics (:data:`ROW_COLUMNS`) and the
    word counts PMI is computed from (`word_counts`), each text tokenised once. The counts
    of several batches add up (`add_word_counts`), so a split's PMI can be computed from
    the batches of many tasks."""
    rows = []
    sets: dict[str, dict[str, list]] = {"hypothesis": {}, "premise": {}}
    with _collector_paused():
        for p, h, label in zip(premises, hypotheses, labels):
            p = "" if p is None else str(p)
            h = "" if h is None else str(h)
            pn, hn = norm_words(p), norm_words(h)
            rows.append(_row(p, h, pn, hn))
            if label is None or (isinstance(label, float) and math.isnan(label)):
                continue
            label = str(label)
            sets["hypothesis"].setdefault(label, []).append(set(hn))
            sets["premise"].setdefault(label, []).append(set(pn))
        counts = {side: _count_sets(per) for side, per in sets.items()}
    return _rows_frame(rows), counts


def _count_sets(per_label: dict[str, list[set]]) -> dict:
    """{label: [word sets]} -> {"labels": {label: texts}, "words": {label: Counter}}."""
    from itertools import chain

    return {"labels": {l: len(v) for l, v in per_label.items()},
            "words": {l: Counter(chain.from_iterable(v)) for l, v in per_label.items()}}


def word_counts(texts: Iterable[str], labels: Iterable) -> dict:
    """``{"labels": {label: texts}, "words": {label: Counter(word -> texts holding it)}}``
    over the distinct normalised words of each text (rows without a label are left out)."""
    per: dict[str, list] = {}
    for t, label in zip(texts, labels):
        if label is None or (isinstance(label, float) and math.isnan(label)):
            continue
        per.setdefault(str(label), []).append(hypothesis_word_set("" if t is None else str(t)))
    return _count_sets(per)


def add_word_counts(a: dict, b: dict) -> dict:
    """The `word_counts` of two batches together."""
    labels = dict(a["labels"])
    words = {l: Counter(c) for l, c in a["words"].items()}
    for l, n in b["labels"].items():
        labels[l] = labels.get(l, 0) + n
        words.setdefault(l, Counter()).update(b["words"][l])
    return {"labels": labels, "words": words}


# ---------------------------------------------------------------------------- aggregation

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


def _reduce(values: pd.Series, how: str) -> float | None:
    if len(values) == 0:
        return None
    if how == "median":
        return round(float(np.median(values.to_numpy(dtype="float64"))), DIGITS)
    if how == "std":
        return sample_std(values.to_numpy(dtype="float64"))
    return round(float(values.astype("float64").mean()), DIGITS)


def sample_std(values) -> float | None:
    """Sample standard deviation (n - 1), rounded like the means; None below two values."""
    arr = np.asarray(values, dtype="float64")
    if arr.size < 2:
        return None
    return round(float(np.std(arr, ddof=1)), DIGITS)


def aggregate_pandas(stats: pd.DataFrame, labels: pd.Series | None = None) -> dict:
    """``{"labels": {LABEL: {count, ...}}, "all": {count, ...}}`` for one split.

    ``stats`` holds the :data:`ROW_COLUMNS` of the split; ``labels`` is aligned with it
    (rows without a gold label count in ``all`` only).
    """
    def block(frame: pd.DataFrame) -> dict:
        out = {"count": int(len(frame))}
        for name, (col, how) in AGGREGATES.items():
            out[name] = _reduce(frame[col], how)
        return out

    result = {"labels": {}, "all": block(stats)}
    if labels is not None:
        labels = pd.Series(list(labels), index=stats.index)
        for label in sorted(labels.dropna().unique(), key=str):
            result["labels"][str(label)] = block(stats[labels == label])
    return result


def blocks_from_rows(rows: Iterable[dict], label_key: str = "label") -> dict:
    """Turn aggregated rows (one per label, ``label`` None for the whole split) into
    the ``{"labels": ..., "all": ...}`` shape of :func:`aggregate_pandas`."""
    result: dict = {"labels": {}, "all": None}
    for row in rows:
        row = dict(row)
        label = row.pop(label_key, None)
        block = {"count": int(row.pop("count"))}
        for name in AGGREGATES:
            v = row.get(name)
            block[name] = None if v is None or v != v else round(float(v), DIGITS)  # NaN: none
        if label is None:
            result["all"] = block
        else:
            result["labels"][str(label)] = block
    result["labels"] = dict(sorted(result["labels"].items()))
    return result


# ---------------------------------------------------------------------------- PMI

PMI_SMOOTHING = 1.0
PMI_MIN_COUNT = 5


def pmi(count_word_label, count_word, count_label, total, n_labels: int,
        smoothing: float = PMI_SMOOTHING) -> float:
    """PMI(word, label) = log p(label | word) / p(label), counted over hypotheses.

    ``count_word_label``: hypotheses of the label containing the word; ``count_word``:
    hypotheses containing it; ``count_label``: hypotheses of the label; ``total``: all
    hypotheses. p(label | word) is add-``smoothing`` smoothed over the labels, so rare
    words do not top the list. Natural log, as in Gururangan et al. (2018), whose
    table IndoNLI Table 9 follows.
    """
    p_label_given_word = (count_word_label + smoothing) / (count_word + smoothing * n_labels)
    return math.log(p_label_given_word / (count_label / total))


def hypothesis_word_set(text: str) -> set[str]:
    """Words counted for PMI: the distinct normalised words of a hypothesis (or, for the
    premise-side PMI, of a premise)."""
    return set(norm_words(text))


word_set = hypothesis_word_set


def top_pmi(hypotheses: Iterable[str], labels: Iterable, k: int = 10, min_count: int = PMI_MIN_COUNT,
            smoothing: float = PMI_SMOOTHING) -> dict[str, list[dict]]:
    """Top-k words per label by PMI, with ``count`` (hypotheses of the label holding the
    word) and ``word_count`` (all hypotheses holding it): IndoNLI's "96/160" column."""
    return top_pmi_from_counts(word_counts(hypotheses, labels), k=k, min_count=min_count, smoothing=smoothing)


def top_pmi_from_counts(counts: dict, k: int = 10, min_count: int = PMI_MIN_COUNT,
                        smoothing: float = PMI_SMOOTHING) -> dict[str, list[dict]]:
    """`top_pmi` from `word_counts` (of one batch or added over many)."""
    per_label: dict = {}
    per_word: Counter = Counter()
    for label, c in counts["words"].items():
        per_word.update(c)
        for w, n in c.items():
            per_label[(w, label)] = n
    label_totals = {l: n for l, n in counts["labels"].items() if n}
    total = sum(label_totals.values())
    return pmi_table(per_label, per_word, label_totals, total, k=k, min_count=min_count, smoothing=smoothing)


def pmi_table(per_label: dict, per_word: dict, label_totals: dict, total: int, k: int = 10,
              min_count: int = PMI_MIN_COUNT, smoothing: float = PMI_SMOOTHING) -> dict[str, list[dict]]:
    """Top-k words with a positive PMI per label, from counts."""
    n_labels = len(label_totals)
    out: dict[str, list[dict]] = {}
    for label in sorted(label_totals):
        scored = []
        for (w, lab), c in per_label.items():
            if lab != label or per_word[w] < min_count:
                continue
            value = pmi(c, per_word[w], label_totals[label], total, n_labels, smoothing)
            if value > 0:  # only words that point towards the label
                scored.append((-value, w, c))
        scored.sort()
        out[label] = [{"word": w, "pmi": round(-neg, 4), "count": int(c), "word_count": int(per_word[w])}
                      for neg, w, c in scored[:k]]
    return out


# ---------------------------------------------------------------------------- duplicates and leakage

def duplicate_counts(premises: Sequence[str], hypotheses: Sequence[str]) -> dict:
    """Rows that repeat an earlier row's pair (``pairs``) or its sentences in either order
    (``sentence_pairs``), after case folding and whitespace collapsing."""
    ordered = [pair_text_key(p, h) for p, h in zip(premises, hypotheses)]
    unordered = [pair_text_key(p, h, ordered=False) for p, h in zip(premises, hypotheses)]
    return {"pairs": len(ordered) - len(set(ordered)),
            "sentence_pairs": len(unordered) - len(set(unordered))}


def leakage_counts(splits: dict[str, tuple[Sequence[str], Sequence[str]]]) -> dict[str, dict]:
    """For every two splits ``"A|B"``: distinct pairs, sentence pairs (either order) and
    hypotheses they share, after case folding and whitespace collapsing."""
    keys = {}
    for name, (prem, hyp) in splits.items():
        keys[name] = {
            "pairs": {pair_text_key(p, h) for p, h in zip(prem, hyp)},
            "sentence_pairs": {pair_text_key(p, h, ordered=False) for p, h in zip(prem, hyp)},
            "hypotheses": {fold_text(h) for h in hyp},
        }
    names = list(splits)
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            out[f"{a}|{b}"] = {kind: len(keys[a][kind] & keys[b][kind]) for kind in keys[a]}
    return out


# ---------------------------------------------------------------------------- whole datasets

def split_statistics(df: pd.DataFrame, top_k: int = 10, min_count: int = PMI_MIN_COUNT) -> dict:
    """Statistics of one split given as a DataFrame with premise, hypothesis, label."""
    labels = df["label"].reset_index(drop=True) if "label" in df.columns else None
    stats, counts = batch_statistics(list(df["premise"]), list(df["hypothesis"]),
                                     list(labels) if labels is not None else [None] * len(df))
    unlabeled = int(pd.Series(list(labels), dtype=object).isna().sum()) if labels is not None else 0
    return assemble_split_statistics(aggregate_pandas(stats, labels), counts if labels is not None else None,
                                     unlabeled, duplicate_counts(list(df["premise"]), list(df["hypothesis"])),
                                     top_k, min_count)


def assemble_split_statistics(result: dict, counts: dict | None, unlabeled: int, duplicates: dict,
                              top_k: int = 10, min_count: int = PMI_MIN_COUNT) -> dict:
    """The statistics block of one split from its parts: ``result`` the aggregates
    (``{"labels": ..., "all": ...}`` of `aggregate_pandas` or `blocks_from_rows`), the word
    counts of `batch_statistics` (None when the split has no label column), the rows
    without a label and the `duplicate_counts`. The Spark stage gathers these parts from
    many tasks; `split_statistics` computes them in one go."""
    if counts is not None:
        result["unlabeled"] = int(unlabeled)
        for label, words_ in top_pmi_from_counts(counts["hypothesis"], k=top_k, min_count=min_count).items():
            if label in result["labels"]:
                result["labels"][label]["top_pmi_words"] = words_
        # premise side: a premise that announces its label is an artefact too
        result["premise_top_pmi_words"] = {
            label: words_ for label, words_ in
            top_pmi_from_counts(counts["premise"], k=top_k, min_count=min_count).items() if label in result["labels"]}
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


# ---------------------------------------------------------------------------- markdown

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
            lines.append(f"| {key.replace('|', ' / ')} | {v['pairs']:,} | {v['sentence_pairs']:,} | {v['hypotheses']:,} |")
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
