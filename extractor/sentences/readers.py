"""Readers: the pure-Python halves of turning input files into documents, one work unit
at a time (see `extractor/sentences/units.py` for how the driver lists the units).

A MediaWiki dump is read as page records: bytes from `<page` up to `</page>`. A work unit
of a UTF-8 dump is a byte range: of bzip2 blocks (`.xml.bz2`, multistream too; each block
is decompressed on its own: its own blocks whole by indexed_bzip2's decoder, the blocks
after them, read only as far as the unit's last page needs, in pieces by libbz2) or of the
plain file (`.xml`). A unit
keeps the pages whose `<page` starts in its range and reads on only to finish its last
page, so no page is lost or read twice whatever the unit size. Each record is parsed on
its own (`parse_page_record`), so memory is bounded by the largest page. A UTF-16 dump, or
a gzip one, is one unit read as a stream (`stream_page_records`, `stream_pages`).

The readers know where a page, a stream and a document end, and say what they could not
read instead of dropping it silently: a page cut off by the end of the data is a
`PageError("truncated")`, a page that is not UTF-8 a `PageError("invalid_utf8")` with the
byte offset, a page that is not well-formed XML a `PageError("malformed_xml")`; a corrupt
bzip2 block raises `CorruptData` naming its byte offset; `dump_end_is_closed` checks for
the closing `</mediawiki>`. Text, JSONL and Parquet corpora become documents with
`plain_paragraphs` and `json_document`; a JSONL line it drops is described by
`line_problem` and located by its unit's line count (`first_line_numbers`).

Every file is opened through `extractor.io.fs` (local paths and URIs alike). Every function
here is Spark-free and unit-tested on its own.
"""
from __future__ import annotations

import bz2
import codecs
import html
import io
import json
import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import indexed_bzip2

from extractor.io import fs

PAGE_DELIMITER = "</page>"
_PAGE_CLOSE = PAGE_DELIMITER.encode()
_PAGE_START = re.compile(r"<page[\s>]")
_ID = re.compile(r"<id>\s*(\d+)\s*</id>")
_ID_BYTES = re.compile(rb"<id>\s*(\d+)\s*</id>")
_REDIRECT_TEXT = re.compile(r"^\s*#\s*(REDIRECT|REDIRECTARE|REDIRECCIÓN|REDIRECCION|REDIRECCIÓ|ПРЕНАСОЧВАНЕ)\b",
                            re.I)
END_TAG = b"</mediawiki>"


@dataclass
class Page:
    page_id: str
    title: str
    ns: int
    redirect: bool
    text: str           # wikitext of the last revision ('' when deleted or missing)


@dataclass
class PageError:
    """A record that is not a readable page: counted and skipped, with its page id."""
    page_id: str | None
    reason: str         # 'malformed_xml' | 'no_page_element' | 'truncated' | 'invalid_utf8'
    detail: str
    offset: int | None = None   # byte offset in the file (plain files) or of the bzip2 block


class CorruptData(OSError):
    """Compressed data that cannot be decompressed; `byte` is where the bad block starts."""

    def __init__(self, message: str, byte: int):
        super().__init__(message)
        self.byte = byte


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
        return page_from_element(elem)
    except (ET.ParseError, ValueError) as exc:  # ValueError: <ns>abc</ns>
        idm = _ID.search(xml)
        return PageError(idm.group(1) if idm else None, "malformed_xml", str(exc))


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


def page_from_bytes(raw: bytes, offset: int, where) -> Page | PageError | None:
    """A page record as bytes (from `<page` to before `</page>`) -> Page, or a PageError
    when it is not UTF-8 (`where(offset)` words the position of the first bad byte).

    A well-formed UTF-8 page is parsed from its bytes: expat checks the UTF-8 itself, and
    decoding the page first only for `ET.fromstring` to encode it again would be work
    thrown away on every page. Anything expat refuses takes the path below, which words it as before
    (invalid_utf8 with its offset, or malformed_xml)."""
    if raw.startswith(b"<page"):
        try:
            return page_from_element(ET.fromstring(raw + _PAGE_CLOSE))
        except (ET.ParseError, ValueError):  # ValueError: <ns>abc</ns>
            pass
    try:
        record = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        idm = _ID_BYTES.search(raw)
        at = offset + exc.start
        return PageError(idm.group(1).decode() if idm else None, "invalid_utf8",
                         f"not valid UTF-8 at {where(at)} ({raw[exc.start:exc.start + 4]!r})", at)
    return parse_page_record(record)


# --------------------------------------------------------------------------- siteinfo

# Canonical (English) namespace names, which every wiki accepts besides its own.
CANONICAL_NAMESPACES = {
    -2: ("Media",), -1: ("Special",), 1: ("Talk",), 2: ("User",), 3: ("User talk",), 4: ("Project",),
    5: ("Project talk",), 6: ("File", "Image"), 7: ("File talk", "Image talk"), 8: ("MediaWiki",),
    9: ("MediaWiki talk",), 10: ("Template",), 11: ("Template talk",), 12: ("Help",), 13: ("Help talk",),
    14: ("Category",), 15: ("Category talk",),
}
_NAMESPACE_RE = re.compile(r"<namespace\b([^>]*?)(?:/>|>(.*?)</namespace>)", re.S)
_KEY_RE = re.compile(r'\bkey="(-?\d+)"')


def site_namespaces(head: str) -> dict[int, tuple[str, ...]]:
    """Namespace key -> names, from a dump's `<siteinfo><namespaces>` (the wiki's own
    names) plus the canonical English names; {} when the head has no namespace list."""
    end = head.find("</namespaces>")
    block = head[:end] if end >= 0 else head
    out: dict[int, list[str]] = {}
    for m in _NAMESPACE_RE.finditer(block):
        key = _KEY_RE.search(m.group(1))
        if key is None:
            continue
        k = int(key.group(1))
        names = out.setdefault(k, [])
        name = html.unescape(m.group(2) or "").strip()
        if name and name not in names:
            names.append(name)
    if not out:
        return {}
    for k, canonical in CANONICAL_NAMESPACES.items():
        out.setdefault(k, [])
        out[k] += [n for n in canonical if n not in out[k]]
    return {k: tuple(v) for k, v in sorted(out.items())}


_SITE_TAGS = {key: re.compile(rf"<{key}>(.*?)</{key}>", re.S) for key in ("sitename", "dbname", "base")}
# Text licenses of the Wikimedia projects (their Terms of Use, since 2023): a dump whose
# siteinfo names one of these hosts carries that license; no other site's is known here.
WIKIMEDIA_LICENSES = {"wikipedia": "cc-by-sa-4.0", "wikivoyage": "cc-by-sa-4.0", "wiktionary": "cc-by-sa-4.0",
                      "wikibooks": "cc-by-sa-4.0", "wikiquote": "cc-by-sa-4.0", "wikisource": "cc-by-sa-4.0",
                      "wikiversity": "cc-by-sa-4.0", "wikinews": "cc-by-2.5"}


def site_info(head: str) -> dict[str, str]:
    """A dump's `<siteinfo>`: its `sitename`, `dbname`, `base` (the main page's URL) and the
    `project` its host names (``ro.wikivoyage.org`` -> ``wikivoyage``, ``wikitravel.org`` ->
    ``wikitravel``); the keys it has, {} without a siteinfo."""
    end = head.find("</siteinfo>")
    block = head[:end] if end >= 0 else head[:1 << 16]
    out = {key: html.unescape(m.group(1)).strip() for key, rx in _SITE_TAGS.items() if (m := rx.search(block))}
    host = re.match(r"^[a-z]+://([^/:]+)", out.get("base", ""))
    if host:
        labels = host.group(1).lower().split(".")
        out["project"] = labels[-2] if len(labels) >= 2 else labels[0]
    return out


def read_head(path: str, max_bytes: int = 1 << 20) -> bytes:
    """The first bytes of a dump's text (decompressed), up to `</siteinfo>` or `max_bytes`.
    A corrupt first bzip2 block raises CorruptData with its byte offset."""
    if str(path).endswith(".bz2"):
        out = b""
        with fs.FileBytes(path) as data:
            _, following = _bz2_blocks(data, 0, 0)
            for piece in following:
                out += piece
                if b"</siteinfo>" in out or len(out) >= max_bytes:
                    break
        return out
    with fs.open_stream(path) as fh:
        out = b""
        while len(out) < max_bytes:
            chunk = fh.read(64 << 10)
            if not chunk:
                break
            out += chunk
            if b"</siteinfo>" in out:
                break
        return out


def dump_end_is_closed(path: str, window: int = 2 << 20) -> bool | None:
    """Whether the dump's text ends with `</mediawiki>` (None: could not tell, e.g. a
    corrupt last bzip2 block, which its reader reports). A .bz2 file: its last block is
    decompressed; a plain file: its last bytes are read."""
    size = fs.size(path)
    if str(path).endswith(".bz2"):
        with fs.FileBytes(path) as data:
            lo = max(0, size - window)
            starts = find_magic(data, _BLOCK_PATTERNS, _BLOCK_MAGIC, lo * 8, size * 8)
            if not starts:
                return None
            try:
                tail = b"".join(_decompress_between(data, starts[-1], None))
            except (OSError, EOFError):
                return None
    else:
        tail = fs.read_range(path, max(0, size - 4096), 4096)
    return tail.rstrip().endswith(END_TAG)


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
    """A file (local path or URI), decompressed when it ends in .bz2 or .gz (multistream
    bz2 included)."""
    return fs.open_stream(str(path))


_BZ2_EOS = 0x177245385090  # bzip2 end-of-stream magic (48 bits, not byte-aligned)


def bz2_is_complete(path: str | Path) -> bool:
    """Whether a .bz2 file ends with a bzip2 end-of-stream marker. A download cut short
    does not; checking the last 11 bytes is cheap and spares a failed cluster job."""
    size = fs.size(str(path))
    if size < 14:
        return False
    tail = int.from_bytes(fs.read_range(str(path), size - 11, 11), "big")
    # marker (48 bits) + combined CRC (32 bits) + 0..7 padding bits end the stream
    for pad in range(8):
        if (tail >> (32 + pad)) & ((1 << 48) - 1) == _BZ2_EOS:
            return True
    return False


def stream_page_records(binary, encoding: str, chunk_chars: int = 1 << 20, state: dict | None = None):
    """Yield `</page>`-delimited records (delimiter removed) from a binary stream, decoding
    as it goes: how a UTF-16 dump (one work unit) is read. Memory is bounded by the largest
    page plus one chunk. `state`, when given, receives `closed`: whether the text ended
    with `</mediawiki>`, and `open_page`: whether the last record is a page cut off."""
    text = io.TextIOWrapper(binary, encoding=encoding, newline="")
    buf = ""
    consumed = 0  # characters before buf[0]
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
        consumed += start
    if state is not None:
        state["closed"] = buf.rstrip().endswith("</mediawiki>")
        m = _PAGE_START.search(buf)
        state["open_page"] = None if m is None else consumed + m.start()
        if m is not None:  # a page cut off by the end of the data: the caller reports it
            state["open_head"] = buf[m.start():m.start() + 4096].encode("utf-8", "replace")
            return
    if buf.strip():
        yield buf


def stream_pages(path: str, encoding: str, state: dict):
    """Pages of a dump read whole as one stream (UTF-16, gzip): Page | PageError, the last
    page cut off by the end of the data as PageError('truncated'). `state['closed']` tells
    whether `</mediawiki>` ends it."""
    with open_binary(path) as fh:
        if encoding.startswith("utf-8"):
            chunks = iter(lambda: fh.read(1 << 20), b"")
            bom = [True]

            def owned():
                for c in chunks:
                    if bom[0]:
                        bom[0] = False
                        if c.startswith(codecs.BOM_UTF8):
                            c = c[3:]
                    yield c
            for offset, raw in records_from_chunks(owned(), (), state):
                yield page_from_bytes(raw, offset, lambda at: f"byte {at} of the decompressed text")
            if state.get("open_page") is not None:
                yield _truncated(state, lambda at: f"byte {at} of the decompressed text")
            return
        try:
            for record in stream_page_records(fh, encoding, state=state):
                yield parse_page_record(record)
        except UnicodeDecodeError as exc:
            raise UnicodeError(f"{path}: not valid {encoding} near byte {exc.start} of a decoded chunk; "
                               f"convert it to UTF-8: iconv -f {encoding.upper()} -t UTF-8") from None
        if state.get("open_page") is not None:
            yield _truncated(state, lambda at: f"character {at} of the decoded text")


def _truncated(state: dict, where) -> PageError:
    head = state.get("open_head", b"")
    idm = _ID_BYTES.search(head)
    at = state["open_page"]
    return PageError(idm.group(1).decode() if idm else None, "truncated",
                     f"the data ends inside this page (it starts at {where(at)})", at)


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
    if text is None:
        return "no_text_field"
    if not isinstance(text, str):
        return "text_not_a_string"
    def opt(key):
        value = record.get(fields[key]) if fields.get(key) else None
        return None if value is None else str(value)
    return opt("id_field"), opt("title_field"), opt("genre_field"), text


_JSON_TYPES = {dict: "an object", list: "an array", str: "a string", int: "a number", float: "a number",
               bool: "a boolean", type(None): "null"}


def line_problem(line: str, reason: str, fields: dict) -> str:
    """What is wrong with a JSONL line that `json_document` dropped for `reason`, in a few
    words for the report: the JSON parser's message, or the fields the record has."""
    try:
        record = json.loads(line.strip())
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg}: column {exc.colno})"
    except RecursionError:
        return "not JSON: nested too deeply"
    if not isinstance(record, dict):
        return f"{_JSON_TYPES.get(type(record), type(record).__name__)}, not a JSON object"
    name = fields["text_field"]
    if reason == "text_not_a_string":
        return f"field '{name}' holds {_JSON_TYPES.get(type(record[name]), type(record[name]).__name__)}"
    keys = list(record)
    shown = ", ".join(str(k) for k in keys[:10]) + (f", ... ({len(keys)} fields)" if len(keys) > 10 else "")
    return f"no field '{name}' (fields: {shown or 'none'})"


def first_line_numbers(lines_per_unit: dict[int, int]) -> dict[int, int]:
    """The 1-based number of the first line of each byte-range unit of one file, from the
    number of lines each unit read (`jsonl_lines`: every line of the file is read by exactly
    one unit, the one it starts in). Unit `k`'s `i`-th line (from 0) is line
    ``first[k] + i`` of the file, whatever the unit size."""
    first, seen = {}, 0
    for k in sorted(lines_per_unit):
        first[k] = seen + 1
        seen += lines_per_unit[k]
    return first


def jsonl_lines(path: str, lo: int, hi: int, compressed: bool):
    """(byte offset, line bytes) of the lines of a JSONL file that start in [lo, hi); a
    line that crosses `hi` is read whole. A compressed file is one unit (lo=0, hi=size):
    offsets are then in the decompressed text."""
    if compressed:
        with open_binary(path) as fh:
            offset = 0
            for line in fh:
                yield offset, line
                offset += len(line)
        return
    with fs.FileBytes(path) as data:
        pos = lo
        if lo > 0:  # the line that starts before lo belongs to the previous unit
            nl = data.find(b"\n", lo - 1)
            if nl < 0:
                return
            pos = nl + 1
        size = len(data)
        while pos < hi and pos < size:
            nl = data.find(b"\n", pos, min(size, max(hi, pos) + (1 << 20)))
            while nl < 0 and pos < size:  # a line longer than the window
                end = data.find(b"\n", pos)
                nl = end if end >= 0 else size
            end = nl + 1 if nl < size else size
            yield pos, data[pos:end]
            pos = end



# --------------------------------------------------------------------------- work units of a dump
#
# A work unit of a UTF-8 dump is a byte range of the file. For .xml.bz2 the unit finds the
# bzip2 blocks whose magic starts in its range (a block starts with a 48-bit magic at any
# bit offset), decompresses each as a stream of its own (`decompress_block`) and keeps
# the pages whose `<page` starts in its blocks, reading on into the next blocks only to
# finish its last page. For .xml it does the same on the plain bytes.

_BLOCK_MAGIC = 0x314159265359
_EOS_MAGIC = 0x177245385090
_PAGE_OPEN = re.compile(rb"<page[\s>]")


def _magic_patterns(magic: int):
    """For each bit shift r: the fully determined middle bytes of the 48-bit magic starting
    at bit r of a byte, for a fast bytes.find, and what to verify around them."""
    out = []
    for r in range(8):
        total = 48 + r
        nbytes = (total + 7) // 8
        value = magic << (nbytes * 8 - total)
        raw = value.to_bytes(nbytes, "big")
        first = 1 if r else 0
        last = nbytes - (1 if total % 8 else 0)
        out.append((r, raw[first:last], first, nbytes, total))
    return out


_BLOCK_PATTERNS = _magic_patterns(_BLOCK_MAGIC)
_EOS_PATTERNS = _magic_patterns(_EOS_MAGIC)
_MASK48 = (1 << 48) - 1


def find_magic(data, patterns, magic: int, start_bit: int, end_bit: int) -> list[int]:
    """Bit offsets in [start_bit, end_bit) where `magic` starts, sorted."""
    found = set()
    lo_byte = max(0, start_bit // 8 - 1)
    hi_byte = min(len(data), end_bit // 8 + 8)
    for r, middle, first, nbytes, total in patterns:
        pos = data.find(middle, lo_byte, hi_byte)
        while pos >= 0:
            i = pos - first
            if i >= 0 and i + nbytes <= len(data):
                value = int.from_bytes(data[i:i + nbytes], "big") >> (nbytes * 8 - total)
                bit = i * 8 + r
                if value & _MASK48 == magic and start_bit <= bit < end_bit:
                    found.add(bit)
            pos = data.find(middle, pos + 1, hi_byte)
    return sorted(found)


def block_stream(data, start_bit: int, end_bit: int) -> bytes:
    """One bzip2 block (from its magic to the next block or end-of-stream magic) as a
    stream of its own: header, the block's bits, end-of-stream magic, and the combined
    CRC, which for one block is the block's own CRC (the 32 bits after its magic)."""
    first, last = start_bit // 8, (end_bit + 7) // 8
    chunk = int.from_bytes(data[first:last], "big")
    nbits = (last - first) * 8
    length = end_bit - start_bit
    bits = (chunk >> (nbits - (end_bit - first * 8))) & ((1 << length) - 1)
    crc = (bits >> (length - 80)) & 0xFFFFFFFF
    pad = (8 - (length + 80) % 8) % 8
    body = ((((bits << 48) | _EOS_MAGIC) << 32 | crc) << pad).to_bytes((length + 80 + pad) // 8, "big")
    return b"BZh9" + body


_MEMFD = getattr(os, "memfd_create", None)  # Linux only
_MEMFD_FLAGS = getattr(os, "MFD_CLOEXEC", 0)


def decompress_block(data, start_bit: int, end_bit: int) -> bytes:
    """One whole block's text. indexed_bzip2's decoder (C++, one thread here) reads a block
    in less CPU than libbz2 (docs/extraction.md) and checks the block's CRC as libbz2 does.
    It reads the block from an anonymous in-memory file (Linux's memfd): given a Python
    file object, indexed_bzip2 1.7 keeps references to it that it never releases, so a
    worker would grow with the dump. Without memfd (macOS), and for a block
    indexed_bzip2 cannot read, the C bz2 module reads it: its errors (OSError, EOFError,
    ValueError) and messages are what the callers turn into `CorruptData` and the
    fallbacks of `_decompress_between`, so a damaged dump is reported exactly as before."""
    stream = block_stream(data, start_bit, end_bit)
    if _MEMFD is not None:
        fd = _MEMFD("nli-bz2-block", _MEMFD_FLAGS)
        try:
            os.write(fd, stream)
            reader = indexed_bzip2.IndexedBzip2File(fd, parallelization=1)
            try:
                return reader.read()
            finally:
                reader.close()
        except (RuntimeError, ValueError, OSError):  # what indexed_bzip2 raises for damaged data
            pass
        finally:
            os.close(fd)
    return bz2.decompress(stream)


def decompress_block_pieces(data, start_bit: int, end_bit: int, piece: int):
    """The block's text in pieces of at most `piece` bytes: libbz2 runs its inverse BWT
    only as far as output is asked for, so a reader that stops early (a unit finishing its
    last page in the next block) does not pay for the rest of the block."""
    decompressor = bz2.BZ2Decompressor()
    out = decompressor.decompress(block_stream(data, start_bit, end_bit), max_length=piece)
    while out:
        yield out
        if decompressor.eof or decompressor.needs_input:
            return
        out = decompressor.decompress(b"", max_length=piece)


def _block_starts(data, start_bit: int, window_bytes: int = 4 << 20):
    """Bit offsets of the block magics from `start_bit` on, in file order. The file is
    scanned once, one window at a time, and only as far as the caller reads (a unit reads
    past its end only to finish its last page)."""
    size_bits = len(data) * 8
    bit = start_bit
    while bit < size_bits:
        stop = min(size_bits, bit + window_bytes * 8)
        yield from find_magic(data, _BLOCK_PATTERNS, _BLOCK_MAGIC, bit, stop)
        bit = stop


def _block_end(data, start_bit: int, next_start: int | None) -> int:
    """Where the block at `start_bit` ends: at the next block's magic, or at an
    end-of-stream magic. Between streams (multistream dumps) the layout is fixed: EOS
    magic, stream CRC, 0-7 padding bits, the next stream's byte-aligned 'BZh1'..'BZh9',
    then its first block, so the EOS magic is looked for only in those 8 bit positions
    instead of scanning the whole file for it a second time."""
    if next_start is None:  # the file's last block
        ends = find_magic(data, _EOS_PATTERNS, _EOS_MAGIC, start_bit + 48, len(data) * 8)
        if not ends:
            raise EOFError("bzip2 block without an end (truncated file?)")
        return ends[0]
    byte = next_start // 8
    if next_start % 8 == 0 and byte >= 4 and data[byte - 4:byte - 1] == b"BZh" and 0x31 <= data[byte - 1] <= 0x39:
        ends = find_magic(data, _EOS_PATTERNS, _EOS_MAGIC, max(start_bit + 48, next_start - 119), next_start - 111)
        if ends:
            return ends[0]
    return next_start


def _decompress_between(data, start_bit: int, next_start: int | None, piece: int | None = None):
    """The text of the block at `start_bit`, whole (piece=None) or in pieces."""
    done = 0
    try:
        end = _block_end(data, start_bit, next_start)
        if piece is None:
            yield decompress_block(data, start_bit, end)
            return
        for out in decompress_block_pieces(data, start_bit, end, piece):
            done += len(out)
            yield out
    except OSError:
        # Not the common layout (e.g. an empty stream between two streams): the first EOS
        # magic after the block, if any, ends it. Text already handed out is not repeated.
        stop = len(data) * 8 if next_start is None else next_start
        ends = find_magic(data, _EOS_PATTERNS, _EOS_MAGIC, start_bit + 48, stop)
        if not ends:
            raise
        yield decompress_block(data, start_bit, ends[0])[done:]


def _bz2_blocks(data, lo: int, hi: int, piece: int = 1 << 16, info: dict | None = None):
    """(owned, following): decompressed blocks whose magic starts in bytes [lo, hi), and a
    generator of the text after them, in pieces (read only as far as the last page needs).
    A block that cannot be decompressed raises CorruptData with its byte offset; `info`
    receives `first_block`, the byte offset of the unit's first block."""
    starts = _block_starts(data, lo * 8)
    state = {"next": next(starts, None)}
    if info is not None:
        info["first_block"] = None if state["next"] is None else state["next"] // 8

    def blocks(until_bit, piece):
        while state["next"] is not None and state["next"] < until_bit:
            bit = state["next"]
            state["next"] = next(starts, None)
            try:
                yield from _decompress_between(data, bit, state["next"], piece)
            except (OSError, EOFError, ValueError) as exc:
                raise CorruptData(f"corrupt bzip2 data in the block that starts at byte {bit // 8} "
                                  f"(bit {bit % 8}): {exc}", bit // 8) from None

    return blocks(hi * 8, None), blocks(len(data) * 8, piece)


def _plain_chunks(data, lo: int, hi: int, chunk: int = 4 << 20):
    def owned():
        for start in range(lo, hi, chunk):
            yield data[start:min(hi, start + chunk)]

    def following():
        for start in range(hi, len(data), chunk):
            yield data[start:start + chunk]
    return owned(), following()


def records_from_chunks(owned, following, state: dict | None = None):
    """(offset, record) of the page records (bytes from `<page` up to, not including,
    `</page>`) whose `<page` starts in the owned chunks; following chunks are read only to
    finish the last one. `offset` counts from the start of the owned text. When the data
    ends inside an owned page, `state['open_page']` is that page's offset (and
    `state['open_head']` its first bytes); `state['closed']` tells whether the text after
    the last page holds `</mediawiki>` (meaningful when the unit reads to the end)."""
    state = {} if state is None else state
    state["open_page"] = None
    state["closed"] = False
    buf: bytes | bytearray = b""
    base = 0            # offset of buf[0] in the unit's text
    pos = 0
    owned_end = None    # offset where the owned chunks end, once they are used up
    sources = [iter(owned), iter(following)]

    def more():
        nonlocal owned_end
        while sources:
            chunk = next(sources[0], None)
            if chunk is not None:
                return chunk
            if owned_end is None:
                owned_end = base + len(buf)
            sources.pop(0)
        return None

    while True:
        m = _PAGE_OPEN.search(buf, pos)
        if m is not None:
            if owned_end is not None and base + m.start() >= owned_end:
                return
            end = buf.find(_PAGE_CLOSE, m.end())
            if end >= 0:
                state["closed"] = False
                yield base + m.start(), bytes(buf[m.start():end])
                pos = end + len(_PAGE_CLOSE)
                continue
            chunk = more()
            if chunk is None:
                state["open_page"] = base + m.start()
                state["open_head"] = bytes(buf[m.start():m.start() + 4096])
                return
            base += m.start()
            buf = buf[m.start():] + chunk
            pos = 0
            close_from = max(0, len(buf) - len(chunk) - len(_PAGE_CLOSE))  # a long page: search only the new part
            end = buf.find(_PAGE_CLOSE, close_from)
            while end < 0:
                chunk = more()
                if chunk is None:
                    state["open_page"] = base
                    state["open_head"] = bytes(buf[:4096])
                    return
                close_from = max(0, len(buf) - len(_PAGE_CLOSE))
                if not isinstance(buf, bytearray):
                    buf = bytearray(buf)  # appends amortised: a page of many chunks stays linear
                buf += chunk
                end = buf.find(_PAGE_CLOSE, close_from)
            continue
        if END_TAG in buf[pos:]:
            state["closed"] = True
        if owned_end is not None and base + len(buf) >= owned_end + 6:
            return  # no page can start in the owned text any more
        keep = max(pos, len(buf) - 16)  # '<page' or '</mediawiki>' may straddle chunks
        chunk = more()
        if chunk is None:
            return
        base += keep
        buf = buf[keep:] + chunk
        pos = 0


def wiki_unit_pages(path: str, lo: int, hi: int, state: dict | None = None):
    """Page | PageError of work unit [lo, hi) of a UTF-8 dump (.xml or .xml.bz2; a local
    path or URI), in dump order; a page cut off by the end of the data comes last as
    PageError('truncated'). Raises CorruptData for a bzip2 block that cannot be read."""
    state = {} if state is None else state
    with fs.FileBytes(str(path)) as data:
        if len(data) == 0:
            return
        if str(path).endswith(".bz2"):
            info: dict = {}
            owned, following = _bz2_blocks(data, lo, hi, info=info)

            def where(at):
                return f"byte {at} of the text of the bzip2 blocks from byte {info.get('first_block')}"
        else:
            owned, following = _plain_chunks(data, lo, hi)

            def where(at):
                return f"byte {at}"
            # offsets count from lo: make them file offsets
        base = 0 if str(path).endswith(".bz2") else lo
        for offset, raw in records_from_chunks(owned, following, state):
            yield page_from_bytes(raw, base + offset, where)
        if state.get("open_page") is not None:
            state["open_page"] += base
            yield _truncated(state, where)
