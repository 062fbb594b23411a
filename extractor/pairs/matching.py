"""Linking-phrase matching at the start of a sentence (pure Python, no Spark).

The rule, documented in docs/pairs.md:

* a phrase matches only at the very start of the sentence (leading whitespace allowed),
  case-insensitively, on `Lexicon.normalize()`d text (cedilla/comma-below folded and
  diacritics ignored where the lexicon says so); whitespace inside a phrase may be any run
  of whitespace;
* the longest phrase wins ("Astfel, rezultă că" before "Astfel");
* after the phrase comes a separator: optional whitespace, then one of `, : ; — –`;
  a phrase whose last word(s) are listed in the lexicon's `matching.open_endings`
  ("că", "la", "que", "that", ...) needs none: whitespace is enough ("Astfel că au ...");
  so "Astfelul" or "However hard" never match;
* the hypothesis is what follows the separator, with leading whitespace removed, then
  `recase_first_letter` (the one rule applied to every hypothesis of every label).

`normalize()` keeps one character per input character, so offsets found in the key are
offsets into the original sentence: the marker and the hypothesis are cut from the text
as written.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter

from extractor.lexicon.keys import collapse, phrase_key

SEPARATORS = ",:;\u2014\u2013"  # comma, colon, semicolon, em dash, en dash
_OPENING = {"Ps", "Pi"}  # opening brackets and quotes before the first letter
_PROBE = 3  # characters of a sentence's opening `Matcher.may_open` looks at
_MEMO_SIZE = 100_000  # `may_open` answers memoised per matcher (cleared when full)
_HEAD = itemgetter(slice(0, _PROBE))  # a sentence's opening, as `may_open` reads it


@dataclass(frozen=True)
class Match:
    label: str        # canonical label of the phrase
    marker: str       # the phrase as written in the sentence ("In consecinta")
    phrase: str       # the phrase as listed in the lexicon ("În consecință")
    hypothesis: str   # the sentence without marker and separator, first letter re-cased


def recase_first_letter(text: str) -> str:
    """Upper-case the first letter of `text` and leave every other character untouched.

    The first letter is the first alphanumeric character, looking past leading opening
    quotes and brackets; a digit there means no change ("1990s were ..." stays). The
    same function is applied to the hypotheses of every label, neutral included, so that
    casing carries no label information (the RoNLI release lower-cased marked ones)."""
    first = text[:1]
    if first.isalnum():  # the common case, without the loop
        if first.islower():
            up = first.upper()
            if len(up) == 1:
                return up + text[1:]
        return text
    for i, ch in enumerate(text):
        if ch.isalnum():
            up = ch.upper()
            if ch.islower() and len(up) == 1:  # "ß".upper() is "SS": leave such letters alone
                return text[:i] + up + text[i + 1:]
            return text
        if not (ch in "\"'" or unicodedata.category(ch) in _OPENING or ch.isspace()):
            return text
    return text


def _key_pattern(key: str) -> str:
    return r"\s+".join(re.escape(word) for word in key.split())


class Matcher:
    """The compiled lexicon: one regex over normalized keys, longest phrase first.

    Build it once per lexicon (`matcher_for(lexicon)` caches it per process)."""

    def __init__(self, lexicon):
        self.lexicon = lexicon
        self._phrase: dict[str, tuple[str, str]] = {}  # collapsed key -> (label, phrase)
        for label, phrases in lexicon.phrases.items():
            for phrase in phrases:
                self._phrase.setdefault(phrase_key(lexicon.normalize, phrase), (label, phrase))
        endings = [phrase_key(lexicon.normalize, e) for e in getattr(lexicon, "open_endings", ())]
        keys = sorted(self._phrase, key=lambda k: (-len(k), k))
        strict, loose = [], []
        for key in keys:
            words = key.split()
            is_open = any(words[-len(e.split()):] == e.split() for e in endings if e)
            # open phrases: whitespace, or a separator as for the others ("Astfel că, ...")
            tail = (r"(?:\s*[" + SEPARATORS + r"]\s*|\s+)" if is_open
                    else r"\s*[" + SEPARATORS + r"]\s*")
            strict.append(f"(?:({_key_pattern(key)}){tail})")
            loose.append(_key_pattern(key))
        self.open_keys = frozenset(k for k in keys
                                   if any(k.split()[-len(e.split()):] == e.split() for e in endings if e))
        # Python's alternation is leftmost-first: ordering by length makes it longest-first,
        # and a longer phrase whose separator is missing falls back to a shorter one.
        self._strict = re.compile(r"^\s*(?:" + "|".join(strict) + ")") if strict else None
        self._loose = re.compile(r"^\s*(?:" + "|".join(loose) + r")(?!\w)") if loose else None

        # Only the opening of a sentence can hold a phrase: the key is computed on a prefix
        # (longest phrase + margin), with a per-character translation table cached per
        # process, which gives `Lexicon.normalize()`'s characters at C speed.
        self._prefix = max((len(k) for k in keys), default=0) + 24
        self._table = _NormalizeTable(lexicon)
        # A phrase's key opens with its first word (the patterns put `\s+` only between
        # words): a sentence whose normalised first PROBE characters start no phrase's first
        # word cannot match, and most sentences are settled by those few characters alone.
        starts: dict = {}
        for key in keys:
            word = key.split()[0]
            starts.setdefault(min(len(word), _PROBE), set()).add(word[:_PROBE])
        self._starts = sorted((n, frozenset(v)) for n, v in starts.items())
        self._may_open_memo: dict = {}
        # The loose pattern puts `\s+` after a phrase's first word or, for a one-word phrase,
        # `(?!\w)`: a sentence opens with a phrase only if its first whitespace-delimited
        # token, normalised, starts with a phrase's first word not followed by a word
        # character. Asked once per distinct token (`annotate_all`), on the first
        # `_token_probe` characters (longer than any first word, so a cut token answers the same).
        firsts = sorted({k.split()[0] for k in keys}, key=lambda w: (-len(w), w))
        self._first_word = re.compile("(?:" + "|".join(map(re.escape, firsts)) + r")(?!\w)") if firsts else None
        self._token_probe = max(map(len, firsts), default=0) + 2
        self._token_memo: dict = {}

    def key(self, sentence: str) -> str:
        """`Lexicon.normalize()` of the opening of `sentence` (enough for any phrase and its
        separator; the whole sentence when its opening holds runs of whitespace)."""
        head = sentence[: self._prefix + len(sentence) - len(sentence.lstrip())]
        if len(head) < len(sentence) and ("  " in head or "\t" in head or "\n" in head):
            head = sentence
        if head.isascii():  # ASCII: normalize() is lower() (no cedilla, no diacritics)
            return head.lower()
        return head.translate(self._table)

    def may_open(self, sentence: str) -> bool:
        """False when `sentence` (not empty) cannot open with a phrase: its normalised first
        characters start no phrase's first word. Leading whitespace: True (the patterns
        decide)."""
        if sentence[0].isspace():
            return True
        head = sentence[:_PROBE]
        head = head.lower() if head.isascii() else head.translate(self._table)
        for n, words in self._starts:
            if head[:n] in words:
                return True
        return False

    def annotate_all(self, sentences) -> tuple[list, list]:
        """`annotate` of each sentence: (matches, opens). `may_open` depends only on a
        sentence's first PROBE characters, so it is asked once per distinct opening
        (memoised; a few thousand in a corpus) and the sentences whose opening can start a
        phrase (about one in five) are picked in C loops (`map`, `compress`); of those, only
        the ones whose first token can be a phrase's first word (memoised per token: about
        half of them in Romanian prose) reach the patterns (every sentence of the corpus
        passes here)."""
        sentences = sentences if isinstance(sentences, list) else list(sentences)
        n = len(sentences)
        matches: list[Match | None] = [None] * n
        opens = [False] * n
        loose, memo = self._loose, self._may_open_memo
        if loose is None or not n:
            return matches, opens
        heads = list(map(_HEAD, sentences))
        fresh = set(heads).difference(memo)
        if len(memo) + len(fresh) > _MEMO_SIZE:
            memo.clear()
        for head in fresh:
            memo[head] = bool(head) and self.may_open(head)  # an empty sentence opens with nothing
        tokens, first_word, probe, table = self._token_memo, self._first_word, self._token_probe, self._table
        assert first_word is not None  # a loose pattern has phrases, so first words
        if len(tokens) >= _MEMO_SIZE:
            tokens.clear()
        for i in compress(range(n), map(memo.__getitem__, heads)):
            sentence = sentences[i]
            if not sentence[0].isspace():  # (leading whitespace: the patterns decide)
                token = sentence[:probe].split(None, 1)[0]
                possible = tokens.get(token)
                if possible is None:
                    possible = tokens[token] = first_word.match(token.translate(table)) is not None
                if not possible:
                    continue
            key = self.key(sentence)
            if loose.match(key) is not None:
                matches[i] = self._match_key(sentence, key)
                opens[i] = True
        return matches, opens

    def annotate(self, sentence: str) -> tuple[Match | None, bool]:
        """(the strict match, whether the sentence opens with a phrase at all) in one pass:
        a strict match implies a loose one, so the strict pattern runs only then."""
        if not sentence or self._loose is None or not self.may_open(sentence):
            return None, False
        key = self.key(sentence)
        if self._loose.match(key) is None:
            return None, False
        return self._match_key(sentence, key), True

    def match(self, sentence: str) -> Match | None:
        """The linking phrase that opens `sentence`, its label, and the stripped hypothesis."""
        if not sentence or self._strict is None or not self.may_open(sentence):
            return None
        return self._match_key(sentence, self.key(sentence))

    def _match_key(self, sentence: str, key: str) -> Match | None:
        strict = self._strict
        assert strict is not None  # called only when a phrase may open the sentence
        m = strict.match(key)
        if m is None:
            return None
        group = next(i for i, g in enumerate(m.groups(), 1) if g is not None)
        start, end = m.span(group)
        label, phrase = self._phrase[collapse(m.group(group))]
        rest = sentence[m.end():].lstrip()
        if not any(ch.isalnum() for ch in rest):
            return None  # nothing left to be a hypothesis ("However.")
        return Match(label=label, marker=sentence[start:end], phrase=phrase,
                     hypothesis=recase_first_letter(rest))

    def phrase_of(self, marker: str) -> str | None:
        """The lexicon's spelling of a marker as written ("In consecinta" -> "În consecință"),
        or None when it is no phrase of this lexicon."""
        found = self._phrase.get(phrase_key(self.lexicon.normalize, marker))
        return found[1] if found else None

    def starts_with_phrase(self, sentence: str) -> bool:
        """True when the sentence opens with a lexicon phrase as a whole word, separator or
        not ("However hard ...", "So-called ..."): such a sentence must not become a
        hypothesis, marked or neutral, since its opening would tell the label."""
        if not sentence or self._loose is None or not self.may_open(sentence):
            return False
        return self._loose.match(self.key(sentence)) is not None


class _NormalizeTable(dict):
    """str.translate table: code point -> `Lexicon.normalize()` of that one character,
    filled on first sight (normalize keeps one character per character, so it is a
    per-character map)."""

    def __init__(self, lexicon):
        super().__init__()
        self.lexicon = lexicon

    def __missing__(self, code: int) -> str:
        out = self[code] = self.lexicon.normalize(chr(code))
        return out


_CACHE: dict[str, Matcher] = {}


def matcher_for(lexicon) -> Matcher:
    """The process-wide matcher of a lexicon, built on first use (Spark workers call this
    once per Python worker, not once per row)."""
    key = f"{lexicon.sha256}:{lexicon.path}"
    matcher = _CACHE.get(key)
    if matcher is None:
        matcher = _CACHE[key] = Matcher(lexicon)
    return matcher
