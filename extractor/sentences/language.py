"""Which language a corpus and its sentences are in (docs/cleaning.md "Language check").

Two questions, two answers:

- `corpus_language(texts, lang)`: a sample of a corpus's sentences, each identified by
  py3langid (a naive Bayes identifier of 97 languages whose model ships inside its
  package: nothing is downloaded). A corpus whose sample is mostly in another language is
  a wrong `--lang` (or a wrong file): `check_corpus` raises a one-line `WrongLanguage`
  naming the language found and the `--lang` to use.
- `foreign_languages(texts, lang)`: per sentence, the other language it is written in, or
  None. A sentence holding enough of the language's stop words (spaCy's lists, shipped in
  spaCy itself) is the language's without running the identifier; so is one holding too
  few stop words of every other language spaCy lists (a heading, a list of names: no
  evidence of another language) unless it is written in a script without spaces
  (`UNSPACED`). The identifier decides the rest, and only a confident verdict
  (`MIN_CONFIDENCE`) on a sentence with at least `MIN_LETTERS` letters drops it. The
  stop-word shortcut is only sound once the corpus check has passed: a sentence of a
  related language can hold a few of the expected language's stop words, so the corpus
  check never takes it.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extractor.core.errors import UserError

MIN_CONFIDENCE = 0.95  # the identifier's normalised probability below which a sentence is kept
MIN_LETTERS = 20  # shorter sentences are kept: too little text for a verdict
STOP_WORDS_MIN = 2  # stop words of the language a sentence must hold to skip the identifier
STOP_WORDS_SHARE = 0.2  # ... and their share of its words
CORPUS_SAMPLE = 400  # sentences of a corpus the corpus check identifies
CORPUS_MIN_SHARE = 0.5  # below this share of the expected language, the corpus is refused
CORPUS_MIN_SAMPLE = 20  # fewer identifiable sentences than this: no verdict on the corpus

NO_LANGUAGE = "zxx"  # the identifier's code for text of no language
# Thai, Japanese kana, CJK ideographs, Hangul: scripts whose sentences hold no words between
# spaces to count stop words in, sent to the identifier whatever their stop words
# (literal characters: the same pattern for `re` and for Arrow's RE2)
UNSPACED = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


class WrongLanguage(UserError, ValueError):
    """A corpus that is not in the lexicon's language."""


@dataclasses.dataclass(frozen=True)
class CorpusLanguage:
    """What the corpus check found in a sample: the identified languages' counts over the
    sentences long enough to identify, the most frequent one and the expected language's share."""
    lang: str
    counts: dict[str, int]

    @property
    def n(self) -> int:
        return sum(self.counts.values())

    @property
    def detected(self) -> str | None:
        return max(sorted(self.counts), key=self.counts.__getitem__) if self.counts else None

    @property
    def share(self) -> float:
        return self.counts.get(self.lang, 0) / self.n if self.n else 1.0

    @property
    def wrong(self) -> bool:
        return self.n >= CORPUS_MIN_SAMPLE and self.share < CORPUS_MIN_SHARE and self.detected != self.lang


@functools.lru_cache(maxsize=1)
def identifier():
    """The py3langid identifier with normalised probabilities, loaded once per process
    (its model is read from inside the package; lazily: the job's `--help` imports this module)."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier  # lazy: see the docstring

    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@functools.lru_cache(maxsize=1)
def languages() -> frozenset[str]:
    """The language codes the identifier knows (ISO 639-1, as the lexicons' `lang`)."""
    return frozenset(identifier().nb_classes)


@functools.lru_cache(maxsize=1)
def spacy_stop_words() -> dict[str, frozenset[str]]:
    """Every language's stop words that spaCy ships (`spacy/lang/<code>/stop_words.py`),
    lower-cased, by language code. The files are read as modules of their own, without
    importing spaCy: its package costs 1.8 CPU-s to import in every Python worker, these
    files 12 ms together (each only defines the set `STOP_WORDS`)."""
    spec = importlib.util.find_spec("spacy")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return {}
    out = {}
    for path in sorted((Path(next(iter(spec.submodule_search_locations))) / "lang").glob("*/stop_words.py")):
        file_spec = importlib.util.spec_from_file_location(f"_stop_words_{path.parent.name}", path)
        assert file_spec is not None and file_spec.loader is not None
        module = importlib.util.module_from_spec(file_spec)
        file_spec.loader.exec_module(module)
        out[path.parent.name] = frozenset(w.lower() for w in module.STOP_WORDS)
    return out


def as_written(words: Iterable[str]) -> frozenset[str]:
    """Lower-case words and their capitalised forms, as they stand in running text."""
    lower = set(words)
    return frozenset(lower | {w.capitalize() for w in lower})


@functools.lru_cache(maxsize=16)
def stop_words(lang: str) -> frozenset[str]:
    """spaCy's stop words of `lang`, as written (empty when spaCy has none for it)."""
    return as_written(spacy_stop_words().get(lang, ()))


@functools.lru_cache(maxsize=16)
def other_stop_words(lang: str) -> frozenset[str]:
    """The stop words of every other language spaCy lists that are not `lang`'s, as written;
    only words with a letter (some lists hold dashes, digits and "&")."""
    own = spacy_stop_words().get(lang, frozenset())
    every = frozenset().union(*(w for code, w in spacy_stop_words().items() if code != lang))
    return as_written(w for w in every - own if any(map(str.isalpha, w)))


def letters(text: str) -> int:
    return sum(map(str.isalpha, text))


def identify(texts: Iterable[str]) -> list[tuple[str, float]]:
    """(language, normalised probability) of each text."""
    ident = identifier()
    return [tuple(ident.classify(t)) for t in texts]  # type: ignore[misc]


def stop_word_hits(text: str, words: frozenset[str]) -> tuple[int, int]:
    """(words of the text that are in `words`, words of the text), the words split at white
    space and compared as they stand (`words` holds the capitalised forms too): a word with
    punctuation attached ("și,") is no hit. The rule for one text; stage 1 computes it for a
    row group at once (`foreign_languages`), with the same result."""
    tokens = text.split()
    return sum(map(words.__contains__, tokens)), len(tokens)


def holds_stop_words(text: str, words: frozenset[str]) -> bool:
    """Whether at least `STOP_WORDS_MIN` of the text's words, and `STOP_WORDS_SHARE` of
    them, are in `words` (`stop_word_hits`)."""
    hits, n = stop_word_hits(text, words)
    return hits >= STOP_WORDS_MIN and hits >= STOP_WORDS_SHARE * n


@functools.lru_cache(maxsize=16)
def _value_set(words: frozenset[str]) -> pa.Array:
    return pa.array(sorted(words), pa.string())


def _hits(tokens: pa.ListArray, words: frozenset[str]) -> np.ndarray:
    """Per list of `tokens` (a list array whose offsets start at 0), how many of its words
    are in `words`: a running count over the flat words read at the lists' offsets."""
    hit = pc.is_in(tokens.flatten(), value_set=_value_set(words)).to_numpy(zero_copy_only=False)
    running = np.concatenate(([0], np.cumsum(hit, dtype=np.int64)))
    offsets = tokens.offsets.to_numpy()
    return running[offsets[1:]] - running[offsets[:-1]]


def may_be_foreign(text: str, others: frozenset[str]) -> bool:
    """Whether a sentence without enough of its language's stop words holds evidence of
    another language worth the identifier's time: `STOP_WORDS_MIN` stop words of other
    languages, or letters of a script written without spaces. On the 1 GB dense pool 12 %
    of the sentences lack the Romanian stop words (headings, names, short sentences) and 6 %
    of those hold other languages' stop words; of 106 foreign sentences in 100,000, none
    was without them."""
    return stop_word_hits(text, others)[0] >= STOP_WORDS_MIN or UNSPACED.search(text) is not None


def foreign_languages(texts: Sequence[str], lang: str) -> list[str | None]:
    """Per sentence: the other language it is confidently written in, or None (the
    lexicon's language, or too little evidence). A language the identifier does not know
    checks nothing (all None). The rules are `holds_stop_words`, `letters` and
    `may_be_foreign`, computed here by Arrow over all the texts at once (the words split
    at spaces: stage 1's sentences hold no other white space; where one did, its words
    would count as one and the sentence go to the identifier); only the sentences they
    leave go through the identifier, one by one (docs/cleaning.md, "Language check")."""
    if lang not in languages() or not texts:
        return [None] * len(texts)
    words, others = stop_words(lang), other_stop_words(lang)
    arr = pa.array(texts, pa.string())
    tokens = pc.split_pattern(arr, " ")
    unsure = np.arange(len(texts))
    if words:
        n, own = np.diff(tokens.offsets.to_numpy()), _hits(tokens, words)
        unsure = np.flatnonzero((own < STOP_WORDS_MIN) | (own < STOP_WORDS_SHARE * n))
    out: list[str | None] = [None] * len(texts)
    if not len(unsure):
        return out
    at = pa.array(unsure)
    evidence = (_hits(pc.take(tokens, at), others) >= STOP_WORDS_MIN) | pc.match_substring_regex(
        pc.take(arr, at), UNSPACED.pattern).to_numpy(zero_copy_only=False)
    ident = identifier()
    for i in unsure[evidence].tolist():
        if letters(texts[i]) < MIN_LETTERS:
            continue
        found, prob = ident.classify(texts[i])
        # zxx: "no linguistic content" (codes, lists of names): not another language
        if found not in (lang, NO_LANGUAGE) and prob >= MIN_CONFIDENCE:
            out[i] = found
    return out


def corpus_language(texts: Iterable[str], lang: str) -> CorpusLanguage:
    """The identified languages of a corpus's sample (no stop-word shortcut: related
    languages share stop words)."""
    sample = [t for t in texts if letters(t) >= MIN_LETTERS]
    return CorpusLanguage(lang, dict(Counter(found for found, _ in identify(sample))))


def check_corpus(found: CorpusLanguage, corpus: str, where: str) -> None:
    """Raise `WrongLanguage` when the sample says the corpus is in another language."""
    if not found.wrong:
        return
    detected = found.detected or "unknown"  # `wrong` implies a sample, so a language was found
    raise WrongLanguage(
        f"{where}: corpus {corpus} looks like {detected}, not {found.lang}: {found.counts.get(detected, 0)} of "
        f"{found.n} sampled sentences are {detected} and {found.counts.get(found.lang, 0)} {found.lang}; "
        f"run with --lang {detected} (or a lexicon of that language), or check --input")
