"""Plain text: a `.txt` file, or a folder of them, one document per file (paragraphs
separated by a blank line), read in groups of consecutive files."""
from __future__ import annotations

from typing import Callable

from extractor.sentences.formats.base import DocumentSink, InputFormat
from extractor.sentences.units import MAX_FILES_PER_UNIT, Listing, UnitError, WorkUnit, check_file
from extractor.io import fs


class Text(InputFormat):
    name = "text"
    suffixes = (".txt",)
    kinds = ("text-files",)
    reads_folders = True

    def list_input(self, out: Listing, ci: int, source: int, path: str, unit_bytes: int, fields: dict) -> None:
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

    def read(self, unit: WorkUnit, fields: dict, proc: DocumentSink, enough: Callable[[], bool]) -> None:
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


FORMAT = Text()
