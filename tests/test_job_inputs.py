"""jobs/extract.py: flags, manifests, text/JSONL/Parquet corpora and every bad-input case
(one-line error naming the file, or a counted skip with the page id)."""
from __future__ import annotations

import bz2
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from extractor.core.errors import InputError
from extractor.job.inputs import corpora_from_args, load_manifest, spark_failure_message
from jobs.extract import main
from tests.conftest import shared_file

PAGE = ("<page><title>{title}</title><ns>0</ns><id>{id}</id><revision><id>1</id>"
        "<timestamp>2020-01-01T00:00:00Z</timestamp><text>{text}</text></revision></page>\n")
PROSE = ("Orașul a fost fondat în secolul al XV-lea de negustori veniți din nord. "
         "Prin urmare, piața centrală a devenit cea mai importantă din regiune. "
         "Dl. Popescu a scris despre aceasta în art. 3 al cărții sale de istorie locală.")


def dump(pages: list[str]) -> str:
    return ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11">\n'
            "<siteinfo><sitename>W</sitename></siteinfo>\n" + "".join(pages) + "</mediawiki>\n")


def last_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    lines = [line for line in err if line.startswith("error: ")]
    assert lines, err[-5:]
    return lines[-1]


# --------------------------------------------------------------------------- no Spark needed

def test_unknown_language_lists_the_available_lexicons(capsys):
    assert main(["--lang", "xx"]) == 2
    err = last_error(capsys)
    assert "unknown language 'xx'" in err and "en, es, ro" in err


@pytest.mark.parametrize("make,expected", [
    (lambda d: d / "missing.xml.bz2", "no such file or directory"),
    (lambda d: (d / "empty.xml.bz2").write_bytes(b"") and None or d / "empty.xml.bz2", "the file is empty"),
    (lambda d: (d / "nothing").mkdir() or d / "nothing", "holds no .txt file"),
    (lambda d: d / "*.nomatch.xml", "the glob matches no file"),
])
def test_missing_or_empty_input_names_the_path(tmp_path, capsys, make, expected):
    path = make(tmp_path)
    assert main(["--lang", "ro", "--input", str(path), "--output", str(tmp_path / "out")]) == 2
    err = last_error(capsys)
    assert str(path) in err and expected in err
    assert not (tmp_path / "out").exists()


def test_manifest_reading(tmp_path):
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "a.txt").write_text("Text.", encoding="utf-8")
    (tmp_path / "news.jsonl").write_text('{"text": "x"}\n', encoding="utf-8")
    (tmp_path / "corpora.yaml").write_text(
        "- {name: books, genre: fiction, format: text, path: books}\n"
        "- {name: news, genre: news, path: news.jsonl, role: test-only, text_field: body}\n", encoding="utf-8")
    books, news = load_manifest(tmp_path / "corpora.yaml")
    assert (books.name, books.genre, books.format, books.role) == ("books", "fiction", "text", "train")
    assert books.paths == [str(tmp_path / "books")]
    assert (news.format, news.role, news.option("text_field"), news.option("id_field")) == ("jsonl", "test-only", "body", "id")
    (tmp_path / "bad.yaml").write_text("- {name: a, path: books, role: dev}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.yaml: entry 'a' has role 'dev'"):
        load_manifest(tmp_path / "bad.yaml")
    (tmp_path / "dup.yaml").write_text("- {name: a, path: books}\n- {name: a, path: news.jsonl}\n", encoding="utf-8")
    with pytest.raises(InputError, match="two corpora are named 'a'"):
        load_manifest(tmp_path / "dup.yaml")


def test_corpora_from_args_names_and_formats(tmp_path):
    dump_path = tmp_path / "rowiki-20240101-pages-articles.xml.bz2"
    dump_path.write_bytes(bz2.compress(dump([PAGE.format(title="A", id=1, text=PROSE)]).encode()))
    (spec,) = corpora_from_args([str(dump_path)], None, None)
    assert (spec.name, spec.format, spec.genre) == ("rowiki-20240101-pages-articles", "mediawiki", "wikipedia")
    (spec,) = corpora_from_args([str(dump_path)], "ro-wiki", "encyclopedia")
    assert (spec.name, spec.genre) == ("ro-wiki", "encyclopedia")
    with pytest.raises(InputError, match="--corpus names a single input"):
        corpora_from_args([str(dump_path), str(dump_path)], "x", None)


def test_java_failure_is_translated_to_one_line():
    """Only what our own tasks marked becomes one line (the input, or the output's
    filesystem by its errno), and only in a Spark failure (by its type); never the words of
    an exception's text (issue 47)."""
    from py4j.protocol import Py4JJavaError

    class FakeJavaError(Py4JJavaError):
        def __init__(self, text):
            Exception.__init__(self, text)
            self.java_exception = None

        def __str__(self):
            return self.args[0]
    # a bug's UnicodeDecodeError reads "unexpected end of data": not a truncated file
    exc = FakeJavaError("An error occurred while calling o52.collect.\n: org.apache.spark.SparkException: Job aborted"
                        "\nCaused by: org.apache.spark.api.python.PythonException: UnicodeDecodeError: 'utf-8' codec "
                        "can't decode byte 0xe2 in position 0: unexpected end of data\n\tat org.apache.spark.api.")
    output = "out/ro"
    assert spark_failure_message(exc, output) is None
    marked = FakeJavaError("py4j...\npyspark.errors.PythonException: InputError: [nli-input-error] b.txt: not valid UTF-8\n at ...")
    assert spark_failure_message(marked, output) == "b.txt: not valid UTF-8"
    assert spark_failure_message(Exception(str(marked)), output) is None  # not Spark's: a bug of the driver
    full = FakeJavaError("...\nRuntimeError: [nli-output-fault] errno 28: [Errno 28] Error writing bytes to file\n at ...")
    assert spark_failure_message(full, output) == ("out/ro: no space left on the device; free space and run again (the "
                                                 "previous output is unchanged)")
    lost = FakeJavaError("...\nRuntimeError: [nli-output-fault] errno 2: [Errno 2] Failed to open local file\n")
    assert spark_failure_message(lost, output) is None  # a scratch file that is not there: a bug
    assert spark_failure_message(FakeJavaError("OutOfMemoryError"), output) is None
    # an executor's death (here the message Spark 4.3 gave when test_resume.py killed a
    # Python worker) is not the input's fault, though it carries an EOFException
    crashed = FakeJavaError("An error occurred while calling o169.collectToPython.\n: org.apache.spark.SparkException: "
                            "Job aborted due to stage failure: Task 0 in stage 2.0 failed 1 times, most recent failure: "
                            "Lost task 0.0 in stage 2.0 (TID 11) (localhost executor driver): org.apache.spark."
                            "SparkException: Python worker exited unexpectedly (crashed)\n\tat org.apache.spark.api."
                            "python.BasePythonRunner$ReaderIterator$$anonfun$1.applyOrElse(PythonRunner.scala:621)\n"
                            "Caused by: java.io.EOFException\n\tat java.base/java.io.DataInputStream.readFully")
    assert spark_failure_message(crashed, output) is None


# --------------------------------------------------------------------------- with Spark

@pytest.mark.spark
def test_truncated_bz2_is_a_one_line_error(spark, tmp_path, capsys):
    whole = shared_file("dumps/enwiki-sample-206pages.xml.bz2").read_bytes()
    cut = tmp_path / "rowiki-cut.xml.bz2"
    cut.write_bytes(whole[: len(whole) // 2])
    assert main(["--lang", "en", "--input", str(cut), "--output", str(tmp_path / "out")]) == 2
    err = last_error(capsys)
    assert err == f"error: {cut}: truncated bz2 file (no end-of-stream marker); download it again"
    assert not (tmp_path / "out" / "sentences").exists()


@pytest.mark.spark
def test_malformed_page_is_a_counted_skip_with_its_id(spark, tmp_path):
    pages = [PAGE.format(title="Bun", id=11, text=PROSE),
             PAGE.format(title="Stricat", id=12, text=PROSE).replace("</title>", "", 1),
             PAGE.format(title="Alt bun", id=13, text=PROSE)]
    path = tmp_path / "rowiki-bad.xml.bz2"
    path.write_bytes(bz2.compress(dump(pages).encode()))
    out = tmp_path / "out"
    assert main(["--lang", "ro", "--input", str(path), "--output", str(out), "--stages", "sentences"]) == 0
    stats = json.loads((out / "stats.json").read_text())["sentences"]
    assert stats["documents"]["read"] == 3 and stats["documents"]["kept"] == 2
    assert stats["documents_dropped"] == {"malformed_xml": 1}
    assert [e["page_id"] for e in stats["errors"]] == ["12"] and "malformed_xml" in stats["errors"][0]["error"]
    rows = ds.dataset(out / "sentences", format="parquet", partitioning="hive").to_table().to_pylist()
    assert {r["doc_id"] for r in rows} == {"rowiki-bad:11", "rowiki-bad:13"}
    assert {r["title"] for r in rows} == {"Bun", "Alt bun"}


@pytest.mark.spark
def test_non_utf8_text_file_is_a_counted_skip_naming_the_file_and_byte(spark, tmp_path, capsys):
    books = tmp_path / "books"
    books.mkdir()
    (books / "bun.txt").write_text(PROSE, encoding="utf-8")
    (books / "vechi.txt").write_bytes("Pădurea era liniştită.".encode("cp1250"))
    out = tmp_path / "out"
    assert main(["--lang", "ro", "--input", str(books), "--output", str(out), "--stages", "sentences"]) == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["sentences"]["documents_dropped"] == {"invalid_utf8": 1}
    assert stats["sentences"]["first_invalid_utf8"][str(books / "vechi.txt")]["offset"] == 1
    warning = [w for w in stats["warnings"] if "vechi.txt" in w]
    assert warning and "not valid UTF-8 at byte 1" in warning[0] and "\n" not in warning[0]
    assert "warning: " + warning[0] in capsys.readouterr().err


@pytest.mark.spark
def test_a_dump_without_pages_is_an_error(spark, tmp_path, capsys):
    path = tmp_path / "notadump.xml"
    path.write_text("<html><body>not a dump</body></html>\n", encoding="utf-8")
    assert main(["--lang", "ro", "--input", str(path), "--output", str(tmp_path / "out"), "--stages", "sentences"]) == 2
    assert f"{path}: no <page> element found" in last_error(capsys)


@pytest.mark.spark
def test_text_jsonl_and_parquet_corpora(spark, tmp_path):
    books = tmp_path / "books"
    (books / "vol1").mkdir(parents=True)
    (books / "vol1" / "cap1.txt").write_text(f"{PROSE}\n\nAl doilea paragraf are o singură propoziție, destul de lungă.\n",
                                             encoding="utf-8")
    (books / "cap0.txt").write_text("Scurt.\n", encoding="utf-8")
    (tmp_path / "news.jsonl").write_text(
        json.dumps({"body": PROSE, "uid": "n1", "headline": "Știre", "section": "economie"}, ensure_ascii=False) + "\n"
        + "{broken json\n" + json.dumps({"body": "Fără id, dar cu text suficient de lung pentru un test."}) + "\n",
        encoding="utf-8")
    pq.write_table(pa.table({"content": [PROSE, None], "key": [7, 8], "name": ["Doc 7", "Doc 8"]}),
                   tmp_path / "web.parquet")
    (tmp_path / "corpora.yaml").write_text(
        "- {name: books, genre: fiction, format: text, path: books}\n"
        "- {name: news, genre: news, path: news.jsonl, text_field: body, id_field: uid, title_field: headline,"
        " genre_field: section, role: test-only}\n"
        "- {name: web, genre: web, path: web.parquet, text_field: content, id_field: key, title_field: name}\n",
        encoding="utf-8")
    # Punkt learns nothing useful from three short documents: give it parameters that
    # hold only the lexicon's abbreviations (also tests --punkt-params).
    from extractor.lexicon.lexicon import load_lexicon
    from extractor.sentences.segment import save_params, train_punkt
    params = save_params(train_punkt([], load_lexicon("ro").abbreviations), tmp_path / "punkt.json")
    out = tmp_path / "out"
    assert main(["--lang", "ro", "--manifest", str(tmp_path / "corpora.yaml"), "--output", str(out),
                 "--stages", "sentences", "--punkt-params", str(params)]) == 0
    rows = ds.dataset(out / "sentences", format="parquet", partitioning="hive").to_table().to_pylist()
    books_rows = [r for r in rows if r["corpus"] == "books"]
    assert {r["doc_id"] for r in books_rows} == {"books:vol1/cap1.txt", "books:cap0.txt"}
    cap1 = [(r["para_idx"], r["sent_idx"]) for r in books_rows if r["doc_id"] == "books:vol1/cap1.txt"]
    assert cap1 == [(0, 0), (0, 1), (0, 2), (1, 0)]
    news = [r for r in rows if r["corpus"] == "news"]
    assert {(r["doc_id"].split(":")[0], r["genre"], r["role"]) for r in news} == {("news", "economie", "test-only"),
                                                                                  ("news", "news", "test-only")}
    assert any(r["text"].startswith("Dl. Popescu a scris despre aceasta în art. 3") for r in news)  # abbreviations
    assert "news:n1" in {r["doc_id"] for r in news} and {r["title"] for r in news} >= {"Știre"}
    web = [r for r in rows if r["corpus"] == "web"]
    assert {r["doc_id"] for r in web} == {"web:7"} and {r["title"] for r in web} == {"Doc 7"}
    stats = json.loads((out / "stats.json").read_text())["sentences"]
    assert stats["documents_dropped"] == {"malformed_json": 1, "empty_text": 1}
    news = tmp_path / "news.jsonl"
    assert stats["dropped_lines"] == [{"file": str(news), "line": 2, "byte": news.read_bytes().index(b"{broken"),
                                       "reason": "malformed_json",
                                       "detail": "not JSON (Expecting property name enclosed in double quotes: column 2)"}]
    assert stats["corpora"]["books"]["documents_read"] == 2


@pytest.mark.spark
def test_pos_filter_on_without_the_model_fails_before_any_stage(spark, tmp_path, capsys):
    from extractor.pairs.pos_filter import model_installed

    if model_installed("ro_core_news_sm"):
        pytest.skip("ro_core_news_sm is installed here")
    assert main(["--lang", "ro", "--pos-filter", "on", "--spacy-model", "ro_core_news_sm",
                 "--output", str(tmp_path / "out")]) == 2
    err = last_error(capsys)
    assert err.startswith("error: --pos-filter on: spaCy model 'ro_core_news_sm' is not installed")
    assert "spacy download ro_core_news_sm" in err
    assert not (tmp_path / "out" / "sentences").exists()  # stage 1 never ran
