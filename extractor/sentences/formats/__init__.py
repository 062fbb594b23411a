"""The input formats, one module each, in one list (`FORMATS`): the job's `--input` and
`--manifest` read their names and file names (`extractor.job.inputs`), the driver lists
each input's work units with its format (`list_units`), a task reads a unit with the
format of its kind (`for_unit`). A new format is one module (an `InputFormat`) and its
line here.

    format      files                            work units
    mediawiki   .xml, .xml.bz2, .xml.gz          byte ranges (UTF-8), else one stream
    jsonl       .jsonl, .json, .ndjson (.gz)     byte ranges of lines (.gz/.bz2: one stream)
    parquet     .parquet                         groups of consecutive row groups
    text        .txt, a folder of them           groups of consecutive files
    csv         .csv, .tsv (.gz, .bz2)           one stream per file
"""
from __future__ import annotations

from extractor.sentences.formats import delimited, jsonl, mediawiki, parquet, text
from extractor.sentences.formats.base import InputFormat
from extractor.sentences.units import Listing, UnitError, WorkUnit
from extractor.io import fs

# in this order a folder's files are looked at (`of_files`) and a name's suffixes taken off (corpus names)
FORMATS: tuple[InputFormat, ...] = (mediawiki.FORMAT, jsonl.FORMAT, parquet.FORMAT, text.FORMAT, delimited.FORMAT)
NAMES = tuple(f.name for f in FORMATS)
_BY_NAME = {f.name: f for f in FORMATS}
_BY_KIND = {kind: f for f in FORMATS for kind in f.kinds}
COMPRESSED = (".bz2", ".gz")
# the format of a folder of files of no other format (the bundled samples are folders of dumps)
FOLDER_DEFAULT = next(f for f in FORMATS if f.reads_folders)


def get(name: str) -> InputFormat:
    """The format named `name` (a manifest's `format:`); a `UnitError` names the known ones."""
    found = _BY_NAME.get(name)
    if found is None:
        raise UnitError(f"unknown format '{name}'; use one of {', '.join(NAMES)}")
    return found


def for_unit(unit: WorkUnit) -> InputFormat:
    """The format that reads work unit `unit` (by its kind, which its format listed)."""
    return _BY_KIND[unit.kind]


def from_name(path: str) -> InputFormat | None:
    """The format a file name says (`.bz2`/`.gz` taken off first), or None."""
    low = path.lower()
    for suffix in COMPRESSED:
        low = low.removesuffix(suffix)
    return next((f for f in FORMATS if low.endswith(f.suffixes)), None)


def of_files(names: list[str]) -> InputFormat:
    """The format of a folder holding files `names`: the first format, in list order, one
    of whose files it holds; else `FOLDER_DEFAULT`."""
    lowered = [name.lower() for name in names]
    for fmt in FORMATS:
        if fmt is not FOLDER_DEFAULT and any(name.endswith(fmt.files_of_folder()) for name in lowered):
            return fmt
    return FOLDER_DEFAULT


def list_units(corpora, unit_bytes: int, fields_of) -> Listing:
    """The work units of every input of `corpora` (CorpusSpec list), in input order.
    `fields_of(spec)` gives the corpus's text_field/id_field/... mapping."""
    out = Listing()
    source = 0
    for ci, spec in enumerate(corpora):
        fmt = _BY_NAME.get(spec.format)
        if fmt is None:
            raise UnitError(f"corpus {spec.name}: unknown format '{spec.format}'")
        for path in spec.paths:
            path = fs.canonical(path)  # executors may run in another directory
            try:
                fmt.list_input(out, ci, source, path, unit_bytes, fields_of(spec))
            except fs.FsError as exc:  # the user's file: missing, unreadable, gone
                raise UnitError(str(exc)) from None
            source += 1
    return out
