"""CSV and TSV files of documents: a header line naming the columns, a text column
(`--text-field`) and optional id, title and genre columns, as spreadsheets, pandas'
`to_csv` and many scraped-news datasets write them (RFC 4180 quoting: a quoted text may
hold commas, quotes and line breaks). Comma-separated for `.csv`, tab-separated for `.tsv`
(each also `.gz`/`.bz2`). A file is one unit, read as a stream: a quoted field may hold a
line break, so a line of the file is not a row boundary and the file cannot be cut at an
arbitrary byte (several files are several units). A document without an id column is
`<file>@<line>`, the line its row starts on. A row with more or fewer fields than the
header is counted as `documents_dropped.malformed_row`; text that is not UTF-8, or quoting
the CSV reader refuses, is a one-line error with the file (and its line)."""
from __future__ import annotations

import csv
import io
from typing import Callable, Iterator

from extractor.core.errors import ERROR_MARK, InputError
from extractor.sentences.formats.base import DocumentSink, InputFormat, read_items
from extractor.sentences.readers import open_binary
from extractor.sentences.units import Listing, UnitError, WorkUnit, check_file
from extractor.io import fs

FIELD_LIMIT = 1 << 30  # characters in one field: a novel is one text (the csv module's default is 131,072)


def delimiter(path: str) -> str:
    low = path.lower().removesuffix(".gz").removesuffix(".bz2")
    return "\t" if low.endswith(".tsv") else ","


def rows(path: str) -> Iterator[tuple[int, list[str]]]:
    """(line of the file where the row starts, fields) of every row of a CSV/TSV file, the
    header first; blank lines left out. Quoting the reader refuses (strict: a quote inside
    an unquoted field, a quoted field the file ends in) is an `InputError`: read on, it
    would run rows together."""
    csv.field_size_limit(max(csv.field_size_limit(), FIELD_LIMIT))
    with open_binary(path) as binary:
        text = io.TextIOWrapper(binary, encoding="utf-8-sig", newline="")
        reader = csv.reader(text, delimiter=delimiter(path), strict=True)
        while True:
            start = reader.line_num + 1
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise InputError(f"{ERROR_MARK}{path}: line {reader.line_num}: not valid CSV ({exc}); "
                                 f"check its quoting") from None
            if row:
                yield start, row


def header(path: str) -> list[str]:
    for _, names in rows(path):
        return names
    raise UnitError(f"{path}: no header line (a CSV/TSV input names its columns on its first line)")


class Delimited(InputFormat):
    name = "csv"
    suffixes = (".csv", ".tsv")
    folder_suffixes = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".csv.bz2", ".tsv.bz2")
    kinds = ("csv-file",)

    def list_input(self, out: Listing, ci: int, source: int, path: str, unit_bytes: int, fields: dict) -> None:
        size = check_file(path)
        try:
            names = header(path)
        except (UnicodeError, EOFError, OSError) as exc:
            raise UnitError(f"{path}: cannot read the header line ({exc})") from None
        except InputError as exc:
            raise UnitError(str(exc).removeprefix(ERROR_MARK)) from None
        if fields["text_field"] not in names:
            raise UnitError(f"{path}: no column '{fields['text_field']}' in the header (columns: "
                            f"{', '.join(names)}); name the text column with --text-field")
        out.units.append(WorkUnit(ci, source, path, "csv-file", 0, 0, size))
        out.inputs[path] = {"read": "stream", "units": 1}

    def read(self, unit: WorkUnit, fields: dict, proc: DocumentSink, enough: Callable[[], bool]) -> None:
        path = unit.path
        name = fs.basename(path)
        records = read_items(path, rows(path))
        _, names = next(records)
        at = {key: names.index(fields[key]) for key in ("text_field", "id_field", "title_field", "genre_field")
              if fields.get(key) in names}
        for line, row in records:
            if len(row) != len(names):
                proc.drop("malformed_row")
                continue

            def opt(key: str, row=row) -> str | None:
                return row[at[key]] or None if key in at else None
            proc.plain_document(opt("id_field") or f"{name}@{line}", opt("title_field"), opt("genre_field"),
                                row[at["text_field"]])
            if enough():
                return


FORMAT = Delimited()
