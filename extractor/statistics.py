"""One implementation of every NLI statistic, for the Spark job and for `trainer stats`.

Three layers, each written once:

- per-row functions on plain strings (`words`, `overlap_jaccard`, `lcs_ratio`, ...);
  `batch_statistics` applies them to a batch of pairs. The Spark stage calls it per work
  unit (`extractor.splits.batches.unit_statistics`); `trainer stats` on the whole split.
- aggregation: :data:`AGGREGATES` says which row column is reduced how; `aggregate_columns`
  reduces numpy columns (exact medians), `aggregate_pandas` a pandas frame through it. The
  Spark stage calls it once per split (`extractor.splits.batches.split_aggregates`), so
  the card and `trainer stats` agree.
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

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

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


def fold_texts(texts) -> pa.Array:
    """`fold_text` of a batch of texts (list or Arrow array; None -> ""), as an Arrow
    large_string array: Arrow splits and joins, Python case-folds each distinct token once
    (case folding never makes or takes away whitespace, so folding token by token is
    folding the text)."""
    tokens = _Tokens(_text_array(texts))
    encoded = tokens.strings.dictionary_encode()
    folded = pa.array([t.casefold() for t in encoded.dictionary.to_pylist()], pa.large_string())
    offsets = np.zeros(tokens.n + 1, dtype=np.int64)
    np.cumsum(tokens.count, out=offsets[1:])
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), folded.take(encoded.indices))
    return pc.binary_join(lists, pa.scalar(" ", pa.large_string()))


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


# ---------------------------------------------------------------------------- batch
#
# `batch_statistics` computes the per-row functions above for a whole batch at once: the
# texts are split into tokens by Arrow, Python runs once per *distinct* token (case folding,
# edge punctuation, capitals: exactly the code of `norm_words` and `inner_capital`), and
# the set and sequence measures are numpy/Arrow work over integer token ids. The per-row
# functions stay the definitions; tests/test_statistics.py checks that every column of the
# batch equals them, bit for bit, on real and adversarial texts.


def _text_array(values) -> pa.Array:
    """A batch of texts as one Arrow string array: an Arrow array or column as it is,
    Python values as the per-row functions take them (None -> "", else ``str``)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    if isinstance(values, pa.Array):
        return values if pa.types.is_large_string(values.type) else values.cast(pa.large_string())
    values = list(values)
    try:
        return pa.array(values, pa.large_string())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(["" if v is None else str(v) for v in values], pa.large_string())


class _Tokens:
    """The whitespace tokens of a batch of texts, in order (empty tokens dropped): ``row``
    of each token and whether it opens its text (``first``). Arrow's
    ``utf8_split_whitespace`` splits at exactly the characters Python's ``str.split()``
    does (checked over every code point in tests/test_statistics.py). ``raw`` (the token's
    id in the batch's vocabulary) is set by `_vocabulary`."""

    def __init__(self, texts: pa.Array):
        lists = pc.utf8_split_whitespace(texts)
        lengths = pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        flat = pc.list_flatten(lists)
        keep = pc.greater(pc.binary_length(flat), 0)
        starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
        mask = keep.to_numpy(zero_copy_only=False)
        self.n = len(texts)
        self.row = np.repeat(np.arange(self.n, dtype=np.int64), lengths)[mask]
        self.first = (np.arange(len(flat), dtype=np.int64) == starts)[mask]
        self.strings = flat.filter(keep)
        self.count = np.bincount(self.row, minlength=self.n)
        self.raw = np.zeros(0, dtype=np.int64)


def _vocabulary(*sides: _Tokens) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Number the distinct tokens of `sides` (sets each side's ``raw``) and return per raw
    id: its normalised word's id (`norm_words`; -1 when nothing is left), whether it holds
    a capital letter, whether it does after its first character; and the normalised words."""
    encoded = pa.chunked_array([s.strings for s in sides], pa.large_string()).combine_chunks().dictionary_encode()
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    start = 0
    for s in sides:
        s.raw = ids[start:start + len(s.strings)]
        start += len(s.strings)
    vocab = encoded.dictionary.to_pylist()
    norm_id = np.full(len(vocab), -1, dtype=np.int64)
    upper = np.zeros(len(vocab), dtype=bool)
    upper_tail = np.zeros(len(vocab), dtype=bool)
    index: dict[str, int] = {}
    for i, tok in enumerate(vocab):
        kept = _norm_tokens([tok.casefold()])
        if kept:
            norm_id[i] = index.setdefault(kept[0], len(index))
        if not tok.islower():  # no cased character, or a capital somewhere
            upper[i] = any(ch.isupper() for ch in tok)
            upper_tail[i] = upper[i] and any(ch.isupper() for ch in tok[1:])
    return norm_id, upper, upper_tail, list(index)


def _normalised(side: _Tokens, norm_id: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A side's `norm_words`: (row, word id, position in the row's words) per word, and the
    words per row."""
    ids = norm_id[side.raw]
    keep = ids >= 0
    row, ids = side.row[keep], ids[keep]
    count = np.bincount(row, minlength=side.n)
    position = np.arange(len(row), dtype=np.int64) - np.repeat(np.cumsum(count) - count, count)
    return row, ids, position, count


def _sorted_keys(row: np.ndarray, ids: np.ndarray, width: int) -> np.ndarray:
    """Keys ``row * width + id``, sorted. The tokens come in row order, so the sort only
    orders each row's few keys (numpy's stable sort runs in near linear time there)."""
    return np.sort(row * width + ids, kind="stable")


def _starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Whether each key of a sorted array differs from the one before it."""
    new = np.ones(len(sorted_keys), dtype=bool)
    new[1:] = sorted_keys[1:] != sorted_keys[:-1]
    return new


def _distinct(row: np.ndarray, ids: np.ndarray, width: int) -> np.ndarray:
    """The distinct (row, id) of a batch as sorted keys ``row * width + id``: a set per row."""
    keys = _sorted_keys(row, ids, width)
    return keys[_starts(keys)]


def _inside(keys: np.ndarray, of: np.ndarray) -> np.ndarray:
    """Whether each key is in the sorted array `of`."""
    if not len(of):
        return np.zeros(len(keys), dtype=bool)
    at = np.minimum(np.searchsorted(of, keys), len(of) - 1)
    return of[at] == keys


def _jaccard(p_keys: np.ndarray, h_keys: np.ndarray, width: int, n: int) -> np.ndarray:
    """Per row |P & H| / |P | H| of the word sets given as `_distinct` keys (0 if both empty)."""
    shared = np.bincount(h_keys[_inside(h_keys, p_keys)] // width, minlength=n)
    union = np.bincount(p_keys // width, minlength=n) + np.bincount(h_keys // width, minlength=n) - shared
    return np.divide(shared, union, out=np.zeros(n), where=union > 0)


ALL_BITS = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


def _popcount(v: np.ndarray) -> np.ndarray:
    if hasattr(np, "bitwise_count"):  # numpy >= 2
        return np.bitwise_count(v).astype(np.int64)
    return np.unpackbits(v.view(np.uint8).reshape(-1, 8), axis=1).sum(axis=1).astype(np.int64)


def _lcs_lengths(hyp: tuple, prem: tuple, width: int) -> np.ndarray:
    """`lcs_length(hn, pn)` of every row whose hypothesis has at most 64 words (-1 for the
    others), from the `_normalised` sides: `lcs_length`'s bit-parallel recurrence with one
    64-bit word per row, all rows stepping through their premise words together."""
    h_row, h_ids, h_pos, h_len = hyp
    p_row, p_ids, p_pos, p_len = prem
    n = len(h_len)
    fits = h_len <= 64
    out = np.full(n, -1, dtype=np.int64)
    # bit i of a (row, word) mask: word i of the row's hypothesis is that word
    sel = fits[h_row]
    keys = h_row[sel] * width + h_ids[sel]
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    first = np.nonzero(_starts(keys))[0]
    bits = np.left_shift(np.uint64(1), h_pos[sel][order].astype(np.uint64))
    masks = np.bitwise_or.reduceat(bits, first) if len(first) else bits
    keys = keys[first]
    # each premise word's mask, placed at (its position, its row's rank): the rows ranked
    # by premise length, longest first, so the rows still stepping at step j are a prefix
    sel = fits[p_row]
    p_keys = p_row[sel] * width + p_ids[sel]
    step_masks = np.zeros(len(p_keys), dtype=np.uint64)
    if len(keys):
        at = np.minimum(np.searchsorted(keys, p_keys), len(keys) - 1)
        hit = keys[at] == p_keys
        step_masks[hit] = masks[at[hit]]
    ranked = np.nonzero(fits)[0]
    ranked = ranked[np.argsort(-p_len[ranked], kind="stable")]
    rank = np.empty(n, dtype=np.int64)
    rank[ranked] = np.arange(len(ranked))
    active = np.bincount(p_pos[sel])  # rows with a premise word at step j
    placed = np.empty_like(step_masks)
    placed[(np.cumsum(active) - active)[p_pos[sel]] + rank[p_row[sel]]] = step_masks
    lengths = h_len[ranked].astype(np.uint64)
    full = np.where(lengths >= 64, ALL_BITS, np.left_shift(np.uint64(1), np.minimum(lengths, 63)) - np.uint64(1))
    v = full.copy()
    start = 0
    for k in active.tolist():
        m, vk = placed[start:start + k], v[:k]
        u = vk & m
        v[:k] = ((vk + u) | (vk - u)) & full[:k]  # uint64 arithmetic wraps: a 64-word carry drops
        start += k
    out[ranked] = h_len[ranked] - _popcount(v)
    return out


def _label_codes(labels, n: int) -> tuple[np.ndarray, list[str]]:
    """Each row's label number (-1: no label, None or NaN), labels as ``str`` in order of
    first appearance."""
    if isinstance(labels, (pa.Array, pa.ChunkedArray)):
        labels = _text_array(labels).cast(pa.string())
        encoded = pc.dictionary_encode(labels)
        codes = encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        return codes, encoded.dictionary.to_pylist()
    codes = np.full(n, -1, dtype=np.int64)
    names: dict[str, int] = {}
    if labels is not None:
        for i, label in enumerate(labels):
            if i >= n:
                break
            if label is None or (isinstance(label, float) and math.isnan(label)):
                continue
            codes[i] = names.setdefault(str(label), len(names))
    return codes, list(names)


def _word_count_rows(keys: np.ndarray, codes: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(label number, word id, texts) per (label, word) of one side, from its `_distinct`
    normalised keys: rows without a label left out; sorted by label, then word id."""
    lab = codes[keys // width]
    has = lab >= 0
    combined = lab[has] * width + keys[has] % width
    bins = (int(codes.max()) + 1) * width if len(codes) else 0
    if bins <= 1 << 25:  # a count per (label, word) fits in memory: count, no sort
        counts = np.bincount(combined, minlength=bins)
        combined = np.nonzero(counts)[0]
        counts = counts[combined]
    else:
        combined = np.sort(combined)
        first = np.nonzero(_starts(combined))[0]
        counts = np.diff(np.append(first, len(combined)))
        combined = combined[first]
    return combined // width, combined % width, counts


def _word_counts(keys: np.ndarray, codes: np.ndarray, names: list[str], words: list[str], width: int) -> dict:
    """`word_counts` of one side from its `_distinct` normalised keys."""
    per_label, ids, counts = _word_count_rows(keys, codes, width)
    seen = np.bincount(codes[codes >= 0], minlength=len(names))
    out = {"labels": {name: int(seen[c]) for c, name in enumerate(names)},
           "words": {name: Counter() for name in names}}
    bounds = np.searchsorted(per_label, np.arange(len(names) + 1))
    for c, name in enumerate(names):
        a, b = bounds[c], bounds[c + 1]
        out["words"][name] = Counter(dict(zip([words[w] for w in ids[a:b].tolist()], counts[a:b].tolist())))
    return out


def _word_count_table(sides: dict, codes: np.ndarray, names: list[str], words: list[str], width: int) -> pa.Table:
    """The word counts of both sides as one table (side, label, word, n): `batch_statistics`
    with ``word_table``, for callers that add up counts column-wise."""
    parts = []
    vocabulary = pa.array(words, pa.string())
    label_names = pa.array(names, pa.string())
    for side, keys in sides.items():
        per_label, ids, counts = _word_count_rows(keys, codes, width)
        parts.append(pa.table({"side": pa.array(np.full(len(ids), side, dtype=object), pa.string()),
                               "label": label_names.take(pa.array(per_label)), "word": vocabulary.take(pa.array(ids)),
                               "n": pa.array(counts.astype(np.int64))}))
    return pa.concat_tables(parts)


def row_statistics(premises: Iterable[str], hypotheses: Iterable[str]) -> pd.DataFrame:
    """The per-row statistics of a batch of pairs (one row per pair, :data:`ROW_COLUMNS`):
    `batch_statistics` without labels (so without word counts)."""
    return batch_statistics(premises, hypotheses, None)[0]


def batch_statistics(premises, hypotheses, labels, word_table: bool = False) -> tuple[pd.DataFrame, dict | pa.Table]:
    """One pass over a batch of pairs (lists, pandas columns or Arrow arrays of texts): the
    per-row statistics (:data:`ROW_COLUMNS`, each the per-row function of this module) and
    the word counts PMI is computed from (`word_counts` of hypotheses and of premises, rows
    with a label only). The counts of several batches add up (`add_word_counts`), so a
    split's PMI can be computed from the batches of many tasks. With ``word_table`` the
    counts come as one Arrow table (side, label, word, n) instead of Counters."""
    columns, counts = batch_columns(premises, hypotheses, labels, word_table)
    return pd.DataFrame(columns).astype(ROW_DTYPES), counts


def batch_columns(premises, hypotheses, labels, word_table: bool = False) -> tuple[dict, dict | pa.Table]:
    """`batch_statistics` as numpy columns (:data:`ROW_COLUMNS`, in order, with the
    :data:`ROW_DTYPES`) and the word counts: for callers that go on column-wise."""
    p_text, h_text = _text_array(premises), _text_array(hypotheses)
    if len(p_text) != len(h_text):
        raise ValueError(f"batch_statistics: {len(p_text)} premises but {len(h_text)} hypotheses")
    n = len(p_text)
    prem, hyp = _Tokens(p_text), _Tokens(h_text)
    norm_id, upper, upper_tail, words_ = _vocabulary(prem, hyp)
    width = max(len(norm_id), 1) + 1
    pn, hn = _normalised(prem, norm_id), _normalised(hyp, norm_id)
    pn_keys, hn_keys = _distinct(pn[0], pn[1], width), _distinct(hn[0], hn[1], width)
    h_len = hn[3]
    new = np.bincount(hn[0][~_inside(hn[0] * width + hn[1], pn_keys)], minlength=n)
    lcs = _lcs_lengths(hn, pn, width)
    for i in np.nonzero(lcs < 0)[0].tolist():  # hypotheses of more than 64 words
        lcs[i] = lcs_length(norm_words(h_text[i].as_py() or ""), norm_words(p_text[i].as_py() or ""))
    capital = np.where(hyp.first, upper_tail[hyp.raw], upper[hyp.raw])
    columns = {
        "premise_words": prem.count, "hypothesis_words": hyp.count,
        "overlap_jaccard": _jaccard(pn_keys, hn_keys, width, n),
        "lcs_ratio": np.divide(lcs, h_len, out=np.zeros(n), where=h_len > 0),
        "new_token_rate": np.divide(new, h_len, out=np.zeros(n), where=h_len > 0),
        "hypothesis_inner_capital": np.bincount(hyp.row[capital], minlength=n) > 0,
        "overlap_jaccard_raw": _jaccard(_distinct(prem.row, prem.raw, width), _distinct(hyp.row, hyp.raw, width),
                                        width, n),
    }
    columns = {c: columns[c].astype(ROW_DTYPES[c]) for c in ROW_COLUMNS}
    codes, names = _label_codes(labels, n)
    if word_table:
        return columns, _word_count_table({"hypothesis": hn_keys, "premise": pn_keys}, codes, names, words_, width)
    counts = {"hypothesis": _word_counts(hn_keys, codes, names, words_, width),
              "premise": _word_counts(pn_keys, codes, names, words_, width)}
    return columns, counts


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


def _missing(labels) -> np.ndarray:
    """True where a label is missing (None or NaN)."""
    return np.fromiter((v is None or (isinstance(v, float) and v != v) for v in labels), bool, len(labels))


def aggregate_columns(columns: dict, labels=None) -> dict:
    """``{"labels": {LABEL: {count, ...}}, "all": {count, ...}}`` for one split.

    ``columns`` holds the :data:`ROW_COLUMNS` of the split as arrays of equal length, in
    the order the sums take them; ``labels`` is aligned with them (rows without a gold
    label count in ``all`` only).
    """
    arrays = {c: np.asarray(v) for c, v in columns.items()}
    n = len(next(iter(arrays.values()))) if arrays else 0

    def block(rows) -> dict:
        out = {"count": int(n if rows is None else len(rows))}
        for name, (col, how) in AGGREGATES.items():
            out[name] = _reduce(arrays[col] if rows is None else arrays[col][rows], how)
        return out

    result = {"labels": {}, "all": block(None)}
    if labels is not None:
        labels = np.array(list(labels), dtype=object)
        known = ~_missing(labels)
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
    for w, c in zip(words, counts):
        per_word[w] += c
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
    unlabeled = int(_missing(list(labels)).sum()) if labels is not None else 0
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
