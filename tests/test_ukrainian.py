"""Ukrainian, the fourth language: its lexicon, the rule-based completeness check used where
no spaCy pipeline can be installed, and the whole job on the real (truncated) ukwiki dump."""
from __future__ import annotations

import json

import pytest

from extractor.lexicon.lexicon import load_lexicon
from extractor.pairs import pos_filter as pf
from extractor.lexicon import rule_pos
from extractor.pairs.matching import Matcher
from tests.conftest import shared_file

# Hand labels: complete sentences (a subject-like word and a predicate) ...
COMPLETE = [
    "Однак він не погодився з цим рішенням.",
    "У 1991 році Україна проголосила незалежність.",
    "Річка протікає через село з півночі на південь.",
    "Місто було засноване у 1240 році князем Данилом.",
    "Вони жили в цьому селі до самої війни.",
    "Храм відбудували у XIX столітті.",
    "Тут можна побачити старовинні фрески.",
    "Пам'ятник відкрито 1965 року.",
    "Населення села становить 1 234 особи.",
    "Він був одним із засновників товариства.",
    "Село згадується в документах XVI століття.",
    "Після війни родина переїхала до Львова.",
]
# ... and fragments without a verb: headings, captions, infobox lines, nominal sentences.
FRAGMENTS = [
    "Київ — столиця України.",
    "Населення — 1 234 осіб (2001).",
    "Список літератури та джерел.",
    "Видатні особистості села.",
    "Вулиця Шевченка, 12.",
    "Доктор історичних наук, професор.",
    "Народний артист України (1978).",
    "Герб і прапор громади.",
    "Офіційний сайт міської ради.",
]


def test_rule_tagger_tags():
    tags = [(t.text, t.pos_) for t in rule_pos.tag_uk("У 1991 році Україна проголосила незалежність.")]
    assert tags == [("У", "ADP"), ("1991", "NUM"), ("році", "NOUN"), ("Україна", "PROPN"),
                    ("проголосила", "VERB"), ("незалежність", "NOUN"), (".", "PUNCT")]
    assert [t.pos_ for t in rule_pos.tag_uk("Він був тут")] == ["PRON", "AUX", "ADV"]
    assert [t.pos_ for t in rule_pos.tag_uk("Пам'ятник відкрито")] == ["NOUN", "VERB"]


def test_rule_based_completeness_on_hand_labelled_sentences():
    uk = load_lexicon("uk")
    assert uk.spacy_model == "rules:uk" or pf.model_installed("uk_core_news_sm")
    assert pf.model_installed("rules:uk") and not pf.model_installed("rules:xx")
    enabled, status, warning = pf.resolve("on", "rules:uk", uk)
    assert enabled and status == "on" and warning is None
    assert [ok for ok, _ in pf.pos_verdicts(COMPLETE, "rules:uk", uk)] == [True] * len(COMPLETE)
    assert pf.pos_verdicts(FRAGMENTS, "rules:uk", uk) == [(False, "pos_no_predicate")] * len(FRAGMENTS)
    assert uk.model_info("rules:uk").license.startswith("Apache-2.0")


def test_lexicon_matches_ukrainian_connectives():
    uk = load_lexicon("uk")
    m = Matcher(uk)
    cases = {"Однак, за іншими даними, місто заснували пізніше.": ("contrasting", "Однак"),
             "Тим не менш, храм зберігся до наших днів.": ("contrasting", "Тим не менш"),
             "Іншими словами, річка змінила своє русло.": ("entailment", "Іншими словами"),
             "Таким чином, населення села зменшилося вдвічі.": ("reasoning", "Таким чином"),
             "Через це селище отримало статус міста.": None}  # "Через це" needs its comma
    for text, want in cases.items():
        hit = m.match(text)
        assert (hit and (hit.label, hit.phrase)) == (want or None), text
    # й and ї are letters of their own: no diacritic folding for Ukrainian
    assert not uk.match_without_diacritics and "Примітки" in uk.drop_sections


@pytest.mark.spark
@pytest.mark.slow
def test_whole_job_on_the_real_ukwiki_dump(tmp_path):
    """Dump -> sentences -> pairs (rule-based POS filter on) -> splits with a card; the dump
    stops mid-page, which is counted, not fatal."""
    from jobs.extract import main

    dump = shared_file("dumps/ukwiki-truncated-100k.xml.bz2")
    out = tmp_path / "uk"
    assert main(["--lang", "uk", "--input", str(dump), "--output", str(out), "--master", "local[2]"]) == 0
    root = out / "current" if (out / "current").exists() else out
    stats = json.loads((root / "stats.json").read_text())
    pos = stats["pairs"]["pos_filter"]
    assert pos["status"] == "on" and pos["model"] == "rules:uk" and pos["sentences_checked"] > 0
    labels = stats["pairs"]["labels"]
    assert all(labels.get(l, 0) > 0 for l in ("contrasting", "reasoning", "neutral")), labels
    card = (root / "splits" / "README.md").read_text()
    assert card.startswith("---\nlanguage:\n- uk\n") and "model rules:uk" in card
    assert "overlap (RoNLI)" in card
