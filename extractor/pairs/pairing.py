"""Stage 2's logic as pure functions of ONE document's sentences (no Spark, no I/O).

Every pair lives inside one document: a marked pair is a sentence that opens with a
linking phrase and the previous sentence of its paragraph; every neutral strategy draws
inside one document. So all of pairing is a function of a document's sentences, and the
stage (`extractor.pairs.stage`) only runs these functions over
document-contiguous Arrow batches and does what is global: the per-corpus neutral quotas
(from the marked counts), identical pairs across documents, the write. Rules:
docs/pairs.md.

    doc = Document.from_rows(rows)                      # one document's sentences
    marked = marked_pairs(doc, matcher)                 # every candidate, with its rejection
    pools = neutral_pools(doc, matcher, marked)         # unused / marked premises / hypotheses
    cands = neutral_candidates(doc, pools, seed, mix)   # all five strategies, selection hashes

Cost is linear in the document's length (plus sorting each pool once by its hash):
one pass to annotate, one dictionary of locations, one walk per strategy.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from typing import Callable, Iterable, Sequence

import numpy as np

from extractor.hashing import mix_hash_array, pair_id, stable_hash
from extractor.pairs.matching import Matcher, recase_first_letter
from extractor.pairs.neutral import POOLS, STRATEGIES

# Why a marked candidate is dropped, in the order the rules apply (POS reasons follow,
# from pos_filter.REASONS; `duplicate_pair` is decided across documents by the stage).
MARKED_REASONS = ("hypothesis_short", "no_premise", "premise_short", "hypothesis_starts_with_phrase",
                  "premise_starts_with_phrase", "premise_equals_hypothesis", "duplicate_pair")
NEIGHBOURS = 3  # hash-rank offsets tried when pairing two pools inside a document
BIN_BITS = 12   # selection hashes are 63-bit: the top 12 bits give 4096 bins
# Salts of the hash orders: one per (strategy, role), one per strategy's selection.
_ORDER_SALT = {(s, r): stable_hash("order", s, r) for s in STRATEGIES for r in ("premise", "hypothesis")}
_SELECT_SALT = {s: stable_hash("select", s) for s in STRATEGIES}


@dataclass
class Document:
    """The sentences of one document, in (para_idx, sent_idx) order, as columns."""
    corpus: str | None
    genre: str | None
    lang: str | None
    doc_id: str
    section: list
    para_idx: list
    sent_idx: list
    text: list
    short: list

    def __len__(self) -> int:
        return len(self.text)

    @classmethod
    def from_rows(cls, rows: Sequence[dict], min_chars: int = 50) -> "Document":
        """From sentence rows (dicts with the `sentences/` columns; `short` computed from
        `min_chars` where absent), sorted by (para_idx, sent_idx)."""
        rows = sorted(rows, key=lambda r: (r["para_idx"], r["sent_idx"]))
        first = rows[0] if rows else {}
        return cls(corpus=first.get("corpus"), genre=first.get("genre"), lang=first.get("lang"),
                   doc_id=first.get("doc_id"), section=[r.get("section") for r in rows],
                   para_idx=[r["para_idx"] for r in rows], sent_idx=[r["sent_idx"] for r in rows],
                   text=[r.get("text") or "" for r in rows],
                   short=[bool(r["short"]) if r.get("short") is not None else len(r.get("text") or "") < min_chars
                          for r in rows])

    def ref(self, i: int) -> tuple:
        """The location of sentence i: (doc_id, section, para_idx, sent_idx) (`schemas.REF`)."""
        return (self.doc_id, self.section[i], self.para_idx[i], self.sent_idx[i])

    def paragraph(self, i: int) -> tuple:
        return (self.section[i], self.para_idx[i])

    @cached_property
    def previous(self) -> list:
        """`_previous` of the document, computed once (marked pairs and the adjacent
        strategy both need it)."""
        where = {(s, p, k): i for i, (s, p, k) in enumerate(zip(self.section, self.para_idx, self.sent_idx))}
        return [where.get((s, p, k - 1), -1) for s, p, k in zip(self.section, self.para_idx, self.sent_idx)]


@dataclass
class Pair:
    """One candidate pair of a document. `p`/`h` index the document's sentences; `reject`
    is None for a kept pair, else the first rule it fails."""
    premise: str
    hypothesis: str
    label: str
    source: str            # "marker" or the neutral strategy
    p: int
    h: int
    marker: str | None = None   # the phrase as written (marked pairs)
    phrase: str | None = None   # the phrase as the lexicon lists it (marked pairs)
    reject: str | None = None
    premise_stripped: bool = False  # the premise opened with a phrase that was removed
    select: int = 0         # selection hash (neutral candidates)

    def pair_id(self, doc: Document) -> str:
        return pair_id(doc.ref(self.p), doc.ref(self.h), self.premise, self.hypothesis, self.label)


# ---------------------------------------------------------------------------- text rules

def premise_text(sentence: str, matcher: Matcher) -> tuple[str | None, bool]:
    """The one premise rule, the same for every label: a premise never opens with a
    lexicon phrase. A phrase followed by its separator ("Prin urmare, ...") is removed and
    the first letter re-cased, as for hypotheses (RoNLI: phrases are removed from all
    examples); a sentence that still opens with a phrase after that, or opens with one
    without a separator ("However hard ..."), is no premise. Returns (text, stripped);
    text is None when the sentence cannot be a premise."""
    m, opens = matcher.annotate(sentence)
    if not opens:
        return sentence, False
    if m is None or matcher.starts_with_phrase(m.hypothesis):
        return None, False
    return m.hypothesis, True


def annotate(doc: Document, matcher: Matcher) -> tuple[list, list]:
    """Per sentence: the strict match (or None) and whether it opens with a phrase at all."""
    return matcher.annotate_all(doc.text)


def _previous(doc: Document) -> list:
    """Index of the previous sentence of the same paragraph (same section, para_idx and
    sent_idx - 1), or -1: one dictionary of locations, linear (once per document:
    `Document.previous`)."""
    return doc.previous


# ---------------------------------------------------------------------------- marked pairs

def marked_pairs(doc: Document, matcher: Matcher, annotations: tuple | None = None,
                 previous: list | None = None) -> list[Pair]:
    """Every marked candidate of the document with its first failing rule (`reject`), in
    sentence order. Rules in order: hypothesis_short, no_premise, premise_short,
    hypothesis_starts_with_phrase, premise_starts_with_phrase, premise_equals_hypothesis
    (POS reasons are added by `apply_pos`, `duplicate_pair` across documents)."""
    matches, _ = annotations or annotate(doc, matcher)
    prev = previous if previous is not None else _previous(doc)
    out = []
    for i, m in enumerate(matches):
        if m is None:
            continue
        j = prev[i]
        pair = Pair(premise=doc.text[j] if j >= 0 else "", hypothesis=m.hypothesis, label=m.label, source="marker",
                    p=j, h=i, marker=m.marker, phrase=m.phrase)
        if doc.short[i]:
            pair.reject = "hypothesis_short"
        elif j < 0:
            pair.reject = "no_premise"
        elif doc.short[j]:
            pair.reject = "premise_short"
        elif matcher.starts_with_phrase(m.hypothesis):
            pair.reject = "hypothesis_starts_with_phrase"
        else:
            premise, stripped = premise_text(doc.text[j], matcher)
            if premise is None:
                pair.reject = "premise_starts_with_phrase"
            else:
                pair.premise, pair.premise_stripped = premise, stripped
                if premise == pair.hypothesis:
                    pair.reject = "premise_equals_hypothesis"
        out.append(pair)
    return out


def pos_texts(pairs: Iterable[Pair]) -> list[str]:
    """The texts the POS filter must judge for these pairs (kept ones only), each once."""
    seen: dict = {}
    for pair in pairs:
        if pair.reject is None:
            seen.setdefault(pair.premise, None)
            seen.setdefault(pair.hypothesis, None)
    return list(seen)


def apply_pos(pairs: Iterable[Pair], verdict: Callable[[str], tuple]) -> None:
    """Sets `reject` of each kept pair to the POS reason of its hypothesis, else of its
    premise (`verdict(text) -> (ok, reason)`, see pos_filter.is_complete)."""
    for pair in pairs:
        if pair.reject is not None:
            continue
        ok, reason = verdict(pair.hypothesis)
        if not ok:
            pair.reject = reason
            continue
        ok, reason = verdict(pair.premise)
        if not ok:
            pair.reject = reason


# ---------------------------------------------------------------------------- neutral pools

@dataclass
class Pools:
    """Sentence indices and the texts each takes in a pair. `unused`: not short, not opening
    with a phrase, not part of a marked pair (by location or by text); marked premises and
    hypotheses: of the marked pairs that pass the text rules (before the POS filter, which
    judges neutral candidates on their own)."""
    unused: list = field(default_factory=list)
    marked_premise: list = field(default_factory=list)
    marked_hypothesis: list = field(default_factory=list)
    premise_text: dict = field(default_factory=dict)     # index -> text as a premise
    hypothesis_text: dict = field(default_factory=dict)  # index -> text as a hypothesis


def neutral_pools(doc: Document, matcher: Matcher, marked: Sequence[Pair], annotations: tuple | None = None) -> Pools:
    _, opens = annotations or annotate(doc, matcher)
    pools = Pools()
    kept = [p for p in marked if p.reject is None or p.reject.startswith("pos_")]
    used = {p.p for p in kept} | {p.h for p in kept}
    used_text = {doc.text[i] for i in used}
    for p in kept:
        if p.p not in pools.premise_text:
            pools.marked_premise.append(p.p)
            pools.premise_text[p.p] = p.premise
        if p.h not in pools.hypothesis_text:
            pools.marked_hypothesis.append(p.h)
            pools.hypothesis_text[p.h] = p.hypothesis
    for i, text in enumerate(doc.text):
        if doc.short[i] or opens[i] or i in used or text in used_text:
            continue
        pools.unused.append(i)
        pools.premise_text[i] = text
        pools.hypothesis_text[i] = recase_first_letter(text)
    return pools


def sentence_hashes(doc: Document, seed: int):
    """One 63-bit hash per sentence (numpy uint64 array) from its location and the seed:
    `stable_hash(doc_id, seed)` once per document, mixed with (para_idx, sent_idx)."""
    base = stable_hash(doc.doc_id, seed=seed)
    where = (np.asarray(doc.para_idx, dtype=np.uint64) << np.uint64(32)) ^ np.asarray(doc.sent_idx, dtype=np.uint64)
    return mix_hash_array(np.full(len(doc), base, dtype=np.uint64), where)


def _ordered(indices: list, hashes, salt: int) -> list:
    """The pool in the order of mix_hash(sentence hash, salt), ties by position."""
    if not indices:
        return []
    idx = np.asarray(indices, dtype=np.int64)
    keys = mix_hash_array(hashes[idx], salt)
    return idx[np.lexsort((idx, keys))].tolist()


def _ordered_pools(pools: list, hashes, salts: list) -> list:
    """`_ordered` of each pool (a list of sentence indices) with its salt, as int64 arrays:
    one hash and one sort for all of them (the pool's number is the first sort key)."""
    sizes = [len(p) for p in pools]
    total = sum(sizes)
    if not total:
        return [np.zeros(0, dtype=np.int64) for _ in pools]
    idx = np.fromiter(chain.from_iterable(pools), dtype=np.int64, count=total)
    which = np.repeat(np.arange(len(pools)), sizes)
    keys = mix_hash_array(hashes[idx], np.repeat(np.asarray(salts, dtype=np.uint64), sizes))
    idx = idx[np.lexsort((idx, keys, which))]
    ends = np.cumsum(sizes).tolist()
    return [idx[e - k:e] for e, k in zip(ends, sizes)]


def _pair_ranks(a, b, para, ptid, htid):
    """Premise rank i with hypothesis rank (i + d) mod n_b for the first d < NEIGHBOURS with
    another paragraph and another text; each hypothesis rank kept once (smallest d, then
    i). Returns (premise indices, hypothesis indices) in hypothesis-rank order."""
    na, nb = len(a), len(b)
    ar = np.arange(na)
    chosen = np.full(na, -1, dtype=np.int64)
    for d in range(NEIGHBOURS):
        j = b[(ar + d) % nb]
        ok = (chosen < 0) & (para[a] != para[j]) & (ptid[a] != htid[j])
        chosen[ok] = d
    ar = ar[chosen >= 0]
    d = chosen[chosen >= 0]
    br = (ar + d) % nb
    order = np.lexsort((ar, d, br))
    br_sorted = br[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = br_sorted[1:] != br_sorted[:-1]
    keep = order[first]
    return a[ar[keep]], b[br[keep]]


def _ids(keys: list) -> list:
    """A number per key, equal for equal keys (numbered by first occurrence)."""
    of = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    return list(map(of.__getitem__, keys))


_HIGH63 = np.uint64(0x7FFFFFFFFFFFFFFF)


def candidate_arrays(doc: Document, pools: Pools, seed: int, strategies: Iterable[str] = STRATEGIES,
                     hashes=None) -> dict:
    """{strategy: (premise indices, hypothesis indices, selection hashes)} as numpy arrays:
    the neutral candidates of `neutral_candidates` without building a Python object per
    candidate (pass 1 only needs their selection hashes, pass 2 the few under the cut).
    The pools of every strategy are hashed and sorted in one step, and the selection
    hashes of every strategy computed in one step (a document's arrays are small: numpy's
    cost per call, not per element, is what counts)."""
    hashes = hashes if hashes is not None else sentence_hashes(doc, seed)
    n = len(doc)
    para = np.asarray(_ids(list(zip(doc.section, doc.para_idx))), dtype=np.int64)
    ptext, htext = pools.premise_text, pools.hypothesis_text
    tid = _ids([*ptext.values(), *htext.values()])
    ptid = np.full(n, -1, dtype=np.int64)
    htid = np.full(n, -2, dtype=np.int64)
    if ptext:
        ptid[list(ptext)] = tid[:len(ptext)]
    if htext:
        htid[list(htext)] = tid[len(ptext):]
    pools_of = {"unused": pools.unused, "marked_premise": pools.marked_premise,
                "marked_hypothesis": pools.marked_hypothesis}
    strategies = list(strategies)
    drawn = [s for s in strategies if s in POOLS]
    ordered = _ordered_pools([pools_of[POOLS[s][r]] for s in drawn for r in (0, 1)], hashes,
                             [_ORDER_SALT[s, role] for s in drawn for role in ("premise", "hypothesis")])
    order_of = {s: (ordered[2 * k], ordered[2 * k + 1]) for k, s in enumerate(drawn)}
    found = []
    for strategy in strategies:
        if strategy == "adjacent_unmarked":
            u = np.asarray(pools.unused, dtype=np.int64)
            if not len(u):
                continue
            prev = np.asarray(_previous(doc), dtype=np.int64)
            in_unused = np.zeros(n + 1, dtype=bool)
            in_unused[u] = True
            pi = prev[u]
            ok = (pi >= 0) & in_unused[pi]
            ok &= ptid[pi] != htid[u]
            p_idx, h_idx = pi[ok], u[ok]
        elif strategy in order_of:
            a, b = order_of[strategy]
            if not len(a) or not len(b):
                continue
            p_idx, h_idx = _pair_ranks(a, b, para, ptid, htid)
        else:
            continue
        if len(p_idx):
            found.append((strategy, p_idx, h_idx))
    if not found:
        return {}
    p_all = np.concatenate([f[1] for f in found])
    h_all = np.concatenate([f[2] for f in found])
    sizes = [len(f[1]) for f in found]
    salts = np.repeat(np.asarray([_SELECT_SALT[f[0]] for f in found], dtype=np.uint64), sizes)
    with np.errstate(over="ignore"):
        sel = mix_hash_array(hashes[p_all] ^ ((hashes[h_all] << np.uint64(1)) & _HIGH63), salts)
    out, at = {}, 0
    for (strategy, p_idx, h_idx), k in zip(found, sizes):
        out[strategy] = (p_idx, h_idx, sel[at:at + k])
        at += k
    return out


def neutral_candidates(doc: Document, pools: Pools, seed: int, strategies: Iterable[str] = STRATEGIES,
                       hashes=None, max_bin: dict | None = None, arrays: dict | None = None) -> list[Pair]:
    """Neutral candidates of the given strategies (docs/pairs.md "Neutral pairs"):

    * both_random, first_random, second_random, marked_different_paragraphs: each pool
      ordered by a hash of (strategy, role, location, seed); premise number i is paired
      with hypothesis (i + d) mod n for the first d < NEIGHBOURS that lands in another
      paragraph with another text; each hypothesis kept once (smallest d, then i);
    * adjacent_unmarked: two consecutive unused sentences of one paragraph.

    Pairs whose two texts are equal are left out. Each candidate carries its selection
    hash (`select`), from both locations, the strategy and the seed. With `max_bin`
    ({strategy: bin}), only candidates whose `select_bin` is at most that bin. `arrays`:
    `candidate_arrays` of the document when already computed."""
    out: list[Pair] = []
    if arrays is None:
        arrays = candidate_arrays(doc, pools, seed, strategies, hashes)
    for strategy, (p_idx, h_idx, sel) in arrays.items():
        if max_bin is not None:
            keep = (sel >> (63 - BIN_BITS)).astype("int64") <= max_bin.get(strategy, -1)
            p_idx, h_idx, sel = p_idx[keep], h_idx[keep], sel[keep]
        for i, j, v in zip(p_idx.tolist(), h_idx.tolist(), sel.tolist()):
            out.append(Pair(premise=pools.premise_text[i], hypothesis=pools.hypothesis_text[j], label="neutral",
                            source=strategy, p=i, h=j, select=v))
    return out


def select_bin(select: int) -> int:
    """The 4096-bin slice of a selection hash (histograms and cuts of the neutral draw)."""
    return select >> (63 - BIN_BITS)


# ---------------------------------------------------------------------------- one document

@dataclass
class DocumentPairs:
    marked: list        # every marked candidate, `reject` set where dropped
    neutral: list       # neutral candidates (all strategies asked for)


def pair_document(doc: Document, matcher: Matcher, seed: int = 0, strategies: Iterable[str] = STRATEGIES,
                  verdict: Callable[[str], tuple] | None = None) -> DocumentPairs:
    """All of a document's pairing: marked candidates with their rejections (POS included
    when `verdict` is given) and every neutral candidate of `strategies` (not yet
    POS-checked or drawn: the draw is per corpus, see the stage)."""
    ann = annotate(doc, matcher)
    prev = _previous(doc)
    marked = marked_pairs(doc, matcher, ann, prev)
    if verdict is not None:
        apply_pos(marked, verdict)
    pools = neutral_pools(doc, matcher, marked, ann)
    return DocumentPairs(marked=marked, neutral=neutral_candidates(doc, pools, seed, strategies))
