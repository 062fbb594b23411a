"""Shared fixtures: one local Spark session per test run, the real data beside the repo."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_file(relative: str) -> Path:
    """A file of ../shared/data, or skip the test with the reason."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"{path} not found (set NLI_SHARED_DATA to the shared data folder)")
    return path


SPARK_FIXTURES = {"spark", "spark_cluster"}


def pytest_collection_modifyitems(config, items):
    """A test that takes a Spark fixture is marked `spark` (so `-m "not spark"` starts no
    Spark): refused at collection otherwise. A test that starts Spark another way (the job
    in a subprocess) carries the mark by hand."""
    unmarked = [item.nodeid for item in items
                if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("spark") is None]
    if unmarked:
        raise pytest.UsageError("tests that use a Spark fixture lack @pytest.mark.spark: " + ", ".join(unmarked))


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from extractor.spark.session import get_session

    session = get_session(master="local[2]", app_name="nli-tests", shuffle_partitions=4, progress=False)
    yield session
    session.stop()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandaloneCluster:
    def __init__(self, url: str, home: Path, workdir: Path, bare_python: Path, ui_port: int):
        self.url, self.home, self.workdir, self.bare_python, self.ui_port = url, home, workdir, bare_python, ui_port


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A real Spark standalone cluster for the whole test run: one master and two workers of
    one core and 1 GB each on 127.0.0.1, started from the pyspark install with spark-class
    and stopped by their process ids. The workers' own Python (PYSPARK_PYTHON) is a bare
    venv with none of the project's dependencies: a job must bring its own."""
    import json
    import signal
    import subprocess
    import time
    import urllib.request

    pyspark = pytest.importorskip("pyspark")
    home = Path(pyspark.__file__).resolve().parent
    spark_class = home / "bin" / "spark-class"
    if not spark_class.exists():
        pytest.skip(f"{spark_class} not found")
    base = tmp_path_factory.mktemp("standalone")
    bare = base / "bare-venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(bare)],
                   check=True)
    env = dict(os.environ, SPARK_HOME=str(home), SPARK_LOCAL_IP="127.0.0.1", SPARK_DAEMON_MEMORY="256m",
               PYSPARK_PYTHON=str(bare / "bin" / "python"), SPARK_LOG_DIR=str(base / "logs"),
               SPARK_NO_DAEMONIZE="1")
    env.pop("PYSPARK_DRIVER_PYTHON", None)
    port, ui = _free_port(), _free_port()
    url = f"spark://127.0.0.1:{port}"
    procs = []

    def start(name, *args):
        log = open(base / f"{name}.log", "wb")
        procs.append(subprocess.Popen([str(spark_class), *args], env=env, stdout=log, stderr=subprocess.STDOUT,
                                      cwd=base, start_new_session=True))

    def alive_workers():
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=2) as r:
                return int(json.load(r).get("aliveworkers", 0))
        except Exception:
            return -1

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
              "--webui-port", str(ui))
        deadline = time.time() + 120
        while alive_workers() < 0:
            if time.time() > deadline or procs[0].poll() is not None:
                pytest.fail(f"the standalone master did not start; see {base / 'master.log'}")
            time.sleep(1)
        for i in range(2):
            start(f"worker{i}", "org.apache.spark.deploy.worker.Worker", url, "--cores", "1", "--memory", "1g",
                  "--host", "127.0.0.1", "--webui-port", str(_free_port()), "--work-dir", str(base / f"work{i}"))
        while alive_workers() < 2:
            if time.time() > deadline or any(p.poll() is not None for p in procs):
                pytest.fail(f"the standalone workers did not register; see {base}/worker*.log")
            time.sleep(1)
        yield StandaloneCluster(url, home, base, bare / "bin" / "python", ui)
    finally:
        for p in reversed(procs):  # by process id; each was started in its own session
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture(scope="session")
def tiny_nli_checkpoint(tmp_path_factory):
    """Factory of the transformer tests' data: ``build(model, root_name, folder, n_train, n_dev)``
    writes synthetic NLI ``train.jsonl`` (``synthetic_nli(n_train)``) and ``dev.jsonl``
    (``synthetic_nli(n_dev, seed=1)``) to a fresh folder and a tiny checkpoint whose tokenizer is
    trained on the training sentences: ``"bert"`` (2-layer BERT, WordPiece) or ``"gpt2"``
    (2-layer GPT-2, byte-level BPE, no padding token). Returns {"root", model: checkpoint,
    "train", "dev", "n_train"}. Nothing is downloaded."""

    def build(model: str = "bert", root_name: str = "tiny", folder: str | None = None, n_train: int = 400,
              n_dev: int = 80) -> dict:
        from tests.trainer_fixtures import make_tiny_bert, synthetic_nli, write_jsonl

        root = tmp_path_factory.mktemp(root_name)
        train, dev = synthetic_nli(n_train), synthetic_nli(n_dev, seed=1)
        texts = train["premise"].tolist() + train["hypothesis"].tolist()
        path = root / (folder or f"tiny-{model}")
        if model == "bert":
            make_tiny_bert(path, texts)
        elif model == "gpt2":
            from tests.trainer_fixtures import build_untrained_gpt2

            build_untrained_gpt2(path, texts)
        else:
            raise ValueError(f"unknown tiny model {model!r} (bert, gpt2)")
        return {"root": root, model: path, "train": write_jsonl(train, root / "train.jsonl"),
                "dev": write_jsonl(dev, root / "dev.jsonl"), "n_train": len(train)}

    return build
