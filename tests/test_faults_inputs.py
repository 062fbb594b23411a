"""Damaged inputs, as a table: each case builds one broken input, runs the job's stage 1
in-process (`jobs.extract.main`, the shared local Spark session) and asserts the exit
code, the one line printed (`error: ...` or `warning: ...` on stderr) and the state of the
output afterwards (no table published after an error; after a counted skip, the table and
the counts in stats.json)."""
from __future__ import annotations

import bz2
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from extractor.sentences.readers import _BLOCK_MAGIC, _BLOCK_PATTERNS, find_magic
from jobs.extract import main

pytestmark = pytest.mark.spark

PROSE = ("Orașul a fost fondat în secolul al XV-lea de negustori veniți din nord. "
         "Prin urmare, piața centrală a devenit cea mai importantă din regiune.")
PAGE = ("<page><title>{title}</title><ns>{ns}</ns><id>{id}</id><revision><id>1</id>"
        "<timestamp>2020-01-01T00:00:00Z</timestamp><text>{text}</text></revision></page>\n")
HEAD = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11">\n'
        "<siteinfo><sitename>W</sitename></siteinfo>\n")
TAIL = "</mediawiki>\n"


def page(i: int, ns: int = 0, text: str = PROSE, title: str | None = None) -> str:
    return PAGE.format(title=title or f"Pagina {i}", ns=ns, id=i, text=text)


def pages(n: int, **kw) -> list[str]:
    return [page(i, **kw) for i in range(1, n + 1)]


def xml(body: list[str], tail: str = TAIL) -> bytes:
    return (HEAD + "".join(body) + tail).encode("utf-8")


# --------------------------------------------------------------------------- input builders
# Each returns (input path, {what the case needs to know to check}).

def xml_cut_mid_page(d: Path):
    data = xml(pages(5))
    cut = data.index(b"<page>", data.index(b"<id>4</id>") - 60) + 40
    (d / "cut.xml").write_bytes(data[:cut])
    return d / "cut.xml", {}


def multistream_cut_at_stream_boundary(d: Path):
    streams = [bz2.compress(HEAD.encode())] + [bz2.compress(p.encode()) for p in pages(6)] + [bz2.compress(TAIL.encode())]
    (d / "multi.xml.bz2").write_bytes(b"".join(streams[:4]))  # header + 3 pages; 3 pages and the footer lost
    return d / "multi.xml.bz2", {}


def bz2_container_ok_xml_cut(d: Path):
    data = xml(pages(5))
    (d / "cut.xml.bz2").write_bytes(bz2.compress(data[:data.index(b"<id>5</id>") + 20]))
    return d / "cut.xml.bz2", {}


def missing_closing_tag(d: Path):
    (d / "open.xml").write_bytes(xml(pages(3), tail=""))
    return d / "open.xml", {}


def invalid_utf8_plain(d: Path):
    good = xml(pages(3))
    bad_at = good.index("piața".encode(), good.index(b"<id>2</id>"))
    (d / "latin.xml").write_bytes(good[:bad_at] + b"pia\xfea" + good[bad_at + len("piața".encode()):])
    return d / "latin.xml", {"offset": bad_at + 3}


def invalid_utf8_bz2(d: Path):
    good = xml(pages(3))
    bad_at = good.index("piața".encode(), good.index(b"<id>2</id>"))
    (d / "latin.xml.bz2").write_bytes(bz2.compress(good[:bad_at] + b"pia\xfea" + good[bad_at + 6:]))
    return d / "latin.xml.bz2", {}


def malformed_page(d: Path):
    body = pages(3)
    body[1] = body[1].replace("</title>", "", 1)
    (d / "bad.xml.bz2").write_bytes(bz2.compress(xml(body)))
    return d / "bad.xml.bz2", {}


def non_numeric_namespace(d: Path):
    body = pages(3)
    body[1] = body[1].replace("<ns>0</ns>", "<ns>abc</ns>")
    (d / "ns.xml").write_bytes(xml(body))
    return d / "ns.xml", {}


def _multiblock(d: Path, name: str):
    import random

    rnd = random.Random(1)
    words = PROSE.split()
    body = [page(i, text=" ".join(rnd.choice(words) for _ in range(800))) for i in range(1, 120)]
    data = bz2.compress(xml(body), 1)  # 100 kB blocks: several blocks
    starts = [b // 8 for b in find_magic(data, _BLOCK_PATTERNS, _BLOCK_MAGIC, 0, len(data) * 8)]
    assert len(starts) >= 3
    return data, starts


def corrupt_bz2_near_start(d: Path):
    data, starts = _multiblock(d, "corrupt")
    data = bytearray(data)
    data[600] ^= 0xFF
    (d / "corrupt.xml.bz2").write_bytes(bytes(data))
    return d / "corrupt.xml.bz2", {"block": starts[0]}


def corrupt_bz2_later_block(d: Path):
    data, starts = _multiblock(d, "corrupt2")
    data = bytearray(data)
    data[starts[1] + 5000] ^= 0xFF
    (d / "corrupt2.xml.bz2").write_bytes(bytes(data))
    return d / "corrupt2.xml.bz2", {"block": starts[1]}


def truncated_bz2_container(d: Path):
    data = bz2.compress(xml(pages(40)))
    (d / "trunc.xml.bz2").write_bytes(data[: len(data) // 2])
    return d / "trunc.xml.bz2", {}


def not_bzip2(d: Path):
    (d / "fake.xml.bz2").write_bytes(xml(pages(2)))
    return d / "fake.xml.bz2", {}


def no_main_namespace(d: Path):
    (d / "talk.xml").write_bytes(xml([page(i, ns=1) for i in range(1, 4)] + [page(9, ns=4)]))
    return d / "talk.xml", {}


def no_page_element(d: Path):
    (d / "html.xml").write_text("<html><body>not a dump</body></html>\n", encoding="utf-8")
    return d / "html.xml", {}


def empty_file(d: Path):
    (d / "empty.xml.bz2").write_bytes(b"")
    return d / "empty.xml.bz2", {}


def missing_file(d: Path):
    return d / "missing.xml.bz2", {}


def _parquet(d: Path, name: str, column) -> Path:
    pq.write_table(pa.table({"text": column, "id": list(range(len(column)))}), d / name)
    return d / name


def parquet_float_text(d: Path):
    return _parquet(d, "floats.parquet", pa.array([1.5, 2.5])), {}


def parquet_list_text(d: Path):
    return _parquet(d, "lists.parquet", pa.array([["a", "b"], ["c"]])), {}


def parquet_without_text_column(d: Path):
    pq.write_table(pa.table({"body": [PROSE]}), d / "nocol.parquet")
    return d / "nocol.parquet", {}


def parquet_null_text(d: Path):
    return _parquet(d, "nulls.parquet", pa.array([PROSE, None, PROSE], pa.string())), {}


def not_parquet(d: Path):
    (d / "junk.parquet").write_bytes(b"this is not parquet at all\n" * 10)
    return d / "junk.parquet", {}


def jsonl_invalid_utf8_line(d: Path):
    good = json.dumps({"id": "a", "text": PROSE}, ensure_ascii=False).encode() + b"\n"
    bad = b'{"id": "b", "text": "pia\xfea"}\n'
    (d / "news.jsonl").write_bytes(good + bad + good.replace(b'"a"', b'"c"'))
    return d / "news.jsonl", {"offset": len(good) + bad.index(b"\xfe")}


def jsonl_text_not_a_string(d: Path):
    rows = [{"id": "a", "text": PROSE}, {"id": "b", "text": 3.5}, {"id": "c", "text": ["x"]}, {"id": "d", "text": PROSE},
            {"id": "e", "text": PROSE}]
    (d / "types.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return d / "types.jsonl", {}


def jsonl_wrong_text_field(d: Path):
    rows = [{"id": "a", "body": PROSE}, {"id": "b", "body": PROSE}, {"id": "c", "text": PROSE}]
    (d / "body.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return d / "body.jsonl", {}


def jsonl_cut_last_line(d: Path):
    line = json.dumps({"id": "a", "text": PROSE}, ensure_ascii=False)
    (d / "cut.jsonl").write_text(line + "\n" + line.replace('"a"', '"b"')[:40], encoding="utf-8")
    return d / "cut.jsonl", {}


def text_files_all_latin1(d: Path):
    (d / "books").mkdir()
    (d / "books" / "a.txt").write_bytes("Pădurea era liniştită şi veche.".encode("cp1250"))
    (d / "books" / "b.txt").write_bytes("Ţara de sus, încă o dată.".encode("cp1250"))
    return d / "books", {}


def utf16_cut_mid_page(d: Path):
    text = (HEAD + "".join(pages(4))).encode("utf-16")
    cut = text[: len(text) - 200]
    cut = cut[: len(cut) - len(cut) % 2]
    (d / "bg16.xml.bz2").write_bytes(bz2.compress(cut))
    return d / "bg16.xml.bz2", {}


def unbalanced_templates_page(d: Path):
    body = pages(3)
    body[1] = page(2, text="{{" * 3000 + PROSE)  # 3,000 unclosed templates: cleaned, never an abort
    (d / "deep.xml").write_bytes(xml(body))
    return d / "deep.xml", {}


# --------------------------------------------------------------------------- the table
# (builder, exit code, the line printed (its start, then pieces it holds), expected counts
#  in stats["sentences"] after a 0 exit: {"kind.reason": n})

CUT = "the dump does not end with </mediawiki>: it was cut off"
CASES = [
    (xml_cut_mid_page, 0, ["warning: ", CUT], {"documents_dropped.truncated": 1, "documents.kept": 3,
                                                "inputs_damaged.no_closing_tag": 1}),
    (multistream_cut_at_stream_boundary, 0, ["warning: ", CUT], {"documents.kept": 3, "inputs_damaged.no_closing_tag": 1}),
    (bz2_container_ok_xml_cut, 0, ["warning: ", CUT], {"documents_dropped.truncated": 1, "documents.kept": 4}),
    (missing_closing_tag, 0, ["warning: ", CUT], {"documents.kept": 3, "inputs_damaged.no_closing_tag": 1}),
    (invalid_utf8_plain, 0, ["warning: ", "not valid UTF-8 were skipped", "page 2: not valid UTF-8 at byte {offset}"],
     {"documents_dropped.invalid_utf8": 1, "documents.kept": 2}),
    (invalid_utf8_bz2, 0, ["warning: ", "not valid UTF-8 were skipped", "of the text of the bzip2 blocks from byte 4"],
     {"documents_dropped.invalid_utf8": 1, "documents.kept": 2}),
    (malformed_page, 0, ["[sentences] skipped document 2", "malformed_xml"], {"documents_dropped.malformed_xml": 1,
                                                                            "documents.kept": 2}),
    (non_numeric_namespace, 0, ["[sentences] skipped document 2", "malformed_xml"],
     {"documents_dropped.malformed_xml": 1, "documents.kept": 2}),
    (unbalanced_templates_page, 0, None, {"documents.read": 3}),
    (corrupt_bz2_near_start, 2, ["error: {path}: corrupt bzip2 data in the block that starts at byte {block} ",
                                 "download it again"], None),
    (corrupt_bz2_later_block, 2, ["error: {path}: corrupt bzip2 data in the block that starts at byte {block} ",
                                  "download it again"], None),
    (truncated_bz2_container, 2, ["error: {path}: truncated bz2 file (no end-of-stream marker); download it again"], None),
    (not_bzip2, 2, ["error: {path}: not a bzip2 file"], None),
    (no_main_namespace, 2, ["error: {path}: no page in the main namespace (ns 0) among its 4 pages"], None),
    (no_page_element, 2, ["error: {path}: no <page> element found"], None),
    (empty_file, 2, ["error: {path}: the file is empty"], None),
    (missing_file, 2, ["error: {path}: no such file or directory"], None),
    (parquet_float_text, 2, ["error: {path}: column 'text' holds double values, not text (row group 0 of 1"], None),
    (parquet_list_text, 2, ["error: {path}: column 'text' holds list<", "not text (row group 0 of 1"], None),
    (parquet_without_text_column, 2, ["error: {path}: no column 'text' (columns: body); set --text-field"], None),
    (not_parquet, 2, ["error: {path}: not a Parquet file"], None),
    (parquet_null_text, 0, None, {"documents_dropped.empty_text": 1, "documents.kept": 2}),
    (jsonl_invalid_utf8_line, 0, ["warning: {path}: documents that are not valid UTF-8 were skipped",
                                  "not valid UTF-8 at byte {offset}"], {"documents_dropped.invalid_utf8": 1,
                                                                       "documents.kept": 2}),
    (jsonl_text_not_a_string, 0, ["warning: {path}: 2 of its 5 records dropped (text_not_a_string 2), at lines 2, 3;"],
     {"documents_dropped.text_not_a_string": 2, "documents.kept": 3}),
    (jsonl_wrong_text_field, 2, ["error: {path}: 2 of its 3 records lack the text field 'text' (no_text_field 2; line 1: "
                                 "no field 'text' (fields: id, body)); set --text-field to the field that holds the text"],
     None),
    (jsonl_cut_last_line, 0, None, {"documents_dropped.truncated": 1, "documents.kept": 1}),
    (text_files_all_latin1, 2, ["error: {path}: no document is valid UTF-8 (2 read)"], None),
    (utf16_cut_mid_page, 0, ["warning: ", CUT], {"documents_dropped.truncated": 1, "documents.kept": 3}),
]


@pytest.fixture(scope="module")
def punkt(tmp_path_factory):
    from extractor.sentences.segment import save_params, train_punkt
    from extractor.lexicon.lexicon import load_lexicon

    return str(save_params(train_punkt([], load_lexicon("ro").abbreviations),
                           tmp_path_factory.mktemp("punkt") / "punkt.json"))


@pytest.mark.parametrize("build,code,line,counts", CASES, ids=[c[0].__name__ for c in CASES])
def test_damaged_input(spark, tmp_path, capsys, punkt, build, code, line, counts):
    src = tmp_path / "in"
    src.mkdir()
    path, known = build(src)
    out = tmp_path / "out"
    capsys.readouterr()
    got = main(["--lang", "ro", "--input", str(path), "--output", str(out), "--stages", "sentences",
                "--punkt-params", punkt])
    err = capsys.readouterr().err.splitlines()
    assert got == code, err[-5:]
    errors = [e for e in err if e.startswith("error: ")]
    if line is not None:
        first, *pieces = [p.format(path=path, **known) for p in line]
        matching = [e for e in err if e.startswith(first) and all(p in e for p in pieces)]
        assert len(matching) == 1, (line, err[-6:])
    if code:
        assert len(errors) == 1 and errors[0] == matching[0]
        assert not (out / "sentences").exists() and not (out / "stats.json").exists()  # nothing published
        return
    assert not errors
    stats = json.loads((out / "stats.json").read_text())["sentences"]
    for key, n in counts.items():
        kind, reason = key.split(".")
        assert stats[kind].get(reason, 0) == n, (key, stats[kind])
    kept = stats["documents"]["kept"]
    table = ds.dataset(out / "sentences", format="parquet", partitioning="hive").to_table()
    assert len({d for d in table.column("doc_id").to_pylist()}) == kept
    assert stats["documents"]["read"] == kept + stats["documents_dropped_total"]  # every document accounted for
    if "offset" in known and "first_invalid_utf8" in stats:
        assert next(iter(stats["first_invalid_utf8"].values()))["offset"] == known["offset"]


def test_the_table_has_at_least_twenty_cases():
    assert len(CASES) >= 20
