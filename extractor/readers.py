"""Readers: the pure-Python halves of turning input files into documents.

MediaWiki dumps are read as one record per page: Hadoop's TextInputFormat with the record
delimiter `</page>` (splittable over bzip2, so one dump is read by every core) hands each
record here, and `parse_page_record` parses that page's XML alone, so memory is bounded by
the largest page. UTF-16 dumps (which that byte-level split cannot handle) are streamed
through `stream_page_records`, which yields the same records. Text, JSONL and Parquet
corpora become documents with `plain_paragraphs`.

Every function here is Spark-free and unit-tested on its own.
"""
from __future__ import annotations

import bz2
import codecs
import gzip
import io
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

PAGE_DELIMITER = "</page>"
_PAGE_START = re.compile(r"<page[\s>]")
_ID = re.compile(r"<id>\s*(\d+)\s*</id>")
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)
_REDIRECT_TEXT = re.compile(r"^\s*#\s*(REDIRECT|REDIRECTARE|REDIRECCIÓN|REDIRECCION|REDIRECCIÓ|ПРЕНАСОЧВАНЕ)\b",
                            re.I)


@dataclass
class Page:
    page_id: str
    title: str
    ns: int
    redirect: bool
    text: str           # wikitext of the last revision ('' when deleted or missing)


@dataclass
class PageError:
    """A record that is not a well-formed page: counted and skipped, with its page id."""
    page_id: str | None
    reason: str         # 'malformed_xml' | 'no_page_element'
    detail: str


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def parse_page_record(record: str) -> Page | PageError | None:
    """One `</page>`-delimited record (the delimiter itself removed) -> a Page.
    Returns None for the dump's header-only or footer-only record (siteinfo, `</mediawiki>`)."""
    match = _PAGE_START.search(record)
    if match is None:
        rest = record.replace("</mediawiki>", "").strip()
        if not rest or rest.startswith("<mediawiki") or "<siteinfo" in rest or rest.startswith("<?xml"):
            return None  # the dump's head or tail, not a page
        idm = _ID.search(rest)
        return PageError(idm.group(1) if idm else None, "no_page_element", rest[:80])
    xml = record[match.start():] + PAGE_DELIMITER
    try:
        elem = ET.fromstring(xml)
    except ET.ParseError as exc:
        idm = _ID.search(xml)
        return PageError(idm.group(1) if idm else None, "malformed_xml", str(exc))
    return page_from_element(elem)


def page_from_element(elem) -> Page:
    """A <page> element of any export schema 0.8-0.11 (namespaced or not) -> Page, using the
    last revision (the newest timestamp; file order breaks ties)."""
    title, ns, page_id, redirect = "", 0, "", False
    best_key, best_text = None, ""
    for position, child in enumerate(elem):
        tag = _local(child.tag)
        if tag == "title":
            title = child.text or ""
        elif tag == "ns":
            ns = int((child.text or "0").strip() or 0)
        elif tag == "id":
            page_id = (child.text or "").strip()
        elif tag == "redirect":
            redirect = True
        elif tag == "revision":
            timestamp, text = "", ""
            for part in child:
                ptag = _local(part.tag)
                if ptag == "timestamp":
                    timestamp = (part.text or "").strip()
                elif ptag == "text":
                    text = part.text or ""
            key = (timestamp, position)
            if best_key is None or key >= best_key:
                best_key, best_text = key, text
    if not redirect and _REDIRECT_TEXT.match(best_text or ""):
        redirect = True
    return Page(page_id=page_id, title=title, ns=ns, redirect=redirect, text=best_text)


# --------------------------------------------------------------------------- encodings

BOMS = ((codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32"), (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def encoding_from_head(head: bytes) -> str:
    """The encoding of a dump from its first bytes: a BOM, or UTF-16 without BOM ('<\\0'),
    else UTF-8 (what every Wikimedia dump is)."""
    for bom, name in BOMS:
        if head.startswith(bom):
            return name
    if head[:2] == b"<\x00":
        return "utf-16-le"
    if head[:2] == b"\x00<":
        return "utf-16-be"
    return "utf-8"


def open_binary(path: str | Path):
    """A local file, decompressed when it ends in .bz2 or .gz (multistream bz2 included)."""
    path = str(path)
    if path.endswith(".bz2"):
        return bz2.open(path, "rb")
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def local_encoding(path: str | Path) -> str:
    with open_binary(path) as fh:
        return encoding_from_head(fh.read(4))


_BZ2_EOS = 0x177245385090  # bzip2 end-of-stream magic (48 bits, not byte-aligned)


def bz2_is_complete(path: str | Path) -> bool:
    """Whether a .bz2 file ends with a bzip2 end-of-stream marker. A download cut short
    does not; checking the last 11 bytes is cheap and spares a failed cluster job."""
    with open(path, "rb") as fh:
        fh.seek(0, io.SEEK_END)
        size = fh.tell()
        if size < 14:
            return False
        fh.seek(size - 11)
        tail = int.from_bytes(fh.read(11), "big")
    # marker (48 bits) + combined CRC (32 bits) + 0..7 padding bits end the stream
    for pad in range(8):
        if (tail >> (32 + pad)) & ((1 << 48) - 1) == _BZ2_EOS:
            return True
    return False


def stream_page_records(binary, encoding: str, chunk_chars: int = 1 << 20):
    """Yield `</page>`-delimited records (delimiter removed) from a binary stream, decoding
    as it goes: the fallback for encodings that Hadoop's byte splitting cannot read
    (UTF-16). Memory is bounded by the largest page plus one chunk."""
    text = io.TextIOWrapper(binary, encoding=encoding, newline="")
    buf = ""
    while True:
        chunk = text.read(chunk_chars)
        if not chunk:
            break
        buf += chunk
        start = 0
        while True:
            end = buf.find(PAGE_DELIMITER, start)
            if end < 0:
                break
            yield buf[start:end]
            start = end + len(PAGE_DELIMITER)
        buf = buf[start:]
    if buf.strip():
        yield buf


# --------------------------------------------------------------------------- plain text

_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")
_SPACES = re.compile(r"\s+")


def plain_paragraphs(text: str) -> list[str]:
    """Paragraphs of a plain-text document: a blank line ends a paragraph; the lines of one
    paragraph are joined with a space (hard-wrapped books and news)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in _BLANK_LINE.split(text):
        para = _SPACES.sub(" ", block).strip()
        if para:
            out.append(para)
    return out


def decode_utf8(data: bytes, name: str) -> str:
    """Strict UTF-8 (a BOM is dropped); the error names the file and the byte offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnicodeError(f"{name}: not valid UTF-8 at byte {exc.start} ({data[exc.start:exc.start + 4]!r}); "
                           f"convert it, e.g. iconv -f LATIN1 -t UTF-8") from None


def json_document(line: str, fields: dict):
    """One JSONL line -> (id, title, genre, text), or a reason string when it is skipped.
    `fields` maps text_field/id_field/title_field/genre_field to the record's keys."""
    line = line.strip()
    if not line:
        return "empty_line"
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return "malformed_json"
    if not isinstance(record, dict):
        return "malformed_json"
    text = record.get(fields["text_field"])
    if not isinstance(text, str):
        return "no_text_field"
    def opt(key):
        value = record.get(fields[key]) if fields.get(key) else None
        return None if value is None else str(value)
    return opt("id_field"), opt("title_field"), opt("genre_field"), text
