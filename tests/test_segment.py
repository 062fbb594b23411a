"""Punkt segmentation (extractor.sentences.segment): abbreviations, ş/ș ţ/ț, parameter files, exactness."""
from __future__ import annotations

import json
import pickle
import xml.etree.ElementTree as ET

import pytest
from nltk.tokenize.punkt import PunktSentenceTokenizer

from extractor.lexicon.lexicon import load_lexicon
from extractor.sentences.segment import Segmenter, abbreviation_types, load_params, save_params, train_punkt
from extractor.sentences.wikitext import clean_page

RO = load_lexicon("ro")
ES = load_lexicon("es")
EN = load_lexicon("en")


def sample_paragraphs(lexicon):
    """The cleaned paragraphs of the bundled sample dump: the text the default command trains on."""
    out = []
    for path in sorted(lexicon.sample_input.glob("*.xml")):
        for _, el in ET.iterparse(path):
            if el.tag.rsplit("}", 1)[-1] == "page" and el.findtext("{*}ns") == "0":
                text = el.findall("{*}revision")[-1].findtext("{*}text") or ""
                out += clean_page(text, lexicon).paragraphs
    return out


@pytest.fixture(scope="module")
def ro_segmenter():
    return Segmenter(train_punkt(sample_paragraphs(RO), RO.abbreviations))


@pytest.fixture(scope="module")
def es_segmenter():
    return Segmenter(train_punkt(sample_paragraphs(ES), ES.abbreviations))


def test_romanian_abbreviations_do_not_end_sentences(ro_segmenter):
    text = ("Dl. Popescu a discutat cu Dna. Ionescu despre art. 5 alin. (2) din lege. "
            "Prof. Georgescu a confirmat că dosarul nr. 12 a fost trimis. "
            "Poetul (n. 15 ianuarie 1850, Botoșani – d. 15 iunie 1889) a scris mult. "
            "Sfârșitul a venit în anul 1889. Apoi a urmat altceva.")
    assert ro_segmenter.split(text) == [
        "Dl. Popescu a discutat cu Dna. Ionescu despre art. 5 alin. (2) din lege.",
        "Prof. Georgescu a confirmat că dosarul nr. 12 a fost trimis.",
        "Poetul (n. 15 ianuarie 1850, Botoșani – d. 15 iunie 1889) a scris mult.",
        "Sfârșitul a venit în anul 1889.",
        "Apoi a urmat altceva.",
    ]


@pytest.mark.parametrize("s, t", [("ș", "ț"), ("ş", "ţ")])
def test_cedilla_and_comma_below_spellings_split_the_same(ro_segmenter, s, t):
    text = (f"Au venit elevi, profesori {s}.a.m.d. la festivitate. "
            f"Ora{s}ul a organizat concursuri, expozi{t}ii {s}.a. în parc. "
            f"Pe de altă parte, {s}coala a rămas închisă în acea zi.")
    assert ro_segmenter.split(text) == [
        f"Au venit elevi, profesori {s}.a.m.d. la festivitate.",
        f"Ora{s}ul a organizat concursuri, expozi{t}ii {s}.a. în parc.",
        f"Pe de altă parte, {s}coala a rămas închisă în acea zi.",
    ]


def test_sentences_are_cut_from_the_text_as_written(ro_segmenter):
    text = "Transilvania are oraşe vechi. Ţara Bârsei se află în sud."
    assert ro_segmenter.split(text) == ["Transilvania are oraşe vechi.", "Ţara Bârsei se află în sud."]


def test_spanish_abbreviations_do_not_end_sentences(es_segmenter):
    text = ("El Sr. García y la Sra. Pérez visitaron a la Dra. López en Madrid. "
            "Las exportaciones a EE.UU. crecieron mucho durante el último año. "
            "La finca tiene aprox. tres hectáreas de olivar. ¿Cuándo llegó el primer envío? "
            "Nadie lo sabe con certeza.")
    assert es_segmenter.split(text) == [
        "El Sr. García y la Sra. Pérez visitaron a la Dra. López en Madrid.",
        "Las exportaciones a EE.UU. crecieron mucho durante el último año.",
        "La finca tiene aprox. tres hectáreas de olivar.",
        "¿Cuándo llegó el primer envío?",
        "Nadie lo sabe con certeza.",
    ]


def test_rare_words_before_a_period_are_not_learnt_as_abbreviations():
    # "oi" occurs once, before a period: Punkt alone would call it an abbreviation.
    paras = sample_paragraphs(RO) + ["Pajiștile erau folosite ca pășuni de vară pentru oi. Păstorii urcau în iunie."]
    seg = Segmenter(train_punkt(paras, RO.abbreviations))
    assert seg.split("Pajiștile erau folosite ca pășuni de vară pentru oi. Păstorii urcau în iunie.") == [
        "Pajiștile erau folosite ca pășuni de vară pentru oi.", "Păstorii urcau în iunie."]
    assert "oi" not in seg.params.abbrev_types


def test_abbreviation_types():
    assert abbreviation_types(["Dl.", "ş.a.m.d", " EE.UU. ", ""]) == {"dl", "ș.a.m.d", "ee.uu"}
    assert {"dl", "dna", "prof", "nr", "art", "alin"} <= abbreviation_types(RO.abbreviations)
    assert {"sr", "sra", "dra", "ee.uu"} <= abbreviation_types(ES.abbreviations)


def test_empty_and_whitespace_paragraphs(ro_segmenter):
    assert ro_segmenter.split("") == []
    assert ro_segmenter.split("   \n ") == []
    assert ro_segmenter.split("  Fără punct final  ") == ["Fără punct final"]


def test_training_is_bounded_by_max_chars():
    texts = (f"Propoziția numărul {i} descrie un lucru. Apoi urmează alta." for i in range(10**6))
    params = train_punkt(texts, RO.abbreviations, max_chars=20_000)  # returns: the generator is not exhausted
    assert "dl" in params.abbrev_types


def test_params_file_round_trip_is_deterministic(tmp_path, ro_segmenter):
    first = save_params(ro_segmenter.params, tmp_path / "a" / "punkt-ro.json")
    second = save_params(load_params(first), tmp_path / "punkt-ro-2.json")
    assert first.read_bytes() == second.read_bytes()
    reloaded = Segmenter(load_params(first))
    paras = sample_paragraphs(RO)
    assert [reloaded.split(p) for p in paras] == [ro_segmenter.split(p) for p in paras]
    data = json.loads(first.read_text(encoding="utf-8"))
    assert data["format"] == "nli-punkt-params/1" and "ș.a.m.d" in data["abbrev_types"]


def test_bad_params_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.json"):
        load_params(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json"):
        load_params(bad)
    other = tmp_path / "other.json"
    other.write_text('{"format": "something else"}', encoding="utf-8")
    with pytest.raises(ValueError, match="other.json: not a Punkt parameter file"):
        load_params(other)


def test_segmenter_pickles(ro_segmenter):
    clone = pickle.loads(pickle.dumps(ro_segmenter))
    text = "Dl. Popescu a venit. Dna. Ionescu a plecat."
    assert clone.split(text) == ro_segmenter.split(text) == ["Dl. Popescu a venit.", "Dna. Ionescu a plecat."]


def test_fast_decisions_equal_plain_nltk_punkt():
    """The Segmenter decides common breaks without NLTK's token objects; it must agree with
    NLTK's PunktSentenceTokenizer on every paragraph of real text (same parameters)."""
    from tests.conftest import shared_file
    from tests.test_wikitext import read_dump

    paras = []
    for page in read_dump(shared_file("dumps/enwiki-sample-206pages.xml.bz2")):
        if page["ns"] == "0" and not page["redirect"]:
            paras += clean_page(page["text"], EN).paragraphs
    params = train_punkt(paras[:1500], EN.abbreviations)  # training on all of it only costs time
    ours = Segmenter(params)
    plain = PunktSentenceTokenizer(params)
    assert len(paras) > 4000
    for para in paras:
        assert ours.split(para) == [s.strip() for s in plain.tokenize(para) if s.strip()]


def test_training_with_std_re_patterns_equals_nltk_training(monkeypatch):
    """train_punkt compiles NLTK's patterns with `re` instead of `nltk.redos`: same params."""
    import extractor.sentences.segment as segment
    from nltk.tokenize.punkt import PunktTrainer

    paras = sample_paragraphs(RO) + sample_paragraphs(ES)
    ours = segment.params_to_dict(train_punkt(paras, RO.abbreviations))
    monkeypatch.setattr(segment, "PunktTrainer", lambda lang_vars=None, token_cls=None: PunktTrainer())
    plain = segment.params_to_dict(train_punkt(paras, RO.abbreviations))
    assert ours == plain


def test_fused_candidate_loop_equals_plain_nltk_spans_on_romanian_novels():
    """Segmenter's tokenizer finds candidate breaks and their contexts in one loop of its
    own (`_slices_from_text`): on real Romanian prose (dialogue, "!", "...", quotes) its spans must be NLTK's, with the same parameters."""
    from tests.conftest import shared_file
    from extractor.sentences.segment import fold

    paras = []
    for path in sorted(shared_file("text/eltec-rom-20").glob("*.txt"))[:4]:
        paras += [p.strip() for p in path.read_text(encoding="utf-8").split("\n") if p.strip()]
    params = train_punkt(paras[:3000], RO.abbreviations)
    ours = Segmenter(params)
    plain = PunktSentenceTokenizer(params)
    assert len(paras) > 4000
    assert sum("..." in p for p in paras) > 100 and sum("!" in p for p in paras) > 500
    # and with other white space between the words (a mark's word starts after any of it)
    spaced = [p.replace(" ", ws, k + 1) for k, p in enumerate(paras[::7]) for ws in ("\n", "\t", " \r\n")]
    for para in paras + spaced:
        text = fold(para)
        assert list(ours._tokenizer.span_tokenize(text)) == list(plain.span_tokenize(text)), para
        expected = [para[a:b].strip() for a, b in plain.span_tokenize(text) if para[a:b].strip()]
        assert ours.split(para) == expected, para


def test_contexts_decided_without_tokens_agree_with_punkt_on_romanian_novels():
    """`_MemoPunkt._decide` decides "word. Next", "word-word. „Next",
    "word! Next", "word?!... next" and "word... Next" (the ellipsis, with Punkt's
    orthographic heuristic) without building tokens: on every candidate context of four
    novels (and each context with the next word's case flipped), the answer is Punkt's."""
    import re

    from tests.conftest import shared_file
    from extractor.sentences import segment as sg

    paras = []
    for path in sorted(shared_file("text/eltec-rom-20").glob("*.txt"))[:4]:
        paras += [p.strip() for p in path.read_text(encoding="utf-8").split("\n") if p.strip()]
    params = train_punkt(paras[:3000], RO.abbreviations)
    ours = Segmenter(params)
    contexts: list = []
    tok = ours._tokenizer
    tok._decide = lambda text, lo, hi: contexts.append(text[lo:hi]) or sg._MemoPunkt._decide(tok, text, lo, hi)
    for para in paras:
        ours.split(sg.fold(para))

    def flipped(text):  # the same context with the next word's first letter in the other case
        m = re.search(r"(\s\W?)(\w)", text)
        return text if m is None else text[:m.start(2)] + m.group(2).swapcase() + text[m.end(2):]
    # and the abbreviations, hyphenated or not, before each kind of next word
    abbreviations = sorted(a for a in params.abbrev_types if a.isalpha())[:60]
    contexts += [f"{pre}{a}{dots} {nxt}" for a in abbreviations for pre in ("", "Sud-")
                 for dots in (".", "...") for nxt in ("Următorul", "următorul,", "\u201eDa", "\u2014")]
    contexts = list(dict.fromkeys(contexts + [flipped(c) for c in contexts]))
    fast = {"plain": sg._PLAIN_CONTEXT_RE, "bang": sg._BANG_CONTEXT_RE, "ellipsis": sg._ELLIPSIS_CONTEXT_RE}
    seen = {name: 0 for name in fast}
    plain, fresh = PunktSentenceTokenizer(params), sg._MemoPunkt(params)
    for text in contexts:
        for name, pattern in fast.items():
            seen[name] += pattern.fullmatch(text) is not None
        assert fresh.text_contains_sentbreak(text) == plain.text_contains_sentbreak(text), text
    assert seen["plain"] > 5000 and seen["bang"] > 1000 and seen["ellipsis"] > 200, seen


def test_memo_stays_bounded_keeps_the_contexts_asked_again_and_splits_as_punkt(monkeypatch):
    """The memo of Punkt's decisions holds at most MAX_CACHE contexts: when full, only the
    contexts asked for again since the last trim stay. Over real Romanian prose with a
    memo of 20 contexts, the sentences are Punkt's (NLTK's own tokenizer) and the memo
    never passes its bound; a context asked twice survives the trim, one asked once does not."""
    from tests.conftest import shared_file
    from extractor.sentences import segment as sg

    paras = [p.strip() for p in shared_file("text/eltec-rom-20/ROM006.txt").read_text(encoding="utf-8").split("\n")
             if p.strip()]
    params = train_punkt(paras, RO.abbreviations)
    monkeypatch.setattr(sg._MemoPunkt, "MAX_CACHE", 20)
    ours, plain = Segmenter(params), PunktSentenceTokenizer(params)
    sizes = []
    real = sg._MemoPunkt._trim
    monkeypatch.setattr(sg._MemoPunkt, "_trim", lambda self: sizes.append(len(self._memo)) or real(self))
    for para in paras:
        text = sg.fold(para)
        assert ours.split(para) == [para[a:b].strip() for a, b in plain.span_tokenize(text) if para[a:b].strip()]
    assert len(sizes) > 3 and max(sizes) == 20 and len(ours._tokenizer._memo) <= 20, sizes
    tok = sg._MemoPunkt(params)
    slow = [c for c in (f"Dl{i}. ({i}) xyz" for i in range(200)) if sg._PLAIN_CONTEXT_RE.fullmatch(c) is None]
    tok.text_contains_sentbreak(slow[0])
    tok.text_contains_sentbreak(slow[0])  # asked again: hot
    for c in slow[1:21]:
        tok.text_contains_sentbreak(c)
    assert slow[0] in tok._memo and slow[1] not in tok._memo and len(tok._memo) <= 20
