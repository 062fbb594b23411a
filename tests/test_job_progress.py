"""What the job says: --help (each default once, no pyspark or pyarrow imported), --dry-run
(inputs, units and an estimate, nothing written), the progress line per round, the end
summary (split table and paths; the counters only with --verbose)."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from extractor.job import cost_model, paths
from extractor.spark.jvm import archive_pending
from extractor.spark.status import RoundStatus, eta_text, progress_line
from jobs.extract import build_parser, main

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "samples" / "ro" / "rowiki-sample-pages-articles.xml"


def _entries(help_text: str) -> dict[str, str]:
    """Each flag's entry of --help: its first option name -> its text."""
    entries, name = {}, None
    for line in help_text.splitlines():
        found = re.match(r"  (-{1,2}[\w-]+)", line)
        if found:
            name = found.group(1)
            entries[name] = line
        elif name and line.startswith("    "):
            entries[name] += " " + line.strip()
        else:
            name = None
    return entries


def test_help_shows_each_default_once_and_never_none():
    entries = _entries(build_parser().format_help())
    assert "--output" in entries and "--near-duplicates" in entries and "--dry-run" in entries
    for name, text in entries.items():
        assert "(default: None)" not in text, name
        assert len(re.findall(r"default[: ]", text)) <= 1, (name, text)
    # the defaults are still shown
    assert "(default: 50)" in entries["--min-chars"]
    assert "default: on" in entries["--near-duplicates"]
    assert "(default: 0.8)" in entries["--near-duplicate-threshold"]


def test_help_imports_neither_pyspark_nor_pyarrow_numpy_pandas():
    code = ("import sys\n"
            "from jobs.extract import main\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('HEAVY', sorted(m for m in ('pyspark', 'pyarrow', 'numpy', 'pandas', 'spacy') if m in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr
    assert "--dry-run" in proc.stdout
    assert "HEAVY []" in proc.stdout


def test_spark_submit_sh_runs_help_and_dry_run_with_plain_python():
    assert paths.plain_python_args(["--master", "local[2]", "/r/jobs/extract.py", "--help"]) == \
        ["/r/jobs/extract.py", "--help", "--master", "local[2]"]
    assert paths.plain_python_args(["/r/jobs/extract.py", "--lang", "ro", "--dry-run"]) == \
        ["/r/jobs/extract.py", "--lang", "ro", "--dry-run"]
    # the job's own --master wins; a run, and spark-submit's own --help, go to spark-submit
    assert paths.plain_python_args(["--master", "yarn", "j.py", "--dry-run", "--master", "local[1]"]) == \
        ["j.py", "--dry-run", "--master", "local[1]"]
    assert paths.plain_python_args(["/r/jobs/extract.py", "--lang", "ro"]) is None
    assert paths.plain_python_args(["--help"]) is None
    out = subprocess.run([sys.executable, "-m", "extractor.job.paths", "submit", str(REPO), str(REPO), "--",
                          "jobs/extract.py", "-h"], cwd=REPO, capture_output=True, check=True).stdout
    assert out.split(b"\0")[:3] == [b"--plain-python", str(REPO / "jobs" / "extract.py").encode(), b"-h"]


def test_dry_run_on_the_bundled_sample_lists_inputs_units_and_an_estimate_and_writes_nothing(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "extract.py"), "--lang", "ro", "--dry-run",
                           "--master", "local[2]", "--output", "out/ro"],
                          cwd=tmp_path, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert str(SAMPLE) in text
    assert "[dry-run] work units of stage sentences: 1" in text
    assert "[dry-run] stages: sentences, pairs, splits" in text
    assert re.search(r"CPU time: \d+ s - \d+ s", text)
    assert "wall time on local[2] (2 cores" in text
    assert "scratch (peak):" in text and "output:" in text
    assert "docs/scale.md" in text and cost_model.MACHINE in text
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_dry_run_refuses_an_existing_output_like_the_run(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text('{"tables": {"sentences": {"path": "_runs/x/sentences"}}}')
    assert main(["--lang", "ro", "--dry-run", "--output", str(out)]) == 2
    assert "already exists; pass --overwrite" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]


def test_cost_model_estimate_is_the_figures_times_the_size():
    est = cost_model.estimate(1000.0, ["sentences", "pairs", "splits"])
    low = cost_model.FIXED_CPU_S + 1000 * sum(cost_model.COSTS[s].cpu_s_per_mb[0] for s in est.stages)
    high = cost_model.FIXED_CPU_S + 1000 * sum(cost_model.COSTS[s].cpu_s_per_mb[1] for s in est.stages)
    assert est.cpu_s == pytest.approx((low, high))
    assert est.scratch_mb == pytest.approx(1000 * cost_model.COSTS["pairs"].scratch_mb_per_mb)
    assert est.output_mb == pytest.approx(sum(1000 * c.output_mb_per_mb + c.output_mb_fixed
                                              for c in (cost_model.COSTS[s] for s in est.stages)))
    assert est.wall_s(4)[0] == pytest.approx(cost_model.FIXED_WALL_S_LOCAL + (low - cost_model.FIXED_CPU_S) / (4 * cost_model.USE))
    assert cost_model.text_mb("d.xml.bz2", 10_000_000) == pytest.approx(40.0)
    assert cost_model.local_cores("local[3]") == 3 and cost_model.local_cores("local") == 1
    assert cost_model.local_cores("local[*]") == os.cpu_count() and cost_model.local_cores("yarn") is None


def test_progress_line_rate_and_eta():
    assert progress_line("[pairs] round 2 marked", 12, 16, 4.0) == \
        "[pairs] round 2 marked: 12/16 tasks, 3.0 tasks/s, ETA 0:00:01"
    assert progress_line("[splits] round 1", 0, 2, 1.0, units=16) == "[splits] round 1: 0/2 tasks (16 units), 0.0 tasks/s, ETA ?"
    # a slow round (a task a minute on a large input) shows tasks per minute, not "0.0 tasks/s"
    assert progress_line("[sentences] round 1 units", 2, 32, 120.0) == \
        "[sentences] round 1 units: 2/32 tasks, 1.0 tasks/min, ETA 0:30:00"
    assert eta_text(3725) == "1:02:05"


class _Tracker:
    def __init__(self):
        self.done = 0

    def getJobIdsForGroup(self, group):
        return [7]

    def getJobInfo(self, job):
        return type("J", (), {"stageIds": [3]})()

    def getStageInfo(self, stage):
        return type("S", (), {"numCompletedTasks": self.done, "numTasks": 4})()


class _Context:
    def __init__(self):
        self.tracker, self.props = _Tracker(), {}

    def statusTracker(self):
        return self.tracker

    def setJobGroup(self, group, description, interruptOnCancel=False):
        self.props["spark.jobGroup.id"] = group

    def setLocalProperty(self, key, value):
        self.props[key] = value


def test_round_status_prints_updates_then_a_closing_line():
    sc, stream = _Context(), io.StringIO()
    with RoundStatus(sc, "[pairs] round 1 pass-one", stream=stream, interval=0.01) as status:
        assert sc.props["spark.jobGroup.id"] == status.group
        sc.tracker.done = 2
        for _ in range(500):  # until the thread has printed a line (no time asserted)
            if "2/4 tasks" in stream.getvalue():
                break
            status._stop.wait(0.01)
        sc.tracker.done = 4
    lines = stream.getvalue().splitlines()
    assert any(re.fullmatch(r"\[pairs\] round 1 pass-one: 2/4 tasks, [\d.]+ tasks/(s|min), ETA \S+", l) for l in lines)
    assert re.fullmatch(r"\[pairs\] round 1 pass-one: 4/4 tasks in [\d.]+ s", lines[-1])
    assert sc.props["spark.jobGroup.id"] is None


@pytest.mark.spark
@pytest.mark.slow
def test_a_run_prints_progress_lines_and_the_end_summary_and_counters_only_with_verbose(spark, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["--lang", "ro", "--output", str(out)]) == 0
    got = capsys.readouterr()
    for stage in ("sentences", "pairs", "splits"):
        assert re.search(rf"^\[{stage}\] round 1 \S+: (\d+)/\1 tasks.* in [\d.]+ s$", got.err, re.M), got.err
    assert re.search(r"^\[pairs\] round 2 marked: ", got.err, re.M)
    assert "[extract] Spark UI: http" in got.err
    assert "[Stage " not in got.err  # Spark's own bars are off
    summary = got.out
    assert re.search(r"split\s+contrasting\s+entailment\s+neutral\s+reasoning\s+pairs", summary)
    assert re.search(r"train\s+39\s+39\s+39\s+39\s+156", summary)
    assert f"dataset card: {out}/splits/README.md" in summary
    assert f"chart: {out}/splits/class_distribution.png" in summary
    assert f"stats.json: {out}/stats.json" in summary
    assert "== pairs ==" not in summary and "more in stats.json" not in summary
    # --verbose: every counter as well (stage 3 alone, from the tables just published)
    assert main(["--lang", "ro", "--output", str(out), "--start-at", "splits", "--overwrite", "--verbose"]) == 0
    verbose = capsys.readouterr().out
    assert "== splits ==" in verbose and "more in stats.json" not in verbose
    assert re.search(r"labels\.train\.reasoning\s+39", verbose)
    assert f"dataset card: {out}/splits/README.md" in verbose


def test_the_first_run_names_the_archive_its_jvm_writes_at_exit():
    first = "-XX:TieredStopAtLevel=1 -XX:ArchiveClassesAtExit=/v/share/nli-spark-cds/a.jsa -Xlog:cds*=off"
    assert archive_pending(first) == "/v/share/nli-spark-cds/a.jsa"
    assert archive_pending("-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/v/a.jsa") is None
    assert archive_pending("") is None
