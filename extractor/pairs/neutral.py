"""Neutral-pair strategies and the arithmetic of how many to draw (pure Python).

The stage (extractor/pairs/stage.py) builds the candidates of each strategy inside
each document with SQL window functions over hash-ordered rows; this module names the
strategies, parses `--neutral-mix`, and computes targets and allocations from aggregate
counts. See docs/pairs.md.

Strategies (ESNLIR §2.2, plus RoNLI's adjacent pair); "marked" sentences are the
premises and hypotheses of the kept marked pairs, "unused" sentences are the other
sentences that meet --min-chars and do not open with a lexicon phrase:

* both_random: an unused premise and an unused hypothesis, same document, different
  paragraphs;
* first_random: a marked premise and an unused hypothesis, same document, different
  paragraphs;
* second_random: an unused premise and a marked (stripped) hypothesis, same document,
  different paragraphs;
* marked_different_paragraphs: a marked premise and a marked hypothesis from different
  paragraphs of the same document (ESNLIR's "both entailed");
* adjacent_unmarked: two consecutive unused sentences of one paragraph, the second
  opening with no linking phrase (RoNLI).
"""
from __future__ import annotations

import math

from extractor.core.errors import UserError

STRATEGIES = ("both_random", "first_random", "second_random", "marked_different_paragraphs", "adjacent_unmarked")
DEFAULT_MIX = ",".join(f"{s}=1" for s in STRATEGIES)
# Pools each strategy draws its premise and hypothesis from (adjacent_unmarked pairs
# neighbours, so it has no independent draw).
POOLS = {
    "both_random": ("unused", "unused"),
    "first_random": ("marked_premise", "unused"),
    "second_random": ("unused", "marked_hypothesis"),
    "marked_different_paragraphs": ("marked_premise", "marked_hypothesis"),
}


class NeutralMixError(UserError, ValueError):
    """A malformed --neutral-mix or --neutral-ratio."""


def parse_neutral_mix(text: str) -> dict[str, float]:
    """'both_random=1,first_random=2' -> {'both_random': 1.0, 'first_random': 2.0}.
    Strategies left out get weight 0; a bare name means weight 1."""
    weights: dict[str, float] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, _, value = item.partition("=")
        name = name.strip()
        if name not in STRATEGIES:
            raise NeutralMixError(f"--neutral-mix: unknown strategy '{name}'; known: {', '.join(STRATEGIES)}")
        try:
            weight = float(value) if value.strip() else 1.0
        except ValueError:
            raise NeutralMixError(f"--neutral-mix: weight of '{name}' must be a number, not '{value}'") from None
        if weight < 0 or math.isnan(weight) or math.isinf(weight):
            raise NeutralMixError(f"--neutral-mix: weight of '{name}' must be a finite number >= 0")
        weights[name] = weight
    if not weights or sum(weights.values()) <= 0:
        raise NeutralMixError("--neutral-mix: give at least one strategy a positive weight")
    return {s: weights.get(s, 0.0) for s in STRATEGIES}


def neutral_target(marked_counts: dict[str, int], ratio: float) -> int:
    """Neutral pairs wanted: `ratio` times the largest marked class (rounded half up)."""
    if ratio < 0 or math.isnan(ratio) or math.isinf(ratio):
        raise NeutralMixError(f"--neutral-ratio must be a finite number >= 0, not {ratio}")
    largest = max(marked_counts.values(), default=0)
    return int(math.floor(ratio * largest + 0.5))


def allocate(target: int, weights: dict[str, float], available: dict[str, int]) -> dict[str, int]:
    """Split `target` over strategies in proportion to `weights`, never more than a
    strategy has available; what one strategy cannot give goes to the others in
    proportion to their weights (water filling). Integer shares by largest remainder,
    ties broken by strategy order, so the result is deterministic."""
    alloc = {s: 0 for s in weights}
    open_ = [s for s in weights if weights[s] > 0 and available.get(s, 0) > 0]
    remaining = max(0, target)
    while remaining > 0 and open_:
        total = sum(weights[s] for s in open_)
        exact = {s: remaining * weights[s] / total for s in open_}
        share = {s: int(math.floor(exact[s])) for s in open_}
        left = remaining - sum(share.values())
        for s in sorted(open_, key=lambda s: (-(exact[s] - share[s]), STRATEGIES.index(s) if s in STRATEGIES else 99)):
            if left <= 0:
                break
            share[s] += 1
            left -= 1
        given = 0
        for s in open_:
            room = available.get(s, 0) - alloc[s]
            take = min(share[s], room)
            alloc[s] += take
            given += take
        remaining -= given
        open_ = [s for s in open_ if available.get(s, 0) - alloc[s] > 0]
        if given == 0:
            break
    return alloc


def oversample(wanted: int, pass_rate: float | None, available: int) -> int:
    """How many candidates to send through the POS filter to keep about `wanted`:
    wanted / pass_rate with 20% and 8 rows of margin, at most what is available."""
    if wanted <= 0:
        return 0
    rate = 1.0 if pass_rate is None else min(1.0, max(0.2, pass_rate))
    return min(available, int(math.ceil(wanted * 1.2 / rate)) + 8)


BIN_BITS = 12  # stable_hash values are 63-bit: the top 12 bits give 4096 bins


# Pass 1's histograms are exact (one row per bin) for the lowest HIST_FINE bins, where the
# cuts of a corpus of any size fall (the neutral pairs wanted are a small share of the
# candidates), and in blocks of HIST_BLOCK bins above (one row per block, keyed by its first
# bin): 16x fewer rows for the JVM to carry. A cut in a block takes the whole block.
HIST_FINE = 256
HIST_BLOCK = 256


def hist_keys(counts) -> list[tuple[int, int]]:
    """(key, count) of the non-empty histogram rows of one 4096-bin count array (numpy):
    the bin itself below HIST_FINE, else the first bin of its block."""
    import numpy as np

    fine = counts[:HIST_FINE]
    out = [(int(b), int(fine[b])) for b in np.flatnonzero(fine)]
    blocks = counts[HIST_FINE:].reshape(-1, HIST_BLOCK).sum(axis=1)
    out += [(HIST_FINE + int(k) * HIST_BLOCK, int(blocks[k])) for k in np.flatnonzero(blocks)]
    return out


HIST_SIZE = HIST_FINE + ((1 << BIN_BITS) - HIST_FINE) // HIST_BLOCK  # histogram keys: 256 bins + 15 blocks


def hist_index(key: int) -> int:
    """The position of histogram key `key` (`hist_keys`) among the HIST_SIZE keys."""
    return key if key < HIST_FINE else HIST_FINE + (key - HIST_FINE) // HIST_BLOCK


def hist_key(index: int) -> int:
    """The histogram key at position `index` (the inverse of `hist_index`)."""
    return index if index < HIST_FINE else HIST_FINE + (index - HIST_FINE) * HIST_BLOCK


def cut_bin(key: int) -> int:
    """The last bin a cut at histogram key `key` takes (`hist_keys`): the key itself below
    HIST_FINE, the end of the block above."""
    return key if key < HIST_FINE else key - (key - HIST_FINE) % HIST_BLOCK + HIST_BLOCK - 1


def bin_cutoff(bin_counts: dict[int, int], n: int) -> tuple[int, int]:
    """For rows spread over hash bins, the bin where the `n` lowest hashes end and how
    many rows of that bin to take: rows in lower bins are all taken. (-1, 0) for n <= 0;
    (max bin + 1, 0) when n covers every row."""
    if n <= 0:
        return -1, 0
    seen = 0
    for b in sorted(bin_counts):
        if seen + bin_counts[b] >= n:
            return b, n - seen
        seen += bin_counts[b]
    return (max(bin_counts) + 1 if bin_counts else 0), 0
