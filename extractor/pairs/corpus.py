"""What stage 2 decides over a whole corpus, from aggregates only.

The per-document work is in `extractor.pairs.pairing` (run over Arrow batches by
`extractor.pairs.sentence_passes`). What is global is small and lives here as pure functions:

* `plan_cuts`: per-corpus neutral targets from the marked counts (after identical pairs
  are dropped), the split over strategies (`neutral.allocate`), and for each
  (corpus, strategy) the selection-hash bin up to which pass 2 keeps candidates (the
  allocation with a margin for the POS filter and for identical pairs, see
  `neutral.oversample`);
* `check_counts`, `check_limits`, `limits_hold`: how many neutral candidates the POS
  filter checks, the exact selection hash up to which it checks them, and whether that
  draws what the whole cuts would;
* `final_allocation`: the exact draw over what pass 2 kept;
* `build_stats`: `stats.json` -> `pairs` from the aggregate rows.

`tests/pairs_reference.py` (`reference_pairs`) chains pass 1, the plan, pass 2 and the
exact draw in one Python process with the same functions, over Python rows; the tests
check that the stage gives the same rows.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping

from extractor.lexicon.lexicon import MARKED_LABELS
from extractor.pairs import neutral
from extractor.pairs.filters import MARKED_REASONS
from extractor.pairs.pos_filter import REASONS


def plan_cuts(marked: dict, hist: dict, ratio: float, mix: dict, pass_rate: float | None):
    """marked: {corpus: {label: kept marked pairs}}; hist: {(corpus, strategy): {bin: n}}.
    Returns (targets {corpus: n}, available {corpus: {strategy: n}}, cuts {(corpus,
    strategy): bin}; bin -1 = take nothing)."""
    targets, available, wanted = _planned(marked, hist, ratio, mix, pass_rate)
    cuts = {key: neutral.cut_bin(neutral.bin_cutoff(hist.get(key, {}), n)[0]) if n > 0 else -1
            for key, n in wanted.items()}
    return targets, available, cuts


def check_counts(marked: dict, hist: dict, ratio: float, mix: dict, pass_rate: float | None) -> dict:
    """{(corpus, strategy): how many candidates the neutral round POS-checks}: the
    allocation with `neutral.oversample`'s margin (`plan_cuts` keeps the whole bins, or
    blocks of bins, these end in; `check_limits` the exact number)."""
    return _planned(marked, hist, ratio, mix, pass_rate)[2]


def _planned(marked: dict, hist: dict, ratio: float, mix: dict, pass_rate: float | None):
    targets = {c: neutral.neutral_target({k: v for k, v in labels.items() if k in MARKED_LABELS}, ratio)
               for c, labels in marked.items()}
    available: dict = defaultdict(dict)
    for (corpus, strategy), bins in hist.items():
        available[corpus][strategy] = sum(bins.values())
    wanted = {}
    for corpus in sorted(set(targets) | set(available)):
        first = neutral.allocate(targets.get(corpus, 0), mix,
                                 {s: available[corpus].get(s, 0) for s in neutral.STRATEGIES})
        for strategy, n in first.items():
            wanted[corpus, strategy] = neutral.oversample(n, pass_rate, sum(hist.get((corpus, strategy), {}).values()))
    return targets, {c: dict(v) for c, v in available.items()}, wanted


def check_limits(lowest: dict, wanted: Mapping) -> dict:
    """{(corpus, strategy): the highest selection hash the neutral round POS-checks, or
    None for every candidate under the cut}: the `wanted`-th lowest of the candidates'
    hashes (`lowest`: {(corpus, strategy): the lowest hashes, at least `wanted` + 1 of them
    where there are that many}). The bins of `plan_cuts` hold more candidates than wanted:
    these limits keep the POS checks to the candidates that can be kept."""
    limits = {}
    for key, n in wanted.items():
        values = sorted(lowest.get(key, ()))
        limits[key] = values[n - 1] if 0 < n < len(values) else None
    return limits


def limits_hold(limits: Mapping | None, available: dict, allocated: dict) -> bool:
    """Whether the draw over the candidates under `limits` (`check_limits`) is the draw over
    every candidate under the cuts: true when each (corpus, strategy) with a limit keeps,
    after the POS filter and identical pairs (`available`), more candidates than its final
    allocation (water filling gives a strategy that keeps room the same share, and the
    lowest hashes under a limit are the lowest under the cut). Otherwise the stage checks
    the whole cuts in one round more."""
    return not limits or all(limit is None or available.get(c, {}).get(s, 0) > allocated.get(c, {}).get(s, 0)
                             for (c, s), limit in limits.items())


def final_allocation(targets: dict, mix: dict, available: dict) -> dict:
    """{corpus: {strategy: n}} drawn from what is `available` after pass 2 ({corpus:
    {strategy: n}}), as close to the targets as the candidates allow."""
    return {c: neutral.allocate(targets.get(c, 0), mix, {s: available.get(c, {}).get(s, 0) for s in neutral.STRATEGIES})
            for c in sorted(set(targets) | set(available))}


def _nest(items, depth: int) -> dict:
    out: dict = {}
    for *keys, n in items:
        if any(k is None for k in keys[:depth]):
            continue
        node = out
        for k in keys[:depth - 1]:
            node = node.setdefault(str(k), {})
        last = str(keys[depth - 1])
        node[last] = node.get(last, 0) + int(n)
    return out


def build_stats(*, status: dict, options, marked_counts: dict, duplicates: dict, kept: dict, pos: dict,
                pos_neutral: dict | None, targets: dict, available: dict, allocated: dict,
                neutral_rejected: dict, neutral_duplicates: int) -> dict:
    """stats["pairs"]. marked_counts: {(corpus, label, reject): n} of pass 1;
    duplicates: {(corpus, label): n} dropped as identical; kept: {(corpus, label, phrase,
    premise_stripped): n} of the kept marked pairs; pos / pos_neutral: {reason: n} POS
    verdicts (None = complete); allocated: {corpus: {strategy: n}} (the neutral pairs
    written)."""
    rejected = dict.fromkeys(MARKED_REASONS, 0)
    if status["status"] == "on":
        rejected.update(dict.fromkeys(REASONS, 0))
    for (_, _, reason), n in marked_counts.items():
        if reason is not None:
            rejected[reason] = rejected.get(reason, 0) + int(n)
    rejected["duplicate_pair"] += sum(duplicates.values())
    labels: Counter = Counter()
    corpora: dict = defaultdict(Counter)
    markers: dict = defaultdict(Counter)
    stripped: Counter = Counter()
    for (corpus, label, phrase, was_stripped), n in kept.items():
        labels[label] += n
        corpora[corpus][label] += n
        markers[label][phrase] += n
        if was_stripped:
            stripped[label] += n
    sources: Counter = Counter({"marker": sum(labels.values())} if labels else {})
    for corpus, per in allocated.items():
        for strategy, n in per.items():
            if n:
                labels["neutral"] += n
                corpora[corpus]["neutral"] += n
                sources[strategy] += n
    pos_block = dict(status)
    if status["status"] == "on":
        pos_block.update(sentences_checked=int(sum(pos.values())),
                         sentences_rejected={r: int(n) for r, n in sorted(pos.items(), key=repr) if r is not None},
                         neutral_sentences_checked=int(sum((pos_neutral or {}).values())),
                         neutral_sentences_rejected={r: int(n) for r, n in sorted((pos_neutral or {}).items(), key=repr)
                                                     if r is not None})
    else:
        pos_block.update(sentences_checked=0, sentences_rejected={})
    return {
        "labels": dict(sorted(labels.items())),
        "markers": {l: dict(sorted(m.items())) for l, m in sorted(markers.items())},
        "sources": dict(sorted(sources.items())),
        "corpora": {c: dict(sorted(v.items())) for c, v in sorted(corpora.items())},
        "total": int(sum(labels.values())),
        "rejected": rejected,
        "premise_phrase_stripped": dict(sorted(stripped.items())),
        "candidates": {"marked_sentences": _nest([(l, n) for (_, l, _), n in marked_counts.items()], 1)},
        "pos_filter": pos_block,
        "neutral": {"ratio": options.neutral_ratio, "mix": options.neutral_mix, "target": targets,
                    "candidates": available, "allocated": allocated,
                    "shortfall": {c: max(0, targets.get(c, 0) - sum(per.values())) for c, per in allocated.items()},
                    "pos_rejected_candidates": {r: int(n) for r, n in sorted(neutral_rejected.items())},
                    "identical_candidates_dropped": int(neutral_duplicates)},
    }


# ---------------------------------------------------------------------------- tallies

def tally_marked(groups, marked_counts: Counter, model: str | None):
    """The counts of the marked pairs after identical pairs are grouped and the POS filter
    has run over them. `groups`: (corpus, label, phrase, premise_stripped, reject, n
    verdicts asked, duplicate (rank > 1 among identical pairs), rows, pairs) per distinct
    value, where a row stands for its `copies` identical pairs of one task (a rank-1 row
    keeps one pair and counts the rest of its copies as duplicates); `marked_counts`
    ({(corpus, label, reject): n}, pass 1's, where every pair kept by the text rules is
    under None) gets the POS reasons. Returns (duplicates {(corpus, label): n}, kept {(corpus, label, phrase,
    premise_stripped): n}, pos {reason or None: verdicts}, per_corpus {corpus: {label:
    n}}). Identical pairs have identical texts, hence identical verdicts: a group is
    dropped whole by the filter, or keeps its lowest pair_id and counts the rest as
    `duplicate_pair`, as when the filter ran before the grouping."""
    duplicates: Counter = Counter()
    kept: Counter = Counter()
    pos: Counter = Counter()
    per_corpus: dict = defaultdict(Counter)
    for corpus, label, phrase, stripped, reject, asked, dup, rows, n in groups:
        if reject is not None:
            marked_counts[corpus, label, None] -= n
            marked_counts[corpus, label, reject] += n
        elif dup:
            duplicates[corpus, label] += n
        else:
            kept[corpus, label, phrase, bool(stripped)] += rows
            per_corpus[corpus][label] += rows
            if n > rows:
                duplicates[corpus, label] += n - rows
        if model and asked == 1:
            pos[reject] += n
        elif model and asked == 2:
            pos[None] += n
            pos[reject] += n
    for key in [k for k, v in marked_counts.items() if v == 0]:
        del marked_counts[key]
    for corpus, _, _ in list(marked_counts):
        per_corpus.setdefault(corpus, Counter())
    return duplicates, kept, pos, per_corpus


def tally_neutral(groups):
    """The counts of the POS-checked neutral candidates. `groups`: (corpus, source, reject,
    rank among identical pairs or None, bin, rows, verdicts asked). Returns (pos_neutral
    {reason or None: verdicts}, neutral_rejected {reason: n}, identical dropped,
    available {corpus: {strategy: n}}, bins {(corpus, strategy): {bin: n}})."""
    pos_neutral: Counter = Counter()
    neutral_rejected: Counter = Counter()
    dropped = 0
    available: dict = defaultdict(Counter)
    bins: dict = defaultdict(Counter)
    for corpus, source, reject, rn, b, n, asked in groups:
        pos_neutral[None] += asked - (n if reject is not None else 0)
        if reject is not None:
            pos_neutral[reject] += n
            neutral_rejected[reject] += n
        elif rn != 1:
            dropped += n
        else:
            available[corpus][source] += n
            bins[corpus, source][int(b)] += n
    return pos_neutral, neutral_rejected, dropped, available, bins
