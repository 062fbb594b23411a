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


# --------------------------------------------------------------------------- byte-range splits
#
# Local dumps are split without the JVM: each task gets a byte range of the file, finds the
# bzip2 blocks that start in it (a block starts with a 48-bit magic at any bit offset),
# decompresses them with the C bz2 module and keeps the pages whose `<page` starts in its
# blocks, reading on into the next blocks only to finish its last page. Hadoop's splittable
# bzip2 does the same in Java, at about a fifth of the speed; it stays the reader for
# cluster URIs.

_BLOCK_MAGIC = 0x314159265359
_EOS_MAGIC = 0x177245385090
_PAGE_OPEN = re.compile(rb"<page[\s>]")
_PAGE_CLOSE = PAGE_DELIMITER.encode()


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


def decompress_block(data, start_bit: int, end_bit: int) -> bytes:
    return bz2.decompress(block_stream(data, start_bit, end_bit))


def decompress_block_pieces(data, start_bit: int, end_bit: int, piece: int):
    """The block's text in pieces of at most `piece` bytes: libbz2 runs its inverse BWT
    only as far as output is asked for, so a reader that stops early (a split finishing its
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
    scanned once, one window at a time, and only as far as the caller reads (a split reads
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


def _bz2_blocks(data, lo: int, hi: int, piece: int = 1 << 16):
    """(owned, following): decompressed blocks whose magic starts in bytes [lo, hi), and a
    generator of the text after them, in pieces (read only as far as the last page needs)."""
    starts = _block_starts(data, lo * 8)
    state = {"next": next(starts, None)}

    def blocks(until_bit, piece):
        while state["next"] is not None and state["next"] < until_bit:
            bit = state["next"]
            state["next"] = next(starts, None)
            yield from _decompress_between(data, bit, state["next"], piece)

    return blocks(hi * 8, None), blocks(len(data) * 8, piece)


def _plain_chunks(data, lo: int, hi: int, chunk: int = 4 << 20):
    def owned():
        for start in range(lo, hi, chunk):
            yield bytes(data[start:min(hi, start + chunk)])

    def following():
        for start in range(hi, len(data), chunk):
            yield bytes(data[start:start + chunk])
    return owned(), following()


def records_from_chunks(owned, following):
    """Page records (`<page ...` up to, not including, `</page>`) whose `<page` starts in the
    owned chunks; following chunks are read only to finish the last one."""
    buf = b""
    owned_end = None  # offset in the split's text where the owned chunks end
    offset = 0        # offset of buf[0] in the split's text
    pos = 0
    chunks = iter(owned)
    while True:
        chunk = next(chunks, None)
        if chunk is None:
            if owned_end is not None:
                return  # the following chunks ran out
            owned_end = offset + len(buf)
            chunks = iter(following)
            chunk = next(chunks, None)
            if chunk is None:
                chunk = b""
                following = ()
        buf += chunk
        while True:
            m = _PAGE_OPEN.search(buf, pos)
            if m is None:
                pos = max(pos, len(buf) - 6)  # '<page' may straddle into the next chunk
                break
            if owned_end is not None and offset + m.start() >= owned_end:
                return
            end = buf.find(_PAGE_CLOSE, m.end())
            if end < 0:
                pos = m.start()
                break
            yield buf[m.start():end].decode("utf-8", errors="replace")
            pos = end + len(_PAGE_CLOSE)
        if owned_end is not None and offset + pos >= owned_end and _PAGE_OPEN.search(buf, pos) is None \
                and not chunk:
            return
        buf = buf[pos:]
        offset += pos
        pos = 0
        if owned_end is not None and offset >= owned_end + 0 and not chunk:
            return


def split_records(path: str, lo: int, hi: int):
    """Page records of bytes [lo, hi) of a local UTF-8 dump (.xml or .xml.bz2)."""
    import mmap

    with open(path, "rb") as fh:
        if fh.seek(0, io.SEEK_END) == 0:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            owned, following = (_bz2_blocks if str(path).endswith(".bz2") else _plain_chunks)(data, lo, hi)
            yield from records_from_chunks(owned, following)
