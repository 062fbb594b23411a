"""The images of docker/, built with podman and checked inside (docker/build-local.sh): the
Dataproc Serverless image runs the job on the bundled Romanian sample (the runtime's Java and
Spark mounted in, as Dataproc does), the EMR on EKS image imports the engine and finds its
lexicons, the trainer image (CPU torch) runs `python -m trainer --help` and a tiny training.

Needs root, podman and debootstrap; as root they are installed with apt-get where missing.
podman's storage keeps the Debian base image and the build layers between runs on one machine:
the first run takes about 20 minutes (debootstrap, pip downloads), a run after a change of the
engine's code a few minutes (the layers of dependencies are cached by the requirement lists)."""
from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import time

import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

# NLI_TEST_IMAGES="dataproc" limits the builds (and the tests) to those images; default: all three.
IMAGES = os.environ.get("NLI_TEST_IMAGES", "dataproc emr trainer").split()
LABELS = {"contrasting", "entailment", "reasoning", "neutral"}
SPLITS = ("train", "validation", "test")


def _tools_or_skip() -> None:
    if os.geteuid() != 0:
        pytest.skip("docker/build-local.sh needs root (debootstrap, podman's storage, chroot)")
    missing = [t for t in ("podman", "debootstrap") if shutil.which(t) is None]
    if not missing:
        return
    if shutil.which("apt-get") is None:
        pytest.skip(f"{' and '.join(missing)} not installed, and there is no apt-get to install them "
                    f"(install podman and debootstrap)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "podman", "debootstrap"]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    _tools_or_skip()
    out = tmp_path_factory.mktemp("images")
    log = out / "build-local.log"
    t0 = time.time()
    with open(log, "w") as f:
        proc = subprocess.run(["bash", str(REPO / "docker" / "build-local.sh"), "--out", str(out / "check"), *IMAGES],
                              stdout=f, stderr=subprocess.STDOUT, timeout=3600)
    text = log.read_text()
    assert proc.returncode == 0, f"docker/build-local.sh failed (exit {proc.returncode}); log {log}:\n{text[-6000:]}"
    summary = text[text.index("== build-local.sh summary"):]
    print(f"\ndocker/build-local.sh took {time.time() - t0:.0f} s\n{summary}")
    return {"log": text, "summary": summary, "run": out / "check" / "ro"}


def _needs(image):
    if image not in IMAGES:
        pytest.skip(f"{image} not in NLI_TEST_IMAGES={' '.join(IMAGES)}")


def _split_tables(run):
    tables = {}
    for split in SPLITS:
        files = sorted((run / "splits" / split).glob("**/*.parquet"))
        if files:
            tables[split] = [pq.read_table(f, columns=["pair_id", "label"]) for f in files]
    return tables


def test_the_images_are_built_and_sized(built):
    names = {"dataproc": "nli-extract-dataproc", "emr": "nli-extract-emr", "trainer": "nli-trainer"}
    for image in ["nli-debian"] + [names[i] for i in IMAGES]:
        m = re.search(rf"^localhost/{image}:\S+\s+(\d+) MB$", built["summary"], re.M)
        assert m, f"{image} missing from the summary:\n{built['summary']}"
        assert int(m.group(1)) > 50


def test_dataproc_image_runs_the_job_on_the_bundled_sample(built):
    _needs("dataproc")
    run = built["run"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["command_line"].startswith("jobs/extract.py --lang ro")
    # the job file that ran is the wheel's copy inside the image, not this checkout's
    assert re.search(r"^job file: /opt/nli-venv/lib/python3\.\d+/site-packages/jobs/extract\.py$", built["log"], re.M)
    stats = json.loads((run / "stats.json").read_text())
    recorded = collections.Counter()
    for key, value in stats["splits"]["corpora"].items():
        split, _, _corpus = key.partition("|")
        recorded[split] += value["pairs"] if isinstance(value, dict) else 0
    if not recorded:  # flat keys: "train|ro.pairs"
        for key, value in stats["splits"]["corpora"].items():
            if key.endswith(".pairs"):
                recorded[key.split("|")[0]] += value
    tables = _split_tables(run)
    assert "train" in tables, f"no train split written under {run / 'splits'}"
    seen = {}
    for split, parts in tables.items():
        labels = collections.Counter(x for t in parts for x in t.column("label").to_pylist())
        ids = [x for t in parts for x in t.column("pair_id").to_pylist()]
        print(f"in-image split {split}: {len(ids)} pairs, {dict(sorted(labels.items()))}")
        assert ids, f"split {split} is written but empty"
        assert set(labels) <= LABELS, labels
        assert len(ids) == recorded[split], f"{split}: {len(ids)} rows, stats.json says {recorded[split]}"
        assert len(set(ids)) == len(ids)
        for other, other_ids in seen.items():
            assert not set(ids) & other_ids, f"pairs in both {split} and {other}"
        seen[split] = set(ids)
    if len(tables) == 3 and all(recorded[s] >= 4 for s in SPLITS):
        # a sample big enough for three splits: each split holds every label (balanced draw)
        for split, parts in tables.items():
            assert {x for t in parts for x in t.column("label").to_pylist()} == LABELS, split
    # the POS model of ro was baked in (--build-arg POS_LANGS=ro), so the filter ran
    assert "POS completeness filter skipped" not in built["log"]


def test_emr_image_imports_the_engine_and_finds_its_lexicons(built):
    _needs("emr")
    assert re.search(r"/jobs/extract\.py\n\[.*'ro'.*\]", built["log"]), built["log"][-3000:]


def test_trainer_image_runs_the_trainer_on_cpu_torch(built):
    _needs("trainer")
    assert "usage: python -m trainer" in built["log"]
    m = re.search(r"^torch (\S+) cuda: (\S+)$", built["log"], re.M)
    assert m and m.group(1).startswith("2.13.0"), built["log"][-3000:]
