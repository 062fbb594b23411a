"""The job on a real Spark standalone cluster (tests/conftest.py::spark_cluster: one master,
two one-core workers whose own Python has none of the project's dependencies), submitted
with ./spark-submit.sh as the README says. spark-submit.sh packs the executors' Python
environment (venv-pack, --archives ...#environment), so only that archive can serve the
executors; the tables come out byte for byte as in local mode.

The submission is also issue 31's "paths from anywhere" on a cluster master (client mode:
the driver runs here, the executors in the workers' own directories): it is run from a data
folder outside the repository, with the repository's spark-submit.sh by its absolute path,
the job script named relative to the repository and a relative --input and --output."""
from __future__ import annotations

import bz2
import hashlib
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]


def table_digests(root: Path) -> dict:
    """sha256 of every Parquet file of the published tables, by path inside the output."""
    out = {}
    for table in ("sentences", "pairs", "splits"):
        base = root / table
        for dirpath, _, files in os.walk(base, followlinks=True):
            for name in files:
                if name.endswith(".parquet"):
                    path = Path(dirpath) / name
                    out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_standalone_cluster_output_equals_local_mode_byte_for_byte(spark_cluster, spark, tmp_path):
    data = tmp_path / "data"
    (data / "dumps").mkdir(parents=True)
    sample = next((REPO / "samples" / "ro").glob("*.xml"))
    dump = data / "dumps" / "ro.xml.bz2"
    dump.write_bytes(bz2.compress(sample.read_bytes()))
    assert REPO not in data.parents
    out = data / "out"
    env = dict(os.environ, SPARK_HOME=str(spark_cluster.home))
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "NLI_PACK_ENV"):
        env.pop(key, None)
    t0 = time.time()
    proc = subprocess.run(
        [str(REPO / "spark-submit.sh"), "--master", spark_cluster.url, "--conf", "spark.executor.memory=768m",
         "--conf", "spark.cores.max=2", "jobs/extract.py", "--lang", "ro", "--input", "dumps/ro.xml.bz2",
         "--output", "out"],
        cwd=data, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.time() - t0
    # spark-submit passes the Python driver's stderr to its stdout
    errors = [l for l in (proc.stdout + proc.stderr).splitlines() if l.startswith(("error", "Traceback"))]
    assert proc.returncode == 0, "\n".join(errors[:20]) or proc.stderr[-3000:]
    stats = json.loads((out / "stats.json").read_text())
    job = stats["job"]
    assert job["spark_master"] == spark_cluster.url
    # relative paths were taken against the data folder, not the repository or the executors' folders
    assert job["corpora"][0]["paths"] == [str(dump)]
    assert not (REPO / "out").exists() and not (REPO / "dumps").exists()
    # the executors ran the packed environment, not their own (bare) Python
    assert job["executor_python"] is not None and "/environment/bin/python" in job["executor_python"]
    # local mode after the cluster run: spark-submit.sh installs the lexicon's spaCy model on
    # first use, and both runs must see the same POS filter
    from jobs.extract import main

    local_output = tmp_path / "local"
    assert main(["--lang", "ro", "--input", str(dump), "--output", str(local_output)]) == 0
    cluster, local = table_digests(out), table_digests(local_output)
    assert cluster and sorted(cluster) == sorted(local)
    assert {k for k in cluster if cluster[k] != local[k]} == set()
    assert (out / "punkt_params.json").read_bytes() == (local_output / "punkt_params.json").read_bytes()
    # the charts: drawn by the driver on the cluster (the packed environment has no
    # matplotlib), by a task in local mode; the same file
    for chart in ("class_distribution", "lengths_per_label", "top_phrases_per_label", "drop_funnel"):
        chart = f"splits/{chart}.png"
        assert (out / chart).read_bytes() == (local_output / chart).read_bytes(), chart
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["tables"]) == {"sentences", "pairs", "splits"}
    print(f"cluster run: {seconds:.0f} s, {len(cluster)} Parquet files identical to local mode")
