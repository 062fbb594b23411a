"""Comparison keys of texts and pairs (case-folded, whitespace collapsed), and the
duplicate and cross-split leakage counts built on them."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extractor.statistics import charclasses
from extractor.statistics.kernels import Tokens, text_array


def fold_text(text: str) -> str:
    """A text as pairs and hypotheses are compared: case-folded, whitespace collapsed."""
    return " ".join(text.casefold().split()) if text else ""


def fold_texts(texts) -> pa.Array:
    """`fold_text` of a batch of texts (list or Arrow array; None -> ""), as an Arrow
    large_string array. Texts whose every character Arrow lower-cases as Python case-folds
    it (`charclasses`, nearly all) are folded by Arrow alone; the others token by token:
    Arrow splits and joins, Python case-folds each distinct token once (case folding never
    makes or takes away whitespace, so folding token by token is folding the text)."""
    arr = pc.fill_null(text_array(texts), "")
    return charclasses.fold_texts(arr, _fold_tokens)


def _fold_tokens(texts) -> pa.Array:
    """`fold_texts` token by token (any texts)."""
    tokens = Tokens(text_array(texts))
    encoded = tokens.strings.dictionary_encode()
    folded = pa.array([t.casefold() for t in encoded.dictionary.to_pylist()], pa.large_string())
    offsets = np.zeros(tokens.n + 1, dtype=np.int64)
    np.cumsum(tokens.count, out=offsets[1:])
    lists = pa.LargeListArray.from_arrays(pa.array(offsets), folded.take(encoded.indices))
    return pc.binary_join(lists, pa.scalar(" ", pa.large_string()))


def pair_text_key(premise: str, hypothesis: str, ordered: bool = True) -> str:
    """Comparison key of a pair: case-folded, whitespace collapsed; ``ordered=False`` also
    matches the reversed pair (an identical *sentence pair* in either order)."""
    return folded_pair_key(fold_text(premise), fold_text(hypothesis), ordered)


def folded_pair_key(p: str, h: str, ordered: bool = True) -> str:
    """`pair_text_key` of two texts already folded by `fold_text`."""
    if not ordered and h < p:
        p, h = h, p
    return p + "\x1f" + h


def duplicate_counts(premises: Sequence[str], hypotheses: Sequence[str]) -> dict:
    """Rows that repeat an earlier row's pair (``pairs``) or its sentences in either order
    (``sentence_pairs``), after case folding and whitespace collapsing."""
    ordered = [pair_text_key(p, h) for p, h in zip(premises, hypotheses)]
    unordered = [pair_text_key(p, h, ordered=False) for p, h in zip(premises, hypotheses)]
    return {"pairs": len(ordered) - len(set(ordered)),
            "sentence_pairs": len(unordered) - len(set(unordered))}


def leakage_counts(splits: dict[str, tuple[Sequence[str], Sequence[str]]]) -> dict[str, dict]:
    """For every two splits ``"A|B"``: distinct pairs, sentence pairs (either order) and
    hypotheses they share, after case folding and whitespace collapsing."""
    keys = {}
    for name, (prem, hyp) in splits.items():
        keys[name] = {
            "pairs": {pair_text_key(p, h) for p, h in zip(prem, hyp)},
            "sentence_pairs": {pair_text_key(p, h, ordered=False) for p, h in zip(prem, hyp)},
            "hypotheses": {fold_text(h) for h in hyp},
        }
    names = list(splits)
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            out[f"{a}|{b}"] = {kind: len(keys[a][kind] & keys[b][kind]) for kind in keys[a]}
    return out
