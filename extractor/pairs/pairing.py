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
from itertools import chain, compress, repeat
from operator import eq, itemgetter, not_
from typing import Any, Callable, Iterable, Sequence, TypeVar

import numpy as np

from extractor.core.hashing import mix_hash_array, pair_id, stable_hash
from extractor.pairs import filters
from extractor.pairs.filters import MARKED_REASONS, premise_text  # noqa: F401  (re-exported for callers)
from extractor.pairs.matching import Matcher, recase_first_letter
from extractor.pairs.neutral import POOLS, STRATEGIES

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
        first: Any = rows[0] if rows else {}  # a sentence row (untyped dict)
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
        """Index of the previous sentence of the same paragraph (same section, para_idx
        and sent_idx - 1), or -1, per sentence: one dictionary of locations, computed once
        (marked pairs and the adjacent strategy both need it)."""
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

def annotate(doc: Document, matcher: Matcher) -> tuple[list, list]:
    """Per sentence: the strict match (or None) and whether it opens with a phrase at all."""
    return matcher.annotate_all(doc.text)


# ---------------------------------------------------------------------------- marked pairs

def marked_pairs(doc: Document, matcher: Matcher, annotations: tuple | None = None,
                 previous: list | None = None) -> list[Pair]:
    """Every marked candidate of the document with its first failing rule (`reject`), in
    sentence order: the rules of `extractor.pairs.filters.FILTERS` in their order (the
    optional ones the lexicon's run turned on, `Lexicon.pair_filters`; POS reasons are
    added by `apply_pos`, `duplicate_pair` across documents)."""
    matches, _ = annotations or annotate(doc, matcher)
    prev = previous if previous is not None else doc.previous
    rules = filters.active(matcher.lexicon.pair_filters)
    out = []
    for i, m in enumerate(matches):
        if m is None:
            continue
        j = prev[i]
        pair = Pair(premise=doc.text[j] if j >= 0 else "", hypothesis=m.hypothesis, label=m.label, source="marker",
                    p=j, h=i, marker=m.marker, phrase=m.phrase)
        candidate = filters.Candidate(doc, j, i, m, matcher)
        for rule in rules:
            assert rule.drops is not None  # `active` keeps the rules applied here
            verdict = rule.drops(candidate)
            if verdict:
                pair.reject = verdict if isinstance(verdict, str) else rule.name
                break
        made = candidate.premise_rule
        if made is not None and made[0] is not None:  # the premise rule ran and made a premise
            pair.premise, pair.premise_stripped = made[0], made[1]
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


def as_hypothesis(text: str) -> str:
    """An unused sentence as a neutral hypothesis: `recase_first_letter`, not called for a
    text that opens with an upper-case character (most sentences)."""
    return text if text[:1].isupper() else recase_first_letter(text)


def marked_members(doc: Document, marked: Sequence[Pair]) -> tuple[dict, dict, list[int]]:
    """The pool rule for a document's marked pairs: those that pass the text rules (the POS
    filter's and the label filters' rejects kept: the POS filter judges neutral candidates on
    their own, and the neutral candidates do not depend on the label filters) give the marked
    premises and hypotheses, {sentence: text it takes}, each sentence once in order of
    first use; and the sentences no `unused` pool may take, in order: those pairs' sentences
    and every sentence with the text of one of them. `neutral_pools` (one document) and
    `pair_batch` (a batch, as arrays) both apply it."""
    premises: dict = {}
    hypotheses: dict = {}
    for p in marked:
        if p.reject is None or p.reject.startswith(filters.POOLED_PREFIXES):
            premises.setdefault(p.p, p.premise)
            hypotheses.setdefault(p.h, p.hypothesis)
    used = premises.keys() | hypotheses.keys()
    used_text = {doc.text[i] for i in used}
    taken = [i for i, text in enumerate(doc.text) if i in used or text in used_text] if used else []
    return premises, hypotheses, taken


def neutral_pools(doc: Document, matcher: Matcher, marked: Sequence[Pair], annotations: tuple | None = None) -> Pools:
    _, opens = annotations or annotate(doc, matcher)
    premises, hypotheses, marked_taken = marked_members(doc, marked)
    pools = Pools(marked_premise=list(premises), marked_hypothesis=list(hypotheses),
                  premise_text=dict(premises), hypothesis_text=dict(hypotheses))
    taken = set(marked_taken)
    rules = filters.sentence_rules(matcher.lexicon.pair_filters)
    for i, text in enumerate(doc.text):
        if doc.short[i] or opens[i] or i in taken or not all(rule(text) for rule in rules):
            continue
        pools.unused.append(i)
        pools.premise_text[i] = text
        pools.hypothesis_text[i] = as_hypothesis(text)
    return pools


def _pair_ranks(a, wa, b, wb, ndocs: int, para, ptid, htid):
    """In each document, premise rank i with hypothesis rank (i + d) mod n_b for the first
    d < NEIGHBOURS with another paragraph and another text; each hypothesis rank kept once
    (smallest d, then i). `a`/`b`: the ordered premise and hypothesis pools of the batch,
    grouped by document (`wa`/`wb`: the document of each). Returns (documents, premise
    indices, hypothesis indices), by document, then hypothesis rank."""
    na = np.bincount(wa, minlength=ndocs)
    nb = np.bincount(wb, minlength=ndocs)
    a_start = np.concatenate(([0], np.cumsum(na)[:-1]))
    b_start = np.concatenate(([0], np.cumsum(nb)[:-1]))
    ar = np.arange(len(a), dtype=np.int64) - a_start[wa]
    live = nb[wa] > 0
    a, wa, ar = a[live], wa[live], ar[live]
    n_b, b0 = nb[wa], b_start[wa]
    chosen = np.full(len(a), -1, dtype=np.int64)
    for step in range(NEIGHBOURS):
        j = b[b0 + (ar + step) % n_b]
        ok = (chosen < 0) & (para[a] != para[j]) & (ptid[a] != htid[j])
        chosen[ok] = step
    hit = chosen >= 0
    a, wa, ar, d, n_b, b0 = a[hit], wa[hit], ar[hit], chosen[hit], n_b[hit], b0[hit]
    br = (ar + d) % n_b
    order = np.lexsort((ar, d, br, wa))
    wa_sorted, br_sorted = wa[order], br[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (br_sorted[1:] != br_sorted[:-1]) | (wa_sorted[1:] != wa_sorted[:-1])
    keep = order[first]
    return wa[keep], a[keep], b[b0[keep] + br[keep]]


_HIGH63 = np.uint64(0x7FFFFFFFFFFFFFFF)


def candidate_arrays(doc: Document, pools: Pools, seed: int, strategies: Iterable[str] = STRATEGIES,
                     hashes=None) -> dict:
    """{strategy: (premise indices, hypothesis indices, selection hashes)} as numpy arrays:
    the neutral candidates of `neutral_candidates` without building a Python object per
    candidate (pass 1 only needs their selection hashes, pass 2 the few under the cut).
    Strategies without a candidate are left out. `batch_candidates` over one document."""
    cands = batch_candidates([doc], [pools], seed, strategies, hashes)
    out = {}
    for k, strategy in enumerate(cands.strategies):
        mine = cands.strategy == k
        if mine.any():
            out[strategy] = (cands.p[mine], cands.h[mine], cands.select[mine])
    return out


@dataclass
class Candidates:
    """The neutral candidates of a batch of documents as parallel numpy arrays, in
    document order, then the order of the strategies asked for, then each strategy's own
    order (that of `neutral_candidates` for one document): `doc` (index into the batch),
    `strategy` (index into `strategies`), `p`/`h` (sentence indices in their document) and
    `select` (the selection hash, uint64)."""
    strategies: list
    doc: np.ndarray
    strategy: np.ndarray
    p: np.ndarray
    h: np.ndarray
    select: np.ndarray

    def bins(self) -> np.ndarray:
        """`select_bin` of each candidate (int64)."""
        return (self.select >> np.uint64(63 - BIN_BITS)).astype(np.int64)


def batch_candidates(docs: Sequence[Document], pools: Sequence[Pools], seed: int,
                     strategies: Iterable[str] = STRATEGIES, hashes=None) -> Candidates:
    """The neutral candidates (`neutral_candidates`, as arrays) of every document of a
    batch, in one set of numpy steps per strategy instead of one per document: a document
    holds a few dozen sentences, so numpy's cost per call, not per element, is what counts.
    (Pass 1 builds the same arrays without a `Pools` per document: `pair_batch`.)

    Sentences are numbered across the batch (sentence i of document k is
    `offset[k] + i`). Paragraph and text numbers are numbered across the batch as well:
    they are only ever compared between two sentences of one document. Every sort has
    the document as its first key, so each document's candidates come out exactly as they
    would alone. `hashes`: the documents' `sentence_hashes`, concatenated, when known."""
    layout = _Layout(docs)
    n, starts = layout.n, layout.starts
    ptid = np.full(n, -1, dtype=np.int64)
    htid = np.full(n, -2, dtype=np.int64)
    where, values = [], []
    for attr in ("premise_text", "hypothesis_text"):
        got = [getattr(pl, attr) for pl in pools]
        sizes = np.fromiter(map(len, got), dtype=np.int64, count=len(docs))
        local = np.fromiter(chain.from_iterable(got), dtype=np.int64, count=int(sizes.sum()))
        where.append(local + np.repeat(starts, sizes))
        values.append(list(chain.from_iterable(g.values() for g in got)))
    _text_numbers(ptid, htid, where, values)
    members = {}
    for name in ("unused", "marked_premise", "marked_hypothesis"):
        lists = [getattr(pl, name) for pl in pools]
        sizes = np.fromiter(map(len, lists), dtype=np.int64, count=len(docs))
        local = np.fromiter(chain.from_iterable(lists), dtype=np.int64, count=int(sizes.sum()))
        which = np.repeat(np.arange(len(docs), dtype=np.int64), sizes)
        members[name] = (local + starts[which], which)
    return _candidates(layout, seed, list(strategies), ptid, htid, members, layout.previous(), hashes)


class _Layout:
    """A batch of documents' sentences numbered across the batch: `starts` (the first
    sentence of each document), `which` and `first` (per sentence: its document, and its
    document's first sentence), `n`; `para_idx` and `para` (paragraph numbers, equal for
    equal (section, para_idx): only compared inside a document), built on first use."""

    def __init__(self, docs: Sequence[Document]):
        self.docs = docs
        self.ndocs = ndocs = len(docs)
        self.lengths = np.fromiter(map(len, docs), dtype=np.int64, count=ndocs)
        offsets = np.zeros(ndocs + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=offsets[1:])
        self.starts, self.n = offsets[:-1], int(offsets[-1])
        self.which = np.repeat(np.arange(ndocs, dtype=np.int64), self.lengths)
        self.first = self.starts[self.which]

    @cached_property
    def para_idx(self) -> np.ndarray:
        return np.fromiter(chain.from_iterable(d.para_idx for d in self.docs), dtype=np.int64, count=self.n)

    @cached_property
    def sent_idx(self) -> np.ndarray:
        return np.fromiter(chain.from_iterable(d.sent_idx for d in self.docs), dtype=np.int64, count=self.n)

    @cached_property
    def sections(self) -> list:
        return list(chain.from_iterable(d.section for d in self.docs))

    @cached_property
    def para(self) -> np.ndarray:
        # in C loops (dicts and `map`)
        section_of = {s: i for i, s in enumerate(dict.fromkeys(self.sections))}
        return self.para_idx + np.fromiter(map(section_of.__getitem__, self.sections), dtype=np.int64,
                                           count=self.n) * (int(self.para_idx.max()) + 1 if self.n else 1)

    def hashes(self, seed: int) -> np.ndarray:
        """`sentence_hashes` of the documents, concatenated."""
        bases = np.fromiter((stable_hash(d.doc_id, seed=seed) for d in self.docs), dtype=np.uint64, count=self.ndocs)
        return mix_hash_array(np.repeat(bases, self.lengths),
                              (self.para_idx.astype(np.uint64) << np.uint64(32)) ^ self.sent_idx.astype(np.uint64))

    def previous(self) -> np.ndarray:
        """`Document.previous` of every document, numbered across the batch (-1: none), in
        numpy: sentence i - 1 when it is (section, para_idx, sent_idx - 1) of the same
        document, which is the dictionary's answer for a document in (para_idx, sent_idx)
        order without a repeated (para_idx, sent_idx); other documents ask the dictionary."""
        n, which, para, sent = self.n, self.which, self.para_idx, self.sent_idx
        prev = np.full(n, -1, dtype=np.int64)
        if n < 2:
            odd = np.zeros(0, dtype=np.int64)
        else:
            same_doc = which[1:] == which[:-1]
            same_para = para[1:] == para[:-1]
            step = sent[1:] - sent[:-1]
            same_section = np.fromiter(map(eq, self.sections[1:], self.sections[:-1]), dtype=bool, count=n - 1)
            follows = same_doc & same_para & (step == 1) & same_section
            prev[1:][follows] = np.flatnonzero(follows)
            odd = np.unique(which[1:][same_doc & ((para[1:] < para[:-1]) | (same_para & (step <= 0)))])
        for d in odd.tolist():  # out of order, or a location given twice
            s = int(self.starts[d])
            local = np.asarray(self.docs[d].previous, dtype=np.int64)
            prev[s:s + len(local)] = np.where(local >= 0, local + s, -1)
        return prev


def _text_numbers(ptid: np.ndarray, htid: np.ndarray, where: list, values: list) -> None:
    """Text numbers, equal for equal texts (a premise's text against a hypothesis'): at
    `where[0]` the premise texts `values[0]`, at `where[1]` the hypothesis texts `values[1]`.
    Only a premise's number is ever compared with a hypothesis' (never two premises' or two
    hypotheses'): a premise text is numbered by its position (a repeated one by its last);
    a hypothesis text that is a premise text (most are the same string) takes that number,
    any other -2, which no premise has. In C loops (`dict(zip)`, `map`)."""
    premises, hypotheses = values
    text_of = dict(zip(premises, range(len(premises))))
    if len(text_of) == len(premises):
        ptid[where[0]] = np.arange(len(premises), dtype=np.int64)
    else:
        ptid[where[0]] = np.fromiter(map(text_of.__getitem__, premises), dtype=np.int64, count=len(premises))
    htid[where[1]] = np.fromiter(map(text_of.get, hypotheses, repeat(-2)), dtype=np.int64, count=len(hypotheses))


def _candidates(layout: _Layout, seed: int, strategies: list, ptid, htid, members: dict, prev, hashes=None
                ) -> Candidates:
    """The strategies' candidates of a batch from its arrays, sentences numbered across the
    batch: text numbers (`ptid`, `htid`), the pools (`members`: {pool: (sentence numbers,
    document of each)}, each document's members ascending), the previous sentence of each
    (`prev`)."""
    ndocs, n, starts = layout.ndocs, layout.n, layout.starts
    if hashes is None:
        hashes = layout.hashes(seed)
    para = layout.para

    def ordered(name: str, salt: int):
        """A pool in the order of (document, mix_hash(sentence hash, salt), position)."""
        idx, which = members[name]
        order = np.lexsort((idx, mix_hash_array(hashes[idx], salt), which))
        return idx[order], which[order]

    found = []  # (strategy number, documents, premises, hypotheses), sentences numbered across the batch
    for k, strategy in enumerate(strategies):
        if strategy == "adjacent_unmarked":
            u, which = members["unused"]
            if not len(u):
                continue
            in_unused = np.zeros(n + 1, dtype=bool)
            in_unused[u] = True
            pi = prev[u]
            ok = (pi >= 0) & in_unused[pi]
            ok &= ptid[pi] != htid[u]
            found.append((k, which[ok], pi[ok], u[ok]))
        elif strategy in POOLS:
            a, wa = ordered(POOLS[strategy][0], _ORDER_SALT[strategy, "premise"])
            b, wb = ordered(POOLS[strategy][1], _ORDER_SALT[strategy, "hypothesis"])
            if not len(a) or not len(b):
                continue
            found.append((k, *_pair_ranks(a, wa, b, wb, ndocs, para, ptid, htid)))
    if not found:
        return Candidates(strategies, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64),
                          np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.uint64))
    which = np.concatenate([f[1] for f in found])
    order = np.argsort(which, kind="stable")  # document-major; strategies, then each one's order, inside
    which = which[order]
    kind = np.repeat(np.asarray([f[0] for f in found], dtype=np.int64), [len(f[1]) for f in found])[order]
    p_all = np.concatenate([f[2] for f in found])[order]
    h_all = np.concatenate([f[3] for f in found])[order]
    salts = np.asarray([_SELECT_SALT.get(s, 0) for s in strategies], dtype=np.uint64)[kind]
    with np.errstate(over="ignore"):
        sel = mix_hash_array(hashes[p_all] ^ ((hashes[h_all] << np.uint64(1)) & _HIGH63), salts)
    return Candidates(strategies, which, kind, p_all - starts[which], h_all - starts[which], sel)


@dataclass
class BatchPairs:
    """`pair_batch`'s result: per document its marked candidates (`marked_pairs`), the
    neutral candidates of the batch (`batch_candidates`), and the texts a neutral
    candidate takes (`premise_text`, `hypothesis_text` of sentence i of document d)."""
    marked: list
    candidates: Candidates
    texts: list
    starts: list
    premise_override: dict
    hypothesis_override: dict

    def premise_text(self, d: int, i: int) -> str:
        g = self.starts[d] + i
        return self.premise_override.get(g, self.texts[g])

    def hypothesis_text(self, d: int, i: int) -> str:
        g = self.starts[d] + i
        text = self.hypothesis_override.get(g)
        return as_hypothesis(self.texts[g]) if text is None else text


def pair_batch(docs: Sequence[Document], matcher: Matcher, seed: int, strategies: Iterable[str] = STRATEGIES
               ) -> BatchPairs:
    """`marked_pairs` of each document and `batch_candidates` of the batch with the pools
    of `neutral_pools`, computed over the batch at once (pass 1: every sentence of the
    corpus): one `annotate_all` over the batch's sentences, the previous sentences in numpy
    (`_Layout.previous`), `marked_pairs` only for the documents with a match, and the pools
    and text numbers as arrays, without a `Pools` per document. The same results as the
    per-document functions (tests/test_pairing_batch.py). The pools do not depend on the POS
    filter: `neutral_pools` keeps the pairs it rejects."""
    layout = _Layout(docs)
    n, starts, which = layout.n, layout.starts, layout.which
    texts = list(chain.from_iterable(d.text for d in docs))
    matches, opens = matcher.annotate_all(texts)
    prev = layout.previous()
    marked: list = [[] for _ in docs]
    unused = ~np.fromiter(chain.from_iterable(d.short for d in docs), dtype=bool, count=n)
    unused &= ~np.fromiter(opens, dtype=bool, count=n)
    for rule in filters.sentence_rules(matcher.lexicon.pair_filters):
        unused &= np.fromiter(map(rule, texts), dtype=bool, count=n)
    premise_override, hypothesis_override = {}, {}
    marked_premise, marked_hypothesis = [], []
    hits = np.fromiter(compress(range(n), matches), dtype=np.int64)
    for d in np.unique(which[hits]).tolist():
        doc, s = docs[d], int(starts[d])
        e = s + len(doc)
        local = prev[s:e]
        marked[d] = pairs = marked_pairs(doc, matcher, (matches[s:e], opens[s:e]),
                                         np.where(local >= 0, local - s, -1).tolist())
        premises, hypotheses, taken = marked_members(doc, pairs)
        for i, text in premises.items():
            marked_premise.append(s + i)
            premise_override[s + i] = text
        for i, text in hypotheses.items():
            marked_hypothesis.append(s + i)
            hypothesis_override[s + i] = text
        unused[[s + i for i in taken]] = False
    members: dict[str, Any] = {"unused": np.flatnonzero(unused)}
    members["marked_premise"] = np.asarray(marked_premise, dtype=np.int64)
    members["marked_hypothesis"] = np.asarray(marked_hypothesis, dtype=np.int64)
    members = {name: (idx, which[idx]) for name, idx in members.items()}
    # the texts a sentence takes: as written, a marked premise stripped, a hypothesis re-cased
    free = members["unused"][0].tolist()
    premise_values = list(map(texts.__getitem__, free))
    hypothesis_values = list(premise_values)
    for k in compress(range(len(free)), map(not_, map(str.isupper, map(_FIRST, premise_values)))):
        hypothesis_values[k] = recase_first_letter(premise_values[k])
    ptid = np.full(n, -1, dtype=np.int64)
    htid = np.full(n, -2, dtype=np.int64)
    _text_numbers(ptid, htid,
                  [np.asarray(free + marked_premise, dtype=np.int64),
                   np.asarray(free + marked_hypothesis, dtype=np.int64)],
                  [premise_values + [premise_override[g] for g in marked_premise],
                   hypothesis_values + [hypothesis_override[g] for g in marked_hypothesis]])
    cands = _candidates(layout, seed, list(strategies), ptid, htid, members, prev)
    return BatchPairs(marked, cands, texts, starts.tolist(), premise_override, hypothesis_override)


_FIRST = itemgetter(slice(0, 1))


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
            keep = select_bin(sel).astype("int64") <= max_bin.get(strategy, -1)
            p_idx, h_idx, sel = p_idx[keep], h_idx[keep], sel[keep]
        for i, j, v in zip(p_idx.tolist(), h_idx.tolist(), sel.tolist()):
            out.append(Pair(premise=pools.premise_text[i], hypothesis=pools.hypothesis_text[j], label="neutral",
                            source=strategy, p=i, h=j, select=v))
    return out


SelectHash = TypeVar("SelectHash", int, np.ndarray)


def select_bin(select: SelectHash) -> SelectHash:
    """The 4096-bin slice of a selection hash, or of each of a numpy array of them
    (histograms and cuts of the neutral draw)."""
    return select >> (63 - BIN_BITS)


# ---------------------------------------------------------------------------- one document

@dataclass
class DocumentPairs:
    marked: list        # every marked candidate, `reject` set where dropped
    neutral: list       # neutral candidates (all strategies asked for)


def pair_document(doc: Document, matcher: Matcher, seed: int = 0, strategies: Iterable[str] = STRATEGIES,
                  verdict: Callable[[str], tuple] | None = None, max_bin: dict | None = None) -> DocumentPairs:
    """All of a document's pairing: marked candidates with their rejections (POS included
    when `verdict` is given) and every neutral candidate of `strategies` (not yet
    POS-checked or drawn: the draw is per corpus, see the stage); with `max_bin`
    ({strategy: bin}), only the neutral candidates at or below their strategy's bin (pass 2)."""
    ann = annotate(doc, matcher)
    prev = doc.previous
    marked = marked_pairs(doc, matcher, ann, prev)
    if verdict is not None:
        apply_pos(marked, verdict)
    pools = neutral_pools(doc, matcher, marked, ann)
    return DocumentPairs(marked=marked, neutral=neutral_candidates(doc, pools, seed, strategies, max_bin=max_bin))
