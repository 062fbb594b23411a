"""Sentence segmentation with NLTK Punkt, trained per language on the corpus itself.

NLTK's pretrained punkt data cannot be downloaded at run time (and has no Romanian model),
so the parameters are learnt unsupervised with `PunktTrainer` on a sample of the corpus and
then seeded with the lexicon's abbreviations. Training is done once (on the driver); the
parameters travel to executors as a small JSON file or pickled with the `Segmenter`.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import string
import sys
import types
from collections import defaultdict
from itertools import chain, islice, repeat
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

from extractor.core.errors import UserError
from extractor.io import atomic, fs


def _punkt_module():
    """nltk.tokenize.punkt without running nltk/__init__.py and nltk/tokenize/__init__.py,
    which import scipy, scikit-learn and every corpus reader: seconds of CPU in each process,
    paid by the driver and by every Spark Python worker, for a module that needs none of
    it. Afterwards the stubs and the modules loaded under them leave sys.modules again, so
    that a later `import nltk` anywhere in the process is the real, complete one."""
    name = "nltk.tokenize.punkt"
    if name in sys.modules or "nltk" in sys.modules:
        return importlib.import_module(name)
    spec = importlib.util.find_spec("nltk")
    if spec is None or not spec.submodule_search_locations:
        return importlib.import_module(name)  # raises the usual ImportError
    root = list(spec.submodule_search_locations)
    before = set(sys.modules)
    stubs = {}
    for package, path in (("nltk", root), ("nltk.tokenize", [os.path.join(root[0], "tokenize")])):
        stub = types.ModuleType(package)
        stub.__path__ = path
        stubs[package] = sys.modules[package] = stub
    try:
        return importlib.import_module(name)
    finally:
        for loaded in [m for m in sys.modules if m not in before and (m == "nltk" or m.startswith("nltk."))]:
            del sys.modules[loaded]


_punkt = _punkt_module()
if TYPE_CHECKING:  # the same classes, named for the type checker (the import above skips nltk/__init__.py)
    from nltk.tokenize.punkt import (PunktLanguageVars, PunktParameters, PunktSentenceTokenizer, PunktToken,
                                     PunktTrainer)
else:
    PunktLanguageVars, PunktParameters, PunktSentenceTokenizer, PunktToken, PunktTrainer = (
        _punkt.PunktLanguageVars, _punkt.PunktParameters, _punkt.PunktSentenceTokenizer, _punkt.PunktToken,
        _punkt.PunktTrainer)

__all__ = ["train_punkt", "save_params", "load_params", "Segmenter", "abbreviation_types",
           "DEFAULT_MAX_TRAIN_CHARS", "PARAMS_FORMAT"]

PARAMS_FORMAT = "nli-punkt-params/1"
# Punkt learns its statistics well from a few MB; more text only costs driver time.
DEFAULT_MAX_TRAIN_CHARS = 8_000_000

# Romanian writes ş/ţ (cedilla) and ș/ț (comma below) for the same letters. Punkt learns and
# decides on a folded copy of the text (one character for one, so spans into the copy are
# spans into the original): abbreviations, collocations and casing statistics are shared by
# both spellings, and the sentences are cut from the text as written.
# (Four `str.replace` calls: `str.translate` looks every character of a non-ASCII text up
# in its table, far slower on Romanian paragraphs.)
_FOLD = (("ş", "ș"), ("ţ", "ț"), ("Ş", "Ș"), ("Ţ", "Ț"))


def fold(text: str) -> str:
    for old, new in _FOLD:
        text = text.replace(old, new)
    return text


def abbreviation_types(abbreviations: Iterable[str]) -> set[str]:
    """Punkt abbreviation types: lower case, folded, without the final period."""
    types: set[str] = set()
    for abbr in abbreviations:
        a = fold(abbr.strip().rstrip(".").lower())
        if a:
            types.add(a)
    return types


def train_punkt(texts: Iterable[str], abbreviations: Iterable[str] = (),
                max_chars: int = DEFAULT_MAX_TRAIN_CHARS, min_abbrev_count: int = 3) -> PunktParameters:
    """Learn Punkt parameters from texts (paragraphs or pages), at most max_chars of them,
    then add the lexicon's abbreviations (after training, so that the trainer's own
    re-classification cannot remove them)."""
    trainer = PunktTrainer(lang_vars=_StdReLangVars(), token_cls=_StdReToken)
    trainer.INCLUDE_ALL_COLLOCS = True
    seen = 0
    batch: list[str] = []
    batch_chars = 0
    for text in texts:
        if not text:
            continue
        if seen + len(text) > max_chars:
            text = text[: max(0, max_chars - seen)]
        batch.append(fold(text))
        batch_chars += len(text)
        seen += len(text)
        if batch_chars >= 500_000:
            trainer.train("\n\n".join(batch), finalize=False)
            batch, batch_chars = [], 0
        if seen >= max_chars:
            break
    if batch:
        trainer.train("\n\n".join(batch), finalize=False)
    trainer.finalize_training()
    params = trainer.get_params()
    # On a small sample Punkt takes any rare word seen once before a period for an
    # abbreviation ("pentru oi. Păstoritul"): keep a learnt one only if it was seen at
    # least min_abbrev_count times with its period, or if it has inner periods (u.s.a).
    # The lexicon's own are always kept.
    fdist = trainer._type_fdist
    params.abbrev_types = {t for t in params.abbrev_types if "." in t or fdist[t + "."] >= min_abbrev_count}
    params.abbrev_types.update(abbreviation_types(abbreviations))
    return params


def params_to_dict(params: PunktParameters) -> dict:
    """A JSON-able, deterministic (sorted) form of the parameters."""
    return {
        "format": PARAMS_FORMAT,
        "abbrev_types": sorted(params.abbrev_types),
        "collocations": sorted([a, b] for a, b in params.collocations),
        "sent_starters": sorted(params.sent_starters),
        "ortho_context": {k: v for k, v in sorted(params.ortho_context.items()) if v},
    }


def params_from_dict(data: dict, source: str = "<dict>") -> PunktParameters:
    if not isinstance(data, dict) or data.get("format") != PARAMS_FORMAT:
        raise PunktParamsError(f"{source}: not a Punkt parameter file (expected format {PARAMS_FORMAT!r})")
    params = PunktParameters()
    params.abbrev_types = set(data.get("abbrev_types", ()))
    params.collocations = {tuple(pair) for pair in data.get("collocations", ())}
    params.sent_starters = set(data.get("sent_starters", ()))
    params.ortho_context = defaultdict(int, {k: int(v) for k, v in data.get("ortho_context", {}).items()})
    return params


def params_json(params: PunktParameters) -> bytes:
    """The parameters as JSON bytes (sorted keys: the same params give the same bytes)."""
    return (json.dumps(params_to_dict(params), ensure_ascii=False, sort_keys=True, indent=0) + "\n").encode("utf-8")


def save_params(params: PunktParameters, path: str | Path) -> str | Path:
    """Write the parameters as JSON (sorted keys: the same params give the same bytes), to
    a local path or a URI (through extractor.io.fs)."""
    data = params_json(params)
    atomic.write_file(path, data)
    local = fs.local_path(path)
    return Path(local) if local is not None else str(path)


class PunktParamsError(UserError, ValueError):
    """A --punkt-params file that is not a Punkt parameter file."""


class PunktParamsNotFound(UserError, FileNotFoundError):
    """A --punkt-params file that does not exist."""


def load_params(path: str | Path) -> PunktParameters:
    try:
        if not fs.exists(str(path)):
            raise PunktParamsNotFound(f"{path}: Punkt parameter file not found")
        data = json.loads(fs.read_bytes(str(path)).decode("utf-8"))
    except fs.FsError as exc:  # the user's --punkt-params: unreadable
        raise PunktParamsError(str(exc)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PunktParamsError(f"{path}: not a Punkt parameter file ({exc.__class__.__name__})") from None
    return params_from_dict(data, str(path))


class _StdReLangVars(PunktLanguageVars):
    """NLTK's own Punkt patterns, compiled with the standard `re` module.

    NLTK routes every pattern through `nltk.redos` (the third-party `regex` engine plus a
    timeout per call) as a guard against caller-supplied patterns; these three fixed,
    linear patterns are NLTK's own, and the guard costs a large share of segmentation
    time (the realignment pattern alone was 7% of the sentences stage's Python CPU).
    Same pattern strings, same flags, same matches (tests compare with NLTK)."""

    re_boundary_realignment = re.compile(PunktLanguageVars.re_boundary_realignment.pattern, re.MULTILINE)

    def __init__(self):
        super().__init__()
        self._re_period_context = re.compile(
            self._period_context_fmt % {"NonWord": self._re_non_word_chars,
                                        "SentEndChars": self._re_sent_end_chars},
            re.UNICODE | re.VERBOSE)
        self._re_word_tokenizer = re.compile(
            self._word_tokenize_fmt % {"NonWord": self._re_non_word_chars,
                                       "MultiChar": self._re_multi_char_punct,
                                       "WordStart": self._re_word_start},
            re.UNICODE | re.VERBOSE)


class _StdReToken(PunktToken):
    """PunktToken with its own fixed patterns compiled by `re` (same reason as above)."""

    __slots__ = ()
    _RE_ELLIPSIS = re.compile(r"\.\.+$")
    _RE_NUMERIC = re.compile(r"^-?[\.,]?\d[\d,\.-]*\.?$")
    _RE_INITIAL = re.compile(r"[^\W\d]\.$", re.UNICODE)
    _RE_ALPHA = re.compile(r"[^\W\d]+$", re.UNICODE)


_WHITESPACE = tuple(string.whitespace)
# "word. Next", "word-word. „next-word,", "word. —" (a trailing , ; or : is a token of its own;
# a word of one letter is an initial, which Punkt decides otherwise)
_PLAIN_CONTEXT_RE = re.compile(
    r"((?:[^\W\d_]{2,}|[^\W\d_]+(?:-[^\W\d_]+)+))\. (\u201e?[^\W\d_]+(?:-[^\W\d_]+)*|\u2014)[,;:]?")
# "word! Next", "word? „Nu", "word?! Next", "word!... next": '!' and '?' are tokens of their
# own (so is a run of two or more periods after them) and always breaks
_BANG_CONTEXT_RE = re.compile(r"[^\W\d_]+[!?]+(?:\.{2,})?\s+\S+")
# "word... Next", "word.. next-word,": the periods are an ellipsis token
_ELLIPSIS_CONTEXT_RE = re.compile(r"[^\W\d_]+(\.{2,}) ([^\W\d_]+(?:-[^\W\d_]+)*)[,;:]?")
_ORTHO_LC, _ORTHO_MID_UC = _punkt._ORTHO_LC, _punkt._ORTHO_MID_UC


class _MemoPunkt(PunktSentenceTokenizer):
    """Punkt with its per-candidate decision memoised.

    Punkt decides each potential break from a short context string (the word before the
    punctuation, the punctuation, the next word); the decision depends on nothing else, and
    the same contexts ("1990. The", "etc. În") recur all over a corpus. Re-annotating them
    is most of Punkt's time, so the answers are cached. The cache is bounded: when it holds
    MAX_CACHE contexts, only those asked for again since the last trim stay (`_hot`). A
    worker's memo then stays flat in the size of its input, where a cache cleared when
    full still grew with it (docs/scale.md)."""

    MAX_CACHE = 20_000

    def __init__(self, params: PunktParameters):
        super().__init__(params, lang_vars=_StdReLangVars(), token_cls=_StdReToken)
        self._memo: dict[str, bool] = {}
        self._hot: set[str] = set()

    def _slices_from_text(self, text: str):
        # NLTK's _slices_from_text and _match_potential_end_contexts in one loop, with the
        # same candidates, contexts and decisions (one generator and its tuples less per
        # candidate break; this is stage 1's innermost loop). A candidate's context is the
        # word before the mark, the mark and what follows it (`after_tok`): one stretch of
        # the text, text[word start:after_tok end], decided in place (`_decide`).
        last_break = 0
        prev_start = prev_stop = prev_end = 0
        prev = None
        decide = self._decide
        # The word before a mark starts after the last white space before it. A cleaned
        # wiki paragraph has no white space but single spaces: one rfind instead of six.
        spaces_only = not ("\n" in text or "\t" in text or "\r" in text or "\x0b" in text or "\x0c" in text)
        # (a None after the last match decides the last candidate, which nothing overlaps)
        for match in chain(self._lang_vars.period_context_re().finditer(text), (None,)):
            if match is not None:
                start = match.start()
                if spaces_only:
                    i = text.rfind(" ", prev_stop, start)
                else:
                    i = max(map(text.rfind, _WHITESPACE, repeat(prev_stop), repeat(start)))
                i = i + 1 if i > prev_stop else prev_start
            if prev is not None and (match is None or prev_stop <= i) and decide(text, prev_start, prev_end):
                yield slice(last_break, prev.end())
                last_break = prev.start("next_tok") if prev.group("next_tok") else prev.end()
            if match is not None:
                prev, prev_start, prev_stop, prev_end = match, i, start, match.end("after_tok")
        yield slice(last_break, len(text.rstrip()))

    def text_contains_sentbreak(self, text: str) -> bool:
        return self._decide(text, 0, len(text))

    def _decide(self, text: str, lo: int, hi: int) -> bool:
        """Punkt's `text_contains_sentbreak` of the context text[lo:hi]; the common cases
        are matched in place (no slice of the text made), the others memoised.

        The common cases, decided without building tokens exactly as Punkt decides them:
        - a plain word of 2+ letters, a period, one space, a plain (hyphenated) word.
          Punkt breaks there unless the word is a known abbreviation or the pair a known
          collocation (the orthographic and initial/number heuristics only apply to those
          other cases);
        - a plain word, '!' or '?', white space, any token: the mark is a token of its
          own, a break in Punkt's first pass that its second pass (about words ending in
          a period) never revisits, and a token follows it.
        - a plain word, two or more periods, one space, a plain word: the periods are an
          ellipsis token, which breaks when the next word is capitalised and either the
          orthographic heuristic calls it a sentence starter (seen in lower case, never
          capitalised mid-sentence) or it is a known sentence starter; a known
          collocation (periods, next word) never breaks."""
        params = self._params
        m = _PLAIN_CONTEXT_RE.fullmatch(text, lo, hi)
        if m is not None:
            prev = m.group(1).lower()
            if prev not in params.abbrev_types and prev.rsplit("-", 1)[-1] not in params.abbrev_types:
                return (prev, m.group(2).lower()) not in params.collocations
        elif _BANG_CONTEXT_RE.fullmatch(text, lo, hi):
            return True
        else:
            m = _ELLIPSIS_CONTEXT_RE.fullmatch(text, lo, hi)
            if m is not None:
                word = m.group(2)
                typ = word.lower()
                if (m.group(1)[:-1], typ) in params.collocations or not word[0].isupper():
                    return False
                ortho = params.ortho_context.get(typ, 0)
                return bool(ortho & _ORTHO_LC and not ortho & _ORTHO_MID_UC) or typ in params.sent_starters
        context = text[lo:hi]
        memo = self._memo
        hit = memo.get(context)
        if hit is None:
            if len(memo) >= self.MAX_CACHE:
                self._trim()
            hit = self._memo[context] = super().text_contains_sentbreak(context)
        else:
            self._hot.add(context)
        return hit

    def _trim(self) -> None:
        """Keep the contexts asked for again since the last trim (at most MAX_CACHE // 2 of
        them), drop the others."""
        memo = self._memo
        self._memo = {t: memo[t] for t in islice(self._hot, self.MAX_CACHE // 2)}
        self._hot = set()


class Segmenter:
    """Splits a paragraph into stripped sentences. Picklable (ships to Spark executors)."""

    def __init__(self, params: PunktParameters):
        self._set_params(params)

    def _set_params(self, params: PunktParameters) -> None:
        self.params = params
        self._tokenizer = _MemoPunkt(params)

    def split(self, paragraph: str) -> list[str]:
        if not paragraph or not paragraph.strip():
            return []
        # NLTK's span_tokenize (with _realign_boundaries and _pair_iter) as one loop over
        # the list of candidate slices: the same spans, without two generators per paragraph
        text = fold(paragraph)
        slices = list(self._tokenizer._slices_from_text(text))
        realign_re = self._tokenizer._lang_vars.re_boundary_realignment
        out = []
        realign = 0
        last = len(slices) - 1
        for k, piece in enumerate(slices):
            start, end = piece.start + realign, piece.stop
            if k < last:
                following = slices[k + 1]
                m = realign_re.match(text[following])
                if m:
                    end = following.start + len(m.group(0).rstrip())
                    realign = m.end()
                else:
                    realign = 0
                    if not text[start:end]:
                        continue
            elif not text[start:end]:
                continue
            sentence = paragraph[start:end].strip()
            if sentence:
                out.append(sentence)
        return out

    def __getstate__(self):
        return {"params": params_to_dict(self.params)}

    def __setstate__(self, state):
        self._set_params(params_from_dict(state["params"]))
