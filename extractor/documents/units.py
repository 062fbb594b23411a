"""Work units: what the driver hands to Spark tasks in stage 1, one task reading one unit.

    MediaWiki dump, UTF-8, .xml or .xml.bz2   byte ranges (bzip2 blocks, multistream too)
    MediaWiki dump, UTF-16 or .gz             one unit, read as a stream
    JSONL                                     byte ranges of lines (.gz/.bz2: one unit)
    a folder of .txt files                    groups of consecutive files
    Parquet                                   groups of consecutive row groups

A unit's size depends on its file alone (`unit_bytes`, smaller for a small file so that
the cores share it), never on the number of cores: each unit is written as one Parquet
file named by the unit (`part-<input>-<unit>.parquet`), so the output files are the same
whatever runs them. Listing reads only file sizes, heads and footers (through
`extractor.io.fs`), and does the cheap checks that turn broken inputs into one-line errors
before any work: missing or empty files, a truncated bzip2 container, a Parquet text
column that holds no text; a dump that does not end with `</mediawiki>` is a warning.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from extractor.io import fs
from extractor.documents.readers import (CorruptData, bz2_is_complete, dump_end_is_closed, encoding_from_head,
                                         read_head, site_namespaces)
from extractor.core.errors import UserError

UNITS_WANTED = 32       # a small file is cut into about this many units (of at least 1 MB)
MIN_UNIT = 1 << 20
MAX_FILES_PER_UNIT = 1000


class UnitError(UserError, ValueError):
    """An input that cannot be listed; the message is one line and names the file."""


@dataclass(frozen=True)
class WorkUnit:
    corpus: int            # index of the corpus in the job's corpus list
    source: int            # index of the input (file or folder) in the job: names the file
    path: str              # the file (or the folder of a text group)
    kind: str              # wiki-range | wiki-stream | jsonl-range | jsonl-stream | text-files | parquet
    index: int             # the unit's number within its input
    lo: int = 0            # [lo, hi): bytes, or row groups for parquet
    hi: int = 0
    encoding: str = "utf-8"
    files: tuple = ()      # text-files: ((path, document id), ...)

    @property
    def file_name(self) -> str:
        return f"part-{self.source:03d}-{self.index:05d}.parquet"


@dataclass
class Listing:
    units: list[WorkUnit] = field(default_factory=list)
    inputs: dict = field(default_factory=dict)       # path -> how it is read (for stats.json)
    namespaces: dict = field(default_factory=dict)   # dump path -> {key: names} from <siteinfo>
    warnings: list[str] = field(default_factory=list)
    counts: list = field(default_factory=list)       # (corpus, kind, reason, n) found while listing


def unit_size(file_size: int, unit_bytes: int) -> int:
    """Bytes per unit of one file: `unit_bytes`, smaller for a small file (about
    UNITS_WANTED units of at least MIN_UNIT)."""
    return max(1, min(unit_bytes, max(MIN_UNIT, -(-file_size // UNITS_WANTED))))


def _ranges(size: int, unit: int) -> list[tuple[int, int]]:
    return [(lo, min(size, lo + unit)) for lo in range(0, max(size, 1), unit)] if size else []


def check_file(path: str) -> int:
    """The file's size, after the checks that turn broken downloads into one-line errors."""
    try:
        size = fs.size(path)
    except fs.FsError as exc:
        raise UnitError(str(exc)) from None
    if size == 0:
        raise UnitError(f"{path}: the file is empty")
    if path.endswith(".bz2"):
        if fs.read_range(path, 0, 3) != b"BZh":
            raise UnitError(f"{path}: not a bzip2 file (it does not start with 'BZh'); check the download")
        if not bz2_is_complete(path):
            raise UnitError(f"{path}: truncated bz2 file (no end-of-stream marker); download it again")
    return size


def list_units(corpora, unit_bytes: int, fields_of) -> Listing:
    """The work units of every input of `corpora` (CorpusSpec list), in input order.
    `fields_of(spec)` gives the corpus's text_field/id_field/... mapping."""
    out = Listing()
    source = 0
    for ci, spec in enumerate(corpora):
        for path in spec.paths:
            path = fs.canonical(path)  # executors may run in another directory
            if spec.format == "mediawiki":
                _wiki(out, ci, source, path, unit_bytes)
            elif spec.format == "jsonl":
                size = check_file(path)
                if path.endswith((".gz", ".bz2")):
                    out.units.append(WorkUnit(ci, source, path, "jsonl-stream", 0, 0, size))
                    out.inputs[path] = {"read": "stream", "units": 1}
                else:
                    rs = _ranges(size, unit_size(size, unit_bytes))
                    out.units += [WorkUnit(ci, source, path, "jsonl-range", k, lo, hi) for k, (lo, hi) in enumerate(rs)]
                    out.inputs[path] = {"read": "byte-ranges", "units": len(rs),
                                        "unit_bytes": unit_size(size, unit_bytes)}
            elif spec.format == "text":
                _text(out, ci, source, path, unit_bytes)
            elif spec.format == "parquet":
                _parquet(out, ci, source, path, unit_bytes, fields_of(spec))
            else:
                raise UnitError(f"corpus {spec.name}: unknown format '{spec.format}'")
            source += 1
    return out


def _wiki(out: Listing, ci: int, source: int, path: str, unit_bytes: int) -> None:
    size = check_file(path)
    try:
        head = read_head(path)
    except CorruptData as exc:
        raise UnitError(f"{path}: {exc}; the file is damaged: download it again") from None
    except (OSError, EOFError) as exc:
        raise UnitError(f"{path}: cannot read the start of the dump ({exc})") from None
    encoding = encoding_from_head(head[:4])
    text = head.decode("utf-8" if encoding.startswith("utf-8") else encoding, errors="ignore")
    out.namespaces[path] = site_namespaces(text)
    if encoding.startswith("utf-8") and path.endswith((".xml", ".xml.bz2", ".bz2")) and not path.endswith(".gz"):
        unit = unit_size(size, unit_bytes)
        rs = _ranges(size, unit)
        out.units += [WorkUnit(ci, source, path, "wiki-range", k, lo, hi) for k, (lo, hi) in enumerate(rs)]
        out.inputs[path] = {"read": "byte-ranges", "units": len(rs), "unit_bytes": unit}
        if dump_end_is_closed(path) is False:
            out.counts.append((ci, "inputs_damaged", "no_closing_tag", 1))
            out.warnings.append(f"{path}: the dump does not end with </mediawiki>: it was cut off (a failed "
                                f"download?); the pages before the cut are read, a page cut in the middle is "
                                f"counted as documents_dropped.truncated")
        return
    out.units.append(WorkUnit(ci, source, path, "wiki-stream", 0, 0, size, encoding=encoding))
    out.inputs[path] = {"read": "stream:" + encoding, "units": 1}
    if not encoding.startswith("utf-8"):
        out.warnings.append(f"{path}: {encoding} dump read by one task (byte ranges need UTF-8); for parallel "
                            f"reading convert it: bzcat FILE | iconv -f {encoding.upper()} -t UTF-8 | bzip2 > NEW")


def _text(out: Listing, ci: int, source: int, path: str, unit_bytes: int) -> None:
    if fs.is_dir(path):
        files = [(p, s) for p, s in fs.list_files(path) if p.lower().endswith(".txt")]
        root = fs.canonical(path).rstrip("/") + "/"
        named = [(p, p[len(root):] if p.startswith(root) else fs.basename(p), s) for p, s in files]
    else:
        size = check_file(path)
        named = [(fs.canonical(path), fs.basename(path), size)]
    if not named:
        raise UnitError(f"{path}: the directory holds no .txt file for the text reader")
    groups: list[list] = [[]]
    total = 0
    for p, rel, s in named:
        if groups[-1] and (total + s > unit_bytes or len(groups[-1]) >= MAX_FILES_PER_UNIT):
            groups.append([])
            total = 0
        groups[-1].append((p, rel))
        total += s
    out.units += [WorkUnit(ci, source, path, "text-files", k, files=tuple(g)) for k, g in enumerate(groups)]
    out.inputs[path] = {"read": "file-groups", "units": len(groups), "files": len(named)}


def _parquet(out: Listing, ci: int, source: int, path: str, unit_bytes: int, fields: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    check_file(path)
    try:
        with fs.open_input(path) as fh:
            meta = pq.ParquetFile(fh).metadata
            schema = meta.schema.to_arrow_schema()
    except fs.FsError as exc:
        raise UnitError(str(exc)) from None
    except Exception as exc:
        raise UnitError(f"{path}: not a Parquet file ({str(exc).splitlines()[0]})") from None
    name = fields["text_field"]
    if name not in schema.names:
        raise UnitError(f"{path}: no column '{name}' (columns: {', '.join(schema.names)}); set --text-field")
    tp = schema.field(name).type
    if not (pa.types.is_string(tp) or pa.types.is_large_string(tp) or pa.types.is_string_view(tp)
            or pa.types.is_null(tp)):
        raise UnitError(f"{path}: column '{name}' holds {tp} values, not text (row group 0 of "
                        f"{meta.num_row_groups}, and every other: a Parquet column has one type); "
                        f"choose the text column with --text-field or convert it")
    groups: list[list[int]] = [[]]
    total = 0
    for g in range(meta.num_row_groups):
        s = meta.row_group(g).total_byte_size
        if groups[-1] and total + s > unit_bytes:
            groups.append([])
            total = 0
        groups[-1].append(g)
        total += s
    groups = [g for g in groups if g]
    out.units += [WorkUnit(ci, source, path, "parquet", k, g[0], g[-1] + 1) for k, g in enumerate(groups)]
    out.inputs[path] = {"read": "row-groups", "units": len(groups), "row_groups": meta.num_row_groups}
    if not groups:
        out.counts.append((ci, "inputs_damaged", "no_row_group", 1))
