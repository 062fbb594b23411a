"""Near-duplicate detection: MinHash signatures of normalised sentences and LSH bands.

Pure functions over a batch of texts (numpy and Arrow, no Spark), in the order a
distributed run uses them (docs/neardup.md):

1. `shingle_sets`: each text's *normalised words* (`extractor.statistics.norm_words`:
   case-folded, edge punctuation stripped, empty tokens dropped) cut into word shingles of
   `Settings.shingle` words, each shingle a 64-bit hash; a text with fewer words than a
   shingle is one shingle of all its words; a text with no word has no shingle.
2. `signatures`: ``num_perm`` MinHash values per text, from a fixed set of hash functions
   drawn from `Settings.seed` (``h_i(x) = (a_i * x + b_i) mod 2**64``, high 32 bits, over
   well-mixed 64-bit shingle hashes). The signature of a text depends only on the text and
   the settings: never on the batch it comes in.
3. `band_keys`: the signature cut into ``bands`` bands of ``num_perm / bands`` rows, each
   band hashed to a 64-bit key (the band number in it). Texts sharing a key are candidates.
4. `bucket_pairs`: candidate pairs from rows grouped by band key (each text against the
   first `Settings.max_bucket` texts of its bucket in id order: every pair of a bucket up
   to that size), deduplicated over bands.
5. `pair_jaccard`: the exact Jaccard index of the candidates' shingle sets; a pair is a
   near-duplicate when it is >= `Settings.threshold`.
6. `components`: connected components over ids (label = smallest id of the component).

`near_duplicate_leakage` (`extractor.neardup.leakage`) puts them together for `python -m
trainer stats`; the stages' rounds use them through `extractor.neardup.distributed`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from extractor import statistics
from extractor.core.hashing import byte_buffers
from extractor.neardup.settings import Settings
from extractor.statistics import charclasses, kernels

_GOLDEN = np.uint64(0x9E37_79B9_7F4A_7C15)
# the shingles of a chunk whose (shingle x permutation) hash matrix is built at once
_CHUNK_SHINGLES = 2048
# the texts whose (text x permutation) minima are taken together
_CHUNK_TEXTS = 4096
# texts with more shingles than this take their minima by reduceat
_LONG_TEXT = 512
# candidate pairs verified together (their left texts' shingles expanded at once): a bucket's
# candidates grow with its texts (up to max_bucket per text and band), its memory must not
_CHUNK_CANDIDATES = 1 << 16


# ---------------------------------------------------------------------------- hashing

def sorted_unique(x: np.ndarray) -> np.ndarray:
    """Sorted distinct values (np.unique through a stable sort: numpy 2's np.unique is far
    slower on nearly sorted int64 keys)."""
    x = np.sort(x, kind="stable")
    if len(x) > 1:
        x = x[np.concatenate([[True], x[1:] != x[:-1]])]
    return x


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser over a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x.astype(np.uint64, copy=True)
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58_476D_1CE4_E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D0_49BB_1331_11EB)
        x ^= x >> np.uint64(31)
    return x


def _mix_in_place(x: np.ndarray, tmp: np.ndarray) -> None:
    """`_mix` of a uint64 array in place (`tmp`: scratch of its shape)."""
    with np.errstate(over="ignore"):
        np.right_shift(x, np.uint64(30), out=tmp)
        x ^= tmp
        x *= np.uint64(0xBF58_476D_1CE4_E5B9)
        np.right_shift(x, np.uint64(27), out=tmp)
        x ^= tmp
        x *= np.uint64(0x94D0_49BB_1331_11EB)
        np.right_shift(x, np.uint64(31), out=tmp)
        x ^= tmp


def _coefficients(settings: Settings) -> tuple[np.ndarray, np.ndarray]:
    """The ``a_i`` (odd) and ``b_i`` of the hash functions, from the settings' seed."""
    base = np.arange(1, 2 * settings.num_perm + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        drawn = _mix(base * _GOLDEN + _mix(np.array([settings.seed], dtype=np.uint64)))
    return drawn[0::2] | np.uint64(1), drawn[1::2]


# ---------------------------------------------------------------------------- shingles

@dataclass
class Shingles:
    """The distinct shingles of a batch of texts in CSR form: text ``t`` owns
    ``values[offsets[t]:offsets[t + 1]]`` (64-bit hashes, never 0). ``distinct`` holds the
    batch's distinct values and ``dense`` each value's index in it (built on first use
    where `shingle_sets` does not give them)."""
    offsets: np.ndarray
    values: np.ndarray
    distinct: np.ndarray | None = None
    dense: np.ndarray | None = None
    _table: tuple | None = None

    @property
    def n(self) -> int:
        return len(self.offsets) - 1

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def vocabulary(self) -> tuple[np.ndarray, np.ndarray]:
        """(distinct values, index of each value among them), in order of first appearance
        (a hash table: faster than sorting and searching, and every user needs
        only a one-to-one numbering)."""
        if self.distinct is None or self.dense is None:
            self.dense, self.distinct = pd.factorize(self.values)
        return self.distinct, self.dense

    def lookup(self) -> tuple[np.ndarray, np.ndarray, np.int64]:
        """(sorted keys ``text * width + dense shingle id``, dense id per value, width),
        built once: what `pair_jaccard` searches."""
        if self._table is None:
            uniq, dense = self.vocabulary()
            width = np.int64(max(len(uniq), 1))
            table = np.repeat(np.arange(self.n, dtype=np.int64), self.sizes) * width + dense
            table.sort(kind="stable")  # sorted by text already: runs of one text's shingles
            self._table = (table, dense, width)
        return self._table


def _normalised_vocabulary(vocab: pa.Array) -> pa.Array:
    """`statistics.norm_words` of each distinct whitespace token ("" when nothing is left):
    Arrow lower-cases and trims the tokens whose result is provably Python's (nearly all:
    `statistics.charclasses`), Python the others."""
    return charclasses.normalised_tokens(vocab, statistics.norm_token)


def _string_hashes(strings: pa.Array) -> np.ndarray:
    """A 64-bit hash of each string's UTF-8 bytes (numpy over the Arrow buffers, one pass per
    byte position): the same string has the same hash in every batch and process."""
    strings = strings.cast(pa.large_binary())
    n = len(strings)
    if not n:
        return np.zeros(0, dtype=np.uint64)
    offsets, data = byte_buffers(strings)
    lengths = np.diff(offsets)
    h = _mix(lengths.astype(np.uint64) + _GOLDEN)
    # 8 bytes at a time: each word's bytes padded with zeros to a multiple of 8
    words8 = (lengths + 7) // 8
    padded = np.zeros(int(words8.sum()) * 8, dtype=np.uint8)
    start8 = (np.cumsum(words8) - words8) * 8
    within = np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    padded[np.repeat(start8, lengths) + within] = data[np.repeat(offsets[:-1], lengths) + within]
    chunks = padded.view("<u8")
    first = np.cumsum(words8) - words8
    with np.errstate(over="ignore"):
        for j in range(int(words8.max())):
            live = np.nonzero(words8 > j)[0]
            h[live] = _mix(h[live] * _GOLDEN ^ chunks[first[live] + j])
    return h


def shingle_sets(texts, settings: Settings) -> Shingles:
    """The shingle sets of a batch of texts (list or Arrow array; None is empty). Arrow
    splits at whitespace (Python's ``str.split`` characters); Python normalises each distinct
    token once (`statistics.norm_words`); numpy hashes each distinct normalised word."""
    arr = kernels.text_array(texts)
    n = len(arr)
    lists = charclasses.split_whitespace(arr)
    lengths = pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    flat = pc.list_flatten(lists)
    row = np.repeat(np.arange(n, dtype=np.int64), lengths)
    encoded = flat.dictionary_encode()
    normal = _normalised_vocabulary(encoded.dictionary).dictionary_encode()
    word_hash = _string_hashes(normal.dictionary)
    word_hash[pc.equal(normal.dictionary, "").to_numpy(zero_copy_only=False)] = 0  # nothing left: no word
    norm_id = normal.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    ids = norm_id[encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)] if len(flat) else norm_id[:0]
    keep = word_hash[ids] != 0
    row, ids = row[keep], ids[keep]
    k = settings.shingle
    if k == 1:
        # distinct words per text: one sort of row * width + word id
        width = np.int64(max(len(word_hash), 1))
        key = sorted_unique(row * width + ids)
        row, ids = key // width, key % width
        h = word_hash[ids]
    else:
        h = word_hash[ids]
        count = np.bincount(row, minlength=n)
        start = np.cumsum(count) - count
        pos = np.arange(len(h), dtype=np.int64) - np.repeat(start, count)
        # shingle j of a text covers words j .. j+k-1; a text with fewer than k words has
        # one shingle of all its words
        n_sh = np.where(count >= k, count - k + 1, np.minimum(count, 1))
        first = pos < np.repeat(n_sh, count)
        sh = h.copy()
        with np.errstate(over="ignore"):
            for step in range(1, k):
                nxt = np.zeros_like(h)
                ok = pos + step < np.repeat(count, count)
                idx = np.nonzero(ok)[0]
                nxt[idx] = h[idx + step]
                sh = np.where(ok, _mix(sh * _GOLDEN + nxt), sh)
        row, h = row[first], sh[first]
        order = np.lexsort((h, row))
        row, h = row[order], h[order]
        new = np.ones(len(h), dtype=bool)
        new[1:] = (row[1:] != row[:-1]) | (h[1:] != h[:-1])
        row, h = row[new], h[new]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=n), out=offsets[1:])
    if k == 1:  # the words are the shingles: their hashes are distinct (64 bits)
        return Shingles(offsets, h, distinct=word_hash, dense=ids)
    return Shingles(offsets, h)


# ---------------------------------------------------------------------------- signatures and bands

EMPTY = np.uint32(0xFFFF_FFFF)


def signatures(shingles: Shingles, settings: Settings) -> np.ndarray:
    """MinHash signatures, an (n, num_perm) uint32 array; a text without shingles has all
    values `EMPTY` (and `band_keys` leaves it out of every bucket)."""
    a, b = _coefficients(settings)
    n, sizes = shingles.n, shingles.sizes
    out = np.full((n, settings.num_perm), EMPTY, dtype=np.uint32)
    nonempty = np.nonzero(sizes > 0)[0]
    if not len(nonempty):
        return out
    # the hash functions run once per distinct shingle of the batch (in blocks that stay
    # in cache), into a (distinct shingle x permutation) table of uint32 hashes
    uniq, dense = shingles.vocabulary()
    hashed = np.empty((len(uniq), settings.num_perm), dtype=np.uint32)
    with np.errstate(over="ignore"):
        buf = np.empty((min(len(uniq), _CHUNK_SHINGLES), settings.num_perm), dtype=np.uint64)
        for r0 in range(0, len(uniq), _CHUNK_SHINGLES):
            x = buf[:len(uniq[r0:r0 + _CHUNK_SHINGLES])]
            np.multiply(uniq[r0:r0 + _CHUNK_SHINGLES, None], a[None, :], out=x)
            x += b[None, :]
            x >>= np.uint64(32)
            hashed[r0:r0 + len(x)] = x
    # the minima of the texts' rows of that table. Texts of up to _LONG_TEXT shingles in
    # order of size, in chunks of _CHUNK_TEXTS: step j takes the minimum with the rows of
    # shingle j of the texts that have one (a suffix of the chunk): one gather and one
    # minimum of a (texts x permutations) block per step, twice as fast as a reduceat over
    # the gathered rows (measured); longer texts by reduceat, in chunks of about
    # _CHUNK_SHINGLES shingles (a step per shingle would be slow for a long text)
    long = nonempty[sizes[nonempty] > _LONG_TEXT]
    short = nonempty[sizes[nonempty] <= _LONG_TEXT]
    order = short[np.argsort(sizes[short], kind="stable")]
    for c0 in range(0, len(order), _CHUNK_TEXTS):
        texts = order[c0:c0 + _CHUNK_TEXTS]
        first, size = shingles.offsets[texts], sizes[texts]
        acc = hashed[dense[first]]
        for j in range(1, int(size[-1])):
            k = int(np.searchsorted(size, j, side="right"))
            np.minimum(acc[k:], hashed[dense[first[k:] + j]], out=acc[k:])
        out[texts] = acc
    if len(long):
        ends = shingles.offsets[long + 1] - shingles.offsets[long]
        cut = np.searchsorted(np.cumsum(ends), np.arange(_CHUNK_SHINGLES, int(ends.sum()) + _CHUNK_SHINGLES,
                                                         _CHUNK_SHINGLES), side="right")
        lo = 0
        for hi in sorted_unique(np.concatenate([cut, [len(long)]])):
            hi = max(int(hi), lo + 1)
            if lo >= len(long):
                break
            texts = long[lo:hi]
            at = np.concatenate([np.arange(shingles.offsets[t], shingles.offsets[t + 1]) for t in texts])
            starts = np.concatenate([[0], np.cumsum(sizes[texts])[:-1]])
            out[texts] = np.minimum.reduceat(hashed[dense[at]], starts, axis=0)
            lo = hi
    return out


def band_keys(sigs: np.ndarray, settings: Settings) -> np.ndarray:
    """64-bit key of each band of each signature, an (n, bands) uint64 array; 0 marks a text
    without shingles (no real key is 0: keys are forced odd)."""
    n = len(sigs)
    r = settings.rows
    cube = sigs.reshape(n, settings.bands, r)
    key = _mix(np.arange(settings.bands, dtype=np.uint64) * _GOLDEN + np.uint64(settings.seed))[None, :].repeat(n, 0)
    tmp = np.empty_like(key)
    with np.errstate(over="ignore"):
        for c in range(r):
            # key = _mix(key * _GOLDEN + value), in place
            key *= _GOLDEN
            key += cube[:, :, c]
            _mix_in_place(key, tmp)
    key |= np.uint64(1)
    key[(sigs == EMPTY).all(axis=1)] = 0
    return key


def band_rows(ids: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (key, id) rows a per-unit task emits for the engine to group: one per band of
    each text with shingles."""
    ids = np.asarray(ids, dtype=np.int64)
    k = keys.ravel()
    i = np.repeat(ids, keys.shape[1])
    keep = k != 0
    return k[keep], i[keep]


def bucket_pairs(keys: np.ndarray, ids: np.ndarray, max_bucket: int) -> np.ndarray:
    """Candidate pairs ``(low id, high id)`` (an (m, 2) int64 array, sorted, distinct) from
    (band key, id) rows of any order: within each key, sorted by id, each id is paired with
    the first `max_bucket` ids before it. The result depends only on the set of rows."""
    keys = np.asarray(keys, dtype=np.uint64)
    ids = np.asarray(ids, dtype=np.int64)
    if not len(keys):
        return np.zeros((0, 2), dtype=np.int64)
    # only the rows of keys held by several rows can pair: those keys from one sort of the
    # keys alone, their rows found by a hash table of them (faster than a binary search
    # or a hash of every key: most keys are held by one row), then sorted by (key, id)
    sk = np.sort(keys)
    at = np.nonzero(pd.Series(keys, copy=False).isin(sk[1:][sk[1:] == sk[:-1]]).to_numpy())[0]
    if not len(at):
        return np.zeros((0, 2), dtype=np.int64)
    keys, ids = keys[at], ids[at]
    sub = np.lexsort((ids, keys))
    keys, ids = keys[sub], ids[sub]
    new = np.ones(len(keys), dtype=bool)
    new[1:] = (keys[1:] != keys[:-1]) | (ids[1:] != ids[:-1])  # the same id twice in a bucket
    keys, ids = keys[new], ids[new]
    start_flag = np.ones(len(keys), dtype=bool)
    start_flag[1:] = keys[1:] != keys[:-1]
    group_start = np.maximum.accumulate(np.where(start_flag, np.arange(len(keys)), 0))
    pos = np.arange(len(keys)) - group_start
    n_left = np.minimum(pos, max_bucket)
    right = np.repeat(np.arange(len(keys)), n_left)
    left = np.repeat(group_start, n_left) + (np.arange(len(right)) - np.repeat(np.cumsum(n_left) - n_left, n_left))
    lo, hi = ids[left], ids[right]  # lo < hi: ids sorted and distinct within a key
    order = np.lexsort((hi, lo))
    lo, hi = lo[order], hi[order]
    new = np.ones(len(lo), dtype=bool)
    new[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    return np.stack([lo[new], hi[new]], axis=1)


def pair_jaccard(shingles: Shingles, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Exact Jaccard index of the shingle sets of texts ``left[i]`` and ``right[i]`` (indexes
    into `shingles`; 0 when both are empty). Memory: the shingles of at most
    `_CHUNK_CANDIDATES` left texts at a time, whatever the number of candidates."""
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    if not len(left):
        return np.zeros(0)
    # dense shingle ids so that (text, shingle) fits one sorted int64 key; the pairs in
    # order of their right text, so that the searches of the right texts' keys walk the
    # table in order (cache-friendly, unlike searching in the candidates' order)
    lookup = shingles.lookup()
    step = _CHUNK_CANDIDATES
    order = np.argsort(right, kind="stable")
    left, right = left[order], right[order]
    out = np.empty(len(left))
    out[order] = np.concatenate([_pair_jaccard(shingles, lookup, left[a:a + step], right[a:a + step])
                                 for a in range(0, len(left), step)])
    return out


def _pair_jaccard(shingles: Shingles, lookup: tuple, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    table, dense, width = lookup
    sizes = shingles.sizes
    li = sizes[left]
    # every shingle of each left text, looked up in its right text
    pair_of = np.repeat(np.arange(len(left), dtype=np.int64), li)
    at = np.repeat(shingles.offsets[left], li) + (np.arange(len(pair_of)) - np.repeat(np.cumsum(li) - li, li))
    query = right[pair_of] * width + dense[at]
    pos = np.minimum(np.searchsorted(table, query), max(len(table) - 1, 0))
    hit = table[pos] == query if len(table) else np.zeros(len(query), dtype=bool)
    shared = np.bincount(pair_of[hit], minlength=len(left))
    union = li + sizes[right] - shared
    return np.divide(shared, union, out=np.zeros(len(left)), where=union > 0)


def components(n: int, pairs: np.ndarray) -> np.ndarray:
    """Connected components of ``n`` nodes (0..n-1) joined by `pairs`: per node the smallest
    node of its component (the same whatever the order of the pairs). Hooking and pointer
    jumping in numpy (Shiloach-Vishkin): every round hooks the larger label of each edge
    whose ends differ onto the smaller, then points every node at its root, so the roots
    fall by at least one a round (a few rounds for the near-duplicate graphs); not
    scipy's csgraph, whose import would cost every stage-3 worker more than graphs of
    a few thousand documents."""
    parent = np.arange(n, dtype=np.int64)
    if not len(pairs):
        return parent
    a, b = np.asarray(pairs[:, 0], dtype=np.int64), np.asarray(pairs[:, 1], dtype=np.int64)
    while True:
        la, lb = parent[a], parent[b]
        differ = la != lb
        if not differ.any():
            return parent
        np.minimum.at(parent, np.maximum(la, lb)[differ], np.minimum(la, lb)[differ])
        while True:  # labels only fall and stay in the component: the smallest node is its own
            jumped = parent[parent]
            if (jumped == parent).all():
                break
            parent = jumped


def near_duplicates(texts, settings: Settings, shingles: Shingles | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Near-duplicate pairs of a batch of texts: ``(pairs, jaccard)`` with ``pairs`` an
    (m, 2) array of text indexes (low, high) whose shingle Jaccard is >= the threshold."""
    sh = shingle_sets(texts, settings) if shingles is None else shingles
    keys = band_keys(signatures(sh, settings), settings)
    k, i = band_rows(np.arange(sh.n), keys)
    cand = bucket_pairs(k, i, settings.max_bucket)
    jac = pair_jaccard(sh, cand[:, 0], cand[:, 1])
    keep = jac >= settings.threshold
    return cand[keep], jac[keep]
