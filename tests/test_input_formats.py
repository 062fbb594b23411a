"""The registry of input formats (`extractor/sentences/formats/`) and its CSV/TSV reader:
the real Romanian news of ../shared/data, converted to CSV and TSV here, give the same
sentence rows as the JSONL they come from; a file without the text column, a short row,
broken quoting and a bad byte are one-line errors or counted drops."""
from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from extractor.core.errors import InputError
from extractor.sentences import formats
from extractor.sentences.formats import delimited
from extractor.sentences.plan import DocumentsPlan
from extractor.sentences.process import corpus_settings, process_unit, sum_counts
from extractor.sentences.segment import params_to_dict, train_punkt
from extractor.sentences.units import UnitError
from extractor.job.inputs import corpora_from_args, corpus_name_for, guess_format, load_manifest
from extractor.lexicon.lexicon import load_lexicon
from jobs.extract import main
from tests.conftest import shared_file

RO = load_lexicon("ro")
NEWS = "text/ro-news/ro-news-realitatea-aleph.jsonl"


def news(n: int = 300) -> list[dict]:
    with open(shared_file(NEWS), encoding="utf-8") as fh:
        return [json.loads(next(fh)) for _ in range(n)]


def write_table(path: Path, records: list[dict], delimiter: str = ",", columns=("id", "title", "text")) -> Path:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter=delimiter)
        writer.writerow(columns)
        for r in records:
            writer.writerow([r.get(c, "") for c in columns])
    return path


def sentence_rows(path: Path, fmt: str, tmp_path: Path, options: dict | None = None) -> tuple[list, dict]:
    """The sentence rows (without their file) and the summed counts of every unit of one input."""
    spec = corpora_from_args([str(path)], "news", "news", None)[0]
    assert spec.format == fmt
    spec.options.update(options or {})
    corpora = corpus_settings([spec], "ro", {})
    listing = formats.list_units([spec], 1 << 20, lambda s: corpora[0]["fields"])
    table = tmp_path / f"table-{path.name}"
    plan = DocumentsPlan(corpora=corpora, lexicon=RO, min_chars=50, namespaces={},
                         punkt=params_to_dict(train_punkt([], RO.abbreviations)), table_dir=str(table))
    counts = [row for unit in listing.units for row in process_unit(unit, plan)]
    rows = [r for f in sorted(table.rglob("*.parquet")) for r in pq.read_table(f).to_pylist()]
    summed, errors, _, _ = sum_counts(counts)
    assert not errors
    return rows, {(c["count_kind"], c["count_reason"]): c["n"] for c in summed}


def test_every_unit_kind_has_one_reader_and_every_name_one_format():
    kinds = [k for f in formats.FORMATS for k in f.kinds]
    assert len(kinds) == len(set(kinds))
    assert formats.NAMES == ("mediawiki", "jsonl", "parquet", "text", "csv")
    assert [guess_format(p) for p in ("a.xml.bz2", "a.jsonl.gz", "a.parquet", "a.txt", "a.csv", "a.tsv.gz")] == \
        ["mediawiki", "jsonl", "parquet", "text", "csv", "csv"]
    assert corpus_name_for("ro-news.tsv.gz") == "ro-news" and corpus_name_for("dump.xml.bz2") == "dump"
    with pytest.raises(UnitError, match="^unknown format 'xls'; use one of mediawiki, jsonl, parquet, text, csv$"):
        formats.get("xls")


def test_csv_and_tsv_of_real_news_give_the_jsonl_sentences(tmp_path):
    records = news()
    assert sum("\n\n" in r["text"] for r in records) > 100  # paragraphs: quoted line breaks in the CSV
    source = tmp_path / "news.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    want, want_counts = sentence_rows(source, "jsonl", tmp_path)
    assert len(want) > 4000 and want_counts["documents", "kept"] > 250
    for path, delimiter in ((tmp_path / "news.csv", ","), (tmp_path / "news.tsv.gz", "\t")):
        got, counts = sentence_rows(write_table(path, records, delimiter), "csv", tmp_path)
        assert got == want, path
        assert counts == want_counts


def test_a_folder_of_csv_files_is_a_csv_corpus_with_a_unit_per_file(tmp_path):
    records = news(60)
    folder = tmp_path / "news"
    folder.mkdir()
    write_table(folder / "a.csv", records[:30])
    write_table(folder / "b.csv", records[30:])
    spec = corpora_from_args([str(folder)], None, None, None)[0]
    assert spec.format == "csv" and [Path(p).name for p in spec.paths] == ["a.csv", "b.csv"]
    listing = formats.list_units([spec], 1 << 20, lambda s: {"text_field": "text"})
    assert [u.kind for u in listing.units] == ["csv-file", "csv-file"]


def test_columns_are_chosen_like_the_other_formats(tmp_path):
    records = news(40)
    path = write_table(tmp_path / "body.csv", records, columns=("title", "body"))
    for r in records:
        r["body"] = r["text"]
    write_table(path, records, columns=("title", "body"))
    with pytest.raises(UnitError) as err:
        sentence_rows(path, "csv", tmp_path)
    assert str(err.value) == (f"{path}: no column 'text' in the header (columns: title, body); "
                              "name the text column with --text-field")
    rows, counts = sentence_rows(path, "csv", tmp_path, {"text_field": "body"})
    assert counts["documents", "kept"] == 40
    assert rows[0]["doc_id"] == "news:body.csv@2" and rows[0]["title"] == records[0]["title"]  # no id: file@line
    manifest = tmp_path / "corpora.yaml"
    manifest.write_text("- {name: stiri, path: body.csv, format: csv, text_field: body}\n")
    assert load_manifest(manifest)[0].option("text_field") == "body"


def test_short_rows_are_counted_and_broken_quoting_or_bytes_are_one_line(tmp_path):
    records = news(10)
    path = write_table(tmp_path / "news.csv", records)
    path.write_text(path.read_text(encoding="utf-8") + "only-an-id\n", encoding="utf-8")
    _, counts = sentence_rows(path, "csv", tmp_path)
    assert counts["documents_dropped", "malformed_row"] == 1 and counts["documents", "kept"] == 10
    cut = tmp_path / "cut.csv"  # a download cut off inside a quoted text
    cut.write_bytes(path.read_bytes()[:5000])
    with pytest.raises(InputError, match=r"cut\.csv: line \d+: not valid CSV \(unexpected end of data\); "
                                         r"check its quoting"):
        sentence_rows(cut, "csv", tmp_path)
    stray = tmp_path / "stray.csv"  # a quote inside an unquoted text
    stray.write_text('id,text\n1,"Un text" citat greșit, mai departe\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"stray\.csv: line 2: not valid CSV \(',' expected after '\"'\)"):
        sentence_rows(stray, "csv", tmp_path)
    latin = tmp_path / "latin.csv"  # a row in Latin-1 after 10 real ones
    latin.write_bytes(path.read_bytes() + "x,Un text în latin-1\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"latin\.csv: 'utf-8' codec can't decode byte 0xee"):
        sentence_rows(latin, "csv", tmp_path)
    latin.write_bytes("id,text\n1,Un text în latin-1\n".encode("latin-1"))  # read with the header
    with pytest.raises(UnitError, match=r"latin\.csv: cannot read the header line \('utf-8' codec can't decode"):
        sentence_rows(latin, "csv", tmp_path)
    empty_header = tmp_path / "blank.csv"
    empty_header.write_text("\n\n")
    with pytest.raises(UnitError, match=r"blank\.csv: no header line"):
        sentence_rows(empty_header, "csv", tmp_path)


def test_the_job_lists_a_csv_input_and_refuses_one_without_its_column(tmp_path, capsys):
    path = write_table(tmp_path / "news.csv", news(20))
    assert main(["--lang", "ro", "--input", str(path), "--output", str(tmp_path / "out"), "--dry-run"]) == 0
    assert "csv" in capsys.readouterr().out
    assert main(["--lang", "ro", "--input", str(path), "--text-field", "corp", "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"error: {path}: no column 'corp' in the header (columns: id, title, text); " \
                      "name the text column with --text-field"


def test_field_limit_fits_a_novel():
    assert delimited.FIELD_LIMIT > len(shared_file("text/eltec-rom-20/ROM001.txt").read_text(encoding="utf-8"))
