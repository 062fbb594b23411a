"""Independent implementations the tests compare stage 2 with (no Spark, no runner):

* `reference_pairs`: the whole stage in one Python process over Python rows, with the
  library's per-document passes and corpus-wide decisions (`extractor.pairs.corpus`), in
  the stage's order; the tests check that the stage's rounds give the same rows and stats;
* `mix_hash`: the splitmix64 finalizer over one Python int, the definition of
  `extractor.core.hashing.mix_hash_array`;
* `pack_lowest_bins`: a document's lowest selection-hash bin per strategy packed into one
  int, as pass 1 writes it in its "doc" rows; `needs_document` and `needed_documents`:
  the documents pass 2 pairs again, one "doc" row at a time (the stage filters them with
  numpy: `buckets.needed_in`).
"""
from __future__ import annotations

from collections import Counter, defaultdict

import pyarrow as pa
import pyarrow.compute as pc

from extractor.core.schemas import PAIRS
from extractor.pairs import corpus as pcorp
from extractor.pairs import neutral, sentence_passes
from extractor.pairs.matching import matcher_for
from extractor.pairs.pairing import select_bin

M64 = (1 << 64) - 1


def mix_hash(value: int, salt: int) -> int:
    """A 63-bit hash of an integer (a `stable_hash`) and a salt: the splitmix64 finalizer,
    what `mix_hash_array` computes element-wise."""
    z = (value + (salt + 1) * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return (z ^ (z >> 31)) >> 1


def pack_lowest_bins(lowest: dict) -> int:
    """The lowest selection-hash bin of a document's candidates per strategy ({strategy:
    bin}), BIN_BITS bits each in `neutral.STRATEGIES` order, in one int: the top bin (4095)
    for a strategy with no candidate, a lowest bin of 4095 kept as 4094."""
    top = (1 << neutral.BIN_BITS) - 1
    return sum((min(lowest[s], top - 1) if s in lowest else top) << (neutral.BIN_BITS * k)
               for k, s in enumerate(neutral.STRATEGIES))


def needs_document(packed: int, cuts: dict) -> bool:
    """Whether a document ("doc" row value) has a candidate at or below a cut ({strategy: bin})."""
    top = (1 << neutral.BIN_BITS) - 1
    for k, s in enumerate(neutral.STRATEGIES):
        v = (packed >> (neutral.BIN_BITS * k)) & top
        if v != top and v <= cuts.get(s, -1):  # top: no candidate of that strategy
            return True
    return False


def needed_documents(doc_rows, cuts: dict) -> tuple[dict, set]:
    """From pass 1's "doc" rows (corpus, doc_id, packed lowest bins, file key): the
    documents pass 2 must pair again, as ({file key: doc_ids}, {(corpus, doc_id)})."""
    per_corpus: dict = {}
    for (c, s), b in cuts.items():
        per_corpus.setdefault(c, {})[s] = b
    by_file: dict = {}
    keys: set = set()
    for corpus, doc_id, packed, key in doc_rows:
        if needs_document(packed, per_corpus.get(corpus, {})):
            by_file.setdefault(key, set()).add(doc_id)
            keys.add((corpus, doc_id))
    return by_file, keys


def _aggregates(rows: pa.Table):
    marked_counts: Counter = Counter()
    pos: Counter = Counter()
    hist: defaultdict = defaultdict(Counter)
    d = rows.filter(pc.not_equal(rows["kind"], "pair")).to_pydict()
    for kind, corpus, label, reject, n, b in zip(d["kind"], d["corpus"], d["label"], d["reject"], d["n"], d["bin"]):
        if kind == "marked":
            marked_counts[corpus, label, reject] += n
        elif kind in ("pos", "pos_neutral"):
            pos[reject] += n
        elif kind == "hist":
            hist[corpus, label][b] += n
    return marked_counts, pos, hist


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
    edges = Counter(zip(*[one.filter(pc.equal(one["kind"], "edge"))[c].to_pylist()
                          for c in ("corpus", "doc_id")]))
    split = next((key for key, n in sorted(edges.items(), key=repr) if n > 1), None)
    if split:
        raise sentence_passes.DocumentOrderError(sentence_passes.split_document_error(*split))
    pairs = one.filter(pc.equal(one["kind"], "pair")).to_pylist()
    rows = _pos_checked(_ranked([r for r in pairs if r["source"] == "marker"]), model, lexicon, without_torch)
    groups: dict = defaultdict(lambda: [0, 0])
    for r in rows:
        g = groups[r["corpus"], r["label"], r["phrase"], r["premise_stripped"], r["reject"], r["n"], r["bin"] > 1]
        g[0] += 1
        g[1] += r["copies"]
    duplicates, kept, pos, per_corpus = pcorp.tally_marked([(*k, *v) for k, v in groups.items()], marked_counts, model)
    marked = [r for r in rows if r["reject"] is None and r["bin"] == 1]
    checked = sum(pos.values())
    pass_rate = pos.get(None, 0) / checked if model and checked else None
    targets, available, cuts = pcorp.plan_cuts(per_corpus, hist, options.neutral_ratio, options.neutral_mix, pass_rate)
    if sentence_passes.early_covers(cuts):  # pass 1 gave every candidate under the cuts
        two = [r for r in pairs if r["source"] != "marker" and r["bin"] <= cuts.get((r["corpus"], r["source"]), -1)]
    else:
        docs = one.filter(pc.equal(one["kind"], "doc")).select(["corpus", "doc_id", "n", "bin"]).to_pydict()
        by_file, needed = needed_documents(zip(docs["corpus"], docs["doc_id"], docs["n"], docs["bin"]),
                                                           cuts)
        units = [u for u in units if u[0] in by_file]
        streams = sentence_passes.file_streams(units, by_file)
        two = pa.Table.from_batches(list(sentence_passes.pass_two_streams(streams, matcher, options.seed,
                                                                          strategies, cuts, None, lexicon,
                                                                          options.min_chars, needed=needed)),
                                    schema=sentence_passes.WORK)
        two = two.filter(pc.equal(two["kind"], "pair")).to_pylist()
    seen = {(r["premise"], r["hypothesis"]) for r in marked}
    ranked = [dict(r, _seen=(r["premise"], r["hypothesis"]) in seen) for r in _ranked(two)]
    wanted = pcorp.check_counts(per_corpus, hist, options.neutral_ratio, options.neutral_mix, pass_rate)
    by_key: dict = defaultdict(list)
    for r in ranked:
        by_key[r["corpus"], r["source"]].append(r["select"])
    limits: dict | None = pcorp.check_limits(by_key, wanted)
    while True:
        cands = _pos_checked([dict(r) for r in ranked
                              if limits is None or limits.get((r["corpus"], r["source"])) is None
                              or r["select"] <= limits[r["corpus"], r["source"]]], model, lexicon, without_torch)
        groups = Counter((r["corpus"], r["source"], r["reject"],
                          r["bin"] if r["reject"] is None and not r["_seen"] else None,
                          select_bin(r["select"]), r["n"]) for r in cands)
        pos_neutral, neutral_rejected, n_dropped, avail2, _ = pcorp.tally_neutral(
            [(c, s, rej, rn, b, n, n * asked) for (c, s, rej, rn, b, asked), n in groups.items()])
        allocated = pcorp.final_allocation(targets, options.neutral_mix, avail2)
        if pcorp.limits_hold(limits, avail2, allocated):
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
    stats = pcorp.build_stats(status=status, options=options, marked_counts=marked_counts, duplicates=duplicates,
                        kept=kept, pos=pos, pos_neutral=pos_neutral if model else None, targets=targets,
                        available=available, allocated=allocated, neutral_rejected=neutral_rejected,
                        neutral_duplicates=n_dropped)
    return table, stats
