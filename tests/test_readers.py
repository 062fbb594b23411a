"""Readers without Spark: page records, encodings, bz2 completeness, plain text, JSONL."""
from __future__ import annotations

import bz2
import codecs

import mwxml
import pytest

from extractor.sentences.readers import (Page, PageError, bz2_is_complete, encoding_from_head, json_document,
                                         open_binary, page_from_bytes, parse_page_record, plain_paragraphs,
                                         stream_page_records)
from tests.conftest import shared_file

PAGE = """  <page>
    <title>{title}</title>
    <ns>{ns}</ns>
    <id>{id}</id>{redirect}
    <revision>
      <id>10</id>
      <timestamp>2020-01-02T00:00:00Z</timestamp>
      <text bytes="5" xml:space="preserve">{text}</text>
    </revision>
  </page>"""


def page(title="Bucureşti", ns=0, id=7, text="Bucureşti este capitala &amp; cel mai mare oraș.", redirect=""):
    return PAGE.format(title=title, ns=ns, id=id, text=text, redirect=redirect)


def records(xml: str, encoding="utf-8"):
    import io
    return list(stream_page_records(io.BytesIO(xml.encode(encoding)), encoding))


def test_page_record_gives_title_ns_id_and_unescaped_text():
    rec = page().rsplit("</page>", 1)[0]
    got = parse_page_record(rec)
    assert got == Page(page_id="7", title="Bucureşti", ns=0, redirect=False,
                       text="Bucureşti este capitala & cel mai mare oraș.")


def test_redirect_element_and_redirect_text_both_mark_redirects():
    rec = page(redirect='\n    <redirect title="Foo" />').rsplit("</page>", 1)[0]
    assert parse_page_record(rec).redirect
    rec = page(text="#REDIRECTARE [[București]]").rsplit("</page>", 1)[0]
    assert parse_page_record(rec).redirect
    rec = page(text="#redirect [[Foo]]").rsplit("</page>", 1)[0]
    assert parse_page_record(rec).redirect


def test_header_and_footer_records_are_not_pages():
    head = '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11">\n<siteinfo><sitename>W</sitename></siteinfo>\n'
    dump = head + page(id=1) + "\n" + page(id=2, title="Iaşi") + "\n</mediawiki>\n"
    parsed = [parse_page_record(r) for r in records(dump)]
    assert [p.page_id for p in parsed if p is not None] == ["1", "2"]
    assert parsed[-1] is None  # the </mediawiki> tail


def test_malformed_page_is_an_error_with_its_page_id():
    bad = page(id=42, text="unclosed <b> tag").replace("</title>", "")  # broken XML
    got = parse_page_record(bad.rsplit("</page>", 1)[0])
    assert isinstance(got, PageError)
    assert got.page_id == "42" and got.reason == "malformed_xml"


def test_last_revision_is_used_in_export_0_8():
    path = shared_file("dumps/mwxml-tiny-export-0.8.xml")
    pages = [p for p in (parse_page_record(r) for r in stream_page_records(open_binary(path), "utf-8")) if p]
    assert [(p.title, p.ns, p.text) for p in pages] == [("Foo", 0, "Revision 2 text"), ("Bar", 1, "Revision 3 text")]


def test_last_revision_is_the_newest_timestamp_not_file_order():
    rev = "<revision><id>{i}</id><timestamp>{t}</timestamp><text>{x}</text></revision>"
    xml = ("<page><title>T</title><ns>0</ns><id>3</id>" + rev.format(i=2, t="2021-01-01T00:00:00Z", x="new")
           + rev.format(i=1, t="2019-01-01T00:00:00Z", x="old") + "</page>")
    assert parse_page_record(xml[: -len("</page>")]).text == "new"


def test_stream_reader_finds_every_page_of_the_real_dump_like_mwxml():
    path = shared_file("dumps/enwiki-sample-206pages.xml.bz2")
    ours = [p for p in (parse_page_record(r) for r in stream_page_records(open_binary(path), "utf-8")) if p]
    theirs = list(mwxml.Dump.from_file(bz2.open(path)))
    assert [p.page_id for p in ours] == [str(p.id) for p in theirs]
    assert [p.title for p in ours] == [p.title for p in theirs]
    assert sum(p.redirect for p in ours) == sum(p.redirect is not None for p in theirs)


def test_utf16_dump_is_detected_and_streamed():
    path = shared_file("dumps/bgwiki-sample-utf16.xml.bz2")
    with open_binary(path) as fh:
        assert encoding_from_head(fh.read(4)) == "utf-16"
    pages = [p for p in (parse_page_record(r) for r in stream_page_records(open_binary(path), "utf-16")) if p]
    assert len(pages) == 3 and [p.ns for p in pages].count(0) == 1
    main = next(p for p in pages if p.ns == 0)
    assert any("\u0400" <= ch <= "\u04ff" for ch in main.text)  # Cyrillic survived decoding


def test_stream_reader_is_not_confused_by_chunk_boundaries():
    dump = "<mediawiki>" + "".join(page(id=i, title=f"Pagină {i}") for i in range(50)) + "</mediawiki>"
    for chunk in (1, 7, 64, 1 << 20):
        import io
        got = [parse_page_record(r) for r in stream_page_records(io.BytesIO(dump.encode("utf-16")), "utf-16", chunk)]
        assert [p.page_id for p in got if p] == [str(i) for i in range(50)]


@pytest.mark.parametrize("head,expected", [
    (codecs.BOM_UTF16_LE + b"<\x00", "utf-16"), (codecs.BOM_UTF16_BE + b"\x00<", "utf-16"),
    (b"<\x00m\x00", "utf-16-le"), (codecs.BOM_UTF8 + b"<", "utf-8-sig"), (b"<med", "utf-8"),
])
def test_encoding_from_head(head, expected):
    assert encoding_from_head(head) == expected


def test_bz2_completeness_check(tmp_path):
    whole = bz2.compress(("<mediawiki>" + page() * 200 + "</mediawiki>").encode())
    (tmp_path / "ok.xml.bz2").write_bytes(whole)
    (tmp_path / "multi.xml.bz2").write_bytes(whole + bz2.compress(b"more"))
    assert bz2_is_complete(tmp_path / "ok.xml.bz2") and bz2_is_complete(tmp_path / "multi.xml.bz2")
    for cut in (len(whole) // 3, len(whole) - 1, len(whole) - 5):
        (tmp_path / "cut.xml.bz2").write_bytes(whole[:cut])
        assert not bz2_is_complete(tmp_path / "cut.xml.bz2")
    assert bz2_is_complete(shared_file("dumps/enwiki-sample-206pages.xml.bz2"))


def test_plain_paragraphs_split_on_blank_lines_and_join_wrapped_lines():
    text = "Primul rând\ncontinuă aici.\n\n  \nAl doilea paragraf.\r\n\r\nAl treilea,\r\nfinal.\n"
    assert plain_paragraphs(text) == ["Primul rând continuă aici.", "Al doilea paragraf.", "Al treilea, final."]
    assert plain_paragraphs("\n\n \n") == []


def test_json_document_fields_and_skips():
    fields = {"text_field": "body", "id_field": "uid", "title_field": "headline", "genre_field": "section"}
    assert json_document('{"body": "Text.", "uid": 5, "headline": "H", "section": "news"}', fields) == ("5", "H", "news", "Text.")
    assert json_document('{"body": "Text."}', fields) == (None, None, None, "Text.")
    assert json_document("{not json", fields) == "malformed_json"
    assert json_document('{"text": "wrong field"}', fields) == "no_text_field"
    assert json_document("   ", fields) == "empty_line"
    assert json_document("[1, 2]", fields) == "malformed_json"


# --------------------------------------------------------------------------- work-unit readers

def test_jsonl_byte_ranges_lose_and_duplicate_no_line(tmp_path):
    from extractor.sentences.readers import jsonl_lines

    lines = [f'{{"id": {i}, "text": "{"x" * (i * 37 % 300)}"}}\n'.encode() for i in range(400)]
    last = b'{"id": "last", "text": "no newline"}'
    data = b"".join(lines) + last
    path = tmp_path / "a.jsonl"
    path.write_bytes(data)
    expected = [(data.index(line), line) for line in lines] + [(len(data) - len(last), last)]
    for unit in (1, 50, 997, 10_000, 1 << 20):
        got = [x for lo in range(0, len(data), unit) for x in jsonl_lines(str(path), lo, min(len(data), lo + unit), False)]
        assert got == expected, unit


def test_file_bytes_finds_across_windows_with_bounded_memory(tmp_path):
    from extractor.io import fs

    data = bytes(range(256)) * 40_000 + b"NEEDLE" + bytes(10)
    (tmp_path / "f.bin").write_bytes(data)
    with fs.FileBytes(str(tmp_path / "f.bin"), chunk=1 << 16, keep=1 << 16) as view:
        assert view.find(b"NEEDLE", 5) == data.find(b"NEEDLE")
        assert len(view._buf) <= 3 << 16  # never the whole file
        assert view[100:110] == data[100:110] and view[-3] == data[-3]
        assert view.find(b"NEEDLE", 0, 1000) == -1


def test_records_report_a_page_cut_off_and_the_closing_tag():
    from extractor.sentences.readers import records_from_chunks

    text = ("<mediawiki>" + page(id=1) + page(id=2)).encode()
    state: dict = {}
    got = list(records_from_chunks(iter([text, b"</mediawiki>\n"]), iter(()), state))
    assert len(got) == 2 and state["open_page"] is None and state["closed"]
    cut = text[: text.rindex(b"<page>") + 30]
    got = list(records_from_chunks(iter([cut[i:i + 7] for i in range(0, len(cut), 7)]), iter(()), state))
    assert len(got) == 1 and state["open_page"] == text.rindex(b"<page>") and not state["closed"]


def test_dump_head_and_end_of_the_real_truncated_dumps():
    from extractor.sentences.readers import dump_end_is_closed, read_head, site_namespaces

    for name in ("ukwiki", "viwiki"):
        path = str(shared_file(f"dumps/{name}-truncated-100k.xml.bz2"))
        assert dump_end_is_closed(path) is False  # cut off mid-page inside a valid bzip2 container
        assert b"</siteinfo>" in read_head(path) and site_namespaces(read_head(path).decode())[6]
    assert dump_end_is_closed(str(shared_file("dumps/enwiki-sample-206pages.xml.bz2"))) is True


@pytest.mark.parametrize("insert", [
    "plain".encode(), "Iaşi, Ţara Românească — „citat”".encode(), b"\x80", b"\xc0\xaf", b"\xed\xa0\x80",
    b"\xef\xbf\xbe", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xe2\x82", b"\x01", b"\x00",
    "\u2028 \U0001F600".encode(), b"&bogus;", b"&#xD800;", b"<b>unclosed", b"]]>",
])
def test_page_bytes_read_as_the_decoded_page_would_be(insert):
    """page_from_bytes parses well-formed UTF-8 pages from their bytes: every record gives
    what decoding it and parsing the text gives (the page, invalid_utf8 with its offset
    and bytes, or malformed_xml), for the bytes expat and Python's decoder judge alike
    and for those only one of them refuses (surrogates, overlong forms, noncharacters)."""
    def reference(raw, offset):
        try:
            record = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            return PageError("9", "invalid_utf8", f"not valid UTF-8 at byte {offset + exc.start} "
                                                  f"({raw[exc.start:exc.start + 4]!r})", offset + exc.start)
        return parse_page_record(record)

    for raw in (page(id=9, text="Before ").encode().rsplit(b"</page>", 1)[0].replace(b"Before ", b"Before " + insert),
                page(id=9, title="T").encode().rsplit(b"</page>", 1)[0].replace(b"<title>T", b"<title>T" + insert),
                page(id=9).replace("<ns>0", "<ns>x").encode().rsplit(b"</page>", 1)[0]):
        raw = raw.lstrip()
        got = page_from_bytes(raw, 100, lambda at: f"byte {at}")
        assert got == reference(raw, 100), (insert, raw[:120])


def test_decompressing_blocks_keeps_no_memory():
    """`decompress_block` reads each block with indexed_bzip2 from an in-memory file
    descriptor: given a Python file object, indexed_bzip2 1.7 keeps references to it
    forever (about 6 KiB a block: a worker grew with the dump). Over 60 blocks, Python
    holds no more memory afterwards than before, and each block's text is libbz2's."""
    import tracemalloc

    from extractor.sentences import readers

    data = shared_file("dumps/enwiki-sample-206pages.xml.bz2").read_bytes()
    starts = list(readers._block_starts(data, 0))
    first, end = starts[0], readers._block_end(data, starts[0], starts[1] if len(starts) > 1 else None)
    expected = bz2.decompress(readers.block_stream(data, first, end))
    assert readers.decompress_block(data, first, end) == expected
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(60):
            readers.decompress_block(data, first, end)
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, grown
