"""Work units: what the driver hands to Spark tasks in stage 1, one task reading one unit.

    MediaWiki dump, UTF-8, .xml or .xml.bz2   byte ranges (bzip2 blocks, multistream too)
    MediaWiki dump, UTF-16 or .gz             one unit, read as a stream
    JSONL                                     byte ranges of lines (.gz/.bz2: one unit)
    a folder of .txt files                    groups of consecutive files
    Parquet                                   groups of consecutive row groups
    CSV/TSV                                   one unit per file, read as a stream

Each format lists its own units (`extractor/sentences/formats/`, one module a format;
`formats.list_units` lists every input); this module holds what they share. A unit's
size depends on its file alone (`unit_bytes`, smaller for a small file so that
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
from extractor.sentences.readers import bz2_is_complete
from extractor.core.errors import UserError

UNITS_WANTED = 32       # a small file is cut into about this many units (of at least MIN_UNIT bytes)
MIN_UNIT = 1 << 20
MAX_FILES_PER_UNIT = 1000


class UnitError(UserError, ValueError):
    """An input that cannot be listed; the message is one line and names the file."""


@dataclass(frozen=True)
class WorkUnit:
    corpus: int            # index of the corpus in the job's corpus list
    source: int            # index of the input (file or folder) in the job: names the file
    path: str              # the file (or the folder of a text group)
    kind: str              # its format's way of reading it (`InputFormat.kinds`): wiki-range | wiki-stream | ...
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


def byte_ranges(size: int, unit: int) -> list[tuple[int, int]]:
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
