"""Driver JVM options for local mode (extractor/spark/jvm.py)."""
from __future__ import annotations

import pytest

from extractor.spark import jvm


def test_throughput_keeps_the_jvm_defaults_and_startup_is_c1_only(monkeypatch, tmp_path):
    monkeypatch.setattr(jvm, "archive_path", lambda: tmp_path / "none.jsa")
    assert jvm.driver_java_options("throughput") == ""
    assert jvm.driver_java_options("startup") == jvm.C1_ONLY
    with pytest.raises(ValueError, match="unknown JVM tuning"):
        jvm.driver_java_options("fast")


def test_archive_is_used_when_present_and_requested_for_a_first_run(monkeypatch, tmp_path):
    archive = tmp_path / "cds" / "spark.jsa"
    monkeypatch.setattr(jvm, "archive_path", lambda: archive)
    assert jvm.driver_java_options("startup", create_archive=True).split() == [
        jvm.C1_ONLY, f"-XX:ArchiveClassesAtExit={archive}", jvm.QUIET_CDS]
    assert archive.parent.is_dir()
    archive.write_bytes(b"x")
    assert jvm.driver_java_options("startup", create_archive=True).split() == [
        jvm.C1_ONLY, f"-XX:SharedArchiveFile={archive}", jvm.QUIET_CDS]


def test_archive_name_follows_pyspark_and_java():
    path = jvm.archive_path()
    assert path is not None and path.suffix == ".jsa"
    import importlib.metadata

    assert f"pyspark-{importlib.metadata.version('pyspark')}-" in path.name
