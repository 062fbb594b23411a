"""`jobs/extract.py --resume` after SIGKILLs of the driver: the real job (local[2]) on the
bundled Romanian sample cut into 16-20 KB work units. One run is killed three times, each
time in a new place, and resumed after each kill: at about half of stage 1's units, at the
start of stage 2 (stage 1 finished), and in the middle of stage 2's first round. The last
`--resume` publishes `sentences/`, `pairs/`, `splits/` and `stats.json` byte-identical to an
uninterrupted run (stats.json without its timings and run id, docs/deployment.md) and says
how many work units it reused; each resumed run reuses what the killed one finished (the
finished units' files and records are not written again). A resume with other settings is
refused in one line and keeps the run.

The second test kills the JVM (spark-submit's process in stage 1, PySpark's child JVM in
stage 2) and then a Python worker (stage 3) of one run: each time the driver keeps the run,
releases the lock and prints one line with the `--resume` command, and the last resume
publishes the same bytes (docs/deployment.md "What survives what").

Five runs of the job (five JVM starts) and stage 1 done about once and a half, where one
kill-and-resume pair per kill point took seven runs and stage 1 three times over."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.run_hashes import published_hashes

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.slow]  # five runs of the job each

FLAGS = ["--lang", "ro", "--master", "local[2]", "--unit-mb", "0.02", "--pos-filter", "off"]


def job(out: Path, *extra: str, kill_at: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    env.pop("NLI_KILL_AT", None)
    if kill_at:
        env["NLI_KILL_AT"] = kill_at
    return subprocess.run([sys.executable, str(REPO / "jobs" / "extract.py"), *FLAGS, "--output", str(out), *extra],
                          env=env, capture_output=True, text=True, cwd=str(REPO), timeout=900)


def published(out: Path) -> dict[str, str]:
    return published_hashes(out / "current")


def written(folder: Path) -> dict[str, tuple]:
    """(inode, mtime) of every file under `folder`: a file written again changes them."""
    return {p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def killed(out: Path, *extra: str, kill_at: str) -> subprocess.CompletedProcess:
    """A run SIGKILLed at `kill_at`: nothing published, the one staged run kept."""
    done = job(out, *extra, kill_at=kill_at)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    assert not (out / "current").exists()
    return done


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
    assert stats["sentences"]["work_units"] >= 6 and sum(stats["splits"]["splits"].values()) > 0
    assert any(k.startswith("pairs/") for k in hashes) and any(k.startswith("splits/train/") for k in hashes)
    shutil.rmtree(place)
    return hashes, stats


def test_a_run_killed_three_times_resumes_to_the_bytes_of_an_uninterrupted_one(uninterrupted, place):
    expected, stats = uninterrupted
    units = stats["sentences"]["work_units"]

    # 1. killed once 4 of stage 1's units have their record
    killed(place, kill_at="task:sentences/units:4")
    staged = [p for p in (place / "_runs").iterdir() if (p / "_progress" / "run.json").exists()]
    assert len(staged) == 1
    run = staged[0]
    unit_records = run / "_progress" / "sentences" / "rounds" / "units"
    first = written(unit_records)
    assert 4 <= len(first) < units
    finished = {json.loads((unit_records / name).read_text())["i"] for name in first}
    first_files = {name: stamp for name, stamp in written(run / "sentences").items()
                   if any(name.endswith(f"-{i:05d}.parquet") for i in finished)}
    assert first_files  # the finished units' Parquet files

    # 2. resumed, killed at the start of stage 2: the finished units are not run again
    second = killed(place, "--resume", kill_at="after:sentences")
    assert f"resuming run {run.name}" in second.stderr
    now = written(unit_records)
    assert len(now) == units and all(now[name] == stamp for name, stamp in first.items())
    assert all(written(run / "sentences")[name] == stamp for name, stamp in first_files.items())
    assert (run / "_progress" / "sentences.json").is_file()

    # other settings: refused in one line naming the first difference; the run is kept
    refused = job(place, "--resume", "--seed", "7")
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert refused.returncode == 2 and len(errors) == 1, refused.stderr[-2000:]
    assert f"cannot resume run {run.name}: --seed differs (0 then, 7 now)" in errors[0]
    assert [p.name for p in (place / "_runs").iterdir()] == [run.name]

    # 3. resumed, killed in the middle of stage 2's first round: stage 1 is reused whole
    third = killed(place, "--resume", kill_at="task:pairs/pass-one:2")
    assert "stage sentences: reused from the interrupted run" in third.stderr
    assert len(list((run / "_progress" / "pairs" / "rounds" / "pass-one").glob("*.json"))) >= 2

    # 4. resumed to the end: the bytes of the uninterrupted run, and what it reused
    resumed = job(place, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming run {run.name}" in resumed.stderr
    assert published(place) == expected
    report = json.loads((place / "manifest.json").read_bytes())["resumed"]
    assert report["stages_reused"] == ["sentences"] and "sentences" not in report["tasks"]
    assert report["tasks_reused"]["pairs"] >= 2
    line = next(line for line in resumed.stderr.splitlines() if line.startswith("[extract] resumed run"))
    assert "stages reused whole: sentences" in line and f"pairs {report['tasks_reused']['pairs']} of" in line


def submitted(out: Path, kill_at: str) -> subprocess.CompletedProcess:
    """The job under spark-submit (the JVM is the process the user started, the driver its
    child), with the same job arguments as `job`."""
    submit = Path(sys.executable).parent / "spark-submit"
    if not submit.exists():
        pytest.skip("no spark-submit beside this Python")
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO), NLI_KILL_AT=kill_at)
    return subprocess.run([str(submit), "--master", "local[2]", "jobs/extract.py", *FLAGS, "--output", str(out)],
                          env=env, capture_output=True, text=True, cwd=str(REPO), timeout=900)


def kept_line(stderr: str, what: str) -> str:
    """The one line a failed run prints: which run is kept, and the command that continues it."""
    found = [line for line in stderr.splitlines() if what in line]
    assert len(found) == 1 and found[0].startswith("[extract] "), stderr[-3000:]
    return found[0]


def test_jvm_and_executor_deaths_keep_the_run_and_resume_to_the_same_bytes(uninterrupted, place):
    """SIGKILL of the JVM in stage 1 (under spark-submit: the process the user sees, the
    one the out-of-memory killer picks) and in stage 2 (plain python: PySpark's child JVM),
    then a Python worker (an executor) in stage 3; after each the driver keeps the staged
    run, releases the lock and prints one line naming the run and the --resume command; the
    last --resume publishes the bytes of the uninterrupted run."""
    expected, stats = uninterrupted
    units = stats["sentences"]["work_units"]
    shutil.rmtree(place, ignore_errors=True)  # the same command line as the uninterrupted run

    # 1. spark-submit's JVM killed once 4 of stage 1's units have their record
    first = submitted(place, "jvm:sentences/units:4")
    assert first.returncode == -signal.SIGKILL or first.returncode == 128 + signal.SIGKILL, first.stderr[-3000:]
    [run] = [p for p in (place / "_runs").iterdir()]
    line = kept_line(first.stderr, "the Spark JVM died")
    assert line == (f"[extract] the Spark JVM died (killed, or out of memory?): run {run.name} is kept under "
                    f"{place}/_runs/; continue it with: spark-submit --master 'local[2]' jobs/extract.py "
                    f"{' '.join(FLAGS).replace('local[2]', repr('local[2]'))} --output {place} --resume"), line
    unit_records = run / "_progress" / "sentences" / "rounds" / "units"
    records = written(unit_records)
    assert 4 <= len(records) < units and not (place / "current").exists() and not (place / "_lock").exists()

    # 2. resumed with plain python, its child JVM killed in the middle of stage 2's first round
    second = job(place, "--resume", kill_at="jvm:pairs/pass-one:2")
    assert second.returncode == 1, second.stderr[-3000:]
    assert f"resuming run {run.name}" in second.stderr and "Traceback" not in second.stderr
    line = kept_line(second.stderr, "the Spark JVM died")
    assert line.endswith(f"run {run.name} is kept under {place}/_runs/; continue it with: {sys.executable} "
                         f"{REPO / 'jobs' / 'extract.py'} {' '.join(FLAGS).replace('local[2]', repr('local[2]'))} "
                         f"--output {place} --resume"), line
    assert all(written(unit_records)[name] == stamp for name, stamp in records.items())  # not redone
    assert len(written(unit_records)) == units and (run / "_progress" / "sentences.json").is_file()
    assert len(list((run / "_progress" / "pairs" / "rounds" / "pass-one").glob("*.json"))) >= 2
    assert not (place / "_lock").exists() and [p.name for p in (place / "_runs").iterdir()] == [run.name]

    # 3. resumed (stage 2 finished from its recorded units), a Python worker (an executor)
    # killed in stage 3's first round: the JVM lives,
    # the failure is not the user's: its traceback, and the run kept all the same
    third = job(place, "--resume", kill_at="worker:splits/summaries:1")
    assert third.returncode == 1 and "Traceback" in third.stderr, third.stderr[-3000:]
    assert "stage sentences: reused" in third.stderr and "[extract] stage splits ..." in third.stderr
    line = kept_line(third.stderr, "the run failed")
    assert f"run {run.name} is kept under {place}/_runs/; once the cause below is fixed, continue it with: " in line
    assert (run / "_progress" / "pairs.json").is_file() and not (place / "current").exists()

    # 4. resumed to the end: the bytes of the uninterrupted run
    resumed = job(place, "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert published(place) == expected
    report = json.loads((place / "manifest.json").read_bytes())["resumed"]
    assert report["stages_reused"] == ["sentences", "pairs"]
