"""What stage 2 decides over a whole corpus, from aggregates only, and a plain
single-process run of the whole stage.

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

`reference_pairs(table, ...)` chains pass 1, the plan, pass 2 and the exact draw in one
Python process with the same functions; the Spark stage does the same steps with
`mapInArrow` and Spark SQL, and a test checks both give the same rows.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping

import pyarrow as pa

from extractor.lexicon.lexicon import MARKED_LABELS
from extractor.pairs import sentence_passes
from extractor.pairs import neutral
from extractor.pairs.matching import matcher_for
from extractor.pairs.pairing import MARKED_REASONS
from extractor.pairs.pos_filter import REASONS
from extractor.core.schemas import PAIRS


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


# ---------------------------------------------------------------------------- one process

def _aggregates(rows: pa.Table):
    marked_counts: Counter = Counter()
    pos: Counter = Counter()
    hist: defaultdict = defaultdict(Counter)
    d = rows.filter(pa.compute.not_equal(rows["kind"], "pair")).to_pydict()
    for kind, corpus, label, reject, n, b in zip(d["kind"], d["corpus"], d["label"], d["reject"], d["n"], d["bin"]):
        if kind == "marked":
            marked_counts[corpus, label, reject] += n
        elif kind in ("pos", "pos_neutral"):
            pos[reject] += n
        elif kind == "hist":
            hist[corpus, label][b] += n
    return marked_counts, pos, hist


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


def _ranked(rows: list) -> list:
    """Rows sorted by (premise, hypothesis, pair_id), each with its rank among identical
    pairs in `bin` (1: the lowest pair_id), as the stage's window function gives it."""
    rows = sorted(rows, key=lambda r: (r["premise"], r["hypothesis"], r["pair_id"]))
    for k, r in enumerate(rows):
        same = k and (rows[k - 1]["premise"], rows[k - 1]["hypothesis"]) == (r["premise"], r["hypothesis"])
        r["bin"] = rows[k - 1]["bin"] + 1 if same else 1
    return rows


def _pos_checked(rows: list, model, lexicon, without_torch: bool) -> list:
    if not rows:
        return rows
    table = pa.Table.from_pylist(rows, schema=pa.schema([f for f in sentence_passes.WORK if f.name in rows[0]]))
    out = pa.Table.from_batches(list(sentence_passes.pos_rows(table.to_batches(), model, lexicon, without_torch)),
                                schema=table.schema)
    return [dict(r, **extra) for r, extra in zip(out.to_pylist(), [{k: v for k, v in r.items() if k not in
                                                                   table.schema.names} for r in rows])]


def reference_pairs(table: str, lexicon, options, model: str | None, status: dict, without_torch: bool = False):
    """The whole stage in this process over the `sentences/` table at `table` (its files
    read with pyarrow, as the Spark tasks read them), in the stage's order: pass 1, identical
    marked pairs grouped, the POS filter over them, the plan, pass 2, the POS filter over its
    candidates, the draw. Returns (pyarrow Table of `PAIRS` rows sorted by (label,
    pair_id), stats)."""
    matcher = matcher_for(lexicon)
    strategies = [s for s in neutral.STRATEGIES if options.neutral_mix.get(s, 0) > 0]
    units = sentence_passes.file_units(sentence_passes.sentence_files(table), 1)
    one = pa.Table.from_batches(list(sentence_passes.pass_one_streams(sentence_passes.file_streams(units), matcher,
                                                                      options.seed, strategies, None, lexicon,
                                                                      options.min_chars)),
                                schema=sentence_passes.WORK)
    marked_counts, _, hist = _aggregates(one)
    edges = Counter(zip(*[one.filter(pa.compute.equal(one["kind"], "edge"))[c].to_pylist()
                          for c in ("corpus", "doc_id")]))
    split = next((key for key, n in sorted(edges.items(), key=repr) if n > 1), None)
    if split:
        raise sentence_passes.DocumentOrderError(sentence_passes.split_document_error(*split))
    pairs = one.filter(pa.compute.equal(one["kind"], "pair")).to_pylist()
    rows = _pos_checked(_ranked([r for r in pairs if r["source"] == "marker"]), model, lexicon, without_torch)
    groups: dict = defaultdict(lambda: [0, 0])
    for r in rows:
        g = groups[r["corpus"], r["label"], r["phrase"], r["premise_stripped"], r["reject"], r["n"], r["bin"] > 1]
        g[0] += 1
        g[1] += r["copies"]
    duplicates, kept, pos, per_corpus = tally_marked([(*k, *v) for k, v in groups.items()], marked_counts, model)
    marked = [r for r in rows if r["reject"] is None and r["bin"] == 1]
    checked = sum(pos.values())
    pass_rate = pos.get(None, 0) / checked if model and checked else None
    targets, available, cuts = plan_cuts(per_corpus, hist, options.neutral_ratio, options.neutral_mix, pass_rate)
    if sentence_passes.early_covers(cuts):  # pass 1 gave every candidate under the cuts
        two = [r for r in pairs if r["source"] != "marker" and r["bin"] <= cuts.get((r["corpus"], r["source"]), -1)]
    else:
        docs = one.filter(pa.compute.equal(one["kind"], "doc")).select(["corpus", "doc_id", "n", "bin"]).to_pydict()
        by_file, needed = sentence_passes.needed_documents(zip(docs["corpus"], docs["doc_id"], docs["n"], docs["bin"]),
                                                           cuts)
        units = [u for u in units if u[0] in by_file]
        streams = sentence_passes.file_streams(units, by_file)
        two = pa.Table.from_batches(list(sentence_passes.pass_two_streams(streams, matcher, options.seed,
                                                                          strategies, cuts, None, lexicon,
                                                                          options.min_chars, needed=needed)),
                                    schema=sentence_passes.WORK)
        two = two.filter(pa.compute.equal(two["kind"], "pair")).to_pylist()
    seen = {(r["premise"], r["hypothesis"]) for r in marked}
    ranked = [dict(r, _seen=(r["premise"], r["hypothesis"]) in seen) for r in _ranked(two)]
    wanted = check_counts(per_corpus, hist, options.neutral_ratio, options.neutral_mix, pass_rate)
    by_key: dict = defaultdict(list)
    for r in ranked:
        by_key[r["corpus"], r["source"]].append(r["select"])
    limits: dict | None = check_limits(by_key, wanted)
    while True:
        cands = _pos_checked([dict(r) for r in ranked
                              if limits is None or limits.get((r["corpus"], r["source"])) is None
                              or r["select"] <= limits[r["corpus"], r["source"]]], model, lexicon, without_torch)
        groups = Counter((r["corpus"], r["source"], r["reject"],
                          r["bin"] if r["reject"] is None and not r["_seen"] else None,
                          r["select"] >> (63 - neutral.BIN_BITS), r["n"]) for r in cands)
        pos_neutral, neutral_rejected, n_dropped, avail2, _ = tally_neutral(
            [(c, s, rej, rn, b, n, n * asked) for (c, s, rej, rn, b, asked), n in groups.items()])
        allocated = final_allocation(targets, options.neutral_mix, avail2)
        if limits_hold(limits, avail2, allocated):
            break
        limits = None
    cands = [r for r in cands if r["reject"] is None and not r["_seen"] and r["bin"] == 1]
    groups = defaultdict(list)
    for r in cands:
        groups[r["corpus"], r["source"]].append(r)
    chosen = []
    for (corpus, source), rows in groups.items():
        rows.sort(key=lambda r: (r["select"], r["pair_id"]))
        chosen.extend(rows[: allocated.get(corpus, {}).get(source, 0)])
    out = sorted(marked + chosen, key=lambda r: (r["label"], r["pair_id"]))
    table = pa.Table.from_pylist([{f.name: r[f.name] for f in PAIRS} for r in out], schema=PAIRS)
    stats = build_stats(status=status, options=options, marked_counts=marked_counts, duplicates=duplicates,
                        kept=kept, pos=pos, pos_neutral=pos_neutral if model else None, targets=targets,
                        available=available, allocated=allocated, neutral_rejected=neutral_rejected,
                        neutral_duplicates=n_dropped)
    return table, stats
