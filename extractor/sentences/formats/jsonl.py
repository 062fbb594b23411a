"""JSON Lines: one JSON object a line with a text field (`--text-field`, and optional id,
title and genre fields); a plain file is cut into byte ranges of lines, a `.gz`/`.bz2` one
is one unit read as a stream. A dropped line is counted by reason and the first few are
listed with their file and line (`base.UnitLines`)."""
from __future__ import annotations

from typing import Callable

from extractor.sentences.formats.base import DocumentSink, InputFormat, UnitLines, read_items
from extractor.sentences.readers import json_document, jsonl_lines, line_problem
from extractor.sentences.units import Listing, WorkUnit, byte_ranges, check_file, unit_size
from extractor.io import fs

class Jsonl(InputFormat):
    name = "jsonl"
    suffixes = (".jsonl", ".json", ".ndjson")
    folder_suffixes = (".jsonl", ".json", ".ndjson", ".jsonl.gz", ".jsonl.bz2")
    kinds = ("jsonl-range", "jsonl-stream")

    def list_input(self, out: Listing, ci: int, source: int, path: str, unit_bytes: int, fields: dict) -> None:
        size = check_file(path)
        if path.endswith((".gz", ".bz2")):
            out.units.append(WorkUnit(ci, source, path, "jsonl-stream", 0, 0, size))
            out.inputs[path] = {"read": "stream", "units": 1}
        else:
            rs = byte_ranges(size, unit_size(size, unit_bytes))
            out.units += [WorkUnit(ci, source, path, "jsonl-range", k, lo, hi) for k, (lo, hi) in enumerate(rs)]
            out.inputs[path] = {"read": "byte-ranges", "units": len(rs), "unit_bytes": unit_size(size, unit_bytes)}

    def read(self, unit: WorkUnit, fields: dict, proc: DocumentSink, enough: Callable[[], bool]) -> None:
        path = unit.path
        name = fs.basename(path)
        lines = proc.unit_lines = UnitLines(unit)
        for offset, raw in read_items(path, jsonl_lines(path, unit.lo, unit.hi, unit.kind == "jsonl-stream")):
            at = lines.lines
            lines.lines += 1
            if raw.strip():
                lines.records += 1
            try:
                line = raw.decode("utf-8-sig" if offset == 0 else "utf-8")
            except UnicodeDecodeError as exc:
                proc.drop("invalid_utf8")
                message = f"not valid UTF-8 at byte {offset + exc.start} ({raw[exc.start:exc.start + 4]!r})"
                proc.bad_utf8(path, offset + exc.start, message)
                lines.drop(at, offset, "invalid_utf8", lambda message=message: message)
                continue
            doc = json_document(line, fields)
            if isinstance(doc, str):
                if doc == "empty_line":
                    continue
                if doc == "malformed_json" and not raw.endswith(b"\n") and offset + len(raw) >= fs.size(path):
                    doc = "truncated"  # the last line of a file cut off
                proc.drop(doc)
                lines.drop(at, offset, doc, lambda line=line, doc=doc: line_problem(line, doc, fields))
                continue
            doc_id, title, genre, text = doc
            proc.plain_document(doc_id or f"{name}@{offset}", title, genre, text)
            if enough():
                return


FORMAT = Jsonl()
