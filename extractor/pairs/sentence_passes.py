"""Stage 2's passes over the sentences table: Arrow batches of document-contiguous
sentences in, pair rows and counts out (pure Python + pyarrow).

The two passes the stage's pass-one and pass-two tasks run (`extractor.pairs.stage`; the
same functions in one process in `tests/one_process.py` `pairs_in_one_process`, for tests
and the engine-overhead benchmark):

* pass 1 (`pass_one_streams`): per document, the marked candidates with their rejections and the
  POS filter (spaCy through `nlp.pipe` over each batch's texts, the model loaded once per
  Python worker, verdicts cached by text), the kept marked pairs as rows, counts by
  reason, and a 4096-bin histogram of the neutral candidates' selection hashes per
  (corpus, strategy): the per-corpus quotas are computed from those aggregates;
* pass 2 (`pass_two_streams`): per document again, the neutral candidates whose selection hash
  falls at or below the cut of their (corpus, strategy), POS-checked, as rows.

Rows of a document must arrive together and a document must not be split over two
partitions (stage 1 writes a document's sentences contiguously in one file; the stage
reads whole files per task). A document that shows up again after another one is an
error, not a silent half-document.
"""
from __future__ import annotations

import itertools
from bisect import bisect_left
from collections import Counter
from collections.abc import Mapping
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa

from extractor.core.errors import ERROR_MARK, UserError
from extractor.io import fs
from extractor.io.parquet_writer import partition_values
from extractor.pairs import pos_filter
from extractor.pairs.pairing import (BIN_BITS, Document, Pair, apply_pos, pair_batch, pair_document, pos_texts,
                                     select_bin)
from extractor.core.schemas import PAIRS, REF
from extractor.pairs.neutral import POOLS, STRATEGIES, hist_keys

INPUT_COLUMNS = ("corpus", "genre", "lang", "doc_id", "section", "para_idx", "sent_idx", "text", "short")
# What the passes emit: pair rows (kind "pair": kept marked pairs in pass 1, neutral
# candidates with their bin and, in `n`, the POS verdicts they took in pass 2) and
# aggregate rows (kind "marked", "pos", "hist", "edge", "doc") in one schema.
WORK = pa.schema(list(PAIRS) + [
    pa.field("phrase", pa.string()),
    pa.field("premise_stripped", pa.bool_()),
    pa.field("reject", pa.string()),
    pa.field("select", pa.int64()),
    pa.field("kind", pa.string()),
    pa.field("n", pa.int64()),
    pa.field("bin", pa.int32()),
    pa.field("copies", pa.int64()),
])


class DocumentOrderError(UserError, ValueError):
    """The sentences of a document are not contiguous in the input."""


_PER_SENTENCE = ("section", "para_idx", "sent_idx", "text", "short")
_PER_DOCUMENT = ("corpus", "genre", "lang", "doc_id")


def _pylist(array) -> list:
    """Python values of an Arrow array (through numpy when there is no null: several times
    faster than `to_pylist` for strings and integers). A dictionary array (the section
    titles, `read_sentences`): one Python string per distinct value, shared by its rows, so
    that hashing and comparing them later costs once per title, not per row; None for a null."""
    t = array.type
    if pa.types.is_dictionary(t):
        values = np.empty(len(array.dictionary) + 1, dtype=object)  # the last: None, for a null
        values[:-1] = _pylist(array.dictionary)
        return values[array.indices.fill_null(len(array.dictionary)).to_numpy()].tolist()
    if array.null_count == 0 and (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
                                  or pa.types.is_boolean(t)):
        return array.to_numpy(zero_copy_only=False).tolist()
    return array.to_pylist()


def documents(batches: Iterable[pa.RecordBatch], min_chars: int = 50, corpus: str | None = None
              ) -> Iterator[list[Document]]:
    """Documents of a stream of sentence batches, one list per input batch (the documents
    completed by it; a document running over a batch boundary is carried to the next).
    Document boundaries are found with Arrow kernels; only the per-sentence columns are
    turned into Python lists, the per-document ones are read at each document's start.
    `corpus`: the corpus of rows without a `corpus` column (a file of a table partitioned
    by corpus)."""
    import pyarrow.compute as pc

    carry: dict | None = None
    done: set = set()
    for batch in batches:
        n = batch.num_rows
        if not n:
            continue
        names = batch.schema.names

        def column(name, names=names, batch=batch, n=n):
            if name in names:
                return batch.column(names.index(name))
            if name == "corpus" and corpus is not None:
                return pa.array([corpus] * n, pa.string())
            return pa.nulls(n, pa.string())

        doc_ids, corpora = column("doc_id"), column("corpus").cast(pa.string())
        changed = pc.or_(pc.not_equal(doc_ids.slice(1), doc_ids.slice(0, n - 1)),
                         pc.not_equal(corpora.fill_null("").slice(1), corpora.fill_null("").slice(0, n - 1)))
        starts = [0] + [i + 1 for i in pc.indices_nonzero(changed.fill_null(True)).to_pylist()]
        cols = {name: _pylist(column(name)) for name in _PER_SENTENCE if name != "short" or name in names}
        if column("text").null_count:
            cols["text"] = [t or "" for t in cols["text"]]
        if "short" not in names:
            cols["short"] = [len(t) < min_chars for t in cols["text"]]
        elif column("short").null_count:
            cols["short"] = [bool(x) for x in cols["short"]]
        at = pa.array(starts, type=pa.int64())
        heads = {name: column(name).cast(pa.string()).take(at).to_pylist() for name in _PER_DOCUMENT}
        breaks = _order_breaks(column("para_idx"), column("sent_idx"))
        out = []
        for k, begin in enumerate(starts):
            end = starts[k + 1] if k + 1 < len(starts) else n
            key = (heads["corpus"][k], heads["doc_id"][k])
            ordered = breaks is not None and breaks[end - 1] == breaks[begin]
            if carry is not None and carry["key"] == key:
                last, first = (carry["para_idx"][-1], carry["sent_idx"][-1]), (cols["para_idx"][begin],
                                                                                 cols["sent_idx"][begin])
                ordered = ordered and carry["ordered"] and last <= first
                for name in _PER_SENTENCE:
                    carry[name].extend(cols[name][begin:end])
                carry["ordered"] = ordered
                continue
            if carry is not None:
                out.append(_finish(carry, done))
            carry = {name: cols[name][begin:end] for name in _PER_SENTENCE}
            carry.update(key=key, genre=heads["genre"][k], lang=heads["lang"][k], ordered=ordered)
        if out:
            yield out
    if carry is not None:
        yield [_finish(carry, done)]


def _order_breaks(para, sent):
    """The running count of the rows of a batch that come before their predecessor in
    (para_idx, sent_idx) order (numpy, once per batch): rows [a, b) are in order when
    `breaks[b - 1] == breaks[a]`. None when a column holds a null (each document is then
    checked on its own, as Python values)."""
    if para.null_count or sent.null_count:
        return None
    p, s = para.to_numpy(), sent.to_numpy()
    back = (p[1:] < p[:-1]) | ((p[1:] == p[:-1]) & (s[1:] < s[:-1]))
    return np.concatenate(([0], np.cumsum(back))).tolist()


def split_document_error(corpus, doc_id) -> str:
    """The message when one document lies in two files (found from the "edge" rows: each
    file reports its first and last document; a document cut by a file boundary is the
    last of one file and the first of another, and the two files are read by two tasks
    or, in one task, as two streams)."""
    return (f"sentences/: document {doc_id!r} (corpus {corpus!r}) was read by two tasks, so it would be "
            f"paired in two halves; the stage reads whole Parquet files, each on its own: rewrite the table "
            f"with stage 1 (--stages sentences --overwrite) so that a document lies in one file")


# ---------------------------------------------------------------------------- files

def sentence_files(table: str) -> list[tuple[str, str | None, int]]:
    """The files of a `sentences/` table, sorted by path: (path, the corpus its hive
    directory `corpus=<name>` names (%XX-escaped as Spark writes it) or None, bytes). What
    both passes read: a task reads its files with pyarrow, so the JVM never scans or
    converts the sentences."""
    base = fs.canonical(table).rstrip("/")
    out = []
    for path, size in fs.list_files(table):
        corpus = partition_values(path[len(base):]).get("corpus")
        out.append((path, corpus, size))
    return out


def read_sentences(path: str, part: int = 0, parts: int = 1, batch_size: int = 65_536) -> Iterator[pa.RecordBatch]:
    """The stage's columns (`INPUT_COLUMNS` present in the file) of one sentence file, in
    file order. With `parts` > 1, the documents whose first row lies in rows
    [part * n / parts, (part + 1) * n / parts) of the file's n rows: a long file is read
    by several tasks, never a document split between them (the cut points move to the
    next change of `doc_id`)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        with fs.open_input(path) as fh:
            parquet = pq.ParquetFile(fh)
            names = parquet.schema_arrow.names
            if "section" in names:  # the section titles as Parquet stores them, a dictionary (`_pylist`)
                parquet = pq.ParquetFile(fh, metadata=parquet.metadata, read_dictionary=["section"])
            columns = [c for c in INPUT_COLUMNS if c in names]
            if parts <= 1:
                yield from parquet.iter_batches(columns=columns, batch_size=batch_size)
                return
            n = parquet.metadata.num_rows
            ids = parquet.read(columns=["doc_id"]).column(0).combine_chunks().cast(pa.string()).fill_null("")
            starts = [0] + [i + 1 for i in pc.indices_nonzero(
                pc.not_equal(ids.slice(1), ids.slice(0, n - 1))).to_pylist()] if n else []

            def first_start(row):
                k = bisect_left(starts, row)
                return starts[k] if k < len(starts) else n
            lo, hi = first_start(part * n // parts), first_start((part + 1) * n // parts)
            if lo >= hi:
                return
            pos = 0
            for g in range(parquet.metadata.num_row_groups):
                size = parquet.metadata.row_group(g).num_rows
                if pos + size > lo and pos < hi:
                    table = parquet.read_row_group(g, columns=columns)
                    a, b = max(lo - pos, 0), min(hi - pos, size)
                    yield from table.slice(a, b - a).to_batches(max_chunksize=batch_size)
                pos += size
    except (OSError, pa.ArrowException) as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise ValueError(f"{ERROR_MARK}{path}: cannot read it as a sentences Parquet file ({first})") from None


def file_units(files: list, total_parts: int) -> list[tuple]:
    """Work units `(key, path, corpus, part, parts)` over `files` [(path, corpus, bytes)]:
    about `total_parts` parts in all, a file cut into parts in proportion to its size (a
    table of one long file is still read by several tasks)."""
    total = sum(size for _, _, size in files) or 1
    units: list[tuple] = []
    for path, corpus, size in files:
        parts = max(1, round(total_parts * size / total))
        units.extend((len(units), path, corpus, k, parts) for k in range(parts))
    return units


def file_streams(units, needed: dict | None = None) -> Iterator[tuple]:
    """(unit key, corpus, batches) per unit `(key, path, corpus[, part, parts])`. `needed`:
    {key: doc_ids} keeps only those documents' rows (pass 2), filtered with an Arrow kernel
    before any row becomes a Python object."""
    import pyarrow.compute as pc

    for key, path, corpus, *split in units:
        batches = read_sentences(path, *split)
        if needed is not None:
            ids = pa.array(sorted(needed.get(key, ())), pa.string())

            def only(batches=batches, ids=ids):
                for b in batches:
                    mask = pc.is_in(b.column(b.schema.get_field_index("doc_id")).cast(pa.string()), value_set=ids)
                    b = b.filter(mask)
                    if b.num_rows:
                        yield b
            batches = only()
        yield key, corpus, batches


def _finish(part: dict, done: set) -> Document:
    key = part["key"]
    if key in done:
        raise DocumentOrderError(
            f"{ERROR_MARK}sentences/: the sentences of document {key[1]!r} (corpus {key[0]!r}) are not contiguous "
            f"in their file; rewrite the table with stage 1 (--stages sentences --overwrite)")
    done.add(key)
    para, sent = part["para_idx"], part["sent_idx"]
    if not part.get("ordered") and any((para[i], sent[i]) > (para[i + 1], sent[i + 1])
                                       for i in range(len(para) - 1)):
        order = sorted(range(len(para)), key=lambda i: (para[i], sent[i]))
        part = dict(part, **{name: [part[name][i] for i in order] for name in _PER_SENTENCE})
    return Document(corpus=key[0], genre=part["genre"], lang=part["lang"], doc_id=key[1],
                    section=part["section"], para_idx=part["para_idx"], sent_idx=part["sent_idx"],
                    text=part["text"], short=part["short"])  # no None left: see `documents`


# ---------------------------------------------------------------------------- POS verdicts

class Verdicts:
    """POS verdicts by text for one task of a Python worker: spaCy (nlp.pipe) only on texts
    not seen before; counts per text occurrence asked for, so the numbers do not depend on
    how rows fall into tasks. The worker's cache keeps every text of the running task and,
    of earlier tasks', the MAX_CACHE last ones (trimmed, oldest first, when a task starts):
    its memory is bounded by one task's texts, not by the input. The texts a task finds
    there are nearly all its own (`learn`: the marked round's verdicts); of earlier tasks',
    few (docs/scale.md, the section "worker memory flat in input size")."""

    MAX_CACHE = 4_096

    def __init__(self, model: str | None, lexicon, without_torch: bool = False):
        self.model, self.lexicon, self.without_torch = model, lexicon, without_torch
        self.cache: dict = _CACHE.setdefault(model, {}) if model else {}
        self.counts: Counter = Counter()
        over = len(self.cache) - self.MAX_CACHE
        if over > 0:  # a Python worker runs one task at a time: none of these is in use
            for text in list(itertools.islice(self.cache, over)):
                del self.cache[text]

    def prepare(self, texts: list[str]) -> None:
        if not self.model:
            return
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if not todo:
            return
        try:
            pos_filter.load_model(self.model, without_torch=self.without_torch)
        except (OSError, ImportError, ValueError) as exc:  # not installed there, or not loadable: one line
            raise RuntimeError(
                f"{ERROR_MARK}spaCy model '{self.model}' cannot be loaded where the tasks run "
                f"({type(exc).__name__}: {str(exc).splitlines()[0][:160]}); install it there "
                f"({pos_filter.install_hint(self.model, self.lexicon)}) or pass --pos-filter off") from None
        for text, verdict in zip(todo, pos_filter.pos_verdicts(todo, self.model, self.lexicon)):
            self.cache[text] = verdict

    def learn(self, known: dict) -> None:
        """Take verdicts by text found elsewhere ({text: (ok, reason)}) into the cache."""
        if self.model:
            self.cache.update(known)

    def __call__(self, text: str) -> tuple:
        if not self.model:
            return True, None
        verdict = self.cache[text]
        self.counts[verdict[1]] += 1
        return verdict


_CACHE: dict = {}  # model -> {text: (ok, reason)}, per Python worker


# ---------------------------------------------------------------------------- rows

class Rows:
    """Columns of WORK being filled: pair rows, then aggregate rows (kind, corpus, label
    or strategy, reject, n, bin, doc_id) with every other column null."""

    _COUNT = ("kind", "corpus", "label", "reject", "n", "bin", "doc_id")

    def __init__(self):
        self.cols: dict[str, list] = {f.name: [] for f in WORK if f.name not in ("premise_ref", "hypothesis_ref")}
        self.refs: dict[str, list[list]] = {"premise_ref": [[] for _ in REF], "hypothesis_ref": [[] for _ in REF]}
        self.counts: list = []

    def __len__(self) -> int:
        return len(self.cols["kind"]) + len(self.counts)

    def pair(self, doc: Document, pair: Pair, pid: str | None = None, n: int = 1, bin_: int | None = None,
             copies: int = 1) -> None:
        c = self.cols
        for name, value in (("pair_id", pid or pair.pair_id(doc)), ("corpus", doc.corpus), ("genre", doc.genre),
                            ("lang", doc.lang), ("doc_id", doc.doc_id), ("premise", pair.premise),
                            ("hypothesis", pair.hypothesis), ("label", pair.label), ("marker", pair.marker),
                            ("source", pair.source), ("phrase", pair.phrase),
                            ("premise_stripped", pair.premise_stripped), ("reject", pair.reject),
                            ("select", pair.select), ("kind", "pair"), ("n", n), ("bin", bin_),
                            ("copies", copies)):
            c[name].append(value)
        for col, idx in (("premise_ref", pair.p), ("hypothesis_ref", pair.h)):
            for k, v in enumerate(doc.ref(idx)):
                self.refs[col][k].append(v)

    def count(self, kind: str, corpus, label, reject, n: int, bin_: int | None = None, doc_id=None) -> None:
        self.counts.append((kind, corpus, label, reject, n, bin_, doc_id))

    def batch(self) -> pa.RecordBatch:
        m = len(self.counts)
        extra = dict(zip(self._COUNT, zip(*self.counts))) if m else {}
        arrays = []
        for f in WORK:
            if f.name in self.refs:
                arrays.append(pa.StructArray.from_arrays(
                    [pa.array(v + [None] * m, type=rf.type) for v, rf in zip(self.refs[f.name], REF)],
                    fields=list(REF)))
                continue
            values = self.cols[f.name]
            if m:
                tail = list(extra[f.name]) if f.name in extra else (
                    list(extra["label"]) if f.name == "source" else [None] * m)
                values = values + tail
            arrays.append(pa.array(values, type=f.type))
        return pa.RecordBatch.from_arrays(arrays, schema=WORK)


# ---------------------------------------------------------------------------- the passes

def _emit_neutral(rows, chosen: list, verdicts) -> None:
    """POS-check neutral candidates and add them as pair rows (`n`: POS verdicts asked)."""
    verdicts.prepare([t for _, c in chosen for t in (c.premise, c.hypothesis)])
    for doc, cand in chosen:
        before = sum(verdicts.counts.values())
        apply_pos([cand], verdicts)
        rows.pair(doc, cand, n=sum(verdicts.counts.values()) - before, bin_=select_bin(cand.select))


def pos_rows(batches: Iterable[pa.RecordBatch], model: str | None, lexicon, without_torch: bool = False,
             known: dict | None = None) -> Iterator[pa.RecordBatch]:
    """The POS filter over pair rows (any schema with `premise`, `hypothesis`, `reject` and
    `n`): each row still without a `reject` gets the POS reason of its hypothesis, else of
    its premise (`pairing.apply_pos`), and in `n` the verdicts it asked for (1 when the
    hypothesis fails, else 2); other rows pass unchanged. spaCy runs once per batch over the
    texts this Python worker has not judged yet. The stage runs it after grouping identical
    pairs together, so each distinct text is tagged about once in the whole run, not once
    per worker that meets it. `known`: verdicts by text found by another task (the marked
    round's, for the neutral one), taken as they are."""
    verdicts = Verdicts(model, lexicon, without_torch)
    if known:
        verdicts.learn(known)
    for batch in batches:
        if not batch.num_rows or not model:
            yield batch
            continue
        names = batch.schema.names
        premise = _pylist(batch.column(names.index("premise")))
        hypothesis = _pylist(batch.column(names.index("hypothesis")))
        reject = batch.column(names.index("reject")).to_pylist()
        n = batch.column(names.index("n")).to_pylist()
        todo = [i for i, r in enumerate(reject) if r is None]
        verdicts.prepare([t for i in todo for t in (hypothesis[i], premise[i])])
        for i in todo:
            ok, reason = verdicts(hypothesis[i])
            if not ok:
                reject[i], n[i] = reason, 1
                continue
            reject[i], n[i] = verdicts(premise[i])[1], 2
        arrays = list(batch.columns)
        arrays[names.index("reject")] = pa.array(reject, batch.schema.field("reject").type)
        arrays[names.index("n")] = pa.array(n, batch.schema.field("n").type)
        yield pa.RecordBatch.from_arrays(arrays, schema=batch.schema)


# Pass 1 also emits the neutral candidates of the lowest EARLY_BINS selection-hash bins
# (1/128 of them) as pair rows, and every candidate of the strategies that draw from the
# marked pairs (`BOUNDED`: no more candidates than marked pairs, whatever the corpus): when
# every cut falls below EARLY_BINS or is a bounded strategy's, no pass 2 is needed.
EARLY_BINS = 32
BOUNDED = tuple(s for s, pools in POOLS.items() if any(p != "unused" for p in pools))


def early_covers(cuts: dict) -> bool:
    """Whether pass 1's early rows hold every neutral candidate under `cuts` ({(corpus,
    strategy): bin}), so that pass 2 can be left out (EARLY_BINS of 0: never)."""
    return all(b < EARLY_BINS or (EARLY_BINS > 0 and s in BOUNDED) for (_, s), b in cuts.items())


def pass_one_streams(streams, matcher, seed: int, strategies, model: str | None, lexicon,
                     min_chars: int = 50, without_torch: bool = False, early_bins: int | None = None
                     ) -> Iterator[pa.RecordBatch]:
    """Kept marked pairs (rows, identical ones of the task as one row with its `copies`),
    marked candidates by (corpus, label, reason), POS verdicts
    by reason, the neutral selection-hash histogram per (corpus, strategy, bin), and per
    document the lowest bin of each strategy ("doc" rows, with the file key in `bin`, for
    pass 2's document list); and the neutral candidates in the lowest `early_bins` bins, and
    all those of the `BOUNDED` strategies, as pair rows (their bin in `bin`), the rows pass 2
    would give for cuts `early_covers` accepts. `streams`: (file key, corpus, batches) per
    file; each file reports its first and last document ("edge" rows: a document in two
    files is an error)."""
    verdicts = Verdicts(model, lexicon, without_torch)
    early_bins = EARLY_BINS if early_bins is None else early_bins
    marked_counts: Counter = Counter()
    # kept marked pairs, one row per identical (texts, corpus, label, phrase, stripped) in
    # this task: the lowest pair_id's row, with the number of `copies` (repeated pages)
    kept: dict = {}
    hist: dict = {}  # (corpus, strategy) -> counts per bin
    edges: list = []  # the first and last document of each file (see `split_document_error`)
    for key, corpus, batches in streams:
        ends: list = []
        for docs in documents(batches, min_chars, corpus):
            rows = Rows()
            if not ends:
                ends.append((docs[0].corpus, docs[0].doc_id))
            ends[1:] = [(docs[-1].corpus, docs[-1].doc_id)]
            paired = pair_batch(docs, matcher, seed, strategies)
            found = [(doc, marked) for doc, marked in zip(docs, paired.marked) if marked]
            verdicts.prepare([t for _, marked in found for t in pos_texts(marked)])
            for doc, marked in found:
                apply_pos(marked, verdicts)
                for pair in marked:
                    marked_counts[doc.corpus, pair.label, pair.reject] += 1
                    if pair.reject is None:
                        same = (pair.premise, pair.hypothesis, doc.corpus, pair.label, pair.phrase,
                                pair.premise_stripped)
                        pid = pair.pair_id(doc)
                        held = kept.get(same)
                        if held is None:
                            kept[same] = [pid, doc, pair, 1]
                        else:
                            held[3] += 1
                            if pid < held[0]:
                                held[:3] = [pid, doc, pair]
            cands = paired.candidates
            packed = _neutral_aggregates(docs, cands, hist)
            if early_bins > 0:
                bins = cands.bins()
                names = cands.strategies
                bounded = np.asarray([s in BOUNDED for s in names] or [False])
                early = np.flatnonzero((bins < early_bins) | bounded[cands.strategy]).tolist()
                for d, k, i, j, v, b in zip(cands.doc[early].tolist(), cands.strategy[early].tolist(),
                                            cands.p[early].tolist(), cands.h[early].tolist(),
                                            cands.select[early].tolist(), bins[early].tolist()):
                    rows.pair(docs[d], Pair(premise=paired.premise_text(d, i), hypothesis=paired.hypothesis_text(d, j),
                                            label="neutral", source=names[k], p=i, h=j, select=v), n=0, bin_=b)
            for doc, value in zip(docs, packed):
                rows.count("doc", doc.corpus, None, None, value, bin_=key, doc_id=doc.doc_id)
            if len(rows):
                yield rows.batch()
        edges.extend(dict.fromkeys(ends))
    rows = Rows()
    for pid, doc, pair, copies in kept.values():
        rows.pair(doc, pair, pid, copies=copies)
    for (corpus, label, reject), n in sorted(marked_counts.items(), key=repr):
        rows.count("marked", corpus, label, reject, n)
    for reason, n in sorted(verdicts.counts.items(), key=repr):
        rows.count("pos", None, None, reason, n)
    for (corpus, source), counts in sorted(hist.items(), key=repr):
        for b, n in hist_keys(counts):
            rows.count("hist", corpus, source, None, n, b)
    for corpus, doc_id in edges:
        rows.count("edge", corpus, None, None, 1, doc_id=doc_id)
    if len(rows):
        yield rows.batch()


def _packed(lowest: np.ndarray) -> list[int]:
    """The "doc" row value of each row of a (documents x STRATEGIES) array of lowest
    selection-hash bins (already at most 4094; 4095: no candidate): the lowest bin of a
    document's candidates per strategy, 12 bits each in `neutral.STRATEGIES` order, in one
    int64; 4095 for a strategy with no candidate in the document, a lowest bin of 4095 kept
    as 4094 (so a cut of 4094 may read that document for nothing, never miss it). Pass 2
    reads only the documents with a candidate under a cut (`buckets.needed_in`), also when
    a cut takes every candidate of a strategy (a strategy with few candidates in the whole
    corpus)."""
    return (lowest << (BIN_BITS * np.arange(len(STRATEGIES), dtype=np.int64))).sum(axis=1).tolist()


def _neutral_aggregates(docs: list, cands, hist: dict) -> list:
    """Pass 1's aggregates of a batch's neutral candidates (`pairing.Candidates`): their
    selection-hash bins added to `hist` ({(corpus, strategy): counts per bin}), and per
    document its packed lowest bins (`_packed`), for the whole batch in a few numpy steps."""
    top = (1 << BIN_BITS) - 1
    names = cands.strategies
    lowest = np.full((len(docs), len(STRATEGIES)), top, dtype=np.int64)
    if not len(cands.doc):
        return _packed(lowest)
    bins = cands.bins()
    corpora: dict = {}
    code = np.asarray([corpora.setdefault(d.corpus, len(corpora)) for d in docs], dtype=np.int64)
    size = 1 << BIN_BITS
    counts = np.bincount((code[cands.doc] * len(names) + cands.strategy) * size + bins,
                         minlength=len(corpora) * len(names) * size).reshape(len(corpora), len(names), size)
    for corpus, c in corpora.items():
        for k, strategy in enumerate(names):
            if counts[c, k].any():
                hkey = (corpus, strategy)
                hist[hkey] = counts[c, k].copy() if hkey not in hist else hist[hkey] + counts[c, k]
    # candidates come by document, then strategy: (document, strategy) runs are contiguous
    group = cands.doc * len(names) + cands.strategy
    starts = np.flatnonzero(np.concatenate(([True], group[1:] != group[:-1])))
    least = np.minimum.reduceat(bins, starts)
    column = np.asarray([STRATEGIES.index(s) for s in names], dtype=np.int64)
    lowest[cands.doc[starts], column[cands.strategy[starts]]] = np.minimum(least, top - 1)
    return _packed(lowest)


def pass_two_streams(streams, matcher, seed: int, strategies, cuts: Mapping, model: str | None, lexicon,
                     min_chars: int = 50, without_torch: bool = False, needed: set | None = None
                     ) -> Iterator[pa.RecordBatch]:
    """Neutral candidates at or below the cut bin of their (corpus, strategy) (`cuts`), with
    the POS reason in `reject` (None when they pass), and POS verdict counts. `needed`:
    the (corpus, doc_id) worth pairing again (None: every document)."""
    verdicts = Verdicts(model, lexicon, without_torch)
    for _, corpus, batches in streams:
        for docs in documents(batches, min_chars, corpus):
            chosen: list = []
            for doc in docs:
                if not any(cuts.get((doc.corpus, s), -1) >= 0 for s in strategies):
                    continue
                if needed is not None and (doc.corpus, doc.doc_id) not in needed:
                    continue
                max_bin = {s: cuts.get((doc.corpus, s), -1) for s in strategies}
                chosen.extend((doc, c) for c in pair_document(doc, matcher, seed, strategies, max_bin=max_bin).neutral)
            if not chosen:
                continue
            rows = Rows()
            _emit_neutral(rows, chosen, verdicts)
            yield rows.batch()
