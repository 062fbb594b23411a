"""One dump read by many work units: byte ranges of bzip2 blocks (plain and multistream)
and of plain XML lose no page and duplicate none, whatever the unit size; files read
through a URI (file://, and an fsspec filesystem) give the same pages."""
from __future__ import annotations

import bz2
import os

import pytest

from extractor.io import fs
from extractor.sentences.readers import (PAGE_DELIMITER, Page, PageError, open_binary, parse_page_record,
                                         stream_page_records, wiki_unit_pages)
from tests.conftest import shared_file


@pytest.fixture(scope="module")
def dumps(tmp_path_factory):
    src = shared_file("dumps/enwiki-sample-206pages.xml.bz2")
    xml = bz2.open(src).read().decode("utf-8")
    root = tmp_path_factory.mktemp("dumps")
    (root / "plain.xml").write_text(xml, encoding="utf-8")
    # Multistream layout as Wikimedia publishes it: header, pages in independent streams, footer.
    head, rest = xml.split("<page>", 1)
    pages = ("<page>" + rest).split(PAGE_DELIMITER)
    tail = pages.pop()
    pages = [p + PAGE_DELIMITER for p in pages]
    data = bz2.compress(head.encode())
    for i in range(0, len(pages), 9):
        data += bz2.compress("".join(pages[i:i + 9]).encode())
    data += bz2.compress(tail.encode())
    (root / "multistream.xml.bz2").write_bytes(data)
    # Streams of several 100 kB blocks (level 1), with an empty stream among them: block
    # ends at stream boundaries that are not the common EOS-then-next-header layout.
    data = bz2.compress(head.encode(), 1)
    for i in range(0, len(pages), 40):
        data += bz2.compress("".join(pages[i:i + 40]).encode(), 1)
        if i == 80:
            data += bz2.compress(b"", 1)
    data += bz2.compress(tail.encode(), 1)
    (root / "multiblock.xml.bz2").write_bytes(data)
    expected = [p.page_id for p in (parse_page_record(r) for r in stream_page_records(open_binary(src), "utf-8")) if p]
    return {"bz2": str(src), "plain": str(root / "plain.xml"), "multistream": str(root / "multistream.xml.bz2"),
            "multiblock": str(root / "multiblock.xml.bz2"), "expected": expected}


@pytest.mark.parametrize("kind", ["bz2", "multistream", "multiblock", "plain"])
@pytest.mark.parametrize("unit_bytes", [7_000, 50_000, 1 << 20, 64 << 20])
def test_work_units_lose_and_duplicate_no_page(dumps, kind, unit_bytes):
    path = dumps[kind]
    size = os.path.getsize(path)
    ids = []
    for lo in range(0, size, unit_bytes):
        for page in wiki_unit_pages(path, lo, min(size, lo + unit_bytes)):
            ids.append(page.page_id if isinstance(page, Page) else "error")
    assert ids == dumps["expected"] if unit_bytes > size else sorted(ids) == sorted(dumps["expected"])
    assert len(ids) == 206


@pytest.mark.parametrize("kind", ["multistream", "plain"])
def test_a_uri_reads_the_same_pages(dumps, kind):
    path = dumps[kind]
    size = os.path.getsize(path)
    local = [p.page_id for lo in range(0, size, 200_000) for p in wiki_unit_pages(path, lo, min(size, lo + 200_000))]
    via_uri = [p.page_id for lo in range(0, size, 200_000)
               for p in wiki_unit_pages("file://" + path, lo, min(size, lo + 200_000))]
    assert local == via_uri and len(local) == 206
    pytest.importorskip("fsspec")
    fs.write_bytes(f"memory://dumps/{kind}", open(path, "rb").read())
    suffix = ".xml.bz2" if kind != "plain" else ".xml"
    fs.move(f"memory://dumps/{kind}", f"memory://dumps/{kind}{suffix}")
    in_memory = [p.page_id for lo in range(0, size, 200_000)
                 for p in wiki_unit_pages(f"memory://dumps/{kind}{suffix}", lo, min(size, lo + 200_000))]
    assert in_memory == local


def test_a_cut_plain_dump_reports_its_last_page_as_truncated(dumps, tmp_path):
    data = open(dumps["plain"], "rb").read()
    cut = tmp_path / "cut.xml"
    cut.write_bytes(data[: len(data) // 2])
    size = len(data) // 2
    got = [p for lo in range(0, size, 300_000) for p in wiki_unit_pages(str(cut), lo, min(size, lo + 300_000))]
    errors = [p for p in got if isinstance(p, PageError)]
    assert [e.reason for e in errors] == ["truncated"]
    assert errors[0].offset == data.rfind(b"<page", 0, size)  # the byte where the cut page starts
    assert len(got) == data[:size].count(b"<page>")
