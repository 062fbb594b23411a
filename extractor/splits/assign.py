"""Split assignment: pure, deterministic logic of stage 3 (`pairs/` -> `splits/`).

Double stratification after ESNLIR §2.3: (1) documents are assigned whole to a split,
per corpus, so no document feeds two splits; (2) each split is balanced per corpus
(`downsample`: every label cut to the smallest one), or keeps its natural distribution
with stratified sampling (`none`, RoNLI), or is capped per label (`cap N`). Evaluation
splits hold at most ``max_eval_per_corpus`` pairs per corpus (ESNLIR: 15,000).

Every choice orders items by `extractor.core.hashing.stable_hash(id, seed=seed)`, never by
row order or `rand()`, so the same pairs and seed give the same splits everywhere. The
The stage (`extractor.splits.stage`) calls these functions on small tables: one row
per document (grouped per corpus) and one count per (split, corpus, label).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from extractor.core.names import SPLITS
# the settings parsers live apart (no numpy there: the job's --help); one name each
from extractor.splits.options import (DEFAULT_MAX_EVAL_PER_CORPUS, Balance,  # noqa: F401
                                     SplitsError, parse_balance, parse_ratios)

EVAL_SPLITS = SPLITS[1:]
# When one pair (or sentence pair) lands in several splits, the copy in the split that
# comes first here is kept: evaluation sets are small and fixed, train loses the copy.
KEEP_PRIORITY = {"test": 0, "validation": 1, "train": 2}


# ---------------------------------------------------------------------------- documents

def greedy_splits(counts, test_only: Sequence[bool], ratios: Sequence[float]) -> list[str]:
    """Whole documents of ONE corpus assigned to splits, stratified by label: the split of
    each document, visited in the given order (`decisions.assign_corpus`: by the hash of
    (doc_id, seed), then doc_id). ``counts`` holds each document's pairs per label (a
    float64 array, documents x labels), ``test_only`` whether it belongs to a test-only
    corpus (those go to test whole). Each document goes to the split with the largest
    remaining deficit for the labels it holds: sum over labels of count x (target -
    assigned) / label total, targets being ratio x label total. This is the greedy of
    scikit-learn's StratifiedGroupKFold in a deterministic order: the ratios hold in pairs,
    every split gets every label as far as the documents allow, even for small corpora.
    The pandas definition: `assign_documents` in tests/splits_reference.py."""
    matrix = np.asarray(counts, dtype="float64")
    label_totals = matrix.sum(axis=0)
    # plain Python floats in the loop (the same doubles as numpy's, without a numpy scalar
    # per element: 10,000 documents in 0.05 s instead of 0.3 s)
    scale = (1.0 / np.maximum(label_totals, 1.0)).tolist()
    rows = matrix.tolist()
    label_totals = label_totals.tolist()
    n = len(rows)
    open_splits = [i for i, r in enumerate(ratios) if r > 0]
    targets = [[r * t for t in label_totals] for r in ratios]
    doc_targets = [r * n for r in ratios]
    assigned = [[0.0] * matrix.shape[1] for _ in ratios]
    assigned_docs = [0] * len(ratios)
    out = []
    for i, row in enumerate(rows):
        if test_only[i]:
            out.append("test")
            continue
        best, best_score = open_splits[0], None
        held = [l for l, c in enumerate(row) if c]  # the zero terms add nothing to a score
        for s in open_splits:
            if held:
                target, done, score = targets[s], assigned[s], 0.0
                for l in held:
                    score += row[l] * (target[l] - done[l]) * scale[l]
            else:  # a document that only lends a sentence: balance document counts
                score = (doc_targets[s] - assigned_docs[s]) / max(n, 1)
            if best_score is None or score > best_score + 1e-12:
                best, best_score = s, score
        for l in held:
            assigned[best][l] += row[l]
        assigned_docs[best] += 1
        out.append(SPLITS[best])
    return out


# ---------------------------------------------------------------------------- quotas

def largest_remainder(weights: Mapping, total: int) -> dict:
    """Split ``total`` items over keys in proportion to ``weights`` (Hamilton's method),
    never giving a key more than its weight. Ties go to the smaller key, deterministically."""
    keys = sorted(weights, key=str)
    w_sum = sum(weights[k] for k in keys)
    if w_sum <= total:
        return {k: int(weights[k]) for k in keys}
    exact = {k: weights[k] * total / w_sum for k in keys}
    out = {k: int(exact[k]) for k in keys}
    left = total - sum(out.values())
    for k in sorted(keys, key=lambda k: (-(exact[k] - out[k]), str(k)))[:left]:
        out[k] += 1
    return out


def compute_quotas(counts: Mapping[tuple[str, str, str], int], balance: Balance, labels: Iterable[str],
                   max_eval_per_corpus: int | None = DEFAULT_MAX_EVAL_PER_CORPUS) -> dict[tuple[str, str, str], int]:
    """How many pairs to keep per (split, corpus, label).

    ``counts`` are the available pairs after leakage removal; ``labels`` every label of
    the dataset (a label missing from a (split, corpus) counts as 0, so `downsample`
    empties that group, as ESNLIR's per-corpus balancing does).
    """
    labels = sorted(set(labels))
    groups: dict[tuple[str, str], dict[str, int]] = {}
    for (split, corpus, label), n in counts.items():
        groups.setdefault((split, corpus), {l: 0 for l in labels})[label] = int(n)
    quotas: dict[tuple[str, str, str], int] = {}
    for (split, corpus), per_label in sorted(groups.items()):
        cap_eval = max_eval_per_corpus if (split in EVAL_SPLITS and max_eval_per_corpus) else None
        if balance.mode == "downsample":
            m = min(per_label.values()) if per_label else 0
            if cap_eval is not None:
                m = min(m, cap_eval // max(len(per_label), 1))
            q = {l: m for l in per_label}
        else:  # natural distribution, stratified down to the evaluation cap
            q = largest_remainder(per_label, cap_eval) if cap_eval is not None else dict(per_label)
        for label, n in q.items():
            quotas[(split, corpus, label)] = n
    if balance.mode == "cap":
        by_split_label: dict[tuple[str, str], dict[str, int]] = {}
        for (split, corpus, label), n in quotas.items():
            by_split_label.setdefault((split, label), {})[corpus] = n
        cap = balance.cap
        assert cap is not None  # mode "cap" comes with its cap (options.parse_balance)
        for (split, label), per_corpus in by_split_label.items():
            for corpus, n in largest_remainder(per_corpus, cap).items():
                quotas[(split, corpus, label)] = n
    return quotas


def quota_drops(counts: Mapping, quotas: Mapping) -> dict[str, dict[str, int]]:
    """Pairs removed by balancing, per split and label."""
    out: dict[str, dict[str, int]] = {}
    for key, n in counts.items():
        split, _, label = key
        gone = int(n) - int(quotas.get(key, 0))
        if gone:
            out.setdefault(split, {}).setdefault(label, 0)
            out[split][label] += gone
    return {s: dict(sorted(v.items())) for s, v in sorted(out.items())}


# ---------------------------------------------------------------------------- blocks

# Assignment units smaller than a document (docs/splits.md "Blocks"): a block is a run of
# consecutive paragraphs of one document holding about `block_size` pairs; blocks are cut
# between paragraphs, and pairs never cross a paragraph, so a marked pair lies in one block.
BLOCKS_PER_SPLIT = 10  # the smallest split with a share gets about this many blocks
SHORT_SHARE = 0.5  # a split "gets its share" of a label when it holds at least half its target


def shortfall(counts, splits: Sequence[str], ratios: Sequence[float]) -> list[tuple[str, int]]:
    """The (split, label column) cells that whole-unit assignment leaves short: ``counts``
    holds each unit's pairs per label (units x labels), ``splits`` the split each unit got.
    A cell is short when its target (ratio x the label's pairs) is at least one pair and the
    split holds less than `SHORT_SHARE` of it."""
    matrix = np.asarray(counts, dtype="float64").reshape(len(splits), -1)
    totals = matrix.sum(axis=0)
    short = []
    for name, ratio in zip(SPLITS, ratios):
        held = matrix[np.asarray([x == name for x in splits], dtype=bool)].sum(axis=0) if len(splits) else totals * 0
        for label, (total, got) in enumerate(zip(totals.tolist(), held.tolist())):
            target = ratio * total
            if target >= 1 and got < SHORT_SHARE * target:
                short.append((name, label))
    return short


def block_size(total_pairs: int, ratios: Sequence[float]) -> int:
    """Pairs per block: the smallest split with a share gets about `BLOCKS_PER_SPLIT` blocks."""
    smallest = min((r for r in ratios if r > 0), default=1.0)
    return max(1, int(total_pairs * smallest // BLOCKS_PER_SPLIT))


def block_starts(paras: Sequence[int], pairs: Sequence[int], size: int) -> list[int]:
    """The first paragraph of each block of one document: ``paras`` its paragraphs that hold
    pairs (ascending, distinct), ``pairs`` how many each holds. A block takes paragraphs
    until it holds at least ``size`` pairs; the next paragraph with pairs starts the next
    block (the first block starts at paragraph 0, so every paragraph has a block)."""
    starts, held = [0], 0
    for para, n in zip(paras, pairs):
        if held >= size:
            starts.append(int(para))
            held = 0
        held += int(n)
    return starts


def block_key(doc_id: str, start: int) -> str:
    """The id of the block of `doc_id` that starts at paragraph `start`."""
    return f"{doc_id}#p{start}"


def missing_labels(counts: Mapping, quotas: Mapping, labels: Iterable[str],
                   ratios: Sequence[float]) -> dict[str, list[str]]:
    """Per split with a share: the labels it holds no pair of after the quotas."""
    held = {(s, l) for (s, c, l), n in counts.items() if min(int(n), int(quotas.get((s, c, l), 0))) > 0}
    out = {}
    for split, ratio in zip(SPLITS, ratios):
        missing = [l for l in sorted(set(labels)) if ratio > 0 and (split, l) not in held]
        if missing:
            out[split] = missing
    return out


def levers(counts: Mapping, labels: Iterable[str], balance: str, ratios: Sequence[float],
           unused_phrase_sets: Sequence[str] = ()) -> str:
    """What would fill an empty split or a missing label on this corpus, for the warning
    that reports it: `--balance none`'s split sizes where the balance cut pairs (computed:
    the pairs each split holds before the cut, `counts`), larger validation and test shares
    where they are small, the lexicon's phrase sets not in use, more text."""
    out = []
    natural = {s: sum(int(n) for (split, _, l), n in counts.items() if split == s and l in set(labels))
               for s in SPLITS}
    if balance != "none" and any(natural.values()):
        out.append("--balance none: " + " / ".join(f"{s} {natural[s]:,}" for s in SPLITS) + " pairs")
    if any(natural.values()) and len(ratios) == 3 and min(ratios[1], ratios[2]) < 0.2:
        out.append("--split-ratios 0.6,0.2,0.2: larger validation and test shares")
    out += [f"--phrase-set {name}: more of the lexicon's phrases" for name in unused_phrase_sets]
    out.append("more text (--input)")
    return "; ".join(out)


# Neutral strategies that take a sentence from the unused pool (extractor.pairs.neutral),
# in a role: adjacent_unmarked pairs two unused sentences of one paragraph.
UNUSED_DRAWS = {"both_random": 2, "first_random": 1, "second_random": 1, "adjacent_unmarked": 2}


def private_premise_corpora(allocated: Mapping[str, Mapping[str, int]] | None) -> frozenset[str]:
    """Corpora whose neutral pairs draw unused sentences through `second_random` only
    (stage 2's `neutral.allocated`: {corpus: {strategy: n}}). There each unused sentence is
    the premise of at most one pair (a strategy pairs each premise once) and of no other
    pair, so in a corpus cut into blocks such a premise may follow its pair into the
    hypothesis's block (`decisions.with_blocks`) instead of dropping the pair when the
    premise's paragraph went to another split. Unknown allocations (stage 3 run alone): none."""
    out = set()
    for corpus, per in (allocated or {}).items():
        drawing = {s for s, n in per.items() if n and s in UNUSED_DRAWS}
        if drawing == {"second_random"}:
            out.add(corpus)
    return frozenset(out)
