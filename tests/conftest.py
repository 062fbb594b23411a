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


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from extractor.spark.session import get_session

    session = get_session(master="local[2]", app_name="nli-tests", shuffle_partitions=4, progress=False)
    yield session
    session.stop()
