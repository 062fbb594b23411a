"""The three readings of the NLI labels (Blanck, Noble & Chatzikyriakidis, Table 1) and their meta-inferences.

Sentences are unanalysed atoms ``a``, ``b``, ``c``. A *model* of the modal language K is the
actual world's valuation of the atoms together with the set of valuations of the worlds it
can access. The readings nest modal operators one deep, so a formula's truth at the actual
world depends on nothing else: enumerating the 8 actual valuations and the 256 sets of
accessible valuations (2,048 models) decides validity, satisfiability and equivalence over K
exactly. The accessibility relation is not assumed reflexive (plain K).

Every formula evaluates to a boolean vector over the 2,048 models. A propositional formula is
first a truth table over the 8 valuations (an 8-bit mask); ``□φ`` holds where every accessible
valuation satisfies φ, ``◇φ`` where one does, and a bare φ where the actual valuation does.

The relations are written from their definitions (Table 1) only. Which meta-inferences are
valid under which reading (the paper's Table 2), and which labels a reading allows for an
inferred item (``allowed_labels``), are derived here by enumeration, never listed.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TypedDict

import numpy as np

LETTERS = ("E", "C", "N")
READINGS = ("MC", "SC", "EI")
ATOMS = "abc"
FULL = 0xFF  # all 8 valuations

# valuation v (0..7): bit 0 = a, bit 1 = b, bit 2 = c
_ACTUAL = np.repeat(np.arange(8, dtype=np.int64), 256)        # actual world's valuation per model
_ACCESS = np.tile(np.arange(256, dtype=np.int64), 8)          # accessible valuations (bit set) per model
N_MODELS = len(_ACTUAL)


def atom(name: str) -> int:
    """Truth table (8-bit mask over valuations) of atom ``a``, ``b`` or ``c``."""
    i = ATOMS.index(name)
    return sum(1 << v for v in range(8) if (v >> i) & 1)


def NOT(m: int) -> int:
    return ~m & FULL


def IMP(x: int, y: int) -> int:
    return (NOT(x) | y) & FULL


def box(m: int) -> np.ndarray:
    """□φ: every accessible valuation satisfies φ (true where nothing is accessible)."""
    return (_ACCESS & NOT(m)) == 0


def dia(m: int) -> np.ndarray:
    """◇φ: some accessible valuation satisfies φ."""
    return (_ACCESS & m) != 0


def here(m: int) -> np.ndarray:
    """φ at the actual world."""
    return ((m >> _ACTUAL) & 1) == 1


TRUE = np.ones(N_MODELS, dtype=bool)


# ---------------------------------------------------------------------------- Table 1

def relation(reading: str, letter: str, x: int, y: int) -> np.ndarray:
    """Truth of the NLI relation ``letter`` (E, C, N) between sentences with truth tables x, y."""
    if reading == "MC":  # material conditional
        e, c = here(IMP(x, y)), here(IMP(x, NOT(y)))
        return {"E": e, "C": c, "N": ~e & ~c}[letter]
    if reading == "SC":  # strict conditional (Lewis & Langford)
        return {"E": box(IMP(x, y)), "C": box(IMP(x, NOT(y))),
                "N": dia(x & y) & dia(x & NOT(y))}[letter]
    if reading == "EI":  # strict conditional with existential import
        never = box(NOT(x))
        return {"E": dia(x) & box(IMP(x, y)), "C": dia(x) & box(IMP(x, NOT(y))),
                "N": (never | dia(x & y)) & (never | dia(x & NOT(y)))}[letter]
    raise ValueError(f"unknown reading {reading!r} (expected one of {', '.join(READINGS)})")


# ---------------------------------------------------------------------------- formulas
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
        if tok in ATOMS:
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
        return atom(node[1])
    if kind == "const":
        return FULL if node[1] else 0
    if kind == "not":
        m = _prop(node[1])
        return None if m is None else NOT(m)
    if kind in ("and", "or", "imp"):
        x, y = _prop(node[1]), _prop(node[2])
        if x is None or y is None:
            return None
        return {"and": x & y, "or": x | y, "imp": IMP(x, y)}[kind]
    return None


def evaluate(node, reading: str | None = None) -> np.ndarray:
    """Truth of a parsed formula at the actual world of each of the 2,048 models."""
    if isinstance(node, str):
        node = parse(node)
    m = _prop(node)
    if m is not None:
        return here(m)
    kind = node[0]
    if kind in ("box", "dia"):
        inner = _prop(node[1])
        if inner is None:
            raise ValueError("modal operators apply to propositional formulas only (depth one)")
        return box(inner) if kind == "box" else dia(inner)
    if kind == "rel":
        if reading is None:
            raise ValueError("a formula with NLI relations needs a reading (MC, SC or EI)")
        return relation(reading, node[1], atom(node[2]), atom(node[3]))
    if kind == "not":
        return ~evaluate(node[1], reading)
    x, y = evaluate(node[1], reading), evaluate(node[2], reading)
    return {"and": x & y, "or": x | y, "imp": ~x | y}[kind]


# ---------------------------------------------------------------------------- inferred items

class Kind(TypedDict):
    """An item kind: its pattern, the source items' (premise, hypothesis) atoms, the inferred
    item's, and whether a third sentence c takes part."""
    pattern: str
    sources: tuple[tuple[str, str], ...]
    target: tuple[str, str]
    c: bool


# Item kinds of §5.3: the labelled source items (premise, hypothesis) and the inferred item.
KINDS: dict[str, Kind] = {
    "swap": {"pattern": "ab; ba", "sources": (("a", "b"),), "target": ("b", "a"), "c": False},
    "chain_ac": {"pattern": "ab, bc; ac", "sources": (("a", "b"), ("b", "c")), "target": ("a", "c"), "c": True},
    "chain_ca": {"pattern": "ab, bc; ca", "sources": (("a", "b"), ("b", "c")), "target": ("c", "a"), "c": True},
    "shared": {"pattern": "ab, ac; bc", "sources": (("a", "b"), ("a", "c")), "target": ("b", "c"), "c": True},
}


@lru_cache(maxsize=None)
def allowed_labels(reading: str, kind: str, source_letters: tuple[str, ...]) -> frozenset[str] | None:
    """Labels a reading allows for an inferred item, given its source items' labels.

    If the sources' labels entail one or more relations on the inferred pair, those are
    allowed; otherwise every relation whose negation the sources do not entail. ``None``
    when the source labels cannot hold together under the reading (a vacuous
    meta-inference: e.g. any N under MC).
    """
    spec = KINDS[kind]
    if len(source_letters) != len(spec["sources"]):
        raise ValueError(f"{kind}: needs {len(spec['sources'])} source labels, got {source_letters}")
    given = TRUE.copy()
    for letter, (x, y) in zip(source_letters, spec["sources"]):
        given &= relation(reading, letter, atom(x), atom(y))
    if not given.any():
        return None
    x, y = spec["target"]
    entailed = {L for L in LETTERS if not (given & ~relation(reading, L, atom(x), atom(y))).any()}
    if entailed:
        return frozenset(entailed)
    excluded = {L for L in LETTERS if not (given & relation(reading, L, atom(x), atom(y))).any()}
    return frozenset(set(LETTERS) - excluded)


@lru_cache(maxsize=None)
def unconstrained(reading: str) -> frozenset[str]:
    """Labels a reading allows for a pair about which nothing is known (MC: N never holds)."""
    a, b = atom("a"), atom("b")
    return frozenset(L for L in LETTERS if relation(reading, L, a, b).any())


def constraint_text(reading: str, kind: str, allowed: frozenset[str] | None) -> str:
    """How the paper's tables write an allowed set: ``Cba``, ``¬Eba``, ``—`` (nothing inferred), ``∅``."""
    if allowed is None:
        return "∅"
    pair = "".join(KINDS[kind]["target"])
    if allowed == unconstrained(reading) or allowed == frozenset(LETTERS):
        return "—"
    if len(allowed) == 1:
        return f"{next(iter(allowed))}{pair}"
    missing = [L for L in LETTERS if L not in allowed]
    if len(missing) == 1:
        return f"¬{missing[0]}{pair}"
    return "{" + ",".join(L for L in LETTERS if L in allowed) + "}" + pair


def source_text(kind: str, source_letters: tuple[str, ...]) -> str:
    """``Eab ∧ Cbc`` for the input items of a row."""
    return " ∧ ".join(f"{L}{x}{y}" for L, (x, y) in zip(source_letters, KINDS[kind]["sources"]))


def allowed_table(readings=READINGS) -> list[dict]:
    """Every (kind, source labels) with the allowed set under each reading: the derivation, for reports."""
    from itertools import product

    rows = []
    for kind, spec in KINDS.items():
        for letters in product(LETTERS, repeat=len(spec["sources"])):
            row: dict[str, str | None] = {"kind": kind, "pattern": spec["pattern"],
                                          "sources": source_text(kind, letters)}
            for r in readings:
                allowed = allowed_labels(r, kind, letters)
                row[r] = None if allowed is None else "".join(L for L in LETTERS if L in allowed)
                row[f"{r}_text"] = constraint_text(r, kind, allowed)
            rows.append(row)
    return rows
