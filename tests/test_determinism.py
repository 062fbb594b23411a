"""Byte-identical pairs/ and splits/ across cores: the whole job (stages 1-3) on a small
text corpus under local[2] (this session) and under local[1] (a child process)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]

TOPICS = ("harbour", "bridge", "castle", "railway", "library", "market", "temple", "river")
LINKS = ("However, ", "Therefore, ", "In other words, ", "As a result, ", "For example, ", "")


def write_corpus(folder: Path, n_docs: int = 24) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for d in range(n_docs):
        paras = []
        for p in range(5):
            sents = []
            for s in range(5):
                topic = TOPICS[(d + p + s) % len(TOPICS)]
                link = LINKS[(d * 7 + p * 3 + s) % len(LINKS)] if s else ""
                text = (f"{link}the {topic} of town {d} was rebuilt in year {1800 + 10 * p + s} by the guild "
                        f"of builders number {d * 25 + p * 5 + s}.")
                sents.append(text[0].upper() + text[1:])
            paras.append(" ".join(sents))
        (folder / f"doc{d:03d}.txt").write_text("\n\n".join(paras), encoding="utf-8")


def digest(out: Path) -> dict:
    """sha256 of every Parquet file of pairs/ and splits/ (paths relative to the table)."""
    found = {}
    for table in ("pairs", "splits"):
        root = next((p for p in sorted(out.rglob(table)) if p.is_dir()), None)
        assert root is not None, f"no {table} under {out}"
        for f in sorted(root.rglob("*.parquet")):
            found[f"{table}/{f.relative_to(root).as_posix()}"] = hashlib.sha256(f.read_bytes()).hexdigest()
    return found


ARGS = ["--lang", "en", "--pos-filter", "off", "--split-ratios", "0.6,0.2,0.2", "--balance", "none",
        "--neutral-ratio", "1.0", "--overwrite"]


def test_one_and_two_cores_write_the_same_bytes(spark, tmp_path):
    from jobs.extract import main

    corpus = tmp_path / "corpus"
    write_corpus(corpus)
    two = tmp_path / "two"
    assert main(["--input", str(corpus), "--output", str(two), *ARGS]) == 0
    one = tmp_path / "one"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(REPO / "jobs" / "extract.py"), "--master", "local[1]",
                           "--input", str(corpus), "--output", str(one), *ARGS],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    a, b = digest(two), digest(one)
    assert a and a == b
    assert any(k.startswith("pairs/label=neutral") for k in a) and any(k.startswith("splits/train") for k in a)
