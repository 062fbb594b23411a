"""Stage 1: documents -> `sentences/` (Spark glue; the text work is in readers, wikitext
and segment).

How a corpus is read:
- MediaWiki XML (.xml, .xml.bz2, multistream too), UTF-8, a local file in local mode (the
  default): spark.range(n_splits), each task one byte range of bzip2 blocks read with the
  C bz2 module (readers.split_records). With a local output the task writes its own
  Parquet file (pyarrow, dump order) and returns only its counts: the rows never pass
  through the JVM. With an output URI the rows go to Spark's writer as Arrow batches.
- MediaWiki XML on a cluster file system (or --dump-reader hadoop): Hadoop's
  TextInputFormat with the record delimiter `</page>` over splittable bzip2; a page that
  crosses a split boundary is read whole by the split where it starts.
- MediaWiki XML in UTF-16 (no byte-level split possible): one task streams the file and
  the pages are then spread over all cores for cleaning (a warning says so).
- a directory of .txt files: Spark's binaryFile source, one document per file.
- JSONL: TextInputFormat lines (the byte offset gives a stable id when a record has none).
- Parquet: Spark's Parquet reader with the configured columns.

Every task also emits count rows (reason, count), so that drops are summed and land in
stats["sentences"] without a second pass over the data.
"""
from __future__ import annotations

import hashlib
import sys
import time
from collections import Counter
from pathlib import Path

from extractor import output as _out
from extractor.hashing import stable_hex
from extractor.job import ERROR_MARK, InputError
from extractor.documents.readers import (PAGE_DELIMITER, Page, PageError, bz2_is_complete, decode_utf8, json_document,
                               local_encoding, open_binary, parse_page_record, plain_paragraphs, split_records,
                               stream_page_records)

NAME = "sentences"
SENTENCE_COLUMNS = ("corpus", "genre", "lang", "doc_id", "title", "section", "para_idx", "sent_idx", "text",
                    "short", "role")
COUNT_COLUMNS = ("count_kind", "count_reason", "count", "detail")
MAX_LISTED_ERRORS = 100


def add_arguments(parser) -> None:
    g = parser.add_argument_group("sentences stage")
    g.add_argument("--punkt-params", default=None, metavar="PATH",
                   help="read Punkt parameters from this JSON file instead of training them on the corpus")
    g.add_argument("--punkt-sample-mb", type=float, default=4.0,
                   help="MB of cleaned text (from the start of the inputs) that Punkt is trained on")
    g.add_argument("--split-mb", type=int, default=8,
                   help="bytes per input split of a dump, in MB (smaller: more parallel tasks)")
    g.add_argument("--dump-reader", choices=("auto", "python", "hadoop"), default="auto",
                   help="how a UTF-8 dump is split: python (local files: byte ranges of bzip2 blocks, C bz2; "
                        "with a local output, tasks write their Parquet files directly) or hadoop (splittable "
                        "bzip2 in the JVM; any file system); auto = python for local files in local mode")
    g.add_argument("--text-field", default="text", help="JSONL/Parquet: field holding the document text")
    g.add_argument("--id-field", default="id", help="JSONL/Parquet: field holding the document id")
    g.add_argument("--title-field", default="title", help="JSONL/Parquet: field holding the title")
    g.add_argument("--genre-field", default="genre", help="JSONL/Parquet: field holding a per-document genre")


def row_schema():
    from pyspark.sql.types import BooleanType, IntegerType, LongType, StringType, StructField, StructType

    s, i = StringType(), IntegerType()
    return StructType([
        StructField("corpus", s), StructField("genre", s), StructField("lang", s), StructField("doc_id", s),
        StructField("title", s), StructField("section", s), StructField("para_idx", i),
        StructField("sent_idx", i), StructField("text", s), StructField("short", BooleanType()),
        StructField("role", s),
        StructField("count_kind", s), StructField("count_reason", s), StructField("count", LongType()),
        StructField("detail", s),
    ])


# --------------------------------------------------------------------------- pure part

class DocumentProcessor:
    """Turns documents of one corpus into sentence rows and keeps the counts. Built once
    per task from picklable settings (the Segmenter from its parameter dict)."""

    def __init__(self, corpus: dict, lexicon, punkt: dict, min_chars: int):
        from extractor.documents.segment import Segmenter, params_from_dict

        self.corpus = corpus
        self.lexicon = lexicon
        self.segmenter = _segmenter(punkt)
        self.min_chars = min_chars
        self.counts: Counter = Counter()
        self.errors: list[tuple[str, str]] = []  # (page id, message), first MAX_LISTED_ERRORS

    def _sentence_rows(self, doc_id: str, title: str, genre: str, sections) -> list[tuple]:
        c = self.corpus
        rows = []
        para_idx = 0
        for section_title, paragraphs in sections:
            for paragraph in paragraphs:
                sentences = self.segmenter.split(paragraph)
                if not sentences:
                    self.counts["paragraphs_dropped", "no_sentence"] += 1
                    continue
                for sent_idx, text in enumerate(sentences):
                    short = len(text) < self.min_chars
                    rows.append((c["name"], genre, c["lang"], doc_id, title, section_title, para_idx, sent_idx,
                                 text, short, c["role"], None, None, None, None))
                self.counts["sentences", "total"] += len(sentences)
                self.counts["sentences", "short"] += sum(1 for s in sentences if len(s) < self.min_chars)
                self.counts["paragraphs", "kept"] += 1
                para_idx += 1
        if para_idx:
            self.counts["documents", "kept"] += 1
        else:
            self.counts["documents_dropped", "no_text_after_cleaning"] += 1
        return rows

    def wiki_record(self, record: str) -> list[tuple]:
        from extractor.documents.wikitext import clean_page, page_skip_reason

        page = parse_page_record(record)
        if page is None:
            return []
        if isinstance(page, PageError) and page.reason == "no_page_element":
            self.counts["records_dropped", "no_page_element"] += 1  # text outside any <page>
            return []
        self.counts["documents", "read"] += 1
        if isinstance(page, PageError):
            self.counts["documents_dropped", page.reason] += 1
            if len(self.errors) < MAX_LISTED_ERRORS:
                self.errors.append((page.page_id or "?", f"{page.reason}: {page.detail}"))
            return []
        reason = self._page_skip(page, page_skip_reason)
        if reason:
            self.counts["documents_dropped", reason] += 1
            return []
        cleaned = clean_page(page.text, self.lexicon)
        for key, n in cleaned.drops.items():
            self.counts["cleaning", key] += n
        doc_id = f"{self.corpus['name']}:{page.page_id}"
        return self._sentence_rows(doc_id, page.title, self.corpus["genre"],
                                   [(s.title, s.paragraphs) for s in cleaned.sections])

    def _page_skip(self, page: Page, page_skip_reason) -> str | None:
        if page.ns != 0:
            return "namespace"
        if page.redirect:
            return "redirect"
        if not page.text.strip():
            return "empty_text"
        return page_skip_reason(page.title, page.text, self.lexicon)

    def plain_document(self, doc_key: str, title: str | None, genre: str | None, text: str) -> list[tuple]:
        self.counts["documents", "read"] += 1
        if not text or not text.strip():
            self.counts["documents_dropped", "empty_text"] += 1
            return []
        doc_id = f"{self.corpus['name']}:{doc_key}"
        return self._sentence_rows(doc_id, title or doc_key, genre or self.corpus["genre"],
                                   [("", plain_paragraphs(text))])

    def count_rows(self) -> list[tuple]:
        name = self.corpus["name"]
        rows = [(name, None, None, None, None, None, None, None, None, None, None, kind, reason, n, None)
                for (kind, reason), n in sorted(self.counts.items())]
        rows += [(name, None, None, None, None, None, None, None, None, None, None, "error", page_id, 1, message)
                 for page_id, message in self.errors]
        return rows


_SEGMENTERS: dict = {}


def _segmenter(punkt: dict):
    """One Segmenter per parameter set and Python worker process: a worker runs many tasks
    one after another, and the Segmenter's memo of Punkt decisions stays warm."""
    import json

    from extractor.documents.segment import Segmenter, params_from_dict

    key = hashlib.sha256(json.dumps(punkt, sort_keys=True, default=list).encode()).hexdigest()
    if key not in _SEGMENTERS:
        _SEGMENTERS.clear()  # a new job's parameters: drop the old ones
        _SEGMENTERS[key] = Segmenter(params_from_dict(punkt))
    return _SEGMENTERS[key]


def _processor(settings: dict) -> DocumentProcessor:
    return DocumentProcessor(settings["corpus"], settings["lexicon"], settings["punkt"], settings["min_chars"])


def wiki_partition(settings: dict):
    """mapPartitions over page records: sentence rows, then this task's count rows."""
    def run(records):
        proc = _processor(settings)
        for record in records:
            yield from proc.wiki_record(record)
        yield from proc.count_rows()
    return run


def split_documents(proc: DocumentProcessor, path: str, k: int, split_bytes: int, size: int):
    """The sentence rows of each page of split `k` (bytes [k*split_bytes, ...)) of a local dump."""
    lo = k * split_bytes
    try:
        for record in split_records(path, lo, min(size, lo + split_bytes)):
            yield proc.wiki_record(record)
    except (EOFError, OSError, ValueError) as exc:  # bz2 data errors are OSError
        raise InputError(f"{ERROR_MARK}{path}: truncated or corrupt bz2 data near byte {lo}: {exc}") from None


def wiki_split_arrow(settings: dict, path: str, split_bytes: int, size: int):
    """mapInArrow over spark.range(n_splits): each id is one byte range of a local dump."""
    def run(batches):
        proc = _processor(settings)
        documents = (rows for batch in batches for k in batch.column("id").to_pylist()
                     for rows in split_documents(proc, path, k, split_bytes, size))
        return _in_batches(proc, documents, settings["schema"])
    return run


class SentenceFileWriter:
    """Sentence rows of one split -> one Parquet file, written by pyarrow in dump order,
    one row group per ROW_GROUP rows (memory: one row group). No rows, no file. The bytes
    depend only on the rows, so the file is the same whatever core or executor writes it."""

    ROW_GROUP = 65536

    def __init__(self, path: str):
        self.path = path
        self.rows: list = []
        self.writer = None

    def add(self, rows: list) -> None:
        self.rows.extend(rows)
        if len(self.rows) >= self.ROW_GROUP:
            self._flush(self.rows[:self.ROW_GROUP])
            self.rows = self.rows[self.ROW_GROUP:]

    def _flush(self, rows: list) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = sentence_file_schema()
        # a sentence row is (corpus, <file columns>..., <count columns>); corpus is the directory
        table = pa.Table.from_arrays([pa.array([r[i + 1] for r in rows], type=f.type) for i, f in enumerate(schema)],
                                     schema=schema)
        if self.writer is None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self.writer = pq.ParquetWriter(self.path + ".inprogress", schema, compression="snappy")
        self.writer.write_table(table, row_group_size=self.ROW_GROUP)

    def close(self) -> None:
        if self.rows:
            self._flush(self.rows)
            self.rows = []
        if self.writer is not None:
            self.writer.close()
            Path(self.path + ".inprogress").replace(self.path)


def sentence_file_schema():
    """Columns of a sentences/ file (corpus is the partition directory, as Spark writes it)."""
    import pyarrow as pa

    types = {"para_idx": pa.int32(), "sent_idx": pa.int32(), "short": pa.bool_()}
    return pa.schema([pa.field(c, types.get(c, pa.string())) for c in SENTENCE_COLUMNS if c != "corpus"])


def wiki_split_files(settings: dict, path: str, split_bytes: int, size: int, directory: str, prefix: str):
    """mapInArrow over spark.range(n_splits), for a local dump and a local output: each id
    is one byte range of the dump, whose sentence rows go straight to
    `<directory>/part-<prefix>-<id>.parquet`; only the task's count rows go back to Spark.
    Rows never pass through the JVM: no Arrow transfer, shuffle, sort or Parquet rewrite."""
    def run(batches):
        proc = _processor(settings)
        for batch in batches:
            for k in batch.column("id").to_pylist():
                writer = SentenceFileWriter(f"{directory}/part-{prefix}-{k:05d}.parquet")
                for rows in split_documents(proc, path, k, split_bytes, size):
                    writer.add(rows)
                writer.close()
        yield from _batches(proc.count_rows(), settings["schema"])
    return run


def jsonl_partition(settings: dict, file_name: str):
    fields = settings["fields"]

    def run(lines):
        proc = _processor(settings)
        for offset, line in lines:
            if "\ufffd" in line:  # Hadoop's Text decoding replaced a non-UTF-8 byte
                raise InputError(f"{ERROR_MARK}{file_name}: not valid UTF-8 in the line at byte {offset}")
            doc = json_document(line, fields)
            if isinstance(doc, str):
                proc.counts["documents_dropped", doc] += 1
                continue
            doc_id, title, genre, text = doc
            yield from proc.plain_document(doc_id or f"{Path(file_name).name}@{offset}", title, genre, text)
        yield from proc.count_rows()
    return run


def _in_batches(proc, documents, schema, size: int = 4096):
    """Arrow batches of the rows of each document, then this task's count rows."""
    rows: list = []
    for doc_rows in documents:
        rows.extend(doc_rows)
        if len(rows) >= size:
            yield from _batches(rows, schema, size)
            rows = []
    rows.extend(proc.count_rows())
    yield from _batches(rows, schema, size)


def _batches(rows: list, schema, size: int = 4096):
    import pyarrow as pa

    names = schema.names
    for start in range(0, len(rows), size):
        chunk = rows[start:start + size]
        yield pa.RecordBatch.from_arrays([pa.array([r[i] for r in chunk], type=schema_types(schema)[i])
                                          for i in range(len(names))], names=names)


def schema_types(schema):
    import pyarrow as pa

    mapping = {"string": pa.string(), "integer": pa.int32(), "long": pa.int64(), "boolean": pa.bool_()}
    return [mapping[f.dataType.typeName()] for f in schema.fields]


def text_files_arrow(settings: dict, root_uri: str):
    """mapInArrow over Spark's binaryFile rows (path, content): one document per file."""
    def run(batches):
        proc = _processor(settings)

        def documents():
            for batch in batches:
                for path, content in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist()):
                    rel = path[len(root_uri):].lstrip("/") if path.startswith(root_uri) else path.rsplit("/", 1)[-1]
                    try:
                        text = decode_utf8(content, _display_path(path))
                    except UnicodeError as exc:
                        raise InputError(f"{ERROR_MARK}{exc}") from None
                    yield proc.plain_document(rel, rel, None, text)
        return _in_batches(proc, documents(), settings["schema"])
    return run


def parquet_arrow(settings: dict):
    def run(batches):
        proc = _processor(settings)

        def documents():
            for batch in batches:
                cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
                for i, text in enumerate(cols["text"]):
                    doc_id, title, genre = cols["id"][i], cols["title"][i], cols["genre"][i]
                    key = str(doc_id) if doc_id is not None else stable_hex(text or "")
                    yield proc.plain_document(key, title, genre, text or "")
        return _in_batches(proc, documents(), settings["schema"])
    return run


def _display_path(uri: str) -> str:
    return uri[5:] if uri.startswith("file:/") and not uri.startswith("file://") else uri.replace("file://", "")


# --------------------------------------------------------------------------- Spark part

def _hadoop_text(sc, path: str, delimiter: str | None, split_bytes: int):
    conf = {"mapreduce.input.fileinputformat.split.maxsize": str(split_bytes),
            "mapreduce.input.fileinputformat.split.minsize": "1"}
    if delimiter:
        conf["textinputformat.record.delimiter"] = delimiter
    return sc.newAPIHadoopFile(path, "org.apache.hadoop.mapreduce.lib.input.TextInputFormat",
                               "org.apache.hadoop.io.LongWritable", "org.apache.hadoop.io.Text", conf=conf)


def check_local_file(path: str) -> None:
    """Cheap checks on the driver that turn the usual broken downloads into one-line errors."""
    if _out.is_uri(path):
        return
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    if p.is_file() and p.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty")
    if path.endswith(".bz2") and p.is_file() and not bz2_is_complete(path):
        raise InputError(f"{path}: truncated bz2 file (no end-of-stream marker); download it again")


def wiki_records(ctx, spec, path: str):
    """An RDD of page records of one dump, and how it was read."""
    sc = ctx.spark.sparkContext
    encoding = "utf-8" if _out.is_uri(path) else local_encoding(path)
    if encoding.startswith("utf-8") and python_splits(ctx, path):
        return None, "python-splits"
    if encoding.startswith("utf-8"):
        split = split_size(ctx, None if _out.is_uri(path) else Path(path).stat().st_size)
        return _hadoop_text(sc, _out.path_str(path), PAGE_DELIMITER, split).values(), "splittable"
    # UTF-16/32: stream in one task, then spread the pages over the cores for cleaning.
    ctx.warn(f"{path}: {encoding} dump read by one streaming task (Hadoop splits need UTF-8); "
             f"for parallel reading convert it: bzcat FILE | iconv -f {encoding.upper()} -t UTF-8 | bzip2 > NEW")
    local = str(Path(path).resolve())

    def stream(_):
        with open_binary(local) as fh:
            yield from stream_page_records(fh, encoding)
    parts = max(2, sc.defaultParallelism)
    return sc.parallelize([0], 1).mapPartitions(stream).repartition(parts), "streamed:" + encoding


def split_size(ctx, file_size: int | None) -> int:
    """Bytes per split: --split-mb, made smaller for a small dump (at least SPLITS_WANTED
    splits of at least 1 MB) so that the cores share it evenly. It depends on the file
    alone, never on the number of cores, because the split is the unit of output files."""
    split = max(1, int(ctx.args.split_mb)) << 20
    if file_size:
        split = min(split, max(1 << 20, -(-file_size // SPLITS_WANTED)))
    return split


SPLITS_WANTED = 32


def dump_splits(ctx, path: str) -> tuple[int, int, int]:
    """(file size, bytes per split, number of splits) of a local dump."""
    size = Path(path).stat().st_size
    split = split_size(ctx, size)
    return size, split, max(1, -(-size // split))


def python_splits(ctx, path: str) -> bool:
    """Whether a UTF-8 dump is split in Python (byte ranges of bzip2 blocks, C bz2): a local
    .xml/.xml.bz2 file with a local master (`auto`, or `--dump-reader python`). Hadoop's
    splittable bzip2 reads dumps on cluster file systems (`auto` there, or `hadoop`)."""
    mode = getattr(ctx.args, "dump_reader", "auto")
    if mode == "hadoop" or _out.is_uri(path) or not path.endswith((".xml", ".xml.bz2")):
        return False
    return mode == "python" or ctx.spark.sparkContext.master.startswith("local")


def writes_directly(ctx, spec, path: str) -> bool:
    """Local dump, local master, local output: tasks write their Parquet files themselves."""
    return (spec.format == "mediawiki" and not ctx.output_uri and python_splits(ctx, path)
            and ctx.spark.sparkContext.master.startswith("local")
            and local_encoding(path).startswith("utf-8"))


def corpus_settings(ctx, spec, punkt: dict, schema) -> dict:
    return {
        "corpus": {"name": spec.name, "genre": spec.genre, "lang": ctx.lexicon.lang, "role": spec.role},
        "lexicon": ctx.lexicon, "punkt": punkt, "min_chars": int(ctx.args.min_chars), "schema": schema,
        "fields": {k: spec.options.get(k, getattr(ctx.args, k, None) or d)
                   for k, d in (("text_field", "text"), ("id_field", "id"), ("title_field", "title"),
                                ("genre_field", "genre"))},
    }


def corpus_rows(ctx, spec, punkt: dict, schema, read_info: dict, skip=frozenset()):
    """The DataFrame of sentence rows + count rows of one corpus (without the dumps in
    `skip`, which write their files directly)."""
    spark = ctx.spark
    settings = corpus_settings(ctx, spec, punkt, schema)
    if spec.format == "mediawiki":
        rdds, frames = [], []
        for path in spec.paths:
            if path in skip:
                continue
            rdd, how = wiki_records(ctx, spec, path)
            if rdd is None:  # python splits: rows leave the task as Arrow batches
                size, split, n = dump_splits(ctx, path)
                read_info[path] = {"read": how, "partitions": n}
                frames.append(spark.range(n, numPartitions=n).mapInArrow(
                    wiki_split_arrow(settings, str(Path(path).resolve()), split, size), schema))
                continue
            read_info[path] = {"read": how, "partitions": rdd.getNumPartitions()}
            rdds.append(rdd.mapPartitions(wiki_partition(settings)))
        if rdds:
            frames.append(spark.createDataFrame(spark.sparkContext.union(rdds), schema, verifySchema=False))
        return _union(frames)
    if spec.format == "jsonl":
        rdds = []
        for path in spec.paths:
            rdd = _hadoop_text(spark.sparkContext, _out.path_str(path), None, max(1, int(ctx.args.split_mb)) << 20)
            read_info[path] = {"read": "lines", "partitions": rdd.getNumPartitions()}
            rdds.append(rdd.mapPartitions(jsonl_partition(settings, path)))
        return spark.createDataFrame(spark.sparkContext.union(rdds), schema, verifySchema=False)
    if spec.format == "text":
        frames = []
        for path in spec.paths:
            root = _out.path_str(path)
            df = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
                  .option("pathGlobFilter", "*.txt").load(root).select("path", "content"))
            # binaryFile reports file:/abs/path; the id is the path relative to the input
            root_uri = root if _out.is_uri(root) else "file:" + root
            if not Path(path).is_dir():
                root_uri = root_uri.rsplit("/", 1)[0]
            read_info[path] = {"read": "files"}
            frames.append(df.mapInArrow(text_files_arrow(settings, root_uri), schema))
        return _union(frames)
    if spec.format == "parquet":
        from pyspark.sql import functions as F

        fields = settings["fields"]
        df = spark.read.parquet(*[_out.path_str(p) for p in spec.paths])
        if fields["text_field"] not in df.columns:
            raise InputError(f"{spec.paths[0]}: no column '{fields['text_field']}' (columns: {', '.join(df.columns)}); "
                             f"set --text-field")

        def col(key, name):
            return (F.col(fields[key]).cast("string") if fields[key] in df.columns else F.lit(None).cast("string")).alias(name)
        df = df.select(col("text_field", "text"), col("id_field", "id"), col("title_field", "title"),
                       col("genre_field", "genre"))
        for p in spec.paths:
            read_info[p] = {"read": "parquet"}
        return df.mapInArrow(parquet_arrow(settings), schema)
    raise InputError(f"corpus {spec.name}: unknown format '{spec.format}'")


def _union(frames):
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


# --------------------------------------------------------------------------- Punkt

def sample_paragraphs(ctx, max_chars: int):
    """Cleaned paragraphs from the start of the inputs (in input order), for Punkt training.
    Only the first records are read (`take`), never the whole dump."""
    from extractor.documents.wikitext import clean_page, page_skip_reason

    seen = 0
    for spec in ctx.corpora:
        for path in spec.paths:  # run() has checked them
            if spec.format == "mediawiki":
                if _is_streamed(path) or python_splits(ctx, path):
                    records = _local_head_records(path, 400)
                else:
                    records = wiki_records(ctx, spec, path)[0].take(400)
                for record in records:
                    page = parse_page_record(record)
                    if not isinstance(page, Page) or page.ns != 0 or page.redirect or not page.text:
                        continue
                    if page_skip_reason(page.title, page.text, ctx.lexicon):
                        continue
                    for para in clean_page(page.text, ctx.lexicon).paragraphs:
                        yield para
                        seen += len(para)
                        if seen >= max_chars:
                            return
            elif spec.format == "text":
                files = [path] if Path(path).is_file() else sorted(Path(path).rglob("*.txt"))[:200]
                for f in files:
                    try:
                        text = Path(f).read_bytes().decode("utf-8-sig")
                    except (UnicodeDecodeError, OSError):
                        continue  # the stage names the bad file itself
                    for para in plain_paragraphs(text):
                        yield para
                        seen += len(para)
                        if seen >= max_chars:
                            return
            elif spec.format == "jsonl":
                fields = corpus_settings(ctx, spec, {}, None)["fields"]
                rdd = _hadoop_text(ctx.spark.sparkContext, _out.path_str(path), None, 64 << 20)
                for _, line in rdd.take(2000):
                    doc = json_document(line, fields)
                    if isinstance(doc, str):
                        continue
                    for para in plain_paragraphs(doc[3]):
                        yield para
                        seen += len(para)
                        if seen >= max_chars:
                            return
            elif spec.format == "parquet":
                fields = corpus_settings(ctx, spec, {}, None)["fields"]
                df = ctx.spark.read.parquet(_out.path_str(path))
                if fields["text_field"] not in df.columns:
                    continue
                for row in df.select(fields["text_field"]).limit(2000).collect():  # bounded sample
                    for para in plain_paragraphs(row[0] or ""):
                        yield para
                        seen += len(para)
                        if seen >= max_chars:
                            return


def _is_streamed(path: str) -> bool:
    return not _out.is_uri(path) and not local_encoding(path).startswith("utf-8")


def _local_head_records(path: str, n: int) -> list[str]:
    out = []
    with open_binary(path) as fh:
        for record in stream_page_records(fh, local_encoding(path)):
            out.append(record)
            if len(out) >= n:
                break
    return out


def punkt_parameters(ctx) -> tuple[dict, dict]:
    """Punkt parameters as a dict (for the executors) and how they were obtained."""
    from extractor.documents.segment import load_params, params_to_dict, save_params, train_punkt

    if ctx.args.punkt_params:
        params = load_params(ctx.args.punkt_params)
        return params_to_dict(params), {"source": str(ctx.args.punkt_params)}
    max_chars = int(float(ctx.args.punkt_sample_mb) * 1_000_000)
    texts = list(sample_paragraphs(ctx, max_chars))
    params = train_punkt(texts, ctx.lexicon.abbreviations, max_chars=max_chars)
    info = {"source": "trained", "sample_chars": sum(len(t) for t in texts), "sample_paragraphs": len(texts),
            "abbreviations_learnt": len(params.abbrev_types)}
    if not ctx.output_uri:
        info["saved"] = str(save_params(params, ctx.output / "punkt_params.json"))
    return params_to_dict(params), info


# --------------------------------------------------------------------------- run

def direct_counts(ctx, spec, path: str, index: int, punkt: dict, schema, table_dir: str, read_info: dict):
    """The count rows of a local dump whose tasks write sentences/ files directly."""
    size, split, n = dump_splits(ctx, path)
    read_info[path] = {"read": "python-splits", "partitions": n, "split_bytes": split, "write": "direct"}
    settings = corpus_settings(ctx, spec, punkt, schema)
    directory = f"{table_dir}/{_out.partition_dir('corpus', spec.name)}"
    return ctx.spark.range(n, numPartitions=n).mapInArrow(
        wiki_split_files(settings, str(Path(path).resolve()), split, size, directory, f"{index:03d}"), schema)


def sum_counts(rows) -> tuple[list[dict], list[dict]]:
    """Collected count rows -> summed counts per (corpus, kind, reason), and the listed errors."""
    sums: Counter = Counter()
    errors = []
    for r in rows:
        if r["count_kind"] == "error":
            errors.append({"corpus": r["corpus"], "count_reason": r["count_reason"], "detail": r["detail"]})
        else:
            sums[r["corpus"], r["count_kind"], r["count_reason"]] += r["count"]
    counted = [{"corpus": c, "count_kind": k, "count_reason": reason, "n": n} for (c, k, reason), n in sums.items()]
    return counted, errors


def run(ctx) -> None:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    if not ctx.corpora:
        raise InputError("no input corpora")
    for spec in ctx.corpora:  # before any work, Punkt training included
        for path in spec.paths:
            check_local_file(path)
    schema = row_schema()
    t0 = time.time()
    punkt, punkt_info = punkt_parameters(ctx)
    punkt_info["seconds"] = round(time.time() - t0, 3)
    _log(f"Punkt parameters {punkt_info['source']} in {punkt_info['seconds']:.1f}s")
    read_info: dict = {}
    direct = [(spec, path) for spec in ctx.corpora for path in spec.paths if writes_directly(ctx, spec, path)]
    skip = {path for _, path in direct}
    others = [spec for spec in ctx.corpora if any(path not in skip for path in spec.paths)]
    counted: list = []
    errors: list = []
    overwrite = bool(getattr(ctx.args, "overwrite", False))
    with _out.atomic_directory(ctx.spark, ctx.table_path(NAME), overwrite) as table_dir:
        if others:
            # One pass over the input: rows kept on disk for both the counts and the table.
            rows = _union([corpus_rows(ctx, spec, punkt, schema, read_info, skip) for spec in others])
            rows = rows.persist(StorageLevel.DISK_ONLY)
            try:
                # count rows are a few per task (errors at most MAX_LISTED_ERRORS per task)
                counted, errors = sum_counts(rows.where(F.col("count_kind").isNotNull())
                                             .select("corpus", *COUNT_COLUMNS).collect())
                sentences = rows.where(F.col("count_kind").isNull()).select(*SENTENCE_COLUMNS)
                _out.write_parquet(ctx.spark, ctx.arrange(sentences, ["corpus"], ["doc_id", "para_idx", "sent_idx", "text"]),
                                   table_dir, ["corpus"])
            finally:
                rows.unpersist()
        if direct:
            frames = [direct_counts(ctx, spec, path, i, punkt, schema, table_dir, read_info)
                      for i, (spec, path) in enumerate(direct)]
            more_counts, more_errors = sum_counts(_union(frames).collect())  # count rows only: a few per task
            counted += more_counts
            errors += more_errors
        errors = sorted(errors, key=lambda e: (e["corpus"], e["count_reason"] or "", e["detail"] or ""))[:MAX_LISTED_ERRORS]
        stats = build_stats(counted, errors, ctx.corpora)
        for spec in ctx.corpora:
            read = stats["corpora"].get(spec.name, {}).get("documents_read", 0)
            if read == 0:
                what = "no <page> element" if spec.format == "mediawiki" else "no document"
                raise InputError(f"{', '.join(spec.paths)}: {what} found (empty input?)")
            if stats["corpora"][spec.name].get("sentences", 0) == 0:
                ctx.warn(f"corpus {spec.name}: {read} documents read but no sentence kept")
    stats["seconds"] = {"punkt": punkt_info["seconds"],
                        "read_clean_segment_write": round(time.time() - t0 - punkt_info["seconds"], 3)}
    _log(f"sentences/ read, cleaned, segmented and written in {stats['seconds']['read_clean_segment_write']:.1f}s")
    stats["punkt"] = punkt_info
    stats["inputs"] = read_info
    stats["min_chars"] = int(ctx.args.min_chars)
    ctx.stats[NAME] = stats
    for row in errors[:5]:
        print(f"[sentences] skipped page {row['count_reason']} of {row['corpus']}: {row['detail']}", file=sys.stderr)


def _log(msg: str) -> None:
    print(f"[sentences] {msg}", file=sys.stderr, flush=True)


def build_stats(counted, errors, corpora) -> dict:
    """stats["sentences"] from the summed count rows."""
    totals: dict = {"documents": {"read": 0, "kept": 0}, "documents_dropped": {}, "cleaning": {},
                    "paragraphs": {"kept": 0}, "paragraphs_dropped": {}, "sentences": {"total": 0, "short": 0}}
    per_corpus: dict = {spec.name: {"documents_read": 0, "documents_kept": 0, "sentences": 0, "short": 0}
                        for spec in corpora}
    for row in counted:
        corpus, kind, reason, n = row["corpus"], row["count_kind"], row["count_reason"], int(row["n"])
        totals.setdefault(kind, {})
        totals[kind][reason] = totals[kind].get(reason, 0) + n
        pc = per_corpus.setdefault(corpus, {"documents_read": 0, "documents_kept": 0, "sentences": 0, "short": 0})
        if kind == "documents":
            pc[f"documents_{reason}"] = pc.get(f"documents_{reason}", 0) + n
        elif kind == "sentences":
            key = "sentences" if reason == "total" else reason
            pc[key] = pc.get(key, 0) + n
    totals["documents_dropped_total"] = sum(totals["documents_dropped"].values())
    totals["corpora"] = per_corpus
    totals["errors"] = [{"corpus": r["corpus"], "page_id": r["count_reason"], "error": r["detail"]} for r in errors]
    return totals
