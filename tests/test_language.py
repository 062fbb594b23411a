"""The language check (extractor/sentences/language.py) on real text of ../shared/data."""
from __future__ import annotations

import bz2
import json
import re
import subprocess
import sys

import pytest

from extractor.lexicon.lexicon import load_lexicon
from extractor.sentences import language
from extractor.sentences.process import DocumentProcessor
from extractor.sentences.segment import params_to_dict, train_punkt
from tests.conftest import REPO, shared_file

SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str, limit: int) -> list[str]:
    out = [s for s in SENTENCE_END.split(" ".join(text.split())) if len(s) >= 50]
    return out[:limit]


def news(limit: int) -> list[str]:
    path = shared_file("text/ro-news/ro-news-realitatea-aleph.jsonl")
    with open(path, encoding="utf-8") as f:
        texts = [json.loads(line)["text"] for _, line in zip(range(600), f)]
    return [s for t in texts for s in sentences(t, 10_000)][:limit]


def novel(relative: str, limit: int) -> list[str]:
    return sentences(shared_file(relative).read_text(encoding="utf-8"), limit)


def test_romanian_novels_keep_every_sentence():
    # old spelling (î for â, cedilla ş), dialogue: none of it is another language
    texts = novel("text/eltec-rom-20/ROM001.txt", 1500) + novel("text/eltec-rom-20/ROM007.txt", 1500)
    assert len(texts) > 1500
    assert language.foreign_languages(texts, "ro") == [None] * len(texts)


def test_english_sentences_in_romanian_news_are_found():
    texts = news(6000)
    found = language.foreign_languages(texts, "ro")
    english = [t for t, f in zip(texts, found) if f == "en"]
    assert 20 <= len(english) <= 0.05 * len(texts)
    # besides English, one French sentence (a quoted tweet of the French president's office)
    others = [t for t, f in zip(texts, found) if f not in (None, "en")]
    assert [f for f in found if f not in (None, "en")] == ["fr"] and "à la France" in others[0]
    # the sentences called English are English prose: nearly all hold English stop words
    english_words = language.stop_words("en")
    assert sum(language.holds_stop_words(t, english_words) for t in english) >= 0.9 * len(english)


def test_a_wrong_lang_is_refused_with_the_language_to_use():
    texts = novel("text/eltec-spa-20/SPA1001.txt", language.CORPUS_SAMPLE)
    found = language.corpus_language(texts, "ro")
    assert found.detected == "es" and found.share < 0.1 and found.wrong
    with pytest.raises(language.WrongLanguage, match=r"^SPA1001.txt: corpus eltec looks like es, not ro: .*--lang es"):
        language.check_corpus(found, "eltec", "SPA1001.txt")


def test_the_right_lang_passes_and_a_tiny_sample_decides_nothing():
    found = language.corpus_language(news(language.CORPUS_SAMPLE), "ro")
    assert found.detected == "ro" and found.share > 0.9 and not found.wrong
    language.check_corpus(found, "ro-news", "news.jsonl")
    few = language.corpus_language(novel("text/eltec-spa-20/SPA1001.txt", 5), "ro")
    assert not few.wrong  # under CORPUS_MIN_SAMPLE identifiable sentences: no verdict


def test_a_language_the_identifier_does_not_know_checks_nothing():
    assert "xx" not in language.languages()
    assert language.foreign_languages(["This is plainly an English sentence of some length."], "xx") == [None]


def test_a_sentence_in_a_script_without_spaces_goes_to_the_identifier():
    # a citation title of the enwiki sample: no stop word between spaces, of any language
    path = shared_file("dumps/enwiki-sample-206pages.xml.bz2")
    with bz2.open(path, "rt", encoding="utf-8") as f:
        title = re.search(r"潜水資格を持っていない[^|]*", f.read()).group(0)
    assert language.stop_word_hits(title, language.other_stop_words("ro"))[0] == 0
    assert language.foreign_languages([title], "ro") == ["ja"]


def test_a_sentence_without_evidence_of_another_language_is_kept_unidentified():
    # headings and names of a Romanian novel lack Romanian stop words; without two stop words
    # of another language they are kept without running the identifier
    texts = [t for t in novel("text/eltec-rom-20/ROM001.txt", 3000)
             if not language.holds_stop_words(t, language.stop_words("ro"))]
    others = language.other_stop_words("ro")
    unchecked = [t for t in texts if not language.may_be_foreign(t, others)]
    assert unchecked and language.foreign_languages(unchecked, "ro") == [None] * len(unchecked)
    assert {"the", "The", "und", "der"} <= others and not {"și", "Și", "este"} & others


def test_the_stop_words_are_read_without_importing_spacy():
    code = ("import sys; from extractor.sentences import language; "
            "assert len(language.stop_words('ro')) > 400; print('spacy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "False"


def test_the_batch_verdicts_are_the_per_sentence_rules():
    # foreign_languages computes the rules with Arrow over all texts at once; sentence by
    # sentence, the same rules must give the same verdicts
    texts = news(3000) + novel("text/eltec-rom-20/ROM007.txt", 1000)
    words, others = language.stop_words("ro"), language.other_stop_words("ro")

    def one(text):
        if (language.holds_stop_words(text, words) or language.letters(text) < language.MIN_LETTERS
                or not language.may_be_foreign(text, others)):
            return None
        found, prob = language.identifier().classify(text)
        return found if found not in ("ro", "zxx") and prob >= language.MIN_CONFIDENCE else None

    expected = [one(t) for t in texts]
    assert language.foreign_languages(texts, "ro") == expected
    assert sum(f is not None for f in expected) >= 20
    assert language.foreign_languages([], "ro") == []


def test_foreign_sentences_leave_gaps_and_emptied_paragraphs_and_documents_are_counted():
    found = language.foreign_languages(texts := news(3000), "ro")
    english = [t for t, f in zip(texts, found) if f == "en"][:3]
    romanian = novel("text/eltec-rom-20/ROM001.txt", 4)
    lexicon = load_lexicon("ro")
    corpus = {"name": "news", "genre": "news", "lang": "ro", "role": "train", "partition": "corpus=news",
              "fields": {}}
    proc = DocumentProcessor(corpus, lexicon, params_to_dict(train_punkt([], lexicon.abbreviations)), 50,
                             drop_foreign=True)
    # document a: a Romanian paragraph, an English one, a mixed one; document b: English only
    proc.plain_document("a", "a", None, "\n\n".join([" ".join(romanian[:2]), english[0],
                                                     " ".join([romanian[2], english[1], romanian[3]])]))
    proc.plain_document("b", "b", None, english[2])
    proc.settle()
    rows = proc.take_table().to_pylist()
    assert [(r["doc_id"], r["para_idx"], r["sent_idx"]) for r in rows] == [
        ("news:a", 0, 0), ("news:a", 0, 1), ("news:a", 2, 0), ("news:a", 2, 2)]  # gaps: paragraph 1, sentence 2.1
    counts = proc.counts
    assert counts["foreign_sentences", "en"] == 3 and counts["sentences", "total"] == 4
    assert counts["paragraphs", "kept"] == 2 and counts["paragraphs_dropped", "foreign"] == 2
    assert counts["documents", "kept"] == 1 and counts["documents_dropped", "no_text_after_cleaning"] == 1
