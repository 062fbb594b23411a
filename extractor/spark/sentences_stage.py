"""Stage 1: documents -> `sentences/` (Spark glue; the text work is in readers, wikitext
and segment).

One path, on a laptop and on a cluster alike:
1. The driver lists the work units of every input (`extractor/documents/units.py`: byte
   ranges of dumps and JSONL, groups of text files, Parquet row groups; a UTF-16 dump is
   one unit), reading only sizes, heads and footers through `extractor/fs.py`.
2. `spark.range(n_units).mapInArrow(...)`: each task reads its unit through `extractor/fs.py`
   (local paths, file://, gs://, s3://, hdfs://), cleans and segments it, writes the rows to
   one Parquet file named by the unit (`<table>/corpus=<name>/part-<input>-<unit>.parquet`)
   with pyarrow and fixed writer settings, and returns only its count rows.
3. The driver sums the counts into stats["sentences"].

Rows never pass through the JVM. A file's bytes depend only on its unit's input and the
settings, so they are the same whatever core, executor or filesystem writes them. Within
a file, rows are in input order: a document's sentences are contiguous and in order.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter

from extractor import fs
from extractor import output as _out
from extractor.documents.readers import (CorruptData, Page, PageError, json_document, jsonl_lines,
                                         plain_paragraphs, stream_pages, wiki_unit_pages)
from extractor.documents.units import UnitError, WorkUnit, list_units
from extractor.hashing import stable_hex
from extractor.job import ERROR_MARK, InputError
from extractor.schemas import SENTENCES
from extractor.spark.session import task_done

NAME = "sentences"
SENTENCE_COLUMNS = tuple(SENTENCES.names)
COUNT_DDL = "corpus string, count_kind string, count_reason string, count long, detail string"
MAX_LISTED_ERRORS = 100
ROW_GROUP = 65536
# Fixed writer settings: the bytes of a file are a function of its rows (and the pyarrow
# version) on every filesystem.
PARQUET_OPTIONS = {"compression": "snappy", "version": "2.6", "data_page_version": "1.0", "use_dictionary": True,
                   "write_statistics": True, "data_page_size": 1 << 20}


def add_arguments(parser) -> None:
    g = parser.add_argument_group("sentences stage")
    g.add_argument("--punkt-params", default=None, metavar="PATH",
                   help="read Punkt parameters from this JSON file instead of training them on the corpus")
    g.add_argument("--punkt-sample-mb", type=float, default=4.0,
                   help="MB of cleaned text (from the start of the inputs) that Punkt is trained on")
    g.add_argument("--unit-mb", type=int, default=8,
                   help="MB per work unit of an input file (one task reads one unit; smaller: more tasks)")
    g.add_argument("--split-mb", dest="unit_mb", type=int, help=argparse.SUPPRESS)  # deprecated name
    g.add_argument("--dump-reader", default=None, help=argparse.SUPPRESS)  # removed: one reader
    g.add_argument("--text-field", default="text", help="JSONL/Parquet: field holding the document text")
    g.add_argument("--id-field", default="id", help="JSONL/Parquet: field holding the document id")
    g.add_argument("--title-field", default="title", help="JSONL/Parquet: field holding the title")
    g.add_argument("--genre-field", default="genre", help="JSONL/Parquet: field holding a per-document genre")


# --------------------------------------------------------------------------- pure part

class DocumentProcessor:
    """Turns the documents of one work unit into sentence rows and keeps the counts. Built
    once per unit from picklable settings (the Segmenter from its parameter dict)."""

    def __init__(self, corpus: dict, lexicon, punkt: dict | None, min_chars: int, namespaces: dict | None = None):
        self.corpus = corpus
        self.lexicon = lexicon
        self.segmenter = _segmenter(punkt) if punkt is not None else None
        self.min_chars = min_chars
        self.namespaces = namespaces or None
        self.counts: Counter = Counter()
        self.errors: list[tuple[str, str]] = []   # (page id, message), first MAX_LISTED_ERRORS
        self.first_bad: dict = {}                 # path -> (offset, message): first invalid UTF-8
        self.warnings: list[tuple[str, str]] = []  # (path, message)
        self.rows: list[tuple] = []

    def _sentence_rows(self, doc_id: str, title: str, genre: str, sections) -> None:
        c = self.corpus
        rows = self.rows
        para_idx = 0
        for section_title, paragraphs in sections:
            for paragraph in paragraphs:
                sentences = self.segmenter.split(paragraph)
                if not sentences:
                    self.counts["paragraphs_dropped", "no_sentence"] += 1
                    continue
                short = 0
                for sent_idx, text in enumerate(sentences):
                    is_short = len(text) < self.min_chars
                    short += is_short
                    rows.append((genre, c["lang"], doc_id, title, section_title, para_idx, sent_idx, text,
                                 is_short, c["role"]))
                self.counts["sentences", "total"] += len(sentences)
                self.counts["sentences", "short"] += short
                self.counts["paragraphs", "kept"] += 1
                para_idx += 1
        if para_idx:
            self.counts["documents", "kept"] += 1
        else:
            self.counts["documents_dropped", "no_text_after_cleaning"] += 1

    def error(self, page_id, message: str) -> None:
        if len(self.errors) < MAX_LISTED_ERRORS:
            self.errors.append((str(page_id or "?"), message))

    def bad_utf8(self, path: str, offset: int, message: str) -> None:
        if path not in self.first_bad or offset < self.first_bad[path][0]:
            self.first_bad[path] = (offset, message)

    def wiki_page(self, page, path: str) -> None:
        from extractor.documents.wikitext import clean_page, page_skip_reason

        if page is None:
            return
        if isinstance(page, PageError) and page.reason == "no_page_element":
            self.counts["records_dropped", "no_page_element"] += 1  # text outside any <page>
            return
        self.counts["documents", "read"] += 1
        if isinstance(page, PageError):
            self.counts["documents_dropped", page.reason] += 1
            self.error(page.page_id, f"{page.reason}: {page.detail}")
            if page.reason == "invalid_utf8":
                self.bad_utf8(path, page.offset or 0, f"page {page.page_id or '?'}: {page.detail}")
            return
        if page.ns != 0:
            self.counts["documents_dropped", "namespace"] += 1
            return
        if page.redirect:
            self.counts["documents_dropped", "redirect"] += 1
            return
        if not page.text.strip():
            self.counts["documents_dropped", "empty_text"] += 1
            return
        try:
            reason = page_skip_reason(page.title, page.text, self.lexicon)
            if reason:
                self.counts["documents_dropped", reason] += 1
                return
            cleaned = clean_page(page.text, self.lexicon, namespaces=self.namespaces)
        except Exception as exc:  # one page that breaks the cleaner is a counted skip, never the job
            self.counts["documents_dropped", "page_error"] += 1
            self.error(page.page_id, f"page_error: {type(exc).__name__}: {str(exc)[:200]}")
            return
        for key, n in cleaned.drops.items():
            self.counts["cleaning", key] += n
        self._sentence_rows(f"{self.corpus['name']}:{page.page_id}", page.title, self.corpus["genre"],
                            [(s.title, s.paragraphs) for s in cleaned.sections])

    def plain_document(self, doc_key: str, title: str | None, genre: str | None, text: str | None) -> None:
        self.counts["documents", "read"] += 1
        if not text or not text.strip():
            self.counts["documents_dropped", "empty_text"] += 1
            return
        doc_id = f"{self.corpus['name']}:{doc_key}"
        self._sentence_rows(doc_id, title or doc_key, genre or self.corpus["genre"], [("", plain_paragraphs(text))])

    def drop(self, reason: str, n: int = 1) -> None:
        self.counts["documents", "read"] += n
        self.counts["documents_dropped", reason] += n

    def count_rows(self) -> list[tuple]:
        name = self.corpus["name"]
        rows = [(name, kind, reason, n, None) for (kind, reason), n in sorted(self.counts.items())]
        rows += [(name, "error", page_id, 1, message) for page_id, message in self.errors]
        rows += [(name, "first_invalid_utf8", path, offset, message)
                 for path, (offset, message) in sorted(self.first_bad.items())]
        rows += [(name, "warning", path, 1, message) for path, message in self.warnings]
        return rows


_SEGMENTERS: dict = {}


def _segmenter(punkt: dict):
    """One Segmenter per parameter set and Python worker process: a worker runs many tasks
    one after another, and the Segmenter's memo of Punkt decisions stays warm."""
    from extractor.documents.segment import Segmenter, params_from_dict

    key = hashlib.sha256(json.dumps(punkt, sort_keys=True, default=list).encode()).hexdigest()
    if key not in _SEGMENTERS:
        _SEGMENTERS.clear()  # a new job's parameters: drop the old ones
        _SEGMENTERS[key] = Segmenter(params_from_dict(punkt))
    return _SEGMENTERS[key]


def read_unit(unit: WorkUnit, settings: dict, proc: DocumentProcessor, enough=lambda: False) -> None:
    """Feed the documents of one work unit to `proc` (through extractor.fs); `enough()`
    stops early (the Punkt sample). Input damage that cannot be a counted skip raises
    InputError with one line naming the file and the byte offset."""
    corpus = settings["corpora"][unit.corpus]
    path = unit.path
    try:
        if unit.kind in ("wiki-range", "wiki-stream"):
            state: dict = {}
            pages = (wiki_unit_pages(path, unit.lo, unit.hi, state) if unit.kind == "wiki-range"
                     else stream_pages(path, unit.encoding, state))
            for page in pages:
                proc.wiki_page(page, path)
                if enough():
                    return
            if unit.kind == "wiki-stream" and not state.get("closed"):
                proc.counts["inputs_damaged", "no_closing_tag"] += 1
                proc.warnings.append((path, f"{path}: the dump does not end with </mediawiki>: it was cut off (a "
                                            f"failed download?); the pages before the cut are read, a page cut in "
                                            f"the middle is counted as documents_dropped.truncated"))
        elif unit.kind in ("jsonl-range", "jsonl-stream"):
            fields = corpus["fields"]
            name = fs.basename(path)
            for offset, raw in jsonl_lines(path, unit.lo, unit.hi, unit.kind == "jsonl-stream"):
                try:
                    line = raw.decode("utf-8-sig" if offset == 0 else "utf-8")
                except UnicodeDecodeError as exc:
                    proc.drop("invalid_utf8")
                    proc.bad_utf8(path, offset + exc.start, f"not valid UTF-8 at byte {offset + exc.start} "
                                                            f"({raw[exc.start:exc.start + 4]!r})")
                    continue
                doc = json_document(line, fields)
                if isinstance(doc, str):
                    if doc == "empty_line":
                        continue
                    if doc == "malformed_json" and not raw.endswith(b"\n") and offset + len(raw) >= fs.size(path):
                        doc = "truncated"  # the last line of a file cut off
                    proc.drop(doc)
                    if doc in ("truncated", "text_not_a_string"):
                        proc.error(f"{name}@{offset}", f"{doc}: line at byte {offset}")
                    continue
                doc_id, title, genre, text = doc
                proc.plain_document(doc_id or f"{name}@{offset}", title, genre, text)
                if enough():
                    return
        elif unit.kind == "text-files":
            for file_path, rel in unit.files:
                data = fs.read_bytes(file_path)
                try:
                    text = data.decode("utf-8-sig")
                except UnicodeDecodeError as exc:
                    proc.drop("invalid_utf8")
                    proc.bad_utf8(file_path, exc.start, f"not valid UTF-8 at byte {exc.start} "
                                                        f"({data[exc.start:exc.start + 4]!r})")
                    continue
                proc.plain_document(rel, rel, None, text)
                if enough():
                    return
        elif unit.kind == "parquet":
            _read_parquet(unit, corpus["fields"], proc, enough)
        else:
            raise InputError(f"{path}: unknown work unit kind '{unit.kind}'")
    except CorruptData as exc:
        raise InputError(f"{ERROR_MARK}{path}: {exc}; the file is damaged: download it again") from None
    except (UnicodeError, fs.FsError, EOFError) as exc:
        msg = str(exc) if str(exc).startswith(path) else f"{path}: {exc}"
        raise InputError(f"{ERROR_MARK}{msg}") from None


def _read_parquet(unit: WorkUnit, fields: dict, proc: DocumentProcessor, enough) -> None:
    import pyarrow.parquet as pq

    with fs.open_input(unit.path) as fh:
        pf = pq.ParquetFile(fh)
        names = pf.schema_arrow.names
        wanted = {k: fields[k] for k in ("text_field", "id_field", "title_field", "genre_field") if fields[k] in names}
        for batch in pf.iter_batches(row_groups=range(unit.lo, unit.hi), columns=sorted(set(wanted.values()))):
            cols = {k: batch.column(v).to_pylist() for k, v in wanted.items()}
            for i, text in enumerate(cols["text_field"]):
                def opt(key):
                    value = cols[key][i] if key in cols else None
                    return None if value is None else str(value)
                doc_id = opt("id_field")
                proc.plain_document(doc_id if doc_id is not None else stable_hex(text or ""), opt("title_field"),
                                    opt("genre_field"), text)
                if enough():
                    return


class SentenceFileWriter:
    """Sentence rows of one work unit -> one Parquet file, written by pyarrow in input
    order, ROW_GROUP rows per row group (memory: one row group). No rows, no file. On a
    local disk the file is written under a temporary name and renamed when complete."""

    def __init__(self, path: str):
        self.path = path
        self.local = fs.is_local(path)
        self.target = path + ".inprogress" if self.local else path
        self.stream = None
        self.writer = None

    def write(self, rows: list) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = file_schema()
        table = pa.Table.from_arrays([pa.array([r[i] for r in rows], type=f.type) for i, f in enumerate(schema)],
                                     schema=schema)
        if self.writer is None:
            self.stream = fs.open_output(self.target)
            self.writer = pq.ParquetWriter(self.stream, schema, **PARQUET_OPTIONS)
        self.writer.write_table(table, row_group_size=ROW_GROUP)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.stream.close()
            if self.local:
                fs.move(self.target, self.path)

    def abort(self) -> None:
        if self.writer is not None:
            try:
                self.writer.close()
                self.stream.close()
            finally:
                fs.delete(self.target)


def file_schema():
    """Columns of a sentences/ file (corpus is the partition directory, as Spark writes it)."""
    return SENTENCES.remove(SENTENCES.get_field_index("corpus"))


def process_unit(unit: WorkUnit, settings: dict) -> list[tuple]:
    """Read, clean, segment and write one work unit; its count rows."""
    corpus = settings["corpora"][unit.corpus]
    proc = DocumentProcessor(corpus, settings["lexicon"], settings["punkt"], settings["min_chars"],
                             settings["namespaces"].get(unit.path))
    writer = SentenceFileWriter(fs.join(settings["table_dir"], corpus["partition"], unit.file_name))
    try:
        def flush_full():
            while len(proc.rows) >= ROW_GROUP:
                writer.write(proc.rows[:ROW_GROUP])
                del proc.rows[:ROW_GROUP]
            return False
        read_unit(unit, settings, proc, flush_full)
        if proc.rows:
            writer.write(proc.rows)
            proc.rows.clear()
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return proc.count_rows()


def units_task(settings: dict, units: list[WorkUnit]):
    """mapInArrow over spark.range(n_units): each id is one work unit."""
    def run(batches):
        import pyarrow as pa

        for batch in batches:
            for k in batch.column("id").to_pylist():
                rows = process_unit(units[k], settings)
                if rows:
                    yield pa.RecordBatch.from_arrays(
                        [pa.array([r[i] for r in rows], type=t) for i, t in
                         enumerate((pa.string(), pa.string(), pa.string(), pa.int64(), pa.string()))],
                        names=["corpus", "count_kind", "count_reason", "count", "detail"])
        task_done()
    return run


# --------------------------------------------------------------------------- driver

def corpus_settings(ctx) -> list[dict]:
    out = []
    for spec in ctx.corpora:
        out.append({
            "name": spec.name, "genre": spec.genre, "lang": ctx.lexicon.lang, "role": spec.role,
            "partition": _out.partition_dir("corpus", spec.name),
            "fields": {k: spec.options.get(k, getattr(ctx.args, k, None) or d)
                       for k, d in (("text_field", "text"), ("id_field", "id"), ("title_field", "title"),
                                    ("genre_field", "genre"))},
        })
    return out


class _Sample(DocumentProcessor):
    """Collects cleaned paragraphs instead of sentences (the Punkt training sample)."""

    def __init__(self, corpus, lexicon, namespaces, max_chars: int):
        super().__init__(corpus, lexicon, None, 0, namespaces)
        self.paragraphs: list[str] = []
        self.chars = 0
        self.max_chars = max_chars

    def _sentence_rows(self, doc_id, title, genre, sections) -> None:
        for _, paragraphs in sections:
            for para in paragraphs:
                if self.chars < self.max_chars:
                    self.paragraphs.append(para)
                    self.chars += len(para)


def sample_paragraphs(ctx, settings: dict, units: list[WorkUnit], max_chars: int) -> list[str]:
    """Cleaned paragraphs from the first units of the inputs (in input order), read on the
    driver by the same readers as the tasks, for Punkt training."""
    out: list[str] = []
    for unit in units:
        if sum(len(p) for p in out) >= max_chars:
            break
        sample = _Sample(settings["corpora"][unit.corpus], ctx.lexicon, settings["namespaces"].get(unit.path),
                         max_chars - sum(len(p) for p in out))
        try:
            read_unit(unit, settings, sample, lambda: sample.chars >= sample.max_chars)
        except InputError as exc:  # on the driver: the message without the task mark
            raise InputError(str(exc).replace(ERROR_MARK, "")) from None
        out += sample.paragraphs
    return out


def punkt_parameters(ctx, settings: dict, units: list[WorkUnit]) -> tuple[dict, dict]:
    """Punkt parameters as a dict (for the executors) and how they were obtained."""
    from extractor.documents.segment import load_params, params_json, params_to_dict, train_punkt

    if ctx.args.punkt_params:
        params = load_params(ctx.args.punkt_params)
        return params_to_dict(params), {"source": str(ctx.args.punkt_params)}
    max_chars = int(float(ctx.args.punkt_sample_mb) * 1_000_000)
    texts = sample_paragraphs(ctx, settings, units, max_chars)
    params = train_punkt(texts, ctx.lexicon.abbreviations, max_chars=max_chars)
    info = {"source": "trained", "sample_chars": sum(len(t) for t in texts), "sample_paragraphs": len(texts),
            "abbreviations_learnt": len(params.abbrev_types)}
    info["saved"] = "punkt_params.json"
    ctx.put_bytes(params_json(params), "punkt_params.json")
    return params_to_dict(params), info


def sum_counts(rows) -> tuple[list[dict], list[dict], dict, list[str]]:
    """Collected count rows -> summed counts per (corpus, kind, reason), the listed errors,
    the first invalid UTF-8 per file, and the warnings."""
    sums: Counter = Counter()
    errors, first_bad, warnings = [], {}, []
    for r in rows:
        kind = r["count_kind"]
        if kind == "error":
            errors.append({"corpus": r["corpus"], "count_reason": r["count_reason"], "detail": r["detail"]})
        elif kind == "first_invalid_utf8":
            path = r["count_reason"]
            if path not in first_bad or r["count"] < first_bad[path][0]:
                first_bad[path] = (r["count"], r["detail"])
        elif kind == "warning":
            if r["detail"] not in warnings:
                warnings.append(r["detail"])
        else:
            sums[r["corpus"], kind, r["count_reason"]] += r["count"]
    counted = [{"corpus": c, "count_kind": k, "count_reason": reason, "n": n} for (c, k, reason), n in sums.items()]
    return counted, errors, first_bad, warnings


def run(ctx) -> None:
    if not ctx.corpora:
        raise InputError("no input corpora")
    t0 = time.time()
    settings = {"corpora": corpus_settings(ctx), "lexicon": ctx.lexicon, "min_chars": int(ctx.args.min_chars)}
    try:  # every input checked and listed before any work, Punkt training included
        listing = list_units(ctx.corpora, max(1, int(ctx.args.unit_mb or 8)) << 20,
                             lambda spec: settings["corpora"][ctx.corpora.index(spec)]["fields"])
    except UnitError as exc:
        raise InputError(str(exc)) from None
    if getattr(ctx.args, "dump_reader", None):
        ctx.warn("--dump-reader is gone (one reader for every filesystem); the flag is ignored")
    for msg in listing.warnings:
        ctx.warn(msg)
    settings["namespaces"] = listing.namespaces
    units = listing.units
    punkt, punkt_info = punkt_parameters(ctx, settings, units)
    punkt_info["seconds"] = round(time.time() - t0, 3)
    settings["punkt"] = punkt
    _log(f"Punkt parameters {punkt_info['source']} in {punkt_info['seconds']:.1f}s; {len(units)} work units")
    table_dir = ctx.table_path(NAME)
    settings["table_dir"] = table_dir
    if fs.exists(table_dir):
        fs.delete(table_dir)  # a stale table in this run's place (the job checked --overwrite)
    try:
        rows = ctx.spark.range(len(units), numPartitions=max(1, len(units))) \
            .mapInArrow(units_task(settings, units), COUNT_DDL).collect()  # count rows only: a few per unit
    except BaseException:
        fs.delete(table_dir)  # no half-written table left behind
        raise
    counted, errors, first_bad, warnings = sum_counts(rows)
    names = [c["name"] for c in settings["corpora"]]
    counted += [{"corpus": names[ci], "count_kind": k, "count_reason": r, "n": n} for ci, k, r, n in listing.counts]
    errors = sorted(errors, key=lambda e: (e["corpus"], e["count_reason"] or "", e["detail"] or ""))[:MAX_LISTED_ERRORS]
    stats = build_stats(counted, errors, ctx.corpora)
    for msg in warnings:
        ctx.warn(msg)
    for path, (offset, message) in sorted(first_bad.items()):
        ctx.warn(f"{path}: documents that are not valid UTF-8 were skipped (counted as documents_dropped.invalid_utf8);"
                 f" the first: {message}")
    stats["first_invalid_utf8"] = {p: {"offset": o, "detail": m} for p, (o, m) in sorted(first_bad.items())}
    try:
        check_corpora(ctx, stats)
    except InputError:
        fs.delete(table_dir)
        raise
    stats["seconds"] = {"punkt": punkt_info["seconds"],
                        "read_clean_segment_write": round(time.time() - t0 - punkt_info["seconds"], 3)}
    _log(f"sentences/ read, cleaned, segmented and written in {stats['seconds']['read_clean_segment_write']:.1f}s")
    stats["punkt"] = punkt_info
    stats["inputs"] = listing.inputs
    stats["work_units"] = len(units)
    stats["min_chars"] = int(ctx.args.min_chars)
    ctx.stats[NAME] = stats
    for row in errors[:5]:
        print(f"[sentences] skipped document {row['count_reason']} of {row['corpus']}: {row['detail']}", file=sys.stderr)


def check_corpora(ctx, stats: dict) -> None:
    """A corpus that gave nothing is an error that says why."""
    for spec in ctx.corpora:
        pc = stats["corpora"].get(spec.name, {})
        read = pc.get("documents_read", 0)
        dropped = pc.get("documents_dropped", {})
        where = ", ".join(spec.paths)
        if read == 0:
            what = "no <page> element" if spec.format == "mediawiki" else "no document"
            raise InputError(f"{where}: {what} found (empty input?)")
        if pc.get("documents_kept", 0) == 0 and dropped.get("namespace", 0) and \
                dropped.get("namespace", 0) + dropped.get("redirect", 0) == read:
            raise InputError(f"{where}: no page in the main namespace (ns 0) among its {read} pages: nothing to "
                             f"extract (a dump of talk, user or template pages?); use a pages-articles dump")
        if pc.get("documents_kept", 0) == 0 and dropped.get("invalid_utf8", 0) == read:
            raise InputError(f"{where}: no document is valid UTF-8 ({read} read); convert the input, "
                             f"e.g. iconv -f LATIN1 -t UTF-8")
        if pc.get("sentences", 0) == 0:
            ctx.warn(f"corpus {spec.name}: {read} documents read but no sentence kept")


def _log(msg: str) -> None:
    print(f"[sentences] {msg}", file=sys.stderr, flush=True)


def build_stats(counted, errors, corpora) -> dict:
    """stats["sentences"] from the summed count rows."""
    totals: dict = {"documents": {"read": 0, "kept": 0}, "documents_dropped": {}, "cleaning": {},
                    "paragraphs": {"kept": 0}, "paragraphs_dropped": {}, "sentences": {"total": 0, "short": 0},
                    "inputs_damaged": {}}

    def blank():
        return {"documents_read": 0, "documents_kept": 0, "sentences": 0, "short": 0, "documents_dropped": {}}
    per_corpus: dict = {spec.name: blank() for spec in corpora}
    for row in counted:
        corpus, kind, reason, n = row["corpus"], row["count_kind"], row["count_reason"], int(row["n"])
        totals.setdefault(kind, {})
        totals[kind][reason] = totals[kind].get(reason, 0) + n
        pc = per_corpus.setdefault(corpus, blank())
        if kind == "documents":
            pc[f"documents_{reason}"] = pc.get(f"documents_{reason}", 0) + n
        elif kind == "documents_dropped":
            pc["documents_dropped"][reason] = pc["documents_dropped"].get(reason, 0) + n
        elif kind == "sentences":
            key = "sentences" if reason == "total" else reason
            pc[key] = pc.get(key, 0) + n
    totals["documents_dropped_total"] = sum(totals["documents_dropped"].values())
    totals["corpora"] = per_corpus
    totals["errors"] = [{"corpus": r["corpus"], "page_id": r["count_reason"], "error": r["detail"]} for r in errors]
    return totals
