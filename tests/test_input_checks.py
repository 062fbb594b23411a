"""What the job refuses before any work, the same in `--dry-run` as in the run (issue 56):
an output that is a file or not writable, a JSONL file whose text is in another field, a
corpus in another language than the lexicon's; and the sentences in another language the
run drops and counts (docs/cleaning.md "Language check"). Real inputs: the Romanian news of
../shared/data."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from extractor.sentences import language
from tests.conftest import shared_file
from tests.test_faults_runs import in_process

REPO = Path(__file__).resolve().parents[1]
NEWS = "text/ro-news/ro-news-realitatea-aleph.jsonl"


def news_records(n: int) -> list[dict]:
    with open(shared_file(NEWS), encoding="utf-8") as f:
        return [json.loads(line) for _, line in zip(range(n), f)]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def dry_run(argv: list[str], user: str | None = None) -> tuple[int, str]:
    """The job's --dry-run in a subprocess (as `user` through setpriv when given): exit status
    and its error line."""
    cmd = [sys.executable, str(REPO / "jobs" / "extract.py"), *argv, "--dry-run"]
    if user is not None:
        cmd = [shutil.which("setpriv") or "setpriv", f"--reuid={user}", "--regid=nogroup", "--clear-groups", *cmd]
    proc = subprocess.run(cmd, cwd="/", capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    return proc.returncode, errors[0] if errors else ""


@pytest.fixture()
def body_jsonl(tmp_path) -> Path:
    # 37 real news articles whose text is under "body", as in the user's export
    return write_jsonl(tmp_path / "body.jsonl", [{"id": r["id"], "body": r["text"]} for r in news_records(37)])


def test_dry_run_refuses_an_output_that_is_a_file_as_the_run_does(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    code, line = dry_run(["--lang", "ro", "--output", str(afile)])
    assert code == 2 and line == f"error: {afile}: cannot create the directory ({afile} is a file, not a folder); " \
                                  f"choose a writable --output"
    got, first, _ = in_process(["--lang", "ro", "--output", str(afile)], capsys)  # refused before Spark starts
    assert (got, first) == (2, line) and afile.read_text() == "not a folder\n"


@pytest.mark.skipif(shutil.which("setpriv") is None or os.geteuid() != 0, reason="runs the job as nobody: needs root")
def test_dry_run_refuses_an_unwritable_output_folder_as_the_run_does():
    top = Path(tempfile.mkdtemp(prefix="nli-locked-"))  # under /tmp: every user may enter it
    top.chmod(0o755)
    locked = top / "locked"
    locked.mkdir(mode=0o755)  # root's: nobody may read it, not write in it
    output = locked / "ro"
    code, line = dry_run(["--lang", "ro", "--output", str(output)], user="nobody")
    assert code == 2 and line == f"error: {output}: permission denied; choose a writable --output " \
                                  f"(the previous output is unchanged)"
    proc = subprocess.run(["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", sys.executable,
                           str(REPO / "jobs" / "extract.py"), "--lang", "ro", "--output", str(output)],
                          cwd="/", capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and [x for x in proc.stderr.splitlines() if x.startswith("error:")][0] == line
    assert not output.exists()
    shutil.rmtree(top)


def test_dry_run_refuses_jsonl_without_the_text_field_with_the_run_s_line(body_jsonl, tmp_path):
    code, line = dry_run(["--lang", "ro", "--input", str(body_jsonl), "--output", str(tmp_path / "out")])
    assert code == 2
    assert line == f"error: {body_jsonl}: 37 of its 37 records lack the text field 'text' (no_text_field 37; " \
                   f"line 1: no field 'text' (fields: id, body)); set --text-field to the field that holds the " \
                   f"text (text_field: in a --manifest entry)"
    code, _ = dry_run(["--lang", "ro", "--input", str(body_jsonl), "--text-field", "body",
                       "--output", str(tmp_path / "out")])
    assert code == 0 and not (tmp_path / "out").exists()


def test_dry_run_refuses_a_corpus_in_another_language_naming_the_lang_to_use(tmp_path):
    news = write_jsonl(tmp_path / "news.jsonl", news_records(200))
    code, line = dry_run(["--lang", "es", "--input", str(news), "--output", str(tmp_path / "out")])
    assert code == 2 and line.startswith(f"error: {news}: corpus news looks like ro, not es: ")
    assert line.endswith("run with --lang ro (or a lexicon of that language), or check --input")
    code, _ = dry_run(["--lang", "es", "--language-check", "off", "--input", str(news),
                       "--output", str(tmp_path / "out")])
    assert code == 0


@pytest.mark.spark
def test_the_run_refuses_the_same_inputs_with_the_same_lines(spark, body_jsonl, tmp_path, capsys):
    news = write_jsonl(tmp_path / "news.jsonl", news_records(200))
    for argv in (["--lang", "ro", "--input", str(body_jsonl)], ["--lang", "es", "--input", str(news)]):
        _, expected = dry_run([*argv, "--output", str(tmp_path / "dry")])
        got, first, _ = in_process([*argv, "--output", str(tmp_path / "out")], capsys)
        assert (got, first) == (2, expected) and expected
        assert not (tmp_path / "out" / "manifest.json").exists()


@pytest.mark.spark
def test_sentences_in_another_language_are_dropped_and_counted(spark, tmp_path, capsys):
    news = write_jsonl(tmp_path / "news.jsonl", news_records(600))
    got, _, _ = in_process(["--lang", "ro", "--input", str(news), "--output", str(tmp_path / "out"),
                            "--stages", "sentences"], capsys)
    assert got == 0
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())["sentences"]
    checked = stats["language"]
    assert checked["check"] == "on" and checked["corpus_samples"]["news"]["share"] > 0.9
    foreign = checked["foreign_sentences"]
    assert foreign.get("en", 0) >= 10 and sum(foreign.values()) == sum(stats["foreign_sentences"].values())
    assert stats["corpora"]["news"]["foreign_sentences"] == stats["foreign_sentences"]
    assert checked["foreign_share"] == round(sum(foreign.values()) / (stats["sentences"]["total"] +
                                                                      sum(foreign.values())), 4)
    table = pq.read_table(tmp_path / "out" / "sentences").to_pandas()
    assert len(table) == stats["sentences"]["total"]
    kept = table["text"].tolist()
    assert language.foreign_languages(kept, "ro") == [None] * len(kept)  # none left that the check drops
    # a dropped sentence leaves a gap in its paragraph's sent_idx: no pair can span it
    gaps = table.sort_values(["doc_id", "para_idx", "sent_idx"]).groupby(["doc_id", "para_idx"])["sent_idx"].apply(
        lambda s: int((s.diff().dropna() > 1).sum()))
    assert 0 < gaps.sum() <= sum(foreign.values())
    got, _, _ = in_process(["--lang", "ro", "--input", str(news), "--output", str(tmp_path / "off"),
                            "--stages", "sentences", "--language-check", "off"], capsys)
    off = json.loads((tmp_path / "off" / "stats.json").read_text())["sentences"]
    assert got == 0 and off["language"]["check"] == "off" and off["language"]["foreign_sentences"] == {}
    assert off["sentences"]["total"] == stats["sentences"]["total"] + sum(foreign.values())


@pytest.mark.spark
def test_under_spark_submit_the_error_is_on_stderr_and_stdout_holds_none(body_jsonl, tmp_path):
    # spark-submit merges the driver's stderr into its stdout; the job sends it back to stderr
    proc = subprocess.run([str(REPO / "spark-submit.sh"), "--master", "local[1]", "jobs/extract.py", "--lang", "ro",
                           "--input", str(body_jsonl), "--output", str(tmp_path / "out")], cwd=REPO,
                          capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable))
    assert proc.returncode == 2
    assert "error:" not in proc.stdout and "[extract]" not in proc.stdout
    assert [x for x in proc.stderr.splitlines() if x.startswith("error: ")] == \
        [f"error: {body_jsonl}: 37 of its 37 records lack the text field 'text' (no_text_field 37; line 1: no field "
         f"'text' (fields: id, body)); set --text-field to the field that holds the text (text_field: in a "
         f"--manifest entry)"]
