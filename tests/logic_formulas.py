"""Formulas of the modal language K in the paper's notation (Blanck, Noble &
Chatzikyriakidis), read and evaluated on every model of `trainer.analysis.logic`: what the
tests check the readings' derivation with (every cell of the paper's Table 2: valid ✓,
contradictory ⊥, vacuous ∅, or the formula it is equivalent to; tests/test_consistency.py).
"""
from __future__ import annotations

import re

import numpy as np

from trainer.analysis import logic

# Grammar (precedence as the paper's footnote 5: ¬ binds tightest, then ∧, ∨, →):
#   imp := or ('→' imp)? ; or := and ('∨' and)* ; and := unary ('∧' unary)*
#   unary := ('¬' | '□' | '◇') unary | '(' imp ')' | atom | relation | '⊤' | '⊥'
# relation: E, C or N followed by two atoms ("Eab"). ASCII: ~ & | -> [] <> also work.

_TOKEN = re.compile(r"\s*(->|→|<>|\[\]|[¬~∧&∨|□◇()⊤⊥✓]|[ECN][abc][abc]|[abc])")
_ASCII = {"->": "→", "~": "¬", "&": "∧", "|": "∨", "[]": "□", "<>": "◇", "✓": "⊤"}


def _tokens(text: str) -> list[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"cannot read formula {text!r} at {text[pos:]!r}")
        out.append(_ASCII.get(m.group(1), m.group(1)))
        pos = m.end()
    return out


def parse(text: str):
    """A formula as a nested tuple: ('atom', 'a'), ('rel', 'E', 'a', 'b'), ('not', f), ('and', f, g), ..."""
    toks = _tokens(text)
    pos = 0

    def peek():
        return toks[pos] if pos < len(toks) else None

    def take(expected=None):
        nonlocal pos
        tok = peek()
        if tok is None or (expected and tok != expected):
            raise ValueError(f"formula {text!r}: expected {expected or 'more'} at token {pos}")
        pos += 1
        return tok

    def imp():
        left = disj()
        if peek() == "→":
            take()
            return ("imp", left, imp())
        return left

    def disj():
        node = conj()
        while peek() == "∨":
            take()
            node = ("or", node, conj())
        return node

    def conj():
        node = unary()
        while peek() == "∧":
            take()
            node = ("and", node, unary())
        return node

    def unary():
        tok = take()
        if tok in ("¬", "□", "◇"):
            return ({"¬": "not", "□": "box", "◇": "dia"}[tok], unary())
        if tok == "(":
            node = imp()
            take(")")
            return node
        if tok in logic.ATOMS:
            return ("atom", tok)
        if tok in ("⊤", "⊥"):
            return ("const", tok == "⊤")
        if len(tok) == 3:
            return ("rel", tok[0], tok[1], tok[2])
        raise ValueError(f"formula {text!r}: unexpected {tok!r}")

    node = imp()
    if pos != len(toks):
        raise ValueError(f"formula {text!r}: unexpected {toks[pos]!r}")
    return node


def _prop(node) -> int | None:
    """Truth table of a modality-free, relation-free subformula, else None."""
    kind = node[0]
    if kind == "atom":
        return logic.atom(node[1])
    if kind == "const":
        return logic.FULL if node[1] else 0
    if kind == "not":
        m = _prop(node[1])
        return None if m is None else logic.NOT(m)
    if kind in ("and", "or", "imp"):
        x, y = _prop(node[1]), _prop(node[2])
        if x is None or y is None:
            return None
        return {"and": x & y, "or": x | y, "imp": logic.IMP(x, y)}[kind]
    return None


def evaluate(node, reading: str | None = None) -> np.ndarray:
    """Truth of a parsed formula at the actual world of each of the 2,048 models."""
    if isinstance(node, str):
        node = parse(node)
    m = _prop(node)
    if m is not None:
        return logic.here(m)
    kind = node[0]
    if kind in ("box", "dia"):
        inner = _prop(node[1])
        if inner is None:
            raise ValueError("modal operators apply to propositional formulas only (depth one)")
        return logic.box(inner) if kind == "box" else logic.dia(inner)
    if kind == "rel":
        if reading is None:
            raise ValueError("a formula with NLI relations needs a reading (MC, SC or EI)")
        return logic.relation(reading, node[1], logic.atom(node[2]), logic.atom(node[3]))
    if kind == "not":
        return ~evaluate(node[1], reading)
    x, y = evaluate(node[1], reading), evaluate(node[2], reading)
    return {"and": x & y, "or": x | y, "imp": ~x | y}[kind]
