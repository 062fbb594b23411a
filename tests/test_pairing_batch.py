"""`pairing.batch_candidates` (every document of a batch in one set of numpy steps) against
the per-document computation it replaced, kept here as the reference, on documents of
real Romanian prose (the ELTeC novels of ../shared/data)."""
from __future__ import annotations

from dataclasses import replace
from itertools import chain

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extractor.core.hashing import mix_hash_array, stable_hash
from extractor.lexicon.lexicon import load_lexicon
from extractor.pairs import neutral as nt
from extractor.pairs.matching import matcher_for
from extractor.pairs.pairing import (_HIGH63, _ORDER_SALT, _SELECT_SALT, NEIGHBOURS, POOLS, Document,
                                     annotate, batch_candidates, candidate_arrays, marked_pairs,
                                     _text_numbers, neutral_pools, pair_batch)
from tests.pairs_reference import reference_pairs


# ---------------------------------------------------------------------------- the reference: one document at a time

def _ids(keys: list) -> list:
    of = {k: i for i, k in enumerate(dict.fromkeys(keys))}
    return list(map(of.__getitem__, keys))


def _ordered_pools(pools, hashes, salts):
    sizes = [len(p) for p in pools]
    if not sum(sizes):
        return [np.zeros(0, dtype=np.int64) for _ in pools]
    idx = np.fromiter(chain.from_iterable(pools), dtype=np.int64, count=sum(sizes))
    which = np.repeat(np.arange(len(pools)), sizes)
    keys = mix_hash_array(hashes[idx], np.repeat(np.asarray(salts, dtype=np.uint64), sizes))
    idx = idx[np.lexsort((idx, keys, which))]
    ends = np.cumsum(sizes).tolist()
    return [idx[e - k:e] for e, k in zip(ends, sizes)]


def _pair_ranks(a, b, para, ptid, htid):
    na, nb = len(a), len(b)
    ar = np.arange(na)
    chosen = np.full(na, -1, dtype=np.int64)
    for d in range(NEIGHBOURS):
        j = b[(ar + d) % nb]
        ok = (chosen < 0) & (para[a] != para[j]) & (ptid[a] != htid[j])
        chosen[ok] = d
    ar, d = ar[chosen >= 0], chosen[chosen >= 0]
    br = (ar + d) % nb
    order = np.lexsort((ar, d, br))
    first = np.ones(len(order), dtype=bool)
    first[1:] = br[order][1:] != br[order][:-1]
    keep = order[first]
    return a[ar[keep]], b[br[keep]]


def reference_arrays(doc: Document, pools, seed: int, strategies) -> dict:
    base = stable_hash(doc.doc_id, seed=seed)
    where = (np.asarray(doc.para_idx, dtype=np.uint64) << np.uint64(32)) ^ np.asarray(doc.sent_idx, dtype=np.uint64)
    hashes = mix_hash_array(np.full(len(doc), base, dtype=np.uint64), where)
    n = len(doc)
    para = np.asarray(_ids(list(zip(doc.section, doc.para_idx))), dtype=np.int64)
    ptext, htext = pools.premise_text, pools.hypothesis_text
    tid = _ids([*ptext.values(), *htext.values()])
    ptid, htid = np.full(n, -1, dtype=np.int64), np.full(n, -2, dtype=np.int64)
    if ptext:
        ptid[list(ptext)] = tid[:len(ptext)]
    if htext:
        htid[list(htext)] = tid[len(ptext):]
    pools_of = {"unused": pools.unused, "marked_premise": pools.marked_premise,
                "marked_hypothesis": pools.marked_hypothesis}
    drawn = [s for s in strategies if s in POOLS]
    ordered = _ordered_pools([pools_of[POOLS[s][r]] for s in drawn for r in (0, 1)], hashes,
                             [_ORDER_SALT[s, role] for s in drawn for role in ("premise", "hypothesis")])
    order_of = {s: (ordered[2 * k], ordered[2 * k + 1]) for k, s in enumerate(drawn)}
    out = {}
    for strategy in strategies:
        if strategy == "adjacent_unmarked":
            u = np.asarray(pools.unused, dtype=np.int64)
            if not len(u):
                continue
            prev = np.asarray(doc.previous, dtype=np.int64)
            in_unused = np.zeros(n + 1, dtype=bool)
            in_unused[u] = True
            pi = prev[u]
            ok = (pi >= 0) & in_unused[pi] & (ptid[pi] != htid[u])
            p_idx, h_idx = pi[ok], u[ok]
        else:
            a, b = order_of[strategy]
            if not len(a) or not len(b):
                continue
            p_idx, h_idx = _pair_ranks(a, b, para, ptid, htid)
        if len(p_idx):
            with np.errstate(over="ignore"):
                sel = mix_hash_array(hashes[p_idx] ^ ((hashes[h_idx] << np.uint64(1)) & _HIGH63),
                                     _SELECT_SALT[strategy])
            out[strategy] = (p_idx, h_idx, sel)
    return out


# ---------------------------------------------------------------------------- real documents

PHRASES = ("Prin urmare, ", "Așadar, ", "Pe de altă parte, ", "Cu alte cuvinte, ", "Astfel, ")


@pytest.fixture(scope="module")
def novel_documents():
    return novel_docs()


def novel_docs(limit: int = 1500) -> list[Document]:
    """Documents of 1-12 paragraphs of four Romanian novels (sentences cut at ". ",
    dialogue lines as paragraphs), with repeated sentences, two sections per document now
    and then, and a linking phrase put before one sentence in twelve ("Prin urmare, ...":
    the novels have few of their own): what pass 1 meets in a sentences table."""
    from tests.conftest import shared_file

    paras = []
    for path in sorted(shared_file("text/eltec-rom-20").glob("*.txt"))[:4]:
        paras += [p.strip() for p in path.read_text(encoding="utf-8").split("\n") if p.strip()]
    rng = np.random.default_rng(7)
    docs, at, k = [], 0, 0
    while at < len(paras) and k < limit:
        size = int(rng.integers(1, 13))
        text, section, para_idx, sent_idx = [], [], [], []
        for p, para in enumerate(paras[at:at + size]):
            for s, sentence in enumerate(x.strip() + "." for x in para.split(". ") if x.strip()):
                if s and rng.random() < 1 / 12:
                    sentence = PHRASES[int(rng.integers(len(PHRASES)))] + sentence[:1].lower() + sentence[1:]
                text.append(sentence)
                section.append("Intro" if p < size // 2 else "Capitolul 2")
                para_idx.append(p if rng.random() > 0.1 else 0)  # now and then a para_idx shared by two sections
                sent_idx.append(s)
        at += size
        if not text:
            continue
        order = sorted(range(len(text)), key=lambda i: (para_idx[i], sent_idx[i]))
        docs.append(Document(corpus="ro-novels", genre="literature", lang="ro", doc_id=f"novel:{k}",
                             section=[section[i] for i in order], para_idx=[para_idx[i] for i in order],
                             sent_idx=[sent_idx[i] for i in order], text=[text[i] for i in order],
                             short=[len(text[i]) < 50 for i in order]))
        k += 1
    return docs


@pytest.mark.parametrize("strategies", [list(nt.STRATEGIES), ["adjacent_unmarked", "second_random"],
                                        ["marked_different_paragraphs"]])
def test_batch_candidates_equal_the_per_document_reference_on_romanian_novels(novel_documents, strategies):
    matcher = matcher_for(load_lexicon("ro"))
    pools = []
    for doc in novel_documents:
        ann = annotate(doc, matcher)
        pools.append(neutral_pools(doc, matcher, marked_pairs(doc, matcher, ann, doc.previous), ann))
    assert sum(len(p.marked_premise) for p in pools) > 200
    for cut in (len(novel_documents), 97):  # one batch, and batches of 97 documents
        got = []
        for start in range(0, len(novel_documents), cut):
            cands = batch_candidates(novel_documents[start:start + cut], pools[start:start + cut], 5, strategies)
            assert (np.diff(cands.doc) >= 0).all()
            got += [(start + d, cands.strategies[s], p, h, v) for d, s, p, h, v in
                    zip(cands.doc.tolist(), cands.strategy.tolist(), cands.p.tolist(), cands.h.tolist(),
                        cands.select.tolist())]
        expected = []
        for d, (doc, pl) in enumerate(zip(novel_documents, pools)):
            for strategy, (p, h, v) in reference_arrays(doc, pl, 5, strategies).items():
                expected += [(d, strategy, *x) for x in zip(p.tolist(), h.tolist(), v.tolist())]
        assert len(expected) > 50 and got == expected, len(expected)
    one = candidate_arrays(novel_documents[3], pools[3], 5, strategies)
    ref = reference_arrays(novel_documents[3], pools[3], 5, strategies)
    assert list(one) == list(ref) and all((one[s][i] == ref[s][i]).all() for s in ref for i in range(3))


def test_batch_of_no_document_and_of_documents_without_candidates():
    empty = batch_candidates([], [], 0)
    assert len(empty.doc) == 0 and empty.select.dtype == np.uint64
    matcher = matcher_for(load_lexicon("ro"))
    doc = Document(corpus="c", genre="g", lang="ro", doc_id="d", section=["S"], para_idx=[0], sent_idx=[0],
                   text=["O singură propoziție destul de lungă cât să nu fie prea scurtă aici."], short=[False])
    pools = neutral_pools(doc, matcher, [], annotate(doc, matcher))
    got = batch_candidates([doc, doc], [pools, pools], 0)
    assert len(got.doc) == 0


def test_bounded_strategies_come_early_so_pass_two_is_left_out(tmp_path, monkeypatch):
    """The strategies that draw from the marked pairs (first_random, second_random,
    marked_different_paragraphs) have no more candidates than marked pairs: pass 1 emits
    them all, so their cuts far above EARLY_BINS need no pass 2 (which reads every sentence
    file again). Same pairs and stats as with pass 2 (EARLY_BINS 0), on the novels."""
    from extractor.pairs import corpus, sentence_passes as bt
    from extractor.pairs import stage as ps
    from tests.test_pairs_stage import write_sentences

    rows = [(d.corpus, d.genre, d.lang, d.doc_id, d.doc_id, d.section[i], d.para_idx[i], d.sent_idx[i], d.text[i],
             d.short[i]) for d in novel_docs() for i in range(len(d))]
    table = write_sentences(tmp_path, 3, rows=rows)
    lexicon = load_lexicon("ro", disabled_filters=frozenset({"context", "phrases", "neutral"}))  # RoNLI's list
    options = ps.Options(min_chars=50, seed=0, pos_filter="off", neutral_ratio=0.25, near_duplicates="off")
    model, status = ps.pos_status(options, lexicon)
    calls, cuts = [], []
    real_two, real_plan = bt.pass_two_streams, corpus.plan_cuts
    monkeypatch.setattr(bt, "pass_two_streams", lambda *a, **k: calls.append(1) or real_two(*a, **k))
    monkeypatch.setattr(corpus, "plan_cuts", lambda *a, **k: cuts.append(real_plan(*a, **k)[2]) or real_plan(*a, **k))
    out = []
    for early in (0, bt.EARLY_BINS):
        monkeypatch.setattr(bt, "EARLY_BINS", early)
        calls.clear()
        out.append((*reference_pairs(table, lexicon, options, model, status), len(calls)))
    (a, sa, two_a), (b, sb, two_b) = out
    bounded = {s: b for (_, s), b in cuts[-1].items() if s in bt.BOUNDED}
    assert max(bounded.values()) > bt.EARLY_BINS and max(b for (_, s), b in cuts[-1].items()
                                                         if s not in bt.BOUNDED) < bt.EARLY_BINS, cuts[-1]
    assert two_a == 1 and two_b == 0
    assert a.to_pylist() == b.to_pylist() and sa == sb
    assert sum(n for per in sb["neutral"]["allocated"].values() for s, n in per.items() if s in bt.BOUNDED) > 20


@pytest.mark.parametrize("strategies", [list(nt.STRATEGIES), ["adjacent_unmarked", "first_random"]])
def test_pair_batch_equals_the_per_document_functions_on_romanian_novels(novel_documents, strategies):
    """Pass 1's `pair_batch` (one `annotate_all` over the batch, previous sentences in
    numpy, pools as arrays) gives each document's `marked_pairs` and the batch's
    `batch_candidates` over `neutral_pools`, with the same texts for every candidate, on
    documents with repeated locations (a para_idx shared by two sections), repeated
    sentences, gaps in sent_idx, and a few documents out of (para_idx, sent_idx) order."""
    matcher = matcher_for(load_lexicon("ro"))
    docs = list(novel_documents[:600])
    # gaps: every third document loses its third sentence; two documents with a location given twice
    for k in range(0, len(docs), 3):
        d = docs[k]
        if len(d) > 3:
            docs[k] = replace(d, **{f: getattr(d, f)[:2] + getattr(d, f)[3:]
                                    for f in ("section", "para_idx", "sent_idx", "text", "short")})
    for k in (5, 50):
        d = docs[k]
        docs[k] = replace(d, section=d.section + [d.section[0]], para_idx=d.para_idx + [d.para_idx[0]],
                          sent_idx=d.sent_idx + [d.sent_idx[0] + 1], text=d.text + [d.text[-1]],
                          short=d.short + [d.short[-1]])
    # sentences opening in lower case (their hypothesis text is re-cased); a marked pair's
    # texts again later in its document (no longer unused)
    for k in range(1, len(docs), 4):
        d = docs[k]
        docs[k] = replace(d, text=[t[:1].lower() + t[1:] if i % 2 else t for i, t in enumerate(d.text)])
    repeated = 0
    for k, d in enumerate(docs):
        kept = [p for p in marked_pairs(d, matcher) if p.reject is None]
        if kept and repeated < 40:
            repeated += 1
            last = max(d.para_idx) + 1
            docs[k] = replace(d, section=d.section + [d.section[-1]], para_idx=d.para_idx + [last],
                              sent_idx=d.sent_idx + [0], text=d.text + [d.text[kept[0].p]], short=d.short + [False])
    assert repeated == 40
    # a sentence again in a short document, in lower case: its re-cased hypothesis text is
    # the text of the first one (no pair of the two)
    for k in range(2, len(docs), 4):
        d = docs[k]
        if 2 <= len(d) <= 6 and not d.short[0] and d.text[0][:1].isupper():
            last = max(d.para_idx) + 1
            docs[k] = replace(d, section=d.section + [d.section[-1]], para_idx=d.para_idx + [last],
                              sent_idx=d.sent_idx + [0], text=d.text + [d.text[0][:1].lower() + d.text[0][1:]],
                              short=d.short + [False])
    odd = sum(any((a, b) >= (c, e) for a, b, c, e in zip(d.para_idx, d.sent_idx, d.para_idx[1:], d.sent_idx[1:]))
              for d in docs)
    assert odd >= 2
    for cut in (len(docs), 61):
        for start in range(0, len(docs), cut):
            batch = docs[start:start + cut]
            got = pair_batch(batch, matcher, 5, strategies)
            pools, expected_marked = [], []
            for doc in batch:
                ann = annotate(doc, matcher)
                marked = marked_pairs(doc, matcher, ann, doc.previous)
                expected_marked.append(marked)
                pools.append(neutral_pools(doc, matcher, marked, ann))
            assert got.marked == expected_marked
            want = batch_candidates(batch, pools, 5, strategies)
            for name in ("doc", "strategy", "p", "h", "select"):
                assert getattr(got.candidates, name).tolist() == getattr(want, name).tolist(), name
            for d, i, j in zip(want.doc.tolist(), want.p.tolist(), want.h.tolist()):
                assert got.premise_text(d, i) == pools[d].premise_text[i]
                assert got.hypothesis_text(d, j) == pools[d].hypothesis_text[j]
    assert sum(map(len, expected_marked)) > 5 and len(want.doc) > 100


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["Ana are mere.", "ana are mere.", "Ion.", "", "Da!"]), min_size=0, max_size=12),
       st.lists(st.integers(0, 11), max_size=12), st.data())
def test_text_numbers_equal_exactly_for_equal_premise_and_hypothesis_texts(premises, picks, data):
    """`_text_numbers`: a premise's number equals a hypothesis' exactly when their texts are
    equal, whether the hypothesis is the premise's own string, an equal string of its own
    (a copy, as a re-cased or stripped text is), or a text no premise has; with texts
    repeated among the premises. Sentence positions are shuffled."""
    premises = [("" + p[:1]) + p[1:] if k % 2 else p for k, p in enumerate(premises)]  # equal strings, other objects
    hypotheses = [premises[i] for i in picks if i < len(premises)]
    hypotheses += data.draw(st.lists(st.sampled_from(["Ion.", "Nu.", "ana are mere."]), max_size=4))
    n = max(len(premises), len(hypotheses)) + 3
    where_p = np.asarray(data.draw(st.permutations(range(n)))[:len(premises)], dtype=np.int64)
    where_h = np.asarray(data.draw(st.permutations(range(n)))[:len(hypotheses)], dtype=np.int64)
    ptid, htid = np.full(n, -1, dtype=np.int64), np.full(n, -2, dtype=np.int64)
    _text_numbers(ptid, htid, [where_p, where_h], [premises, hypotheses])
    for i, p in zip(where_p.tolist(), premises):
        for j, h in zip(where_h.tolist(), hypotheses):
            assert (ptid[i] == htid[j]) == (p == h), (p, h)


def test_section_titles_are_read_as_one_string_each(tmp_path):
    """`read_sentences` reads the section column as the dictionary Parquet stores, and
    `documents` turns it into one Python string per distinct title of a batch, shared by
    its rows (a title is hashed and compared once per batch, not once per sentence); the
    values, a missing title included, are the file's, also for documents that run over
    batch boundaries."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from extractor.pairs.sentence_passes import documents, read_sentences

    titles = ["", "Istorie", "Geografie", None, "Istorie"]
    rows = [{"corpus": "c", "genre": "g", "lang": "ro", "doc_id": f"d{k // 40}", "section": titles[(k // 8) % 5],
             "para_idx": k // 4, "sent_idx": k % 4, "text": f"Propoziția numărul {k} are destule cuvinte în ea.",
             "short": False} for k in range(400)]
    path = tmp_path / "part-0.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path, use_dictionary=True)
    for size in (64, 1000):  # documents over batch boundaries; one batch
        docs = [d for batch in documents(read_sentences(str(path), batch_size=size)) for d in batch]
        assert [s for d in docs for s in d.section] == [r["section"] for r in rows]
    sections = [s for d in docs for s in d.section if s == "Istorie"]
    assert len(sections) == 160 and all(s is sections[0] for s in sections)
