"""Stage 1 per work unit, without an engine: the documents of one unit (`read_unit`, with
the reader of its format, extractor/sentences/formats/) -> sentence rows (`DocumentProcessor`:
cleaning, segmentation, counts) -> one Parquet file per unit (`SentenceFileWriter`); the
Punkt sample and training on the driver, and the stats from the units' count rows.
`extractor.sentences.stage` plans the units and hands `process_unit` to a runner.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from extractor.sentences.plan import DocumentsPlan
from extractor.io import atomic, fs
from extractor.sentences import formats
from extractor.sentences.formats.base import MAX_LISTED_LINES, UnitLines, damaged
from extractor.sentences.language import (CORPUS_SAMPLE, CorpusLanguage, check_corpus, corpus_language,
                                          foreign_languages)
from extractor.sentences.readers import PageError, first_line_numbers, plain_paragraphs
from extractor.sentences.segment import (Segmenter, load_params, params_from_dict, params_json, params_to_dict,
                                         train_punkt)
from extractor.core.errors import ERROR_MARK, InputError
from extractor.core.schemas import SENTENCES
from extractor.sentences.units import WorkUnit
from extractor.sentences.wikitext import clean_page, page_skip_reason
from extractor.io.parquet_writer import partition_dir

MAX_LISTED_ERRORS = 100
# A JSONL line dropped for one of these means a wrong file or flag when it is most of a file.
WRONG_INPUT = {"malformed_json": "malformed", "truncated": "malformed", "no_text_field": "field",
               "text_not_a_string": "field"}
ROW_GROUP = 65536
# Fixed writer settings: the bytes of a file are a function of its rows (and the pyarrow
# version) on every filesystem.
PARQUET_OPTIONS = {"compression": "snappy", "version": "2.6", "data_page_version": "1.0", "use_dictionary": True,
                   "write_statistics": True, "data_page_size": 1 << 20}


class DocumentProcessor:
    """Turns the documents of one work unit into sentence rows and keeps the counts. Built
    once per unit from picklable settings (the Segmenter from its parameter dict)."""

    def __init__(self, corpus: dict, lexicon, punkt: dict | None, min_chars: int, namespaces: dict | None = None,
                 punkt_key: str | None = None, drop_foreign: bool = False):
        self.corpus = corpus
        self.drop_foreign = drop_foreign  # sentences in another language: dropped, counted by language
        self.lexicon = lexicon
        self.segmenter = _segmenter(punkt, punkt_key) if punkt is not None else None
        self.min_chars = min_chars
        self.namespaces = namespaces or None
        self.counts: Counter = Counter()
        self.errors: list[tuple[str, str]] = []   # (page id, message), first MAX_LISTED_ERRORS
        self.first_bad: dict = {}                 # path -> (offset, message): first invalid UTF-8
        self.warnings: list[tuple[str, str]] = []  # (path, message)
        self.unit_lines: UnitLines | None = None   # a JSONL unit's lines
        self.rows = SentenceColumns(corpus["lang"], corpus["role"], min_chars)
        self.settled = 0  # rows[:settled] have been through the language check (`settle`)

    def _sentence_rows(self, doc_id: str, title: str, genre: str, sections) -> None:
        rows = self.rows
        assert self.segmenter is not None  # made with Punkt parameters (the Punkt sample overrides this)
        split = self.segmenter.split
        doc = rows.add_document(genre, doc_id, title)
        texts, docs, sections_of, paras, sent_idx = rows.text, rows.doc, rows.section, rows.para_idx, rows.sent_idx
        para_idx = 0
        kept = 0
        for section_title, paragraphs in sections:
            section = rows.add_section(section_title)
            for paragraph in paragraphs:
                sentences = split(paragraph)
                if not sentences:
                    self.counts["paragraphs_dropped", "no_sentence"] += 1
                    continue
                n = len(sentences)
                texts += sentences
                docs += [doc] * n
                sections_of += [section] * n
                paras += [para_idx] * n
                sent_idx += range(n)
                kept += n
                para_idx += 1
        if para_idx:
            self.counts["sentences", "total"] += kept
            self.counts["paragraphs", "kept"] += para_idx
            self.counts["documents", "kept"] += 1
        else:
            self.counts["documents_dropped", "no_text_after_cleaning"] += 1

    def settle(self) -> None:
        """The language check of the rows added since the last call (whole documents), over
        all of them at once (`foreign_languages`): each sentence in another language is
        removed and counted by language. A removed sentence leaves a gap in its paragraph's
        `sent_idx` (no pair spans it), a paragraph left empty a gap in `para_idx`; an emptied
        paragraph and document are counted as dropped instead of kept."""
        rows = self.rows
        start, self.settled = self.settled, len(rows)
        if not self.drop_foreign or start == len(rows):
            return
        found = foreign_languages(rows.text[start:], self.corpus["lang"])
        foreign = [start + i for i, lang in enumerate(found) if lang is not None]
        if not foreign:
            return
        for i in foreign:
            self.counts["foreign_sentences", found[i - start]] += 1
        docs = {rows.doc[i] for i in foreign}
        paragraphs = {(rows.doc[i], rows.section[i], rows.para_idx[i]) for i in foreign}
        rows.remove(foreign)
        left = [(d, sec, p) for d, sec, p in zip(rows.doc[start:], rows.section[start:], rows.para_idx[start:])
                if d in docs]
        emptied = len(paragraphs - set(left))
        self.counts["sentences", "total"] -= len(foreign)
        self.counts["paragraphs", "kept"] -= emptied
        self.counts["paragraphs_dropped", "foreign"] += emptied
        gone = len(docs - {d for d, _, _ in left})
        self.counts["documents", "kept"] -= gone
        self.counts["documents_dropped", "no_text_after_cleaning"] += gone
        self.settled = len(rows)

    def take_table(self, n: int | None = None) -> pa.Table:
        """The first `n` (all) sentence rows as a table of the file schema, taken out of
        `rows`; their short sentences counted. Only rows the language check has seen
        (`settle`) are taken."""
        assert not self.drop_foreign or (len(self.rows) if n is None else n) <= self.settled, "settle() first"
        table = self.rows.take(n)
        self.settled -= table.num_rows
        self.counts["sentences", "short"] += pc.sum(table.column("short")).as_py() or 0
        return table

    def error(self, page_id, message: str) -> None:
        if len(self.errors) < MAX_LISTED_ERRORS:
            self.errors.append((str(page_id or "?"), message))

    def bad_utf8(self, path: str, offset: int, message: str) -> None:
        if path not in self.first_bad or offset < self.first_bad[path][0]:
            self.first_bad[path] = (offset, message)

    def wiki_page(self, page, path: str) -> None:
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
        rows: list[tuple] = [(name, kind, reason, n, None) for (kind, reason), n in sorted(self.counts.items())]
        rows += [(name, "error", page_id, 1, message) for page_id, message in self.errors]
        rows += [(name, "first_invalid_utf8", path, offset, message)
                 for path, (offset, message) in sorted(self.first_bad.items())]
        rows += [(name, "warning", path, 1, message) for path, message in self.warnings]
        if self.unit_lines is not None:
            rows += self.unit_lines.count_rows(name)
        return rows


_SEGMENTERS: dict = {}


def punkt_key(punkt: dict) -> str:
    """The identity of a Punkt parameter set (sha256 of its JSON): computed once by the
    stage and handed to the tasks in their plan (`punkt_key`), so that no task hashes the
    whole parameter set again."""
    return hashlib.sha256(json.dumps(punkt, sort_keys=True, default=list).encode()).hexdigest()


def _segmenter(punkt: dict, key: str | None = None):
    """One Segmenter per parameter set and Python worker process: a worker runs many tasks
    one after another, and the Segmenter's memo of Punkt decisions stays warm."""
    key = key or punkt_key(punkt)
    if key not in _SEGMENTERS:
        _SEGMENTERS.clear()  # a new job's parameters: drop the old ones
        _SEGMENTERS[key] = Segmenter(params_from_dict(punkt))
    return _SEGMENTERS[key]


def read_unit(unit: WorkUnit, plan: DocumentsPlan, proc: DocumentProcessor, enough=lambda: False) -> None:
    """Feed the documents of one work unit to `proc` (through extractor.io.fs) with the
    reader of its format (`formats.for_unit`); `enough()` stops early (the Punkt sample).
    Input damage that cannot be a counted skip raises InputError with one line naming the
    file and the byte offset."""
    try:
        formats.for_unit(unit).read(unit, plan.corpora[unit.corpus]["fields"], proc, enough)
    except fs.FsError as exc:  # the user's file; not the sentence file this task writes
        if exc.path != unit.path and exc.path not in {f for f, _ in unit.files}:
            raise
        raise damaged(unit.path, exc) from None


class SentenceColumns:
    """A unit's sentence rows not yet written, by column: per sentence its text, document,
    section, paragraph and sentence numbers; per document its genre, id and title, per
    section its title (each once). `take` builds the Arrow columns of the first rows at
    once (the document and section columns by `take` of their values), instead of a
    tuple per sentence transposed at write time."""

    def __init__(self, lang: str, role: str, min_chars: int):
        self.lang, self.role, self.min_chars = lang, role, min_chars   # the same in every row
        self.text: list[str] = []
        self.doc: list[int] = []
        self.section: list[int] = []
        self.para_idx: list[int] = []
        self.sent_idx: list[int] = []
        self.genres: list[str] = []
        self.doc_ids: list[str] = []
        self.titles: list[str] = []
        self.sections: list[str] = []

    def __len__(self) -> int:
        return len(self.text)

    def add_document(self, genre: str, doc_id: str, title: str) -> int:
        self.genres.append(genre)
        self.doc_ids.append(doc_id)
        self.titles.append(title)
        return len(self.doc_ids) - 1

    def add_section(self, title: str) -> int:
        self.sections.append(title)
        return len(self.sections) - 1

    def remove(self, positions: list[int]) -> None:
        """Remove the rows at `positions` (ascending, few); documents and sections stay listed."""
        for column in (self.text, self.doc, self.section, self.para_idx, self.sent_idx):
            for i in reversed(positions):
                del column[i]

    def take(self, n: int | None = None) -> pa.Table:
        """The first `n` rows (all when None) as a table of the file schema, removed."""
        n = len(self.text) if n is None else n
        schema = file_schema()
        doc = pa.array(self.doc[:n], pa.int32())
        text = pa.array(self.text[:n], pa.string())
        columns = {
            "genre": pa.array(self.genres, pa.string()).take(doc),
            "lang": pa.repeat(pa.scalar(self.lang, pa.string()), n),
            "doc_id": pa.array(self.doc_ids, pa.string()).take(doc),
            "title": pa.array(self.titles, pa.string()).take(doc),
            "section": pa.array(self.sections, pa.string()).take(pa.array(self.section[:n], pa.int32())),
            "para_idx": pa.array(self.para_idx[:n], pa.int32()),
            "sent_idx": pa.array(self.sent_idx[:n], pa.int32()),
            "text": text,
            "short": pc.less(pc.utf8_length(text), self.min_chars),
            "role": pa.repeat(pa.scalar(self.role, pa.string()), n),
        }
        for column in (self.text, self.doc, self.section, self.para_idx, self.sent_idx):
            del column[:n]
        # the documents and sections before the first row left are dropped (a stream of
        # millions of documents keeps at most a row group's worth of them)
        for refs, values in ((self.doc, (self.genres, self.doc_ids, self.titles)), (self.section, (self.sections,))):
            first = refs[0] if refs else len(values[0])
            if first:
                for v in values:
                    del v[:first]
                refs[:] = [r - first for r in refs]
        return pa.Table.from_arrays([columns[f.name] for f in schema], schema=schema)


class SentenceFileWriter:
    """Sentence rows of one work unit -> one Parquet file, written by pyarrow in input
    order, ROW_GROUP rows per row group (memory: one row group). No rows, no file. On a
    local disk the file is written under a temporary name and renamed when complete."""

    def __init__(self, path: str):
        self.path = path
        self.file = atomic.PendingFile(path, path + ".inprogress")
        self.target = self.file.tmp
        self.stream = None
        self.writer: pq.ParquetWriter | None = None

    def write(self, table: pa.Table) -> None:
        if self.writer is None:
            self.stream = fs.open_output(self.target)
            self.writer = pq.ParquetWriter(self.stream, table.schema, **PARQUET_OPTIONS)
        self.writer.write_table(table, row_group_size=ROW_GROUP)

    def close(self) -> None:
        if self.writer is not None and self.stream is not None:  # both set by the first write
            self.writer.close()
            self.stream.close()
            self.file.finish()

    def abort(self) -> None:
        if self.writer is not None and self.stream is not None:
            try:
                self.writer.close()
                self.stream.close()
            finally:
                self.file.discard()


def file_schema():
    """Columns of a sentences/ file (corpus is the partition directory, as Spark writes it)."""
    return SENTENCES.remove(SENTENCES.get_field_index("corpus"))


def process_unit(unit: WorkUnit, plan: DocumentsPlan) -> list[tuple]:
    """Read, clean, segment and write one work unit into `plan.table_dir`; its count rows."""
    assert plan.table_dir is not None, "the units round runs with the sentences table's folder set"
    corpus = plan.corpora[unit.corpus]
    proc = DocumentProcessor(corpus, plan.lexicon, plan.punkt, plan.min_chars, plan.namespaces.get(unit.path),
                             plan.punkt_key, plan.drop_foreign)
    writer = SentenceFileWriter(fs.join(plan.table_dir, corpus["partition"], unit.file_name))
    try:
        def flush_full():  # between documents: the language check runs on a row group's worth at once
            if len(proc.rows) >= ROW_GROUP:
                proc.settle()
                while len(proc.rows) >= ROW_GROUP:
                    writer.write(proc.take_table(ROW_GROUP))
            return False
        read_unit(unit, plan, proc, flush_full)
        proc.settle()
        if len(proc.rows):
            writer.write(proc.take_table())
        writer.close()
    except BaseException:
        writer.abort()
        raise
    return proc.count_rows()


def corpus_settings(corpora, lang: str, fields: dict) -> list[dict]:
    """What a unit's task needs of its corpus (picklable): names, partition directory, the
    JSONL/Parquet field names (a manifest entry's own first, then `fields`, the flags)."""
    out = []
    for spec in corpora:
        out.append({
            "name": spec.name, "genre": spec.genre, "lang": lang, "role": spec.role,
            "partition": partition_dir("corpus", spec.name),
            "fields": {k: spec.options.get(k, fields.get(k) or d)
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


def read_sample(lexicon, plan: DocumentsPlan, units, max_chars: int, max_records: int | None = None
                ) -> tuple[list[str], list[tuple]]:
    """Cleaned paragraphs from the first of `units` (in their order) up to `max_chars`, read
    on the driver by the same readers as the tasks (a JSONL file: at most `max_records`
    records, None: no limit), and the count rows of what was read."""
    out: list[str] = []
    rows: list[tuple] = []
    records = 0
    for unit in units:
        chars = sum(len(p) for p in out)
        if chars >= max_chars or (max_records is not None and records >= max_records):
            break
        sample = _Sample(plan.corpora[unit.corpus], lexicon, plan.namespaces.get(unit.path), max_chars - chars)

        def enough(sample=sample):
            lines = sample.unit_lines
            return sample.chars >= sample.max_chars or (
                max_records is not None and lines is not None and lines.records >= max_records)
        try:
            read_unit(unit, plan, sample, enough)
        except InputError as exc:  # on the driver: the message without the task mark
            raise InputError(str(exc).replace(ERROR_MARK, "")) from None
        out += sample.paragraphs
        rows += sample.count_rows()
        records += sample.unit_lines.records if sample.unit_lines is not None else 0
    return out, rows


def sample_paragraphs(lexicon, plan: DocumentsPlan, units: list[WorkUnit], max_chars: int) -> list[str]:
    """Cleaned paragraphs from the first units of the inputs (in input order), for Punkt
    training (`read_sample`)."""
    return read_sample(lexicon, plan, units, max_chars)[0]


SAMPLE_CHARS = 200_000   # cleaned text per corpus the input check reads (`inspect_inputs`)
SAMPLE_RECORDS = 1000    # ... and at most this many records of a JSONL file


def inspect_inputs(lexicon, plan: DocumentsPlan, units: Sequence[WorkUnit], check_language: bool
                   ) -> dict[str, CorpusLanguage]:
    """What the run would refuse about its inputs, from a sample read on the driver by the
    tasks' own readers before any work (the run and `--dry-run` alike): per corpus its
    first units up to SAMPLE_CHARS of cleaned text (at most SAMPLE_RECORDS records of a
    JSONL file). A file that is mostly not what the flags say is the run's own one-line
    `InputError` (`check_dropped_lines` on the sample's lines: for a file the sample reads
    whole, the same counts as the run's); with `check_language`, a corpus whose sample is in
    another language is `language.WrongLanguage`. Returns each corpus's sample languages."""
    found: dict[str, CorpusLanguage] = {}
    for ci, corpus in enumerate(plan.corpora):
        paragraphs, rows = read_sample(lexicon, plan, [u for u in units if u.corpus == ci], SAMPLE_CHARS,
                                       SAMPLE_RECORDS)
        by_file, located = dropped_lines(rows)
        check_dropped_lines(by_file, located, {corpus["name"]: corpus["fields"]["text_field"]})
        if check_language:
            found[corpus["name"]] = language = corpus_language(paragraphs[:CORPUS_SAMPLE], lexicon.lang)
            check_corpus(language, corpus["name"], ", ".join(sorted({u.path for u in units if u.corpus == ci})))
    return found


def punkt_parameters(lexicon, plan: DocumentsPlan, units: list[WorkUnit], params_path: str | None,
                     sample_mb: float, put_bytes) -> tuple[dict, dict]:
    """Punkt parameters as a dict (for the executors) and how they were obtained: read from
    `params_path`, or trained on the first `sample_mb` MB of cleaned text and saved with
    ``put_bytes(data, "punkt_params.json")``."""
    if params_path:
        params = load_params(params_path)
        return params_to_dict(params), {"source": str(params_path)}
    max_chars = int(float(sample_mb) * 1_000_000)
    texts = sample_paragraphs(lexicon, plan, units, max_chars)
    params = train_punkt(texts, lexicon.abbreviations, max_chars=max_chars)
    info = {"source": "trained", "sample_chars": sum(len(t) for t in texts), "sample_paragraphs": len(texts),
            "abbreviations_learnt": len(params.abbrev_types)}
    info["saved"] = "punkt_params.json"
    put_bytes(params_json(params), "punkt_params.json")
    return params_to_dict(params), info


LINE_KINDS = ("jsonl_unit", "dropped_line")


def dropped_lines(rows) -> tuple[dict, list[dict]]:
    """The JSONL lines dropped, from the units' count rows (`UnitLines.count_rows`): per
    file with a dropped line (in input order) its records and drops by reason; and the
    listed dropped lines of every file located by the file's true line number (the lines of
    the file's units before theirs added: `first_line_numbers`), in input then line order.
    Each unit lists its first MAX_LISTED_LINES, so the first MAX_LISTED_LINES of each
    file are among them, whatever the units."""
    lines_per_unit: dict = {}
    files: dict = {}
    listed = []
    for corpus, kind, path, count, detail in rows:
        if kind == "jsonl_unit":
            key = (detail["source"], path)
            lines_per_unit.setdefault(key, {})[detail["unit"]] = count
            f = files.setdefault(key, {"corpus": corpus, "records": 0, "dropped": Counter()})
            f["records"] += detail["records"]
            f["dropped"].update(detail["dropped"])
        elif kind == "dropped_line":
            listed.append((detail["source"], path, detail["unit"], detail["line"], count, detail["reason"],
                           detail["detail"]))
    first = {key: first_line_numbers(units) for key, units in lines_per_unit.items()}
    located = sorted((source, first[source, path][unit] + line, path, offset, reason, problem)
                     for source, path, unit, line, offset, reason, problem in listed)
    by_file = {path: {"corpus": f["corpus"], "records": f["records"], "dropped": dict(sorted(f["dropped"].items()))}
               for (_, path), f in sorted(files.items()) if f["dropped"]}
    return by_file, [{"file": path, "line": n, "byte": offset, "reason": reason, "detail": problem}
                     for _, n, path, offset, reason, problem in located]


def check_dropped_lines(by_file: dict, located: list[dict], text_fields: dict) -> None:
    """A JSONL file more than half of whose records are malformed or lack the text field is
    the wrong file or the wrong flag: an error naming the file, the count and the flag.
    `text_fields`: corpus name -> its text field."""
    for path, f in by_file.items():
        wrong = {reason: n for reason, n in f["dropped"].items() if reason in WRONG_INPUT}
        n = sum(wrong.values())
        if n * 2 <= f["records"]:
            continue
        field = text_fields[f["corpus"]]
        if sum(k for reason, k in wrong.items() if WRONG_INPUT[reason] == "field") * 2 >= n:
            what = f"lack the text field '{field}'" if set(wrong) == {"no_text_field"} else \
                f"lack a text field '{field}' that holds a string"
            fix = "set --text-field to the field that holds the text (text_field: in a --manifest entry)"
        else:
            what = "are not JSON objects"
            fix = "is it JSONL, one JSON object per line? check the file, or its format: in a --manifest entry"
        reasons = ", ".join(f"{reason} {k}" for reason, k in sorted(wrong.items()))
        at = next((f"; line {x['line']}: {x['detail']}" for x in located
                   if x["file"] == path and x["reason"] in WRONG_INPUT), "")
        raise InputError(f"{path}: {n} of its {f['records']} records {what} ({reasons}{at}); {fix}")


def dropped_lines_warnings(by_file: dict, located: list[dict], max_files: int = 5) -> list[str]:
    """One line per JSONL file with dropped lines (the first `max_files`): counts by reason
    and the first line numbers."""
    out = []
    for path, f in list(by_file.items())[:max_files]:
        n = sum(f["dropped"].values())
        numbers = [x["line"] for x in located if x["file"] == path]
        shown = ", ".join(str(k) for k in numbers[:5]) + (", ..." if n > 5 else "")
        reasons = ", ".join(f"{reason} {k}" for reason, k in f["dropped"].items())
        out.append(f"{path}: {n} of its {f['records']} records dropped ({reasons}), at line{'s' if n > 1 else ''} "
                   f"{shown}; the first {MAX_LISTED_LINES} dropped lines are listed in stats.json "
                   f"(sentences.dropped_lines)")
    if len(by_file) > max_files:
        out.append(f"{len(by_file) - max_files} more JSONL files have dropped lines "
                   f"(stats.json: sentences.dropped_lines_by_file)")
    return out


def sum_counts(rows) -> tuple[list[dict], list[dict], dict, list[str]]:
    """The units' count rows ((corpus, kind, reason, count, detail) each) -> summed counts
    per (corpus, kind, reason), the listed errors,
    the first invalid UTF-8 per file, and the warnings."""
    sums: Counter = Counter()
    errors: list[dict] = []
    first_bad: dict = {}
    warnings: list = []
    for corpus, kind, reason, count, detail in rows:
        if kind in LINE_KINDS:
            continue  # `dropped_lines`
        if kind == "error":
            errors.append({"corpus": corpus, "count_reason": reason, "detail": detail})
        elif kind == "first_invalid_utf8":
            if reason not in first_bad or count < first_bad[reason][0]:
                first_bad[reason] = (count, detail)
        elif kind == "warning":
            if detail not in warnings:
                warnings.append(detail)
        else:
            sums[corpus, kind, reason] += count
    counted = [{"corpus": c, "count_kind": k, "count_reason": reason, "n": n} for (c, k, reason), n in sums.items()]
    return counted, errors, first_bad, warnings


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
        elif kind == "foreign_sentences":
            foreign = pc.setdefault("foreign_sentences", {})
            foreign[reason] = foreign.get(reason, 0) + n
    totals["documents_dropped_total"] = sum(totals["documents_dropped"].values())
    totals["corpora"] = per_corpus
    totals["errors"] = [{"corpus": r["corpus"], "page_id": r["count_reason"], "error": r["detail"]} for r in errors]
    return totals
