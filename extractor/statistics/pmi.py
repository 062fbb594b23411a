"""PMI between words and labels (IndoNLI Table 9, after Gururangan et al. 2018): the
formula, the word counts it is computed from, and the top words per label."""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain

import numpy as np

from extractor.statistics.rows import norm_words


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


def _count_sets(per_label: dict[str, list[set]]) -> dict:
    """{label: [word sets]} -> {"labels": {label: texts}, "words": {label: Counter}}."""
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


def top_pmi(hypotheses: Iterable[str], labels: Iterable, k: int = 10, min_count: int = PMI_MIN_COUNT,
            smoothing: float = PMI_SMOOTHING) -> dict[str, list[dict]]:
    """Top-k words per label by PMI, with ``count`` (hypotheses of the label holding the
    word) and ``word_count`` (all hypotheses holding it): IndoNLI's "96/160" column."""
    return top_pmi_from_counts(word_counts(hypotheses, labels), k=k, min_count=min_count, smoothing=smoothing)


def top_pmi_from_counts(counts: dict, k: int = 10, min_count: int = PMI_MIN_COUNT,
                        smoothing: float = PMI_SMOOTHING) -> dict[str, list[dict]]:
    """`top_pmi` from `word_counts` (of one batch or added over many)."""
    rows = [(label, w, n) for label, c in counts["words"].items() for w, n in c.items()]
    labels, words_, n = zip(*rows) if rows else ((), (), ())
    return pmi_table(list(labels), list(words_), list(n), counts["labels"], k=k, min_count=min_count,
                     smoothing=smoothing)


def pmi_table(labels: Sequence[str], words: Sequence[str], counts: Sequence[int], label_totals: dict, k: int = 10,
              min_count: int = PMI_MIN_COUNT, smoothing: float = PMI_SMOOTHING) -> dict[str, list[dict]]:
    """Top-k words with a positive PMI per label (sorted by PMI, then word), from rows
    (label, word, texts of the label holding the word), each (label, word) once, and the
    texts per label (`label_totals`; labels without texts are left out). A word's count is
    the sum of its rows; words below `min_count` are left out. numpy picks the candidates,
    `pmi` in Python scores them, so the values are exactly those of the formula."""
    label_totals = {l: n for l, n in label_totals.items() if n}
    n_labels, total = len(label_totals), sum(label_totals.values())
    per_word: Counter = Counter()
    for w, n_w in zip(words, counts):
        per_word[w] += n_w
    c = np.asarray(counts, dtype=np.float64)
    cw = np.array([per_word[w] for w in words], dtype=np.float64)
    cl = np.array([label_totals.get(l, 0) for l in labels], dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rough = np.log(((c + smoothing) / (cw + smoothing * n_labels)) / (cl / total)) if total else c
    candidate = (cw >= min_count) & (cl > 0) & (rough > -1e-9)
    names = np.array(labels, dtype=object)
    out: dict[str, list[dict]] = {}
    for label in sorted(label_totals):
        sel = np.nonzero(candidate & (names == label))[0]
        if len(sel) > k:  # the k best and whatever numpy's rounding could tie with them
            kth = np.partition(rough[sel], len(sel) - k)[len(sel) - k]
            sel = sel[rough[sel] >= kth - 1e-9]
        scored = []
        for i in sel.tolist():
            w = words[i]
            value = pmi(counts[i], per_word[w], label_totals[label], total, n_labels, smoothing)
            if value > 0:  # only words that point towards the label
                scored.append((-value, w, counts[i]))
        scored.sort()
        out[label] = [{"word": w, "pmi": round(-neg, 4), "count": int(n), "word_count": int(per_word[w])}
                      for neg, w, n in scored[:k]]
    return out
