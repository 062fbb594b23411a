"""The POS filter's word lists (`pos_filter.complete_words` in a lexicon): sentences they
call complete skip the tagger, with the tagger's verdict on real Romanian text."""
from __future__ import annotations

import dataclasses
import json
import re

import pytest

from extractor.lexicon.lexicon import CompleteWords, LexiconError, load_lexicon
from extractor.pairs import pos_filter, stage
from tests.conftest import shared_file


@pytest.fixture(scope="module")
def ro():
    return load_lexicon("ro")


def test_the_romanian_lexicon_carries_lists_of_both_kinds(ro):
    words = ro.complete_words
    assert words and len(words.subject) > 200 and len(words.predicate) > 100
    assert {"este", "sunt", "au"} <= words.predicate and {"se", "el", "ea"} <= words.subject
    assert not words.subject & words.predicate
    # lower-case words, no punctuation or digits: what CompleteWords.complete can match
    assert all(re.fullmatch(r"[^\W\d_]+(?:-[^\W\d_]+)*", w) and w == w.lower() for w in words.subject | words.predicate)


@pytest.mark.parametrize("text, expected", [
    ("Guvernul este responsabil pentru buget.", True),
    ("El a spus că vine mâine.", True),
    ("ESTE EL?", True),                                # case does not matter
    ("Pentru buget.", False),                          # neither list
    ("Este ușor.", False),                             # a predicate word, no subject word
    ("S-a dus el.", False),                            # "s-a" is one word for the lists, not "a"
])
def test_complete_needs_a_word_of_each_list(text, expected):
    words = CompleteWords(subject=frozenset({"el", "ea", "guvernul"}), predicate=frozenset({"este", "sunt", "a"}))
    assert words.complete(text) is expected


def test_sentences_the_lists_decide_never_reach_the_tagger(ro, monkeypatch):
    texts = ["El este acasă.", "Pe masă, o carte.", "Ea sunt eu.", "Dimineața devreme."]
    seen: list = []

    def tagged(batch, model, lexicon, batch_size=256):
        seen.extend(batch)
        return [(False, "pos_no_predicate")] * len(batch)

    monkeypatch.setattr(pos_filter, "tagged_verdicts", tagged)
    verdicts = pos_filter.pos_verdicts(texts, "ro_legal_fl", ro)
    assert seen == ["Pe masă, o carte.", "Dimineața devreme."]
    assert verdicts == [(True, None), (False, "pos_no_predicate"), (True, None), (False, "pos_no_predicate")]
    # without the lists every text is tagged
    seen.clear()
    pos_filter.pos_verdicts(texts, "ro_legal_fl", dataclasses.replace(ro, complete_words=CompleteWords()))
    assert seen == texts


def test_the_lists_agree_with_the_tagger_on_real_news(ro):
    """Every sentence of 300 real news paragraphs' sentences that the lists call complete
    is complete by the tagger too (at most one in 200 may differ: the tagger's own slips,
    as in benchmarks/results/pos-word-lists.log), and the lists decide most of them."""
    pytest.importorskip("ro_legal_fl")
    path = shared_file("text/ro-news/ro-news-realitatea-aleph.jsonl")
    sentences: list[str] = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            for para in json.loads(line)["text"].split("\n\n"):
                sentences.extend(s for s in re.split(r"(?<=[.!?])\s+", para.strip()) if len(s) > 20)
            if len(sentences) > 1500:
                break
    sentences = sentences[-1200:]  # away from the first articles
    decided = [s for s in sentences if ro.complete_words.complete(s)]
    tagger = pos_filter.tagged_verdicts(decided, "ro_legal_fl", ro)
    disagree = [s for s, (ok, _) in zip(decided, tagger) if not ok]
    assert len(decided) > 0.5 * len(sentences), (len(decided), len(sentences))
    assert len(disagree) <= len(decided) / 200, disagree


def test_a_bad_complete_words_block_is_a_lexicon_error(tmp_path):
    src = (load_lexicon("ro").path).read_text(encoding="utf-8")
    bad = src.replace("  complete_words:\n", "  complete_words:\n    verbs: [este]\n", 1)
    assert bad != src
    path = tmp_path / "xx.yaml"
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(LexiconError, match="complete_words must map 'subject' and 'predicate'"):
        load_lexicon(str(path))


def test_pos_words_off_leaves_the_lists_out_of_the_stage(ro):
    on, off = stage.Options(pos_filter="on", near_duplicates="off"), stage.Options(pos_filter="on", pos_words="off", near_duplicates="off")
    assert stage.pos_lexicon(on, ro) is ro
    assert not stage.pos_lexicon(off, ro).complete_words and stage.pos_lexicon(off, ro).phrases == ro.phrases
    if pos_filter.model_installed(ro.spacy_model):
        assert stage.pos_status(on, ro)[1]["complete_words"] == {"subject": len(ro.complete_words.subject),
                                                                 "predicate": len(ro.complete_words.predicate)}
        assert stage.pos_status(off, ro)[1]["complete_words"] is None
