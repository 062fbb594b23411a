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
inferred item (``allowed_labels``), are derived here by enumeration, never listed. The
tests read formulas in the paper's notation and evaluate them on these models
(tests/logic_formulas.py) to check every cell of the paper's Table 2.
"""
from __future__ import annotations

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
