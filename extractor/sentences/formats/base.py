"""What an input format is (`InputFormat`: its name, its file names, the kinds of work unit
it lists and reads) and what its reader feeds (`DocumentSink`, a
`process.DocumentProcessor`). Each format is one module of this package;
`extractor.sentences.formats` lists them."""
from __future__ import annotations

from collections import Counter
from typing import Callable, ClassVar, Iterable, Protocol

from extractor.core.errors import ERROR_MARK, InputError
from extractor.sentences.readers import CorruptData
from extractor.sentences.units import Listing, WorkUnit
from extractor.io import fs

MAX_LISTED_LINES = 20   # dropped JSONL lines listed with their file and line in stats.json


class UnitLines:
    """The lines of one work unit read line by line (JSONL): how many start in it
    (numbered from 0 within the unit; the driver adds the lines of the file's units before
    it, `first_line_numbers`), how many are records (not blank), those dropped by reason,
    and the first MAX_LISTED_LINES dropped: (line in unit, byte offset, reason, what is
    wrong)."""

    def __init__(self, unit: WorkUnit):
        self.unit = unit
        self.lines = 0
        self.records = 0
        self.dropped: Counter = Counter()
        self.listed: list[tuple[int, int, str, str]] = []

    def drop(self, line: int, offset: int, reason: str, problem) -> None:
        """Line `line` of the unit, at byte `offset`, dropped; `problem()` says why (called
        only for the listed lines)."""
        self.dropped[reason] += 1
        if len(self.listed) < MAX_LISTED_LINES:
            self.listed.append((line, offset, reason, problem()))

    def count_rows(self, corpus: str) -> list[tuple]:
        """Count rows (see `process.sum_counts`): one `jsonl_unit` row, one `dropped_line` per listed line."""
        u = self.unit
        rows = [(corpus, "jsonl_unit", u.path, self.lines,
                 {"source": u.source, "unit": u.index, "records": self.records, "dropped": dict(self.dropped)})]
        rows += [(corpus, "dropped_line", u.path, offset, {"source": u.source, "unit": u.index, "line": line,
                                                           "reason": reason, "detail": problem})
                 for line, offset, reason, problem in self.listed]
        return rows


class DocumentSink(Protocol):
    """What a reader hands the documents of its unit to (`process.DocumentProcessor`)."""
    counts: Counter
    warnings: list
    unit_lines: UnitLines | None

    def wiki_page(self, page, path: str) -> None: ...

    def plain_document(self, doc_key: str, title: str | None, genre: str | None, text: str | None) -> None: ...

    def drop(self, reason: str, n: int = 1) -> None: ...

    def bad_utf8(self, path: str, offset: int, message: str) -> None: ...


class InputFormat:
    """One input format. `name`: its `format:` in a manifest; `suffixes`: the file names
    that say it (`.bz2`/`.gz` taken off first), `folder_suffixes` the files of a folder it
    reads (default: `suffixes`); `kinds`: the `WorkUnit.kind`s it lists and reads;
    `genre`: a corpus's default genre. `list_input` adds the work units of one input
    (a file, or a folder for a format whose `reads_folders`) to a listing; `read` feeds the
    documents of one unit to a sink (`fields`: the corpus's text_field/id_field/...)."""
    name: ClassVar[str]
    suffixes: ClassVar[tuple[str, ...]]
    folder_suffixes: ClassVar[tuple[str, ...]] = ()
    kinds: ClassVar[tuple[str, ...]]
    genre: ClassVar[str] = "unknown"
    reads_folders: ClassVar[bool] = False  # a folder is one input (its files read together)

    def files_of_folder(self) -> tuple[str, ...]:
        return self.folder_suffixes or self.suffixes

    def list_input(self, out: Listing, ci: int, source: int, path: str, unit_bytes: int, fields: dict) -> None:
        raise NotImplementedError

    def read(self, unit: WorkUnit, fields: dict, proc: DocumentSink, enough: Callable[[], bool]) -> None:
        raise NotImplementedError


def read_items(path: str, items: Iterable):
    """What a reader yields from the user's file `path`, its damage met while reading it
    (corrupt or truncated compressed data, text that is not in its encoding, the file
    gone) raised as one marked line that names the file (`ERROR_MARK`: the driver prints
    it). What the caller does with each item is outside: a failure there is its own."""
    iterator = iter(items)
    while True:
        try:
            item = next(iterator)
        except StopIteration:
            return
        except (CorruptData, UnicodeError, EOFError, fs.FsError) as exc:
            raise damaged(path, exc) from None
        yield item


def damaged(path: str, exc: BaseException) -> InputError:
    if isinstance(exc, CorruptData):
        return InputError(f"{ERROR_MARK}{path}: {exc}; the file is damaged: download it again")
    msg = str(exc) if str(exc).startswith(path) else f"{path}: {exc}"
    return InputError(f"{ERROR_MARK}{msg}")
