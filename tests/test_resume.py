"""`jobs/extract.py --resume` after a SIGKILL of the driver: the real job (local[2]) on the
bundled Romanian sample cut into 16-20 KB work units, killed at about half of stage 1's
units, at the start of stage 2, and in the middle of stage 2's first round; the resumed run
publishes `sentences/`, `pairs/`, `splits/` and `stats.json` byte-identical to an
uninterrupted run (stats.json without its timings and run id, docs/deployment.md), and
says how many work units it reused."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytest.importorskip("pyspark")

FLAGS = ["--lang", "ro", "--master", "local[2]", "--unit-mb", "0.02", "--pos-filter", "off"]
VOLATILE_JOB = ("run_id", "seconds", "total_seconds", "executor_python")


def job(out: Path, *extra: str, kill_at: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    env.pop("NLI_KILL_AT", None)
    if kill_at:
        env["NLI_KILL_AT"] = kill_at
    return subprocess.run([sys.executable, str(REPO / "jobs" / "extract.py"), *FLAGS, "--output", str(out), *extra],
                          env=env, capture_output=True, text=True, cwd=str(REPO), timeout=900)


def _without_timings(value):
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def normalised_stats(data: bytes) -> bytes:
    """stats.json less what differs between any two runs: timings and the run id."""
    stats = json.loads(data)
    for key in VOLATILE_JOB:
        stats["job"].pop(key, None)
    return json.dumps(_without_timings(stats), sort_keys=True).encode()


def published(out: Path) -> dict[str, str]:
    run = (out / "current").resolve()
    hashes = {}
    for path in sorted(run.rglob("*")):
        if path.is_file() and path.name != "manifest.json":
            rel = path.relative_to(run).as_posix()
            data = normalised_stats(path.read_bytes()) if rel == "stats.json" else path.read_bytes()
            hashes[rel] = hashlib.sha256(data).hexdigest()
    return hashes


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    """One output path for every run (the dataset card quotes the command line)."""
    return tmp_path_factory.mktemp("resume") / "out"


@pytest.fixture(scope="module")
def uninterrupted(place):
    done = job(place)
    assert done.returncode == 0, done.stderr[-3000:]
    hashes = published(place)
    stats = json.loads((place / "stats.json").read_bytes())
    assert stats["sentences"]["work_units"] >= 4 and sum(stats["splits"]["splits"].values()) > 0
    assert any(k.startswith("pairs/") for k in hashes) and any(k.startswith("splits/train/") for k in hashes)
    shutil.rmtree(place)
    return hashes, stats


@pytest.mark.parametrize("kill_at", ["task:sentences/units:4", "after:sentences", "task:pairs/pass-one:2"])
def test_a_killed_run_resumes_to_the_bytes_of_an_uninterrupted_one(uninterrupted, place, kill_at):
    expected, stats = uninterrupted
    shutil.rmtree(place, ignore_errors=True)
    killed = job(place, kill_at=kill_at)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert not (place / "current").exists()  # nothing published
    staged = [p for p in (place / "_runs").iterdir() if (p / "_progress" / "run.json").exists()]
    assert len(staged) == 1
    if kill_at == "after:sentences":  # other settings: refused in one line naming the first difference
        refused = job(place, "--resume", "--seed", "7")
        errors = [l for l in refused.stderr.splitlines() if l.startswith("error:")]
        assert refused.returncode == 2 and len(errors) == 1, refused.stderr[-2000:]
        assert f"cannot resume run {staged[0].name}: --seed differs (0 then, 7 now)" in errors[0]
        assert [p.name for p in (place / "_runs").iterdir()] == [staged[0].name]  # kept for a later --resume

    resumed = job(place, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming run {staged[0].name}" in resumed.stderr
    assert published(place) == expected
    report = json.loads((place / "manifest.json").read_bytes())["resumed"]
    units = stats["sentences"]["work_units"]
    line = next(l for l in resumed.stderr.splitlines() if l.startswith("[extract] resumed run"))
    if kill_at.startswith("task:sentences"):
        assert report["stages_reused"] == []
        assert 4 <= report["tasks_reused"]["sentences"] < units  # the killed run's finished units
        assert f"sentences {report['tasks_reused']['sentences']} of {units}" in line
    else:
        assert report["stages_reused"] == ["sentences"] and "stages reused whole: sentences" in line
        assert "sentences" not in report["tasks"]
    if kill_at.startswith("task:pairs"):
        assert report["tasks_reused"]["pairs"] >= 2
