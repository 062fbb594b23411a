"""Paths from anywhere (issue 31, item 2): every relative path a user gives is taken against
the directory the command was run in, by ./spark-submit.sh, the job and the trainer.

The pure rules of extractor/job/paths.py first, then the real commands run from a folder outside
the repository (pytest's tmp_path) with relative paths only."""
from __future__ import annotations

import argparse
import bz2
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from extractor.job import paths
from tests.conftest import REPO

SAMPLE_EN = REPO / "samples" / "en" / "en-sample-pages-articles.xml"


# --------------------------------------------------------------------------- pure rules

def test_absolute_takes_relative_paths_against_the_base_and_keeps_the_rest():
    assert paths.absolute("rel.xml.bz2", "/data/wiki") == "/data/wiki/rel.xml.bz2"
    assert paths.absolute("../dumps/*.xml.bz2", "/data/wiki") == "/data/dumps/*.xml.bz2"
    assert paths.absolute("./out/", "/data") == "/data/out"
    assert paths.absolute("/abs/in.xml", "/data") == "/abs/in.xml"
    for uri in ("gs://bucket/dumps/ro.xml.bz2", "s3a://b/k", "hdfs://nn:8020/x", "file:///tmp/x"):
        assert paths.absolute(uri, "/data") == uri
    assert paths.absolute("~/corpora/x.jsonl", "/data") == os.path.expanduser("~/corpora/x.jsonl")


def test_resolve_job_args_makes_every_path_flag_absolute():
    args = argparse.Namespace(input=["rel.xml.bz2", "more/*.txt", "gs://b/x.xml.bz2"], output="out",
                              manifest="corpora.yaml", punkt_params="params/punkt.json",
                              lang="lexicons/mine.yaml", spacy_model="./models/ro_tagger", corpus="rel")
    paths.resolve_job_args(args, base="/home/u/data")
    assert args.input == ["/home/u/data/rel.xml.bz2", "/home/u/data/more/*.txt", "gs://b/x.xml.bz2"]
    assert args.output == "/home/u/data/out"
    assert args.manifest == "/home/u/data/corpora.yaml"
    assert args.punkt_params == "/home/u/data/params/punkt.json"
    assert args.lang == "/home/u/data/lexicons/mine.yaml"
    assert args.spacy_model == "/home/u/data/models/ro_tagger"
    assert args.corpus == "rel"  # a name, not a path


def test_resolve_job_args_keeps_codes_names_defaults_and_missing_flags():
    args = argparse.Namespace(input=None, output=None, manifest=None, lang="ro", spacy_model="ro_core_news_sm")
    paths.resolve_job_args(args, base="/x")
    assert (args.input, args.output, args.manifest, args.lang, args.spacy_model) == (None, None, None, "ro",
                                                                                     "ro_core_news_sm")
    assert not hasattr(args, "punkt_params")  # a stage that is not installed adds no flag


def test_resolve_job_args_defaults_to_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = paths.resolve_job_args(argparse.Namespace(input=["a.xml"], output="o", lang="en"))
    assert args.input == [str(tmp_path / "a.xml")] and args.output == str(tmp_path / "o")


def test_split_submit_args_finds_the_job_script_after_spark_options():
    argv = ["--master", "spark://h:7077", "--conf", "spark.cores.max=2", "--verbose", "--conf=spark.a=b",
            "jobs/extract.py", "--lang", "ro", "--input", "x.xml"]
    assert paths.split_submit_args(argv) == 6
    assert paths.split_submit_args(["jobs/extract.py", "--lang", "ro"]) == 0
    assert paths.split_submit_args(["--master", "local[2]"]) is None


def test_cluster_deploy_mode_by_flag_or_conf_the_last_one_wins():
    job = ["jobs/extract.py", "--deploy-mode", "cluster"]  # a job argument, not spark-submit's
    assert not paths.cluster_deploy_mode(job, 0)
    assert paths.cluster_deploy_mode(["--deploy-mode", "cluster", "j.py"], 2)
    assert paths.cluster_deploy_mode(["--deploy-mode=cluster", "j.py"], 1)
    assert paths.cluster_deploy_mode(["--conf", "spark.submit.deployMode=cluster", "j.py"], 2)
    assert not paths.cluster_deploy_mode(["--deploy-mode", "cluster", "--deploy-mode", "client", "j.py"], 4)


def test_cluster_mode_refuses_relative_job_paths_only():
    base = ["--master", "yarn", "--deploy-mode", "cluster", "/repo/jobs/extract.py"]
    errors = paths.cluster_mode_errors(base + ["--lang", "ro", "--input", "rel.xml.bz2", "--output=gs://b/out",
                                               "--manifest", "/nfs/corpora.yaml", "--lang", "mine.yaml"])
    assert len(errors) == 2
    assert errors[0].startswith("--input rel.xml.bz2: with --deploy-mode cluster the driver runs on a cluster node")
    assert "absolute path" in errors[0] and "URI" in errors[0]
    assert errors[1].startswith("--lang mine.yaml:")
    client = ["--master", "spark://h:7077", "/repo/jobs/extract.py", "--input", "rel.xml.bz2"]
    assert paths.cluster_mode_errors(client) == []
    with pytest.raises(ValueError, match="--input rel.xml.bz2"):
        paths.submit_args(base + ["--input", "rel.xml.bz2"], "/data", "/repo")


def test_the_job_script_is_looked_for_here_then_in_the_repository():
    present = {"/data/mine/extract.py", "/repo/jobs/extract.py"}
    exists = present.__contains__
    assert paths.resolve_app("mine/extract.py", "/data", "/repo", exists) == "/data/mine/extract.py"
    assert paths.resolve_app("jobs/extract.py", "/data", "/repo", exists) == "/repo/jobs/extract.py"
    assert paths.resolve_app("missing.py", "/data", "/repo", exists) == "/data/missing.py"  # spark-submit says so
    assert paths.resolve_app("/abs/x.py", "/data", "/repo", exists) == "/abs/x.py"
    argv = ["--master", "local[1]", "jobs/extract.py", "--input", "jobs/extract.py"]
    assert paths.submit_args(argv, "/data", "/repo", exists) == [
        "--master", "local[1]", "/repo/jobs/extract.py", "--input", "jobs/extract.py"]  # the job resolves its own


def test_cli_prints_nul_separated_arguments_or_one_error_line(capsys):
    assert paths.main(["submit", str(REPO), "/nowhere", "--", "--master", "local[1]", "jobs/extract.py",
                       "--input", "a b.xml"]) == 0
    out = capsys.readouterr().out
    assert out.split("\0") == ["--master", "local[1]", str(REPO / "jobs" / "extract.py"), "--input", "a b.xml", ""]
    assert paths.main(["submit", str(REPO), "/d", "--", "--deploy-mode", "cluster", "jobs/extract.py",
                       "--output", "out"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --output out: with --deploy-mode cluster")


# --------------------------------------------------------------------------- real commands

def _data_folder(tmp_path: Path) -> Path:
    """A user's data folder outside the repository: a bz2 dump and a copy of a lexicon."""
    data = tmp_path / "data"
    (data / "dumps").mkdir(parents=True)
    (data / "dumps" / "rel.xml.bz2").write_bytes(bz2.compress(SAMPLE_EN.read_bytes()))
    shutil.copy(REPO / "phrase_lexicons" / "en.yaml", data / "my-en.yaml")
    assert REPO not in data.parents
    return data


def _submit_env() -> dict:
    env = dict(os.environ)
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "NLI_PACK_ENV"):
        env.pop(key, None)
    return env


def _lines(proc) -> str:
    return "\n".join(l for l in (proc.stdout + proc.stderr).splitlines() if l.startswith(("error", "Traceback")))


def test_cluster_deploy_mode_with_a_relative_path_is_refused_by_spark_submit_sh(tmp_path):
    proc = subprocess.run([str(REPO / "spark-submit.sh"), "--master", "yarn", "--deploy-mode", "cluster",
                           "jobs/extract.py", "--lang", "en", "--input", "dumps/rel.xml.bz2"],
                          cwd=tmp_path, env=_submit_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        "error: --input dumps/rel.xml.bz2: with --deploy-mode cluster the driver runs on a cluster node, not in "
        "this directory; give an absolute path on storage every node sees, or a URI (gs://, s3a://, hdfs://)")


@pytest.mark.spark
@pytest.mark.slow
def test_job_from_a_foreign_folder_with_a_manifest_in_process(spark, tmp_path, monkeypatch):
    """The job (plain python, the shared local session) from another directory: a manifest
    given relative to it, whose path is relative to the manifest file. The Spark tasks run in
    the JVM's directory, not this one, so they see only what the driver made absolute."""
    from jobs.extract import main

    data = _data_folder(tmp_path)
    (data / "dumps" / "corpora.yaml").write_text("- {name: rel, genre: wikipedia, path: rel.xml.bz2}\n")
    monkeypatch.chdir(data)
    assert os.getcwd() != os.path.realpath(REPO)
    assert main(["--lang", "my-en.yaml", "--manifest", "dumps/corpora.yaml", "--output", "first",
                 "--stages", "sentences"]) == 0
    stats = json.loads((data / "first" / "stats.json").read_text())
    assert stats["job"]["corpora"][0]["paths"] == [str(data / "dumps" / "rel.xml.bz2")]
    assert stats["sentences"]["documents"]["kept"] > 0 and stats["sentences"]["sentences"]["total"] > 0
    assert (data / "first" / "punkt_params.json").is_file()


@pytest.mark.spark
@pytest.mark.slow
def test_spark_submit_sh_from_a_foreign_folder_resolves_every_relative_path(tmp_path):
    """The issue's command, run in a data folder: the repository's spark-submit.sh, the job
    script named relative to the repository, --lang a lexicon file, --input, --output and
    --punkt-params all relative to the data folder."""
    from extractor.sentences.segment import save_params, train_punkt

    data = _data_folder(tmp_path)
    (data / "params").mkdir()
    save_params(train_punkt(["Dr. Smith came. He saw it. Mr. Jones left at 5 p.m. yesterday."] * 20),
                data / "params" / "punkt.json")
    proc = subprocess.run([str(REPO / "spark-submit.sh"), "--master", "local[1]", "jobs/extract.py",
                           "--lang", "my-en.yaml", "--input", "dumps/rel.xml.bz2", "--output", "out",
                           "--punkt-params", "params/punkt.json"],
                          cwd=data, env=_submit_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, _lines(proc) or proc.stderr[-3000:]
    assert f"[extract] done: {data / 'out'}" in proc.stdout
    stats = json.loads((data / "out" / "stats.json").read_text())
    assert stats["job"]["corpora"][0]["paths"] == [str(data / "dumps" / "rel.xml.bz2")]
    assert stats["job"]["lexicon"] == "my-en.yaml"
    assert stats["sentences"]["punkt"]["source"] == str(data / "params" / "punkt.json")
    assert sorted(p.name for p in (data / "out" / "splits").iterdir() if p.is_dir())
    assert not (REPO / "out").exists() and not (REPO / "dumps").exists()


@pytest.mark.slow
def test_trainer_commands_take_paths_against_their_own_directory(tmp_path):
    """`python -m trainer` from a folder outside the repository (the installed package, not
    the checkout, is imported): a run trained in one folder with relative paths, then
    evaluated and used from its parent folder with paths relative to that one."""
    from tests.trainer_fixtures import synthetic_nli, write_jsonl

    work = tmp_path / "work"
    (work / "d").mkdir(parents=True)
    write_jsonl(synthetic_nli(160), work / "d" / "train.jsonl")
    write_jsonl(synthetic_nli(40, seed=1), work / "d" / "dev.jsonl")
    env = dict(os.environ, PYTHONSAFEPATH="1")

    def trainer(cwd, *args):
        proc = subprocess.run([sys.executable, "-m", "trainer", *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout + proc.stderr

    trainer(work, "train", "--model", "tfidf-lr", "--train", "d/train.jsonl", "--validation", "d/dev.jsonl",
            "--output", "runs/a")
    assert (work / "runs" / "a" / "metrics.json").is_file()
    out = trainer(tmp_path, "evaluate", "work/runs/a", "--data", "work/d/dev.jsonl", "--output", "ev")
    assert (tmp_path / "ev" / "metrics.json").is_file() and "macro-F1" in out
    trainer(tmp_path, "predict", "work/runs/a", "--data", "work/d/dev.jsonl", "--output", "preds.jsonl")
    assert len((tmp_path / "preds.jsonl").read_text().splitlines()) == 40
    out = trainer(tmp_path, "stats", "--data", "work/d/train.jsonl", "--output", "stats.md")
    assert (tmp_path / "stats.md").is_file()
    assert not (REPO / "ev").exists() and not (REPO / "preds.jsonl").exists()


# The same from a standalone cluster (a spark:// master, client mode) is tests/test_cluster.py's
# submission: one cluster run serves both checks.
