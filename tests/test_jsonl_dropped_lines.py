"""Dropped JSONL lines are located (file and true line number, whatever the work units),
listed in stats.json, summed up on the console; a file mostly malformed or without the text
field stops the job with one line naming the file, the count and the flag to fix.
Built from real lines of ../shared/data/text/ro-news."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from extractor.sentences.plan import DocumentsPlan
from extractor.sentences.process import (MAX_LISTED_LINES, check_dropped_lines, corpus_settings, dropped_lines,
                                         dropped_lines_warnings, process_unit)
from extractor.core.errors import InputError
from extractor.sentences.readers import first_line_numbers, jsonl_lines, line_problem
from extractor.sentences.segment import params_to_dict, save_params, train_punkt
from extractor.sentences.formats import list_units
from extractor.job.inputs import CorpusSpec
from extractor.lexicon.lexicon import load_lexicon
from jobs.extract import main
from tests.conftest import shared_file

FIELDS = {"text_field": "text", "id_field": "id", "title_field": "title", "genre_field": "genre"}


def real_lines(n: int) -> list[bytes]:
    """The first `n` lines of the real ro-news JSONL (with their newlines)."""
    with open(shared_file("text/ro-news/ro-news-realitatea-aleph.jsonl"), "rb") as fh:
        return [next(fh) for _ in range(n)]


# Broken lines put at fixed 1-based line numbers of a file of real lines.
BROKEN = {
    3: (b'{"id": "x1", "title": "cut", "text": "Sorin Grindeanu a fost\n', "malformed_json"),
    4: (b"\n", None),                                                     # a blank line: not a record, still a line
    9: (b'{"id": "x2", "title": "Fara text", "body": "Textul e in alt camp."}\n', "no_text_field"),
    15: (b'["o", "lista"]\n', "malformed_json"),
    22: (b'{"id": "x3", "text": 17}\n', "text_not_a_string"),
    23: (b'{"id": "x4", "text": "pia\xfea"}\n', "invalid_utf8"),
    31: (b"id,title,text\n", "malformed_json"),
}


def news_with_broken_lines(path: Path, n_real: int = 34) -> tuple[bytes, dict[int, str]]:
    """A file of real lines with BROKEN at their line numbers; {line number: reason}."""
    good = iter(real_lines(n_real))
    lines = []
    total = n_real + len(BROKEN)
    for number in range(1, total + 1):
        lines.append(BROKEN[number][0] if number in BROKEN else next(good))
    data = b"".join(lines)
    path.write_bytes(data)
    return data, {k: reason for k, (_, reason) in BROKEN.items() if reason}


# --------------------------------------------------------------------------- pure reader functions

def test_first_line_numbers_give_the_true_line_number_across_unit_boundaries(tmp_path):
    data, _ = news_with_broken_lines(tmp_path / "news.jsonl")
    truth = data.splitlines(keepends=True)
    for unit in (1, 700, 2_000, 4_096, 9_999, len(data)):
        ranges = [(lo, min(len(data), lo + unit)) for lo in range(0, len(data), unit)]
        per_unit = [list(jsonl_lines(str(tmp_path / "news.jsonl"), lo, hi, False)) for lo, hi in ranges]
        first = first_line_numbers({k: len(lines) for k, lines in enumerate(per_unit)})
        numbered = [(first[k] + i, raw) for k, lines in enumerate(per_unit) for i, (_, raw) in enumerate(lines)]
        assert numbered == list(enumerate(truth, start=1)), unit


def test_first_line_numbers_count_units_that_hold_no_line_start():
    # a unit inside one long line reads no line: the next unit still starts after the right count
    assert first_line_numbers({0: 3, 1: 0, 2: 0, 3: 2, 4: 1}) == {0: 1, 1: 4, 2: 4, 3: 4, 4: 6}
    assert first_line_numbers({2: 5, 0: 1, 1: 0}) == {0: 1, 1: 2, 2: 2}  # in unit order, not row order


def test_line_problem_says_what_is_wrong():
    cut = '{"id": 1, "text": "a"'
    assert line_problem(cut, "malformed_json", FIELDS) == "not JSON (Expecting ',' delimiter: column 22)"
    assert line_problem("id,title,text", "malformed_json", FIELDS) == "not JSON (Expecting value: column 1)"
    assert line_problem('["a"]', "malformed_json", FIELDS) == "an array, not a JSON object"
    assert line_problem('{"id": 1, "body": "b"}', "no_text_field", FIELDS) == "no field 'text' (fields: id, body)"
    assert line_problem('{"text": [1]}', "text_not_a_string", FIELDS) == "field 'text' holds an array"
    many = json.dumps({f"f{i}": i for i in range(12)})
    assert line_problem(many, "no_text_field", FIELDS).endswith("f9, ... (12 fields))")


# --------------------------------------------------------------------------- per unit, then the driver

def unit_rows(path: Path, unit_bytes: int, tmp_path: Path) -> tuple[list, int]:
    """The count rows of every work unit of `path` (process_unit, as the tasks run it)."""
    lexicon = load_lexicon("ro")
    spec = CorpusSpec(name="news", genre="news", format="jsonl", paths=[str(path)], role="train", options={})
    corpora = corpus_settings([spec], "ro", {})
    listing = list_units([spec], unit_bytes, lambda s: corpora[0]["fields"])
    plan = DocumentsPlan(corpora=corpora, lexicon=lexicon, min_chars=50, namespaces={},
                         punkt=params_to_dict(train_punkt([], lexicon.abbreviations)),
                         table_dir=str(tmp_path / f"table-{unit_bytes}"))
    rows = [row for unit in reversed(listing.units) for row in process_unit(unit, plan)]  # any order
    return rows, len(listing.units)


def test_dropped_lines_are_located_whatever_the_units(tmp_path):
    path = tmp_path / "news.jsonl"
    data, expected = news_with_broken_lines(path)
    records = sum(1 for line in data.splitlines() if line.strip())
    results = []
    for unit_bytes in (3_000, 16_384, 1 << 20):
        rows, n_units = unit_rows(path, unit_bytes, tmp_path)
        assert n_units == -(-len(data) // unit_bytes)
        by_file, located = dropped_lines(rows)
        assert [(x["line"], x["reason"]) for x in located] == sorted(expected.items()), unit_bytes
        offsets = {k: len(b"".join(data.splitlines(keepends=True)[:k - 1])) for k in expected}
        assert [x["byte"] for x in located] == [offsets[x["line"]] for x in located]
        assert by_file == {str(path): {"corpus": "news", "records": records,
                                       "dropped": {"invalid_utf8": 1, "malformed_json": 3, "no_text_field": 1,
                                                   "text_not_a_string": 1}}}
        results.append((by_file, located))
    assert results[0] == results[1] == results[2]  # the same report whatever the units
    details = {x["line"]: x["detail"] for x in results[0][1]}
    assert details[9] == "no field 'text' (fields: id, title, body)"
    bad_byte = data.index(BROKEN[23][0]) + BROKEN[23][0].index(b"\xfe")
    assert details[23] == f"not valid UTF-8 at byte {bad_byte} " + """(b'\\xfea"}')"""
    check_dropped_lines(by_file, located, {"news": "text"})  # 5 of 40: counted, no error
    (warning,) = dropped_lines_warnings(by_file, located)
    assert warning == (f"{path}: 6 of its {records} records dropped (invalid_utf8 1, malformed_json 3, "
                       f"no_text_field 1, text_not_a_string 1), at lines 3, 9, 15, 22, 23, ...; the first 20 dropped "
                       f"lines are listed in stats.json (sentences.dropped_lines)")


def test_each_unit_lists_enough_for_the_first_twenty_of_the_file(tmp_path):
    # 60 malformed lines among 120 real ones: the first 20 are found whatever the units
    good = real_lines(120)
    lines = []
    for i, line in enumerate(good):
        lines.append(line)
        if i % 2:
            lines.append(b"{broken\n")
    path = tmp_path / "half.jsonl"
    path.write_bytes(b"".join(lines))
    for unit_bytes in (4_096, 1 << 20):
        rows, _ = unit_rows(path, unit_bytes, tmp_path)
        by_file, located = dropped_lines(rows)
        assert [x["line"] for x in located[:MAX_LISTED_LINES]] == list(range(3, 3 + 3 * MAX_LISTED_LINES, 3))
        assert by_file[str(path)]["dropped"] == {"malformed_json": 60}
        check_dropped_lines(by_file, located, {"news": "text"})  # exactly half: not more than half, no error


def by_file_of(records: int, **dropped) -> dict:
    return {"/data/news.jsonl": {"corpus": "news", "records": records, "dropped": dropped}}


def test_a_file_mostly_without_the_text_field_names_the_flag():
    located = [{"file": "/data/news.jsonl", "line": 1, "byte": 0, "reason": "no_text_field",
                "detail": "no field 'text' (fields: id, title, body)"}]
    with pytest.raises(InputError) as exc:
        check_dropped_lines(by_file_of(40, no_text_field=40), located, {"news": "text"})
    assert str(exc.value) == ("/data/news.jsonl: 40 of its 40 records lack the text field 'text' (no_text_field 40; "
                              "line 1: no field 'text' (fields: id, title, body)); set --text-field to the field that "
                              "holds the text (text_field: in a --manifest entry)")
    with pytest.raises(InputError, match=r"21 of its 40 records lack a text field 'text' that holds a string "
                                         r"\(no_text_field 11, text_not_a_string 10; line 1: .*set --text-field"):
        check_dropped_lines(by_file_of(40, no_text_field=11, text_not_a_string=10), located, {"news": "text"})


def test_a_file_mostly_not_json_asks_whether_it_is_jsonl():
    with pytest.raises(InputError, match=r"^/data/news.jsonl: 30 of its 50 records are not JSON objects "
                                         r"\(malformed_json 29, truncated 1\); is it JSONL, one JSON object per line"):
        check_dropped_lines(by_file_of(50, malformed_json=29, truncated=1, invalid_utf8=3), [], {"news": "text"})
    # invalid UTF-8 is its own check (convert the file), not a sign of a wrong flag
    check_dropped_lines(by_file_of(50, malformed_json=20, invalid_utf8=25), [], {"news": "text"})


# --------------------------------------------------------------------------- the job

@pytest.fixture(scope="module")
def punkt(tmp_path_factory):
    return str(save_params(train_punkt([], load_lexicon("ro").abbreviations),
                           tmp_path_factory.mktemp("punkt") / "punkt.json"))


@pytest.mark.spark
def test_job_reports_dropped_lines_with_file_and_line(spark, tmp_path, capsys, punkt):
    path = tmp_path / "news.jsonl"
    data, expected = news_with_broken_lines(path)
    out = tmp_path / "out"
    capsys.readouterr()
    # 16 KB units: the ~100 KB file is read by several tasks, its lines cut at unit boundaries
    assert main(["--lang", "ro", "--input", str(path), "--output", str(out), "--stages", "sentences",
                 "--punkt-params", punkt, "--unit-mb", "0.015"]) == 0
    err = capsys.readouterr().err.splitlines()
    stats = json.loads((out / "stats.json").read_text())["sentences"]
    assert stats["inputs"][str(path)]["units"] >= 5
    assert [(x["file"], x["line"], x["reason"]) for x in stats["dropped_lines"]] == \
        [(str(path), k, reason) for k, reason in sorted(expected.items())]
    assert stats["dropped_lines"][0]["detail"].startswith("not JSON (Unterminated string starting at: column ")
    assert stats["dropped_lines_by_file"][str(path)]["dropped"]["malformed_json"] == 3
    summary = [e for e in err if e.startswith(f"warning: {path}: 6 of its ")]
    assert len(summary) == 1 and "at lines 3, 9, 15, 22, 23, ...;" in summary[0]
    assert stats["documents"]["kept"] == 34 and not [e for e in err if e.startswith("error: ")]


@pytest.mark.spark
def test_job_with_the_wrong_text_field_stops_and_publishes_nothing(spark, tmp_path, capsys, punkt):
    path = tmp_path / "news.jsonl"
    path.write_bytes(b"".join(real_lines(12)))
    out = tmp_path / "out"
    capsys.readouterr()
    assert main(["--lang", "ro", "--input", str(path), "--output", str(out), "--stages", "sentences",
                 "--punkt-params", punkt, "--text-field", "body"]) == 2
    err = capsys.readouterr().err.splitlines()
    errors = [e for e in err if e.startswith("error: ")]
    assert errors == [f"error: {path}: 12 of its 12 records lack the text field 'body' (no_text_field 12; line 1: "
                      f"no field 'body' (fields: id, title, text)); set --text-field to the field that holds the "
                      f"text (text_field: in a --manifest entry)"]
    assert not [e for e in err if e.startswith("warning: ")]
    assert not (out / "sentences").exists() and not (out / "stats.json").exists()  # nothing published


@pytest.mark.spark
def test_job_with_a_csv_named_jsonl_stops(spark, tmp_path, capsys, punkt):
    rows = [json.loads(line) for line in real_lines(6)]
    path = tmp_path / "news.jsonl"
    path.write_text("id,title\n" + "".join(f"{r['id']},\"{r['title']}\"\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["--lang", "ro", "--input", str(path), "--output", str(out), "--stages", "sentences",
                 "--punkt-params", punkt]) == 2
    errors = [e for e in capsys.readouterr().err.splitlines() if e.startswith("error: ")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {path}: 7 of its 7 records are not JSON objects "
                                                     f"(malformed_json 7; line 1: not JSON (Expecting value: column 1))")
    assert "is it JSONL, one JSON object per line?" in errors[0]
    assert not (out / "sentences").exists() and not (out / "stats.json").exists()  # nothing published
