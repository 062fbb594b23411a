"""The engine as the Dataproc Serverless image runs it (docker/dataproc-serverless.Dockerfile):
the wheel installed into a fresh virtual environment outside the repository, the job file
from that installation submitted with spark-submit, lexicons found as package data.

To stay fast the fresh venv installs only the wheel (no dependencies) and sees the
dependencies of this checkout's .venv through a .pth line: a plain path entry, so the
checkout's editable install of the engine is not visible there."""
from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for name in ("extractor", "jobs", "trainer", "phrase_lexicons"):
        shutil.copytree(REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    t0 = time.time()
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(base / "dist"), str(src)], check=True, capture_output=True)
    wheel = next((base / "dist").glob("nli_corpus_engine-*.whl"))
    venv = base / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
                    "--disable-pip-version-check", str(wheel)], check=True, capture_output=True)
    own = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip())
    (own / "zz_checkout_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    print(f"wheel built and installed in {time.time() - t0:.1f} s")
    return {"wheel": wheel, "python": py, "site": own, "base": base}


def test_wheel_holds_the_lexicons_and_the_job(installed):
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    for needed in ("phrase_lexicons/ro.yaml", "phrase_lexicons/es.yaml", "phrase_lexicons/__init__.py",
                   "jobs/extract.py", "extractor/runs/run.py", "extractor/engine/runner.py"):
        assert needed in names


def test_installed_engine_finds_its_lexicons_outside_the_repository(installed):
    code = ("import extractor, phrase_lexicons; from extractor.lexicon.lexicon import available_languages, load_lexicon;"
            "print(extractor.__file__); print(available_languages()); print(load_lexicon('ro').path)")
    out = subprocess.run([str(installed["python"]), "-c", code], cwd=installed["base"], capture_output=True,
                         text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, check=True).stdout
    lines = out.splitlines()
    assert lines[0].startswith(str(installed["site"]))
    assert "ro" in lines[1] and lines[2].startswith(str(installed["site"]))


def test_job_runs_from_the_installed_wheel_as_the_image_would(installed):
    """spark-submit <site-packages>/jobs/extract.py with the image's Python on driver and executors."""
    out = installed["base"] / "out"
    py = str(installed["python"])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PYSPARK_PYTHON=py, PYSPARK_DRIVER_PYTHON=py, SPARK_LOCAL_IP="127.0.0.1")
    spark_submit = Path(sys.executable).parent / "spark-submit"
    t0 = time.time()
    proc = subprocess.run([str(spark_submit), "--master", "local[2]", str(installed["site"] / "jobs" / "extract.py"),
                           "--lang", "ro", "--input", str(REPO / "samples" / "ro"), "--output", str(out)],
                          cwd=installed["base"], env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["pairs"]["total"] > 0 and stats["job"]["lexicon"] == "ro.yaml"
    assert (out / "splits" / "train").is_dir() and (out / "punkt_params.json").is_file()
    print(f"job from the wheel: {time.time() - t0:.0f} s")


def test_own_lexicon_file_with_lang_path(spark, tmp_path, capsys):
    from jobs.extract import main

    own = tmp_path / "lexicons" / "xx.yaml"
    own.parent.mkdir()
    own.write_text((REPO / "phrase_lexicons" / "ro.yaml").read_text(encoding="utf-8").replace("\nlang: ro", "\nlang: xx"),
                   encoding="utf-8")
    out = tmp_path / "out"
    assert main(["--lang", str(own), "--input", str(REPO / "samples" / "ro"), "--output", str(out),
                 "--stages", "sentences"]) == 0
    stats = json.loads((out / "stats.json").read_text())
    assert stats["job"]["lang"] == "xx" and stats["job"]["lexicon"] == "xx.yaml"
    assert stats["sentences"]["sentences"]["total"] > 0
