"""The Arrow paths of the column-wise statistics (extractor/statistics/charclasses.py) give
Python's answers: `fold_texts` is `fold_text`, the vocabulary's normalised words and
capitals are `norm_words`' and `str.isupper`'s, on every code point and on real text."""
from __future__ import annotations

import sys

import pyarrow as pa
import pytest

from extractor import statistics as st
from extractor.statistics import charclasses, kernels
from tests.conftest import shared_file

CODE_POINTS = [chr(c) for c in range(0x21, 0x30000) if not 0xD800 <= c <= 0xDFFF]
AWKWARD = ["ß STRASSE", "ΣΊΣΥΦΟΣ  ός", "ﬁne İstanbul", "ǅemal\u00a0x\u2003y", "  lead trail  ", "", "a\tb\nc",
           "\u3000x\u3000", "ϒ Ⅻ ⓐⒶ", "x\u0085y", "—", "...", "(§4.3)", "Ꭰꭰ", "a  b", " a", "a ", "A\u200bB"]


def forms(chars):
    """Each character alone, at either end of a word, inside one, and beside a space."""
    return ([c for c in chars] + ["a" + c for c in chars] + [c + "a" for c in chars] + ["A" + c + "b" for c in chars]
            + [c + " " + c.upper() for c in chars] + [c + c for c in chars])


def check_vocabulary(texts: list[str]) -> None:
    tokens = kernels.Tokens(pa.array(texts, pa.large_string()))
    norm_id, upper, upper_tail, words = kernels._vocabulary(tokens)
    vocab = tokens.strings.dictionary_encode().dictionary.to_pylist()
    index: dict[str, int] = {}
    for i, tok in enumerate(vocab):  # the per-token definition the Arrow path replaces
        word = st.norm_token(tok)
        assert norm_id[i] == (index.setdefault(word, len(index)) if word else -1), repr(tok)
        assert upper[i] == any(ch.isupper() for ch in tok), repr(tok)
        assert upper_tail[i] == any(ch.isupper() for ch in tok[1:]), repr(tok)
    assert words.to_pylist() == list(index)


def test_no_upper_case_at_or_above_the_limit():
    assert not any(chr(c).isupper() for c in range(charclasses.UPPER_LIMIT, sys.maxunicode + 1))


def test_fold_texts_is_fold_text_on_every_code_point():
    texts = forms(CODE_POINTS) + AWKWARD
    assert st.fold_texts(texts).to_pylist() == [st.fold_text(t) for t in texts]
    assert st.fold_texts([None, "A  B"]).to_pylist() == ["", "a b"]


def test_vocabulary_is_the_per_token_definition_on_every_code_point():
    check_vocabulary(forms(CODE_POINTS) + AWKWARD)


@pytest.mark.parametrize("name", ["eltec-rom-20", "eltec-spa-20"])
def test_fold_and_vocabulary_on_real_novels(name):
    folder = shared_file(f"text/{name}")
    paragraphs = [p for f in sorted(folder.glob("*.txt")) for p in f.read_text(encoding="utf-8").split("\n\n")]
    assert len(paragraphs) > 1000
    assert st.fold_texts(paragraphs).to_pylist() == [st.fold_text(p) for p in paragraphs]
    check_vocabulary(paragraphs)
