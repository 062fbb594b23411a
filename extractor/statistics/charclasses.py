"""Which characters Arrow's string kernels treat exactly as Python does, so that the
column-wise statistics can leave the per-token Python work to Arrow where the result is
provably the same (`kernels._vocabulary`, `keys.fold_texts`).

By Python's definitions, over the code points U+0021-U+2FFF, checked against Arrow's
lower-casing of each character:

- *core*: alphanumeric, Arrow lower-cases it to its Python case folding, and that folding
  is alphanumeric (not İ, whose folding ends with a combining dot; not Σ, which Python may
  lower-case by its context);
- *edge*: neither alphanumeric nor whitespace, and unchanged by case folding and by
  Arrow's lower-casing (what `rows.norm_words` strips from the ends of a token);
- *upper*: ``str.isupper()`` (all below U+20000; a test checks the whole Unicode range).

Case folding maps each character on its own, and Arrow's lower-casing does too, so on a
string of core and edge characters and " " ``utf8_lower`` is ``str.casefold``. Stage 2's
near-duplicate shingles (`extractor.neardup`) use `normalised_tokens` too. Built once per
process.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_RULES: dict | None = None
UPPER_LIMIT = 0x20000  # no code point at or above it is upper case (tests/test_statistics.py)


def _class(points: list[int]) -> str:
    """An RE2 character class of sorted code points (as ranges)."""
    ranges, start = [], None
    for i, cp in enumerate(points):
        if start is None:
            start = cp
        if i + 1 == len(points) or points[i + 1] != cp + 1:
            ranges.append(f"\\x{{{start:04X}}}-\\x{{{cp:04X}}}" if cp != start else f"\\x{{{cp:04X}}}")
            start = None
    return "[" + "".join(ranges) + "]"


def rules() -> dict:
    """The classes as RE2 patterns: ``token`` (a whole token of core and edge characters
    with at least one core character), ``clean`` (a whole text of words of core and edge
    characters separated by single " ", none at either end, or the empty text), ``upper``,
    ``upper_tail`` (an upper-case character after the first character), and ``edge`` (the
    edge characters, for ``utf8_trim``)."""
    global _RULES
    if _RULES is None:
        chars = [chr(cp) for cp in range(0x21, 0x3000)]
        lowered = pc.utf8_lower(pa.array(chars, pa.string())).to_pylist()
        core, edge = [], []
        for c, low in zip(chars, lowered):
            fold = c.casefold()
            if c.isalnum():
                if low == fold and fold.isalnum() and c != "\u03a3":
                    core.append(ord(c))
            elif not c.isspace() and low == c and fold == c:
                edge.append(ord(c))
        upper = [cp for cp in range(UPPER_LIMIT) if chr(cp).isupper()]
        both = _class(sorted(core + edge))
        up = _class(upper)
        _RULES = {"token": f"^{both}*{_class(core)}{both}*$", "clean": f"^(?:{both}+(?: {both}+)*)?$",
                  "upper": up, "upper_tail": f"(?s)^..*{up}", "edge": "".join(map(chr, edge))}
    return _RULES


# the characters Python's str.split() splits at besides Arrow's ASCII whitespace (" ", \t,
# \n, \v, \f, \r): the information separators, NEL, NBSP, the Zs spaces, LS and PS
# (tests/test_statistics.py checks the set over every code point)
OTHER_WHITESPACE = r"[\x{1C}-\x{1F}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}]"


def split_whitespace(texts: pa.Array) -> pa.Array:
    """``utf8_split_whitespace`` of a string array (the tokens of Python's ``str.split()``),
    at half its cost: the texts holding another whitespace character than Arrow's ASCII
    ones (few: one RE2 pass finds them) have those characters made " " first, then
    ``ascii_split_whitespace`` (0.013 against 0.029 s for 25,000 sentences)."""
    other = pc.fill_null(pc.match_substring_regex(texts, OTHER_WHITESPACE), False)
    if pc.any(other).as_py():
        texts = pc.replace_with_mask(texts, other,
                                     pc.replace_substring_regex(texts.filter(other), OTHER_WHITESPACE, " "))
    return pc.ascii_split_whitespace(texts)


def normalised_tokens(vocab: pa.Array, python_norm) -> pa.Array:
    """`rows.norm_words` of each distinct whitespace token ("" when nothing is left):
    ``utf8_trim(utf8_lower(token), edge)`` for the tokens of `rules`' ``token`` pattern,
    ``python_norm(token)`` (the Python definition) for the others."""
    r = rules()
    done = pc.fill_null(pc.match_substring_regex(vocab, r["token"]), False)
    arrow = pc.utf8_trim(pc.utf8_lower(vocab), r["edge"])
    other = pc.invert(done)
    todo = vocab.filter(other).to_pylist()
    if not todo:
        return arrow
    return pc.replace_with_mask(arrow, other, pa.array([python_norm(t) for t in todo], vocab.type))


def has_upper(vocab: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Per token: ``any(ch.isupper() for ch in token)`` and the same over ``token[1:]``
    (looked for only in the tokens that hold a capital at all: a few in ten), as numpy bools."""
    r = rules()
    upper = pc.fill_null(pc.match_substring_regex(vocab, r["upper"]), False)
    has = upper.to_numpy(zero_copy_only=False).astype(bool)
    tail = np.zeros(len(vocab), dtype=bool)
    tail[has] = pc.fill_null(pc.match_substring_regex(vocab.filter(upper), r["upper_tail"]),
                             False).to_numpy(zero_copy_only=False)
    return has, tail


def fold_texts(texts: pa.Array, fold_others) -> pa.Array:
    """``" ".join(text.casefold().split())`` of each text (a string array without nulls):
    Arrow lower-cases the texts of words of core and edge characters already separated by
    single " " (`rules`' ``clean``: nearly all, nothing to collapse or strip); the others
    go to ``fold_others`` (an array of them -> their foldings, an array of the same type)."""
    r = rules()
    # one pass of `clean` (0.05 s for 200,000 sentences) where a text of core, edge and
    # space characters without two spaces in a row, another space than " " or one at an end
    # took two (0.10 s): the same texts
    done = pc.fill_null(pc.match_substring_regex(texts, r["clean"]), False)
    arrow = pc.utf8_lower(texts)
    other = pc.invert(done)
    todo = texts.filter(other)
    if not len(todo):
        return arrow
    return pc.replace_with_mask(arrow, other, fold_others(todo).cast(texts.type))
