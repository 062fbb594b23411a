"""MediaWiki XML dumps (`pages-articles`): a UTF-8 `.xml` or `.xml.bz2` is cut into byte
ranges (bzip2 blocks, multistream too), a UTF-16 or `.gz` one is one unit read as a
stream (`extractor.sentences.readers`)."""
from __future__ import annotations

from typing import Callable

from extractor.sentences.formats.base import DocumentSink, InputFormat, read_items
from extractor.sentences.readers import (CorruptData, dump_end_is_closed, encoding_from_head, read_head,
                                         site_namespaces, stream_pages, wiki_unit_pages)
from extractor.sentences.units import Listing, UnitError, WorkUnit, byte_ranges, check_file, unit_size

CUT_OFF = ("the dump does not end with </mediawiki>: it was cut off (a failed download?); the pages before the "
           "cut are read, a page cut in the middle is counted as documents_dropped.truncated")


class MediaWiki(InputFormat):
    name = "mediawiki"
    suffixes = (".xml",)
    folder_suffixes = (".xml", ".xml.bz2", ".xml.gz")
    kinds = ("wiki-range", "wiki-stream")
    genre = "wikipedia"

    def list_input(self, out: Listing, ci: int, source: int, path: str, unit_bytes: int, fields: dict) -> None:
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
            rs = byte_ranges(size, unit)
            out.units += [WorkUnit(ci, source, path, "wiki-range", k, lo, hi) for k, (lo, hi) in enumerate(rs)]
            out.inputs[path] = {"read": "byte-ranges", "units": len(rs), "unit_bytes": unit}
            if dump_end_is_closed(path) is False:
                out.counts.append((ci, "inputs_damaged", "no_closing_tag", 1))
                out.warnings.append(f"{path}: {CUT_OFF}")
            return
        out.units.append(WorkUnit(ci, source, path, "wiki-stream", 0, 0, size, encoding=encoding))
        out.inputs[path] = {"read": "stream:" + encoding, "units": 1}
        if not encoding.startswith("utf-8"):
            out.warnings.append(f"{path}: {encoding} dump read by one task (byte ranges need UTF-8); for parallel "
                                f"reading convert it: bzcat FILE | iconv -f {encoding.upper()} -t UTF-8 | bzip2 > NEW")

    def read(self, unit: WorkUnit, fields: dict, proc: DocumentSink, enough: Callable[[], bool]) -> None:
        path = unit.path
        state: dict = {}
        pages = (wiki_unit_pages(path, unit.lo, unit.hi, state) if unit.kind == "wiki-range"
                 else stream_pages(path, unit.encoding, state))
        for page in read_items(path, pages):
            proc.wiki_page(page, path)
            if enough():
                return
        if unit.kind == "wiki-stream" and not state.get("closed"):
            proc.counts["inputs_damaged", "no_closing_tag"] += 1
            proc.warnings.append((path, f"{path}: {CUT_OFF}"))


FORMAT = MediaWiki()
