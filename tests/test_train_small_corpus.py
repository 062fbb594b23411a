"""`train` on a user's small corpus: the job's splits of one real Romanian novel (ELTeC
ROM002, 199 KB) hold 6 training pairs and empty validation and test splits. `train` prints
what it could evaluate, `--seeds` says what it does instead of selecting, "no validation
data" is said once, and a failed start leaves nothing that blocks the next command."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, shared_file
from trainer.cli import main
from trainer.training.pipeline import NOTHING_HELD_OUT

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def splits(tmp_path_factory) -> Path:
    pytest.importorskip("pyspark")
    novel = shared_file("text/eltec-rom-20/ROM002.txt")
    out = tmp_path_factory.mktemp("rom002") / "out"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    done = subprocess.run([sys.executable, str(REPO / "jobs" / "extract.py"), "--lang", "ro", "--master", "local[2]",
                           "--input", str(novel), "--output", str(out)], env=env, capture_output=True, text=True,
                          cwd=str(REPO), timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    splits = out / "splits"
    assert (splits / "train").exists() and not (splits / "validation").exists() and not (splits / "test").exists()
    return splits


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory, splits) -> Path:
    import pandas as pd

    from tests.trainer_fixtures import make_tiny_bert

    train = pd.read_parquet(splits / "train")
    return make_tiny_bert(tmp_path_factory.mktemp("bert") / "tiny-bert",
                          train["premise"].tolist() + train["hypothesis"].tolist())


def trainer(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainer", *argv], env={**os.environ, **(env or {})},
                          capture_output=True, text=True, cwd=str(REPO), timeout=600)


def test_train_prints_what_it_could_evaluate(splits, tmp_path, capsys):
    assert main(["train", "--data", str(splits), "--model", "tfidf-lr", "--output", str(tmp_path / "run")]) == 0
    out, err = capsys.readouterr()
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert list(metrics) == ["train"] and metrics["train"]["n"] == 6
    assert f"note: {NOTHING_HELD_OUT}" in out
    assert f"train: accuracy {metrics['train']['accuracy']:.4f}" in out
    assert err.count("no validation data") == 1, err


def test_seeds_without_validation_say_what_they_do_and_do_it(splits, tmp_path, capsys):
    assert main(["train", "--data", str(splits), "--model", "tfidf-lr", "--seeds", "3", "--seed", "7",
                 "--output", str(tmp_path / "run")]) == 0
    out, err = capsys.readouterr()
    assert "note: --seeds 3 without validation data: no seed can be selected; all 3 are trained" in err
    assert "the first seed (7) is the run's model" in err
    seeds = json.loads((tmp_path / "run" / "seeds.json").read_text())
    assert seeds["selected_seed"] == 7 and seeds["selection"] == "the first seed (no validation data)"
    assert set(seeds["runs"]) == {"7", "8", "9"} and "train" in seeds["mean"]
    assert "train over 3 seeds: accuracy" in out


@pytest.mark.parametrize("pretrained, env", [("no-such-org/no-such-model", {"HF_HUB_OFFLINE": "1"}),
                                             ("BAD", {})], ids=["unreachable hub name", "corrupt checkpoint"])
def test_a_failed_start_blocks_neither_a_rerun_nor_resume(splits, checkpoint, tmp_path, pretrained, env):
    if pretrained == "BAD":  # the weights file cut short
        pretrained = str(tmp_path / "bad-bert")
        shutil.copytree(checkpoint, pretrained)
        weights = Path(pretrained) / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:1000])
    run = tmp_path / "run"
    flags = ["train", "--data", str(splits), "--model", "transformer", "--encoding", "cross", "--epochs", "1",
             "--no-progress", "--output", str(run)]
    failed = trainer(*flags, "--pretrained", pretrained, env=env)
    assert failed.returncode != 0
    assert "train failed before anything was trained" in failed.stderr
    assert not run.exists() and not (tmp_path / "run.inprogress").exists()
    resumed = trainer(*flags, "--pretrained", str(checkpoint), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert json.loads((run / "config.json").read_text())["params"]["pretrained"] == str(checkpoint)
    again = trainer(*flags, "--pretrained", pretrained, env=env)  # fails again: the finished run stays
    assert again.returncode != 0 and (run / "metrics.json").exists()
    assert not (tmp_path / "run.inprogress").exists()


def test_a_killed_start_is_removed_by_the_next_train(splits, tmp_path, capsys):
    """What a train killed while loading its model leaves (no checkpoint, no finished seed)."""
    stage = tmp_path / "run.inprogress"
    stage.mkdir()
    (stage / "train.log").write_text("killed while loading\n")
    assert main(["train", "--data", str(splits), "--model", "tfidf-lr", "--output", str(tmp_path / "run")]) == 0
    assert "an unfinished run with nothing trained in it (no checkpoint, no finished seed): removed" in \
        capsys.readouterr().err
    assert (tmp_path / "run" / "metrics.json").exists() and not stage.exists()
