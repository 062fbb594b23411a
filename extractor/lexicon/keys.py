"""The key a lexicon phrase is matched by (`phrase_key`): read by the lexicon's label
filters and by the pairs stage's matcher (`extractor/pairs/matching.py`)."""
from __future__ import annotations

from typing import Callable


def collapse(key: str) -> str:
    """`key` with its whitespace collapsed to single spaces."""
    return " ".join(key.split())


def phrase_key(normalize: Callable[[str], str], text: str) -> str:
    """The key a phrase is matched by: `normalize` (the lexicon's) of `text`, its
    whitespace collapsed to single spaces."""
    return collapse(normalize(text))
