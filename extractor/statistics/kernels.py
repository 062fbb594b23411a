"""The per-row statistics of a whole batch at once (vectorised over Arrow and numpy),
and the word counts PMI is computed from."""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from rapidfuzz import process
from rapidfuzz.distance import LCSseq

from extractor.statistics import charclasses
from extractor.statistics.rows import ROW_COLUMNS, ROW_DTYPES, lcs_length, norm_token


# `batch_statistics` computes the per-row functions of `rows` for a whole batch at once: the
# texts are split into tokens by Arrow, Python runs once per *distinct* token (case folding,
# edge punctuation, capitals: exactly the code of `norm_words` and `inner_capital`), and
# the set and sequence measures are numpy/Arrow work over integer token ids. The per-row
# functions stay the definitions; tests/test_statistics.py checks that every column of the
# batch equals them, bit for bit, on real and adversarial texts.


def text_array(values) -> pa.Array:
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


class Tokens:
    """The whitespace tokens of a batch of texts, in order (empty tokens dropped): ``row``
    of each token and whether it opens its text (``first``). `charclasses.split_whitespace`
    splits at exactly the characters Python's ``str.split()`` does (checked over every code
    point in tests/test_statistics.py). ``raw`` (the token's
    id in the batch's vocabulary) is set by `_vocabulary`."""

    def __init__(self, texts: pa.Array):
        lists = charclasses.split_whitespace(texts)
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


def _vocabulary(*sides: Tokens) -> tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array]:
    """Number the distinct tokens of `sides` (sets each side's ``raw``) and return per raw
    id: its normalised word's id (`norm_words`; -1 when nothing is left), whether it holds
    a capital letter, whether it does after its first character; and the normalised words
    (an Arrow array: most callers take a few of them, or hand them to Arrow again)."""
    encoded = pa.chunked_array([s.strings for s in sides], pa.large_string()).combine_chunks().dictionary_encode()
    ids = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    start = 0
    for s in sides:
        s.raw = ids[start:start + len(s.strings)]
        start += len(s.strings)
    # Arrow computes each token's normalised word and capitals where it provably gives
    # Python's answer (`charclasses`), Python the rest; the words are numbered in order of
    # first appearance among the tokens (tokens that leave no word get -1)
    vocab = encoded.dictionary
    normal = charclasses.normalised_tokens(vocab, norm_token)
    normal = pc.if_else(pc.equal(normal, ""), pa.scalar(None, normal.type), normal).dictionary_encode()
    norm_id = normal.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    upper, upper_tail = charclasses.has_upper(vocab)
    return norm_id, upper, upper_tail, normal.dictionary


def _normalised(side: Tokens, norm_id: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
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


def _counted(row: np.ndarray, ids: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """`_distinct` keys of a batch with how many times each occurs in its row."""
    keys = _sorted_keys(row, ids, width)
    first = np.nonzero(_starts(keys))[0]
    return keys[first], np.diff(np.append(first, len(keys)))


def _shared(a_keys: np.ndarray, b_keys: np.ndarray) -> np.ndarray:
    """The keys in both of two `_distinct` key arrays: one merge of the two sorted runs
    (numpy's stable sort), then the keys that occur twice."""
    both = np.sort(np.concatenate([a_keys, b_keys]), kind="stable")
    return both[1:][both[1:] == both[:-1]]


def _jaccard(shared: np.ndarray, p_keys: np.ndarray, h_keys: np.ndarray, width: int, n: int) -> np.ndarray:
    """Per row |P & H| / |P | H| of the word sets given as `_distinct` keys (0 if both
    empty), from the keys in both (`shared`)."""
    shared = np.bincount(shared // width, minlength=n)
    union = np.bincount(p_keys // width, minlength=n) + np.bincount(h_keys // width, minlength=n) - shared
    return np.divide(shared, union, out=np.zeros(n), where=union > 0)


# a word id as one character: ids from the first surrogate on (a str cannot hold a lone
# surrogate) move past the 2,048 surrogates
_SURROGATES = 0xD800
_CODE_POINTS = 0x110000 - 0x800  # the word ids that a character each can stand for


def _word_strings(side: tuple) -> list:
    """Each row's normalised words (a `_normalised` side) as one str, a character per word
    id: the LCS of two rows' words is the LCS of their strings."""
    _, ids, _, count = side
    points = np.where(ids >= _SURROGATES, ids + 0x800, ids).astype("<u4")
    text = points.tobytes().decode("utf-32-le")
    ends = np.cumsum(count).tolist()
    return [text[a:b] for a, b in zip([0, *ends[:-1]], ends)]


def _lcs_lengths(hyp: tuple, prem: tuple, n_words: int) -> np.ndarray:
    """`lcs_length(hn, pn)` of every row, from the `_normalised` sides of a batch of
    `n_words` distinct normalised words: rapidfuzz's LCS (bit-parallel, Hyyro 2004, in C++,
    any length) over each row's words as a string of one character per word id (exact: no
    hashing). Where the ids cannot all be characters (over 1.1 M distinct words in one
    batch), `lcs_length` over each row's ids."""
    if n_words <= _CODE_POINTS:
        return process.cpdist(_word_strings(hyp), _word_strings(prem), scorer=LCSseq.similarity,
                              dtype=np.int64, workers=1)
    (_, h_ids, _, h_len), (_, p_ids, _, p_len) = hyp, prem
    h_end, p_end = np.cumsum(h_len), np.cumsum(p_len)
    return np.array([lcs_length(h_ids[h_end[i] - h_len[i]:h_end[i]].tolist(),
                                p_ids[p_end[i] - p_len[i]:p_end[i]].tolist()) for i in range(len(h_len))],
                    dtype=np.int64)


def _label_codes(labels, n: int) -> tuple[np.ndarray, list[str]]:
    """Each row's label number (-1: no label, None or NaN), labels as ``str`` in order of
    first appearance."""
    if isinstance(labels, (pa.Array, pa.ChunkedArray)):
        labels = text_array(labels).cast(pa.string())
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


def key_sums(keys: np.ndarray, bins: int, weights: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct keys, sorted; how many times each occurs, or the sum of its `weights`)
    of non-negative integer keys below `bins`: counted into an array where one count per
    key fits in memory, else sorted."""
    if bins <= 1 << 25:  # a count per key fits in memory: count, no sort
        counts = np.bincount(keys, minlength=bins)
        distinct = np.nonzero(counts)[0]
        if weights is None:
            return distinct, counts[distinct].astype(np.int64)
        return distinct, np.bincount(keys, weights=weights, minlength=bins)[distinct].astype(np.int64)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    first = np.nonzero(_starts(keys))[0]
    each = np.ones(len(keys), dtype=np.int64) if weights is None else np.asarray(weights, dtype=np.int64)[order]
    return keys[first], np.add.reduceat(each, first) if len(keys) else first


def _word_count_rows(keys: np.ndarray, codes: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(label number, word id, texts) per (label, word) of one side, from its `_distinct`
    normalised keys: rows without a label left out; sorted by label, then word id."""
    lab = codes[keys // width]
    has = lab >= 0
    combined, counts = key_sums(lab[has] * width + keys[has] % width,
                                (int(codes.max()) + 1) * width if len(codes) else 0)
    return combined // width, combined % width, counts


def _word_counts(keys: np.ndarray, codes: np.ndarray, names: list[str], words: list[str], width: int) -> dict:
    """`word_counts` of one side from its `_distinct` normalised keys (`words`: the
    normalised words as a list)."""
    per_label, ids, counts = _word_count_rows(keys, codes, width)
    seen = np.bincount(codes[codes >= 0], minlength=len(names))
    out: dict[str, dict] = {"labels": {name: int(seen[c]) for c, name in enumerate(names)},
                            "words": {name: Counter() for name in names}}
    bounds = np.searchsorted(per_label, np.arange(len(names) + 1))
    for c, name in enumerate(names):
        a, b = bounds[c], bounds[c + 1]
        out["words"][name] = Counter(dict(zip([words[w] for w in ids[a:b].tolist()], counts[a:b].tolist())))
    return out


def _word_count_table(sides: dict, codes: np.ndarray, names: list[str], words: pa.Array, width: int) -> pa.Table:
    """The word counts of both sides as one table (side, label, word, n): `batch_statistics`
    with ``word_table``, for callers that add up counts column-wise."""
    parts = []
    vocabulary = words.cast(pa.string())
    label_names = pa.array(names, pa.string())
    for side, keys in sides.items():
        per_label, ids, counts = _word_count_rows(keys, codes, width)
        parts.append(pa.table({"side": pa.repeat(pa.scalar(side, pa.string()), len(ids)),
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
    p_text, h_text = text_array(premises), text_array(hypotheses)
    if len(p_text) != len(h_text):
        raise ValueError(f"batch_statistics: {len(p_text)} premises but {len(h_text)} hypotheses")
    n = len(p_text)
    prem, hyp = Tokens(p_text), Tokens(h_text)
    norm_id, upper, upper_tail, words_ = _vocabulary(prem, hyp)
    width = max(len(norm_id), 1) + 1
    pn, hn = _normalised(prem, norm_id), _normalised(hyp, norm_id)
    pn_keys, (hn_keys, repeats) = _distinct(pn[0], pn[1], width), _counted(hn[0], hn[1], width)
    h_len = hn[3]
    # the hypothesis's words in the premise: once per distinct word (the Jaccard index), and
    # with their repeats (the new-token rate counts the other words, repeats included)
    in_premise = _inside(hn_keys, pn_keys)
    new = h_len - np.bincount(hn_keys[in_premise] // width, weights=repeats[in_premise], minlength=n).astype(np.int64)
    lcs = _lcs_lengths(hn, pn, len(words_))
    capital = np.where(hyp.first, upper_tail[hyp.raw], upper[hyp.raw])
    p_raw, h_raw = _distinct(prem.row, prem.raw, width), _distinct(hyp.row, hyp.raw, width)
    columns = {
        "premise_words": prem.count, "hypothesis_words": hyp.count,
        "overlap_jaccard": _jaccard(hn_keys[in_premise], pn_keys, hn_keys, width, n),
        "lcs_ratio": np.divide(lcs, h_len, out=np.zeros(n), where=h_len > 0),
        "new_token_rate": np.divide(new, h_len, out=np.zeros(n), where=h_len > 0),
        "hypothesis_inner_capital": np.bincount(hyp.row[capital], minlength=n) > 0,
        "overlap_jaccard_raw": _jaccard(_shared(p_raw, h_raw), p_raw, h_raw, width, n),
    }
    columns = {c: columns[c].astype(ROW_DTYPES[c]) for c in ROW_COLUMNS}
    codes, names = _label_codes(labels, n)
    if word_table:
        return columns, _word_count_table({"hypothesis": hn_keys, "premise": pn_keys}, codes, names, words_, width)
    words_ = words_.to_pylist()
    counts = {"hypothesis": _word_counts(hn_keys, codes, names, words_, width),
              "premise": _word_counts(pn_keys, codes, names, words_, width)}
    return columns, counts
