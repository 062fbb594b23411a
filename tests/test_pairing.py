"""Stage 2's per-document logic without Spark: marked pairs and every rejection reason, the
premise phrase rule, the five neutral strategies, selection hashes, pair_id, linear cost
on a 10,000-sentence document, and the Arrow passes over document-contiguous batches."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

from extractor.core.hashing import mix_hash_array, pair_id, stable_hex
from extractor.lexicon.lexicon import load_lexicon
from extractor.pairs import sentence_passes as bt
from extractor.pairs import neutral as nt
from extractor.pairs.matching import matcher_for, recase_first_letter
from extractor.pairs.pairing import (MARKED_REASONS, Document, apply_pos, marked_pairs, neutral_pools, pair_batch,
                                     pair_document, premise_text, select_bin)
from tests.pairs_reference import mix_hash, reference_pairs


@pytest.fixture(scope="module")
def en():
    return matcher_for(load_lexicon("en"))


@pytest.fixture(scope="module")
def ro():
    return matcher_for(load_lexicon("ro"))


LONG = " in the old town near the river, as the chronicles of the period record in detail."


def doc_of(paragraphs, doc_id="d1", min_chars=50) -> Document:
    rows = []
    for p, sents in enumerate(paragraphs):
        for s, text in enumerate(sents):
            rows.append(dict(corpus="c", genre="g", lang="en", doc_id=doc_id, section="S", para_idx=p, sent_idx=s,
                             text=text))
    return Document.from_rows(rows, min_chars=min_chars)


def test_every_rejection_reason_in_rule_order(en):
    doc = doc_of([
        ["However, this opening sentence has no premise" + LONG],                           # no_premise
        ["Short one.", "Therefore, the premise before this one is far too short" + LONG],  # premise_short
        ["A long and complete premise sentence stands here" + LONG, "Thus, tiny."],       # hypothesis_short
        ["Another long premise sentence stands right here" + LONG,
         "Consequently, however, the hypothesis opens with a second phrase" + LONG],      # hypothesis_starts_with_phrase
        ["A premise that opens the paragraph normally" + LONG,
         "However hard they tried, the premise of the next pair opens with a phrase" + LONG,
         "Therefore, this hypothesis has a premise opening with a loose phrase" + LONG],  # premise_starts_with_phrase
        ["The same words on both sides" + LONG, "In other words, the same words on both sides" + LONG],
    ])
    got = {p.reject for p in marked_pairs(doc, en)}
    assert got == {"no_premise", "premise_short", "hypothesis_short", "hypothesis_starts_with_phrase",
                   "premise_starts_with_phrase", "premise_equals_hypothesis"}
    assert set(MARKED_REASONS) >= got


def test_premise_phrase_is_stripped_with_the_same_rule_for_every_label(en, ro):
    assert premise_text("However, the town grew" + LONG, en) == ("The town grew" + LONG, True)
    assert premise_text("The town grew" + LONG, en) == ("The town grew" + LONG, False)
    assert premise_text("However hard they tried, the town grew" + LONG, en) == (None, False)
    text, stripped = premise_text("Prin urmare, orașul a crescut foarte mult în ultimii ani ai secolului.", ro)
    assert stripped and text == "Orașul a crescut foarte mult în ultimii ani ai secolului."
    # a chain: A. However, B. Therefore, C.  -> (A, B stripped) and (B stripped, C stripped)
    doc = doc_of([["The harbour was built by merchants" + LONG,
                   "However, its piers collapsed during the earthquake" + LONG,
                   "Therefore, the ships of the companies could not land" + LONG]])
    pairs = [p for p in marked_pairs(doc, en) if p.reject is None]
    assert [(p.label, p.premise_stripped) for p in pairs] == [("contrasting", False), ("reasoning", True)]
    assert pairs[1].premise == pairs[0].hypothesis == "Its piers collapsed during the earthquake" + LONG
    assert not any(en.starts_with_phrase(p.premise) for p in pairs)


def test_pos_reasons_hypothesis_first():
    doc = doc_of([["Premise sentence long enough to be kept by the rule" + LONG,
                   "However, hypothesis sentence long enough to be kept by the rule" + LONG]])
    en_m = matcher_for(load_lexicon("en"))
    pairs = marked_pairs(doc, en_m)
    verdicts = {pairs[0].premise: (False, "pos_no_subject"), pairs[0].hypothesis: (False, "pos_no_predicate")}
    apply_pos(pairs, lambda t: verdicts.get(t, (True, None)))
    assert pairs[0].reject == "pos_no_predicate"


def test_neutral_strategies_follow_their_rules(en):
    paras = [[f"Paragraph {p} sentence {s} tells about the harbour and the town" + LONG for s in range(4)]
             for p in range(6)]
    paras[1][2] = "However, paragraph one has a marked sentence about the harbour" + LONG
    paras[3][1] = "Therefore, paragraph three has a marked sentence about the town" + LONG
    doc = doc_of(paras)
    result = pair_document(doc, en, seed=3)
    marked = [p for p in result.marked if p.reject is None]
    assert len(marked) == 2
    mp, mh = {p.p for p in marked}, {p.h for p in marked}
    by = {}
    for c in result.neutral:
        by.setdefault(c.source, []).append(c)
        assert c.label == "neutral" and c.marker is None and c.premise != c.hypothesis
        assert c.hypothesis == recase_first_letter(c.hypothesis)
        if c.source == "adjacent_unmarked":
            assert doc.paragraph(c.p) == doc.paragraph(c.h) and doc.sent_idx[c.h] == doc.sent_idx[c.p] + 1
        else:
            assert doc.paragraph(c.p) != doc.paragraph(c.h)
        assert (c.p in mp) == (c.source in ("first_random", "marked_different_paragraphs"))
        assert (c.h in mh) == (c.source in ("second_random", "marked_different_paragraphs"))
    assert set(by) == set(nt.STRATEGIES)
    for source, cands in by.items():
        if source != "adjacent_unmarked":
            assert len({c.h for c in cands}) == len(cands), "each hypothesis once per strategy"
    # the seed changes the draw, the same seed gives the same candidates
    again = pair_document(doc, en, seed=3).neutral
    assert [(c.source, c.p, c.h, c.select) for c in again] == [(c.source, c.p, c.h, c.select) for c in result.neutral]
    other = pair_document(doc, en, seed=4).neutral
    assert [(c.p, c.h) for c in other] != [(c.p, c.h) for c in result.neutral]


def test_unused_pool_leaves_out_short_phrase_and_marked_sentences(en):
    doc = doc_of([["Short.", "So-called experts said the harbour was a ruin" + LONG, "A plain sentence" + LONG],
                  ["A plain premise sentence" + LONG, "However, a marked hypothesis sentence" + LONG],
                  ["A plain premise sentence" + LONG, "Another plain sentence" + LONG]])
    marked = marked_pairs(doc, en)
    pools = neutral_pools(doc, en, marked)
    assert pools.unused == [2, 6]  # 5 repeats the marked premise's text: left out too
    assert pools.marked_premise == [3] and pools.marked_hypothesis == [4]
    # pass one's batch function applies the same rule
    batch = pair_batch([doc], en, seed=0)
    used = batch.candidates.p.tolist() + batch.candidates.h.tolist()
    assert 6 in used and 5 not in used


def test_pair_id_is_the_documented_hash():
    pref, href = ("d", "S", 1, 2), {"doc_id": "d", "section": "S", "para_idx": 1, "sent_idx": 3}
    key = "\x1f".join(["d\x1eS\x1e1\x1e2", "d\x1eS\x1e1\x1e3", "P", "H", "reasoning"])
    assert pair_id(pref, href, "P", "H", "reasoning") == stable_hex(key)
    assert pair_id(("d", None, 1, 2), href, "P", "H", "reasoning") != pair_id(pref, href, "P", "H", "reasoning")


def test_mix_hash_array_matches_the_scalar_one():
    import numpy as np

    values = np.array([0, 1, 2 ** 63 - 1, 123456789], dtype=np.uint64)
    assert [int(v) for v in mix_hash_array(values, 17)] == [mix_hash(int(v), 17) for v in values]
    assert all(0 <= select_bin(mix_hash(int(v), 5)) < 4096 for v in values)


def test_matcher_key_equals_lexicon_normalize(ro):
    lex = load_lexicon("ro")
    for text in ("În consecință, orașul a crescut.", "IN CONSECINTA,   orasul", "Prin  urmare,\tceva" * 5,
                 "  Astfel că prețurile au crescut", "Ţara şi ţăranii" * 20):
        key = ro.key(text)
        assert key == lex.normalize(text)[: len(key)]
    assert ro.match("In consecinta, orasul a crescut mult in ultimii ani ai secolului trecut.").label == "reasoning"


def test_ten_thousand_sentences_linear(en):
    def big(n):
        paras, para = [], []
        for i in range(n):
            text = (f"However, sentence {i} of the long document about the harbour" + LONG if i % 50 == 7
                    else f"Sentence {i} of the long document about the harbour and town" + LONG)
            para.append(text)
            if len(para) == 8:
                paras.append(para)
                para = []
        return doc_of(paras + ([para] if para else []), doc_id=f"big{n}")

    small, large = big(1000), big(10000)
    assert len(large) == 10000

    def best_of_three(doc):  # CPU time, least disturbed of three runs (the machine is shared)
        times = []
        for _ in range(3):
            t = time.process_time()
            result = pair_document(doc, en)
            times.append(time.process_time() - t)
        return result, min(times)
    r_small, t_small = best_of_three(small)
    r_large, t_large = best_of_three(large)
    assert sum(p.reject is None for p in r_large.marked) == 200
    assert len(r_large.neutral) > 9000
    # linear (sorting each pool once is n log n): 10x the sentences, well under 20x the time
    assert t_large < 20 * max(t_small, 0.02), (t_small, t_large)
    assert t_large < 10, t_large


def _batches(docs: list[Document], size: int):
    rows = []
    for d in docs:
        for i in range(len(d)):
            rows.append(dict(corpus=d.corpus, genre=d.genre, lang=d.lang, doc_id=d.doc_id, section=d.section[i],
                             para_idx=d.para_idx[i], sent_idx=d.sent_idx[i], text=d.text[i], short=d.short[i]))
    table = pa.Table.from_pylist(rows)
    return table.to_batches(max_chunksize=size)


def test_batches_carry_documents_over_batch_boundaries(en):
    docs = [doc_of([[f"Doc {k} paragraph {p} sentence {s} about the harbour" + LONG for s in range(5)]
                    for p in range(3)], doc_id=f"d{k}") for k in range(4)]
    for size in (1, 7, 1000):
        got = [d for group in bt.documents(_batches(docs, size)) for d in group]
        assert [d.doc_id for d in got] == ["d0", "d1", "d2", "d3"] and all(len(d) == 15 for d in got)


def test_a_document_that_comes_back_is_an_error():
    docs = [doc_of([["First part of the document about the harbour" + LONG]], doc_id="a"),
            doc_of([["Another document in between about the town" + LONG]], doc_id="b"),
            doc_of([["First part of the document about the harbour" + LONG]], doc_id="a")]
    with pytest.raises(bt.DocumentOrderError, match="not contiguous"):
        for _ in bt.documents(_batches(docs, 100)):
            pass


def test_pass_one_rows_and_counts_do_not_depend_on_batch_size(en):
    docs = [doc_of([[f"Doc {k} paragraph {p} sentence {s} about the harbour" + LONG for s in range(5)]
                    for p in range(3)] + [["A premise about the harbour" + LONG,
                                           "However, a marked sentence of doc " + str(k) + LONG]], doc_id=f"d{k}")
            for k in range(5)]
    outs = []
    for size in (3, 1000):
        streams = [(None, None, _batches(docs, size))]  # one stream of sentence batches
        table = pa.Table.from_batches(list(bt.pass_one_streams(streams, en, 0, nt.STRATEGIES, None, None)),
                                      schema=bt.WORK)
        outs.append(sorted(map(repr, table.to_pylist())))
    assert outs[0] == outs[1]
    kinds = {r["kind"] for r in table.to_pylist()}
    assert kinds == {"pair", "marked", "hist", "edge", "doc"}


@pytest.mark.parametrize("ratio", [0.5, 3.0])
def test_early_candidates_give_the_rows_of_pass_two(tmp_path, monkeypatch, ratio):
    """Pass 1 emits the neutral candidates of the lowest EARLY_BINS bins; when every cut
    falls below, they replace pass 2. Both ways give the same pairs and stats."""
    from extractor.lexicon.lexicon import load_lexicon
    from extractor.pairs import stage as ps
    from tests.test_pairs_stage import sentence_rows, write_sentences

    rows = []
    for copy in range(40):  # enough candidates for cuts below EARLY_BINS at a low ratio
        rows += [(c, g, l, f"{d}-{copy}", *rest) for c, g, l, d, *rest in sentence_rows()]
    table = write_sentences(tmp_path, 3, rows=rows)
    lexicon = load_lexicon("en")
    options = ps.Options(min_chars=50, seed=0, pos_filter="off", neutral_ratio=ratio, near_duplicates="off")
    model, status = ps.pos_status(options, lexicon)
    out = {}
    for early in (0, 1 << nt.BIN_BITS):
        monkeypatch.setattr(bt, "EARLY_BINS", early)
        out[early] = reference_pairs(table, lexicon, options, model, status)
    (a, sa), (b, sb) = out.values()
    assert a.to_pylist() == b.to_pylist() and sa == sb
    assert sa["labels"].get("neutral", 0) > 0
