"""One dump read by many tasks: Hadoop splits over bzip2 (plain and multistream) and plain
XML lose no page and duplicate none, whatever the split size."""
from __future__ import annotations

import bz2

import pytest

import os

from extractor.documents.readers import (PAGE_DELIMITER, Page, open_binary, parse_page_record, split_records,
                               stream_page_records)
from extractor.spark.sentences_stage import _hadoop_text
from tests.conftest import shared_file



def _ids(rdd):
    def page_id(p):
        return p.page_id if isinstance(p, Page) else f"error:{p.page_id}"
    return rdd.map(parse_page_record).filter(lambda p: p is not None).map(page_id).collect()


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
@pytest.mark.parametrize("split_bytes", [7_000, 50_000, 1 << 20, 64 << 20])
def test_python_byte_range_splits_lose_and_duplicate_no_page(dumps, kind, split_bytes):
    path = dumps[kind]
    size = os.path.getsize(path)
    ids = []
    for lo in range(0, size, split_bytes):
        for record in split_records(path, lo, min(size, lo + split_bytes)):
            page = parse_page_record(record)
            ids.append(page.page_id if isinstance(page, Page) else "error")
    assert ids == dumps["expected"] if split_bytes > size else sorted(ids) == sorted(dumps["expected"])
    assert len(ids) == 206


def test_python_splits_report_a_truncated_bz2(tmp_path, dumps):
    data = open(dumps["bz2"], "rb").read()
    cut = tmp_path / "cut.xml.bz2"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises((EOFError, OSError)):
        for lo in range(0, len(data) // 2, 100_000):
            list(split_records(str(cut), lo, min(len(data) // 2, lo + 100_000)))


@pytest.mark.spark
@pytest.mark.parametrize("kind,split_bytes", [("bz2", 32 << 10), ("bz2", 64 << 20), ("multistream", 40 << 10),
                                              ("plain", 100 << 10)])
def test_splits_lose_and_duplicate_no_page(spark, dumps, kind, split_bytes):
    rdd = _hadoop_text(spark.sparkContext, dumps[kind], PAGE_DELIMITER, split_bytes).values()
    if split_bytes < 1 << 20:
        assert rdd.getNumPartitions() > 10  # really many tasks over one file
    ids = _ids(rdd)
    assert len(ids) == 206
    assert sorted(ids) == sorted(dumps["expected"])
