"""One dump read by many tasks: Hadoop splits over bzip2 (plain and multistream) and plain
XML lose no page and duplicate none, whatever the split size."""
from __future__ import annotations

import bz2

import pytest

from extractor.readers import PAGE_DELIMITER, Page, open_binary, parse_page_record, stream_page_records
from extractor.sentences_stage import _hadoop_text
from tests.conftest import shared_file

pytestmark = pytest.mark.spark


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
    expected = [p.page_id for p in (parse_page_record(r) for r in stream_page_records(open_binary(src), "utf-8")) if p]
    return {"bz2": str(src), "plain": str(root / "plain.xml"), "multistream": str(root / "multistream.xml.bz2"),
            "expected": expected}


@pytest.mark.parametrize("kind,split_bytes", [("bz2", 32 << 10), ("bz2", 64 << 20), ("multistream", 40 << 10),
                                              ("plain", 100 << 10)])
def test_splits_lose_and_duplicate_no_page(spark, dumps, kind, split_bytes):
    rdd = _hadoop_text(spark.sparkContext, dumps[kind], PAGE_DELIMITER, split_bytes).values()
    if split_bytes < 1 << 20:
        assert rdd.getNumPartitions() > 10  # really many tasks over one file
    ids = _ids(rdd)
    assert len(ids) == 206
    assert sorted(ids) == sorted(dumps["expected"])
