"""The per-row statistics on plain strings: the definitions (docs/stats.md).

Each function here is the reference of a column of `extractor.statistics.kernels`'
batch computation (tests/test_statistics.py checks them equal, bit for bit).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

_EDGE_PUNCT = re.compile(r"^[\W_]+|[\W_]+$")


def words(text: str) -> list[str]:
    """Whitespace tokens of the raw text (the length unit of RoNLI Table 2)."""
    return text.split() if text else []


def word_count(text: str) -> int:
    return len(words(text))


def norm_words(text: str) -> list[str]:
    """Tokens for overlap statistics: case-folded, edge punctuation stripped, empties dropped."""
    return _norm_tokens(text.casefold().split()) if text else []


def _norm_tokens(folded: list[str]) -> list[str]:
    """`norm_words` of already case-folded whitespace tokens. ``[\\W_]`` is exactly "not
    str.isalnum()", so a token with alphanumeric ends is kept as is without the regex."""
    out = []
    for tok in folded:
        if tok[0].isalnum() and tok[-1].isalnum():
            out.append(tok)
        else:
            tok = _EDGE_PUNCT.sub("", tok)
            if tok:
                out.append(tok)
    return out


def norm_token(token: str) -> str:
    """`norm_words` of one whitespace token ("" when nothing is left): what the batch
    kernels run in Python for the tokens Arrow cannot normalise as Python does."""
    folded = token.casefold()
    return folded if folded and folded[0].isalnum() and folded[-1].isalnum() else _EDGE_PUNCT.sub("", folded)


def overlap_jaccard(premise: str, hypothesis: str) -> float:
    """Jaccard index of the two sentences' normalised word sets (0 when both are empty)."""
    p, h = set(norm_words(premise)), set(norm_words(hypothesis))
    union = p | h
    return len(p & h) / len(union) if union else 0.0


def overlap_jaccard_raw(premise: str, hypothesis: str) -> float:
    """RoNLI's word overlap: Jaccard index of the raw whitespace-token sets, case and
    punctuation kept (0 when both are empty)."""
    p, h = set(words(premise)), set(words(hypothesis))
    union = p | h
    return len(p & h) / len(union) if union else 0.0


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token sequences.

    Bit-parallel (Allison-Dix / Hyyro 2004): one big-integer step per token of ``b``
    instead of a len(a) x len(b) table, so the Spark job can afford it on every pair.
    """
    if not a or not b:
        return 0
    masks: dict[str, int] = {}
    for i, tok in enumerate(a):
        masks[tok] = masks.get(tok, 0) | (1 << i)
    full = (1 << len(a)) - 1
    v = full
    for tok in b:
        u = v & masks.get(tok, 0)
        v = ((v + u) | (v - u)) & full
    return len(a) - bin(v).count("1")


def lcs_ratio(premise: str, hypothesis: str) -> float:
    """LCS of normalised words over the hypothesis length in normalised words (0 if empty)."""
    h = norm_words(hypothesis)
    return lcs_length(h, norm_words(premise)) / len(h) if h else 0.0


def new_token_rate(premise: str, hypothesis: str) -> float:
    """Share of hypothesis word tokens (normalised) that do not occur in the premise."""
    h = norm_words(hypothesis)
    if not h:
        return 0.0
    p = set(norm_words(premise))
    return sum(1 for w in h if w not in p) / len(h)


def inner_capital(text: str) -> bool:
    """A capital letter after the first character: the casing leak of the RoNLI release."""
    if not text:
        return False
    rest = text[1:]
    if rest.islower():  # every cased character is lower case: no capital (fast path)
        return False
    return any(ch.isupper() for ch in rest)


# Row columns produced by row_statistics, in order.
ROW_COLUMNS = ("premise_words", "hypothesis_words", "overlap_jaccard", "lcs_ratio",
               "new_token_rate", "hypothesis_inner_capital", "overlap_jaccard_raw")
# Their types (pandas dtype names).
ROW_DTYPES = {"premise_words": "int64", "hypothesis_words": "int64", "overlap_jaccard": "float64",
              "lcs_ratio": "float64", "new_token_rate": "float64", "hypothesis_inner_capital": "bool",
              "overlap_jaccard_raw": "float64"}
