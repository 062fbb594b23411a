"""Linking-phrase matching and the one first-letter rule (pure Python, no Spark)."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extractor.lexicon.lexicon import MARKED_LABELS, load_lexicon
from extractor.pairs.matching import Matcher, matcher_for, recase_first_letter
from tests.conftest import shared_file


@pytest.fixture(scope="module")
def ro():
    return matcher_for(load_lexicon("ro"))


@pytest.fixture(scope="module")
def es():
    return matcher_for(load_lexicon("es"))


@pytest.fixture(scope="module")
def en():
    return matcher_for(load_lexicon("en"))


def test_marker_only_at_the_start(ro, en):
    assert ro.match("Armata s-a retras; prin urmare, orașul a căzut în mâinile lor.") is None
    assert en.match("The town fell; however, the castle held out for a week.") is None
    m = ro.match("Prin urmare, orașul a căzut în mâinile asediatorilor.")
    assert (m.label, m.marker, m.hypothesis) == ("reasoning", "Prin urmare", "Orașul a căzut în mâinile asediatorilor.")


def test_case_insensitive_and_marker_as_written(ro, en):
    m = ro.match("PRIN URMARE, orașul a căzut.")
    assert m.marker == "PRIN URMARE" and m.phrase == "Prin urmare"
    assert en.match("however, the castle held out for a week.").hypothesis == "The castle held out for a week."


@pytest.mark.parametrize("text", [
    "În consecință, prețurile au crescut brusc.",        # comma below
    "În consecinţă, prețurile au crescut brusc.",        # cedilla
    "In consecinta, prețurile au crescut brusc.",        # no diacritics
    "ÎN CONSECINŢĂ, prețurile au crescut brusc.",        # upper case with cedilla
])
def test_romanian_spellings(ro, text):
    m = ro.match(text)
    assert m.phrase == "În consecință" and m.label == "reasoning"
    assert m.hypothesis == "Prețurile au crescut brusc."
    assert m.marker == text[:len(m.marker)] and len(m.marker) == len("În consecință")


def test_longest_phrase_first(ro, es, en):
    assert ro.match("Astfel, rezultă că prețurile au crescut.").phrase == "Astfel, rezultă că"
    assert ro.match("Astfel, prețurile au crescut.").phrase == "Astfel"
    assert es.match("Por lo tanto, el ejército se retiró.").phrase == "por lo tanto"
    assert es.match("Por tanto, el ejército se retiró.").phrase == "por tanto"
    assert en.match("That is to say, the river froze.").phrase == "That is to say"
    assert ro.match("Într-o opoziție radicală, partidul a votat contra.").phrase == "Într-o opoziție radicală"


def test_word_boundary_and_separator(ro, en):
    assert ro.match("Astfelul de lucruri este rar întâlnit.") is None
    assert ro.match("Astfel de situații apar rar în practică.") is None   # no separator
    assert en.match("However hard they tried, the door stayed shut.") is None
    assert en.match("Thusly the army retreated to the north.") is None
    assert en.match("So-called experts disagreed about it.") is None
    for sep in (",", ":", ";", " —", "—", " –", " ,"):
        m = en.match(f"However{sep} the castle held out.")
        assert m is not None and m.hypothesis == "The castle held out.", sep


def test_open_endings_need_no_separator(ro, es, en):
    assert ro.match("Astfel că prețurile au crescut brusc.").hypothesis == "Prețurile au crescut brusc."
    assert ro.match("Ceea ce duce la o criză economică.").hypothesis == "O criză economică."
    assert ro.match("Rezultatul este o creștere a prețurilor.").phrase == "Rezultatul este"
    assert es.match("De ahí que el agua hierva antes.").hypothesis == "El agua hierva antes."
    assert en.match("It follows that the series converges.").hypothesis == "The series converges."
    # a separator after an open phrase is stripped too
    assert ro.match("Astfel că, prețurile au crescut.").hypothesis == "Prețurile au crescut."


def test_spanish_accents_either_way(es):
    for text in ("Específicamente, el agua hierve.", "Especificamente, el agua hierve.",
                 "Por esa razón, el agua hierve.", "Por esa razon, el agua hierve."):
        assert es.match(text) is not None, text


def test_nothing_left_is_no_match(en):
    assert en.match("However.") is None
    assert en.match("However, ...") is None


@pytest.mark.parametrize("lang", ["ro", "es", "en"])
def test_every_lexicon_phrase_matches_itself(lang):
    lexicon = load_lexicon(lang)
    matcher = Matcher(lexicon)
    for label, phrases in lexicon.phrases.items():
        for phrase in phrases:
            m = matcher.match(f"{phrase}, the rest of the sentence goes on.")
            assert m is not None and m.label == label, (phrase, m)
            assert m.hypothesis == "The rest of the sentence goes on."
            assert matcher.starts_with_phrase(phrase + " x")


def test_starts_with_phrase_is_loose(en, ro):
    assert en.starts_with_phrase("However hard they tried, the door stayed shut.")
    assert en.starts_with_phrase("So many people came to the fair.")
    assert not en.starts_with_phrase("Sometimes the river floods the valley.")
    assert not ro.starts_with_phrase("Astfelul este un cuvânt inventat.")


@pytest.mark.parametrize("text, expected", [
    ("the castle held out.", "The castle held out."),
    ("iPhone sales rose.", "IPhone sales rose."),
    ("The NATO summit began.", "The NATO summit began."),
    ("ţara a câştigat.", "Ţara a câştigat."),
    ("„orașul” a căzut.", "„Orașul” a căzut."),
    ('"the team" lost the match.', '"The team" lost the match.'),
    ("(the team) lost.", "(The team) lost."),
    ("1990s were hard years.", "1990s were hard years."),
    ("ßtraße is odd.", "ßtraße is odd."),
    ("", ""),
])
def test_recase_first_letter(text, expected):
    assert recase_first_letter(text) == expected


def test_recase_keeps_everything_after_the_first_letter():
    text = "the UN and the EU met in New York; NASA sent iPads."
    out = recase_first_letter(text)
    assert out[1:] == text[1:] and out[0] == "T"


# Property: casing after the first letter never depends on the label. Sentences are
# built from the same word pool for every label (so their casing does not depend on the
# label); the hypotheses of the marked labels come out of Matcher.match, the neutral ones
# out of recase_first_letter, and the share with an inner capital must be identical.
WORDS = st.sampled_from(["the", "river", "NATO", "Paris", "iPhone", "army", "UN", "valley", "of", "Bucharest",
                         "data", "McDonald", "x", "Ötzi", "élan"])
BODY = st.lists(WORDS, min_size=3, max_size=12).map(lambda ws: " ".join(ws) + ".")


def _inner_capital(text: str) -> bool:
    return any(ch.isupper() for ch in text[1:])


@settings(max_examples=60, deadline=None)
@given(st.lists(BODY, min_size=1, max_size=8))
def test_inner_capital_share_does_not_depend_on_label(bodies):
    lexicon = load_lexicon("en")
    matcher = matcher_for(lexicon)
    first = {label: lexicon.phrases[label][0] for label in MARKED_LABELS}
    shares = {}
    for label in MARKED_LABELS:
        hyps = [matcher.match(f"{first[label]}, {body}").hypothesis for body in bodies]
        shares[label] = sum(map(_inner_capital, hyps)) / len(hyps)
    neutral = [recase_first_letter(body) for body in bodies]
    shares["neutral"] = sum(map(_inner_capital, neutral)) / len(neutral)
    assert len(set(shares.values())) == 1, shares
    # and the hypotheses themselves are the same text whatever the label
    assert {matcher.match(f"{first['reasoning']}, {b}").hypothesis for b in bodies} == set(neutral)


def test_english_open_ending_why_keeps_that_is_apart(en):
    assert en.match("That is why the army retreated to the north.").label == "reasoning"
    assert en.match("That is, the army retreated to the north.").label == "entailment"
    assert en.match("That is the largest city of the region.") is None
    assert en.match("Rather than fight, the army retreated.") is None
    assert en.match("For example, the city has a deep harbour.").label == "entailment"


@pytest.mark.parametrize("lang,novel", [("ro", "text/eltec-rom-20/ROM001.txt"), ("es", "text/eltec-spa-20/SPA1001.txt"),
                                        ("en", None)])
def test_the_opening_probe_never_turns_away_a_sentence_the_patterns_match(lang, novel):
    """`annotate_all` (and `annotate`, `match`, `starts_with_phrase`) settle most sentences
    by their first characters (`may_open`), `annotate_all` then by their first token (a
    phrase's first word not followed by a word character); on a novel's lines and on every
    phrase of the lexicon written in several ways they give what the patterns alone give on
    the key."""

    lexicon = load_lexicon(lang)
    m = Matcher(lexicon)
    phrases = [p for ps in lexicon.phrases.values() for p in ps]
    texts = [f"{p}, ceva a mers." for p in phrases] + [f"{p.upper()}: da." for p in phrases] + \
        [f"  {p.lower()} ok" for p in phrases] + [re.sub(" ", "   ", p) + "; x y" for p in phrases] + \
        [p + "ul merge." for p in phrases] + ["", " ", "A", "«Astfel», zise el.", "İstanbul e mare."]
    if novel:
        texts += [line.strip() for line in shared_file(novel).read_text(encoding="utf-8").splitlines()
                  if line.strip()][:20000]
    matches, opens = m.annotate_all(texts)
    for text, got, opened in zip(texts, matches, opens):
        loose = bool(text) and m._loose.match(m.key(text)) is not None
        assert opened == loose, text
        assert got == (m._match_key(text, m.key(text)) if loose else None), text
        assert (got, opened) == m.annotate(text)
        assert m.starts_with_phrase(text) == loose
    assert sum(opens) >= 4 * len(phrases)
