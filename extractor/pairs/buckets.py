"""Stage 2's global steps as pure functions over one bucket of pair rows (pyarrow, no Spark).

The stage (`extractor.pairs.stage`) cuts pass 1's and pass 2's pair rows into
buckets by a hash of their texts (`text_buckets`), so every copy of a pair, marked or
neutral, lands in one bucket; a task per bucket then groups identical pairs
(`rank_identical`), runs the POS filter over them (`sentence_passes.pos_rows`) and returns only
counts (`marked_tallies`, `neutral_tallies`) from which the driver plans with the pure
functions of `extractor.pairs.corpus`. The exact neutral draw takes, per (corpus,
strategy), the candidates with the lowest (`select`, `pair_id`): all those of the bins
below the cut bin and, from the cut bin, those up to the last one the driver found among
that bin's rows (`boundary_rows`, `last_taken`, `drawn`).
"""
from __future__ import annotations

import zlib
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extractor.pairs import sentence_passes
from extractor.pairs import neutral


def text_buckets(table: pa.Table, n: int) -> np.ndarray:
    """Bucket of each pair row among `n`: a hash of its premise and hypothesis."""
    return np.array([zlib.crc32(f"{p}\x1f{h}".encode("utf-8")) % n for p, h in
                     zip(table.column("premise").to_pylist(), table.column("hypothesis").to_pylist())],
                    dtype=np.int64)


def rank_identical(table: pa.Table) -> pa.Table:
    """The rows sorted by (premise, hypothesis, pair_id), each with its rank among the rows
    of identical texts in `bin` (1: the lowest pair_id), as a window function would give it."""
    table = table.take(pc.sort_indices(table, sort_keys=[("premise", "ascending"), ("hypothesis", "ascending"),
                                                         ("pair_id", "ascending")]))
    premise, hypothesis = table.column("premise").to_pylist(), table.column("hypothesis").to_pylist()
    rank: list[int] = []
    for i in range(table.num_rows):
        same = i and premise[i] == premise[i - 1] and hypothesis[i] == hypothesis[i - 1]
        rank.append(rank[-1] + 1 if same else 1)
    return table.set_column(table.schema.get_field_index("bin"), "bin", pa.array(rank, pa.int32()))


def pos_checked(table: pa.Table, model: str | None, lexicon, known: dict | None = None) -> pa.Table:
    """`sentence_passes.pos_rows` over a table (the table as it is without a model);
    `known`: verdicts by text already found (`known_verdicts`), not tagged again."""
    if not model or not table.num_rows:
        return table
    return pa.Table.from_batches(list(sentence_passes.pos_rows(table.to_batches(), model, lexicon, without_torch=True,
                                                  known=known)), schema=table.schema)


VERDICTS = pa.schema([("text", pa.large_string()), ("reason", pa.string())])


def judged(ranked: pa.Table) -> pa.Table:
    """The POS verdicts a POS-checked table of pair rows holds (`pos_checked` over rows
    that all reached the filter, as the marked round's do): one row per text judged, its
    reason (null: it passed). A row's hypothesis was judged first: `n` 1 means it failed
    (the reason in `reject`), `n` 2 that it passed and the premise was judged (the premise's
    reason in `reject`)."""
    reject, n = ranked.column("reject"), ranked.column("n")
    failed = pc.and_(pc.is_valid(reject), pc.equal(n, 1))
    hypothesis = pa.table({"text": ranked.column("hypothesis").cast(pa.large_string()),
                           "reason": pc.if_else(failed, reject, pa.scalar(None, pa.string()))})
    premise = ranked.filter(pc.equal(n, 2))
    premise = pa.table({"text": premise.column("premise").cast(pa.large_string()),
                        "reason": premise.column("reject").cast(pa.string())})
    both = pa.concat_tables([hypothesis, premise])
    _, first = np.unique(both.column("text").to_numpy(zero_copy_only=False), return_index=True)
    return both.take(pa.array(np.sort(first))).cast(VERDICTS)


def known_verdicts(tables, texts: pa.Array) -> dict:
    """{text: (ok, reason)} of the verdicts in `tables` (each `judged`'s, read one at a time)
    for the given texts only: what a later POS step can take instead of tagging again."""
    out: dict = {}
    wanted = pc.unique(texts.cast(pa.large_string()))
    for table in tables:
        table = table.filter(pc.is_in(table.column("text"), value_set=wanted))
        for text, reason in zip(table.column("text").to_pylist(), table.column("reason").to_pylist()):
            out[text] = (reason is None, reason)
    return out


def _grouped(table: pa.Table, keys: list[str], aggregates: list) -> list[tuple]:
    if not table.num_rows:
        return []
    out = table.group_by(keys, use_threads=False).aggregate(aggregates)
    names = keys + [f"{c}_{f}" if c else f for c, f in ((a[0] if a[0] else "", a[1]) for a in aggregates)]
    return [tuple(r) for r in zip(*(out.column(n).to_pylist() for n in names))]


def pass_counts(table: pa.Table) -> list[tuple]:
    """Pass 1's aggregate rows (not "pair", "doc" or "hist": `pass_histograms`) summed per
    (kind, corpus, label, reject, bin, document of an "edge" row): (kind, corpus, label,
    reject, bin, edge, n)."""
    kind = table.column("kind")
    rows = table.filter(pc.invert(pc.is_in(kind, value_set=pa.array(["pair", "doc", "hist"]))))
    edge = pc.if_else(pc.equal(rows.column("kind"), "edge"), rows.column("doc_id"), pa.scalar(None, pa.string()))
    rows = rows.select(["kind", "corpus", "label", "reject", "bin", "n"]).append_column("edge", edge)
    return _grouped(rows, ["kind", "corpus", "label", "reject", "bin", "edge"], [("n", "sum")])


def pass_histograms(table: pa.Table) -> list[list]:
    """Pass 1's "hist" rows of a task (corpus, strategy in `label`, histogram key in `bin`,
    count in `n`) as `dense_histograms`: what a task returns to the driver instead of one
    row per bin."""
    rows = table.filter(pc.equal(table.column("kind"), "hist"))
    return dense_histograms(zip(*(rows.column(c).to_pylist() for c in ("corpus", "label", "bin", "n"))))


def dense_histograms(rows) -> list[list]:
    """(corpus, strategy, histogram key, n) rows summed into one dense list of
    `neutral.HIST_SIZE` counts per (corpus, strategy), at `neutral.hist_index` of each key:
    [[corpus, strategy, counts]] in sorted order. JSON-able, and of a fixed size per
    (corpus, strategy) whatever the documents of the task."""
    out: dict = {}
    for corpus, strategy, key, n in rows:
        counts = out.get((corpus, strategy))
        if counts is None:
            counts = out[corpus, strategy] = [0] * neutral.HIST_SIZE
        counts[neutral.hist_index(key)] += n
    return [[c, s, counts] for (c, s), counts in sorted(out.items(), key=repr)]


def sum_histograms(per_task) -> dict:
    """The tasks' `dense_histograms` summed: {(corpus, strategy): {histogram key: n}} of the
    non-empty keys, the (corpus, strategy) in sorted order (`corpus.plan_cuts`' `hist`).
    The driver holds one array per (corpus, strategy) while it sums."""
    total: dict = {}
    for rows in per_task:
        for corpus, strategy, counts in rows:
            acc = total.get((corpus, strategy))
            values = np.asarray(counts, dtype=np.int64)
            total[corpus, strategy] = values if acc is None else acc + values
    return {key: {neutral.hist_key(int(i)): int(v[i]) for i in np.flatnonzero(v)}
            for key, v in sorted(total.items(), key=repr)}


def needed_in(docs: pa.Table, cuts: dict) -> pa.Table:
    """The rows of pass 1's "doc" table (corpus, doc_id, n: the document's lowest selection
    bin per strategy, packed by pass 1 (`sentence_passes`), bin: the unit key) whose
    document has a neutral candidate at or below the cut of its (corpus, strategy)
    (`cuts`), over numpy arrays, so only the needed documents become Python objects (the
    definition, one document at a time: `needs_document` in tests/pairs_reference.py)."""
    if not docs.num_rows:
        return docs
    top = (1 << neutral.BIN_BITS) - 1
    packed = docs.column("n").to_numpy()
    corpus = docs.column("corpus").cast(pa.string()).fill_null("")
    mask = np.zeros(docs.num_rows, dtype=bool)
    for name in pc.unique(corpus).to_pylist():
        limits = [(k, cuts.get((name, s), -1)) for k, s in enumerate(neutral.STRATEGIES)]
        limits = [(k, c) for k, c in limits if c >= 0]
        if not limits:
            continue
        mine = pc.equal(corpus, name).to_numpy(zero_copy_only=False)
        hit = np.zeros(docs.num_rows, dtype=bool)
        for k, c in limits:
            v = (packed >> np.int64(neutral.BIN_BITS * k)) & np.int64(top)
            hit |= (v != top) & (v <= c)  # top: no candidate of that strategy
        mask |= mine & hit
    return docs.filter(pa.array(mask))


def marked_tallies(ranked: pa.Table) -> list[tuple]:
    """Per (corpus, label, phrase, premise_stripped, reject, verdicts asked, rank > 1): the
    rows and the pairs they stand for (`copies`), for `corpus.tally_marked`."""
    if not ranked.num_rows:
        return []
    table = ranked.select(["corpus", "label", "phrase", "premise_stripped", "reject", "n", "copies"]) \
        .append_column("dup", pc.greater(ranked.column("bin"), 1))
    return _grouped(table, ["corpus", "label", "phrase", "premise_stripped", "reject", "n", "dup"],
                    [([], "count_all"), ("copies", "sum")])


def text_keys(table: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(table.column("premise"), table.column("hypothesis"), "\x1f")


def lowest_selects(cands: pa.Table, wanted: Mapping) -> list[list]:
    """[[corpus, source, hashes]]: per (corpus, strategy) the `wanted` + 1 lowest selection
    hashes of a bucket's neutral candidates (all of them where it has fewer), from which
    the driver finds the exact limit of the POS check (`corpus.check_limits`; one more than
    wanted tells it that the limit leaves candidates out)."""
    out: list = []
    if not cands.num_rows:
        return out
    keys = cands.select(["corpus", "source"]).group_by(["corpus", "source"], use_threads=False).aggregate([])
    for corpus, source in zip(keys.column("corpus").to_pylist(), keys.column("source").to_pylist()):
        n = int(wanted.get((corpus, source), 0))
        if n <= 0:
            continue
        mine = cands.filter(pc.and_(_equal(cands.column("corpus"), corpus), pc.equal(cands.column("source"), source)))
        values = np.sort(mine.column("select").to_numpy())[:n + 1]
        out.append([corpus, source, values.tolist()])
    return sorted(out, key=repr)


def _equal(column, value):
    return pc.is_null(column) if value is None else pc.fill_null(pc.equal(column, value), False)


def under_limits(table: pa.Table, limits: Mapping | None) -> pa.Table:
    """The rows whose selection hash is at most the limit of their (corpus, source)
    (`corpus.check_limits`; None or a missing key: no limit)."""
    if not limits or not table.num_rows:
        return table
    keys = zip(table.column("corpus").to_pylist(), table.column("source").to_pylist())
    top = np.iinfo(np.int64).max
    limit = np.fromiter((top if (v := limits.get(k)) is None else v for k in keys), dtype=np.int64,
                        count=table.num_rows)
    return table.filter(pa.array(table.column("select").to_numpy() <= limit))


def neutral_round(cands: pa.Table, marked: pa.Table, model: str | None, lexicon, known: dict | None = None,
                  limits: Mapping | None = None) -> tuple[list[tuple], pa.Table]:
    """One bucket's neutral candidates: ranked among identical texts, those under the limits
    of their (corpus, strategy) (`limits`, `under_limits`) POS-checked; those identical to a
    kept marked pair of the bucket (`marked`) or to a lower pair_id, or rejected by the
    filter, are counted and left out. Returns (per (corpus, source, reject, rank when it
    counts, selection bin): rows and verdicts asked, for `corpus.tally_neutral`; the
    candidates that stay). Ranks are taken over every candidate, before the limits."""
    seen = pc.is_in(text_keys(cands), value_set=text_keys(marked)) if cands.num_rows else pa.array([], pa.bool_())
    ranked = rank_identical(cands.append_column("_seen", seen))
    ranked = pos_checked(under_limits(ranked, limits), model, lexicon, known)
    free = pc.and_(pc.is_null(ranked.column("reject")), pc.invert(ranked.column("_seen")))
    rn = pc.if_else(free, ranked.column("bin"), pa.scalar(None, pa.int32()))
    selection_bin = pc.shift_right(ranked.column("select"), 63 - neutral.BIN_BITS)
    table = (ranked.select(["corpus", "source", "reject", "n"])
             .append_column("_rn", rn).append_column("b", selection_bin))
    tallies = _grouped(table, ["corpus", "source", "reject", "_rn", "b"], [([], "count_all"), ("n", "sum")])
    pool = ranked.filter(pc.and_(free, pc.equal(ranked.column("bin"), 1))).drop_columns(["_seen"])
    return tallies, pool


def cut_points(bins: dict, wanted: dict) -> dict:
    """{(corpus, source): (cut bin, rows of that bin taken)} (`neutral.bin_cutoff`)."""
    return {key: tuple(int(x) for x in neutral.bin_cutoff(bins.get(key, {}), int(wanted.get(key, 0))))
            for key in sorted(set(bins) | set(wanted))}


def _cut_of(pool: pa.Table, cuts: Mapping) -> tuple[list, np.ndarray, np.ndarray]:
    keys = list(zip(pool.column("corpus").to_pylist(), pool.column("source").to_pylist()))
    cut = np.array([cuts.get(k, (-1, 0))[0] for k in keys], dtype=np.int64)
    bins = pool.column("select").to_numpy() >> (63 - neutral.BIN_BITS)
    return keys, cut, bins


def boundary_rows(pool: pa.Table, cuts: Mapping) -> list[list]:
    """[corpus, source, select, pair_id] of the candidates in the bin where their group's
    draw ends part-way."""
    if not pool.num_rows:
        return []
    keys, cut, bins = _cut_of(pool, cuts)
    select, pair_id = pool.column("select").to_pylist(), pool.column("pair_id").to_pylist()
    return [[*keys[i], select[i], pair_id[i]] for i in np.nonzero(bins == cut)[0].tolist()
            if cuts.get(keys[i], (-1, 0))[1] > 0 and keys[i][0] is not None]


def last_taken(rows: list[list], cuts: Mapping) -> dict:
    """{(corpus, source): (select, pair_id) of the last candidate drawn from the cut bin}."""
    per: dict = {}
    for corpus, source, select, pair_id in rows:
        per.setdefault((corpus, source), []).append((select, pair_id))
    out = {}
    for key, values in per.items():
        extra = cuts[key][1]
        values.sort()
        out[key] = list(values[min(extra, len(values)) - 1])
    return out


def drawn(pool: pa.Table, cuts: Mapping, last: Mapping) -> pa.Table:
    """The candidates of a bucket the exact draw takes."""
    if not pool.num_rows:
        return pool
    keys, cut, bins = _cut_of(pool, cuts)
    mask = (bins < cut) & np.array([k[0] is not None for k in keys], dtype=bool)
    edge = np.nonzero(bins == cut)[0]
    if len(edge):
        select, pair_id = pool.column("select").to_pylist(), pool.column("pair_id").to_pylist()
        for i in edge.tolist():
            limit = last.get(keys[i])
            mask[i] = keys[i][0] is not None and limit is not None and (select[i], pair_id[i]) <= tuple(limit)
    return pool.filter(pa.array(mask))
