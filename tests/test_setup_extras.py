""".ci/setup-env.sh's nli_setup_venv: a venv set up with some extras, asked for more, installs
the union once each, in order (the line it prints and the stamp it writes)."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_extras_asked_again_are_installed_once_each(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    calls = tmp_path / "calls"
    python = venv / "bin" / "python"  # records what pip is asked; `import torch` succeeds
    python.write_text(f'#!/bin/sh\necho "$@" >> {calls}\n')
    python.chmod(0o755)
    pyproject_hash = hashlib.sha256((REPO / "pyproject.toml").read_bytes()).hexdigest()[:16]
    (venv / ".nli-installed").write_text(f"{pyproject_hash} extract,extract,hf\n")  # a stamp of an earlier setup
    run = subprocess.run(["bash", "-c", f'. "{REPO}/.ci/setup-env.sh" && nli_setup_venv extract,train,hf "{REPO}"'],
                         env={"PATH": "/usr/bin:/bin", "NLI_VENV": str(venv)}, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "[setup] pip install -e '.[extract,hf,train]'" in run.stderr.splitlines()
    assert f"-m pip install -q -e {REPO}[extract,hf,train]" in calls.read_text().splitlines()
    assert (venv / ".nli-installed").read_text() == f"{pyproject_hash} extract,hf,train\n"
