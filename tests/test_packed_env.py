"""The executors' packed Python environment (extractor/spark/executor_env.py): what goes in,
the cache, and, on the standalone cluster whose workers have a bare Python, that the
documented spark-submit options make the archive the executors' Python (and that without
it the executors cannot import the engine's dependencies)."""
from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from extractor.spark import executor_env
from tests.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]

PROBE = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.getOrCreate()
def probe(_):
    import importlib, sys
    found = []
    for name in ("yaml", "pyarrow", "mwparserfromhell", "nltk"):
        try:
            importlib.import_module(name)
            found.append(name)
        except ImportError:
            pass
    yield sys.executable + "|" + ",".join(found)
print("PROBE", sorted(set(spark.sparkContext.parallelize(range(4), 4).mapPartitions(probe).collect())))
"""


def test_requirements_leave_out_what_the_cluster_brings():
    reqs = {r.split("<")[0].split(">")[0].split("=")[0].lower() for r in executor_env.requirements()}
    assert {"pyarrow", "pyyaml", "mwparserfromhell", "nltk", "spacy"} <= reqs
    assert not reqs & {"pyspark", "py4j", "venv-pack", "matplotlib", "polars"}
    driver = {r.split("<")[0].split(">")[0].lower() for r in executor_env.requirements(driver=True)}
    assert "matplotlib" in driver and "pyspark" not in driver


@pytest.fixture(scope="module")
def archive():
    t0 = time.time()
    # the archive ./spark-submit.sh makes for --lang ro (with the lexicon's installed spaCy model)
    path = executor_env.build(REPO / ".spark-deps", log=lambda m: print(m, file=sys.stderr),
                              models=executor_env.lexicon_models("ro"))
    print(f"packed environment: {path.stat().st_size / 1e6:.0f} MB, {time.time() - t0:.1f} s (cached when built before)")
    return path


def test_archive_is_a_venv_with_the_dependencies_and_is_reused(archive):
    names = tarfile.open(archive).getnames()
    assert "bin/python" in names and "pyvenv.cfg" in names
    site = [n for n in names if "/site-packages/" in n]
    tops = {n.split("/site-packages/")[1].split("/")[0] for n in site}
    assert {"yaml", "pyarrow", "mwparserfromhell", "nltk", "spacy"} <= tops
    assert "pyspark" not in tops and "py4j" not in tops
    mtime = archive.stat().st_mtime
    t0 = time.time()
    assert executor_env.build(archive.parent, models=executor_env.lexicon_models("ro")) == archive
    assert archive.stat().st_mtime == mtime
    assert time.time() - t0 < 5


def submit_probe(cluster, tmp_path, extra):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update(SPARK_LOCAL_IP="127.0.0.1", SPARK_HOME=str(cluster.home))
    proc = subprocess.run([str(Path(sys.executable).parent / "spark-submit"), "--master", cluster.url,
                           "--conf", "spark.executor.memory=512m", "--conf", f"spark.pyspark.driver.python={sys.executable}",
                           *extra, str(script)], env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("PROBE")), "")
    return proc, line


def test_executors_get_the_dependencies_only_from_the_archive(spark_cluster, archive, tmp_path):
    # the workers' own Python: a bare venv, none of the engine's dependencies
    proc, line = submit_probe(spark_cluster, tmp_path, ["--conf", f"spark.pyspark.python={spark_cluster.bare_python}"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"{spark_cluster.bare_python}|'" in line  # ran, and imported none of them
    # the documented options: the archive unpacked as ./environment on every executor
    proc, line = submit_probe(spark_cluster, tmp_path, ["--archives", f"{archive}#environment",
                                                        "--conf", "spark.pyspark.python=./environment/bin/python"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "/environment/bin/python|yaml,pyarrow,mwparserfromhell,nltk'" in line, line
