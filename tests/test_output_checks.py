"""What the run refuses about its output, checked before any work and by --dry-run without
writing (extractor/runs/run.py `check_output`): the same one-line errors as `Run.open`."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from extractor import runs
from extractor.runs import run as run_module
from extractor.runs.errors import OutputError, RunLockedError


def refusal(call, *args) -> str:
    with pytest.raises((OutputError, RunLockedError)) as info:
        call(*args)
    return str(info.value)


def tree(path) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, ds, fs_ in os.walk(path) for f in ds + fs_)


def test_a_file_where_the_output_goes_is_refused_alike_and_nothing_written(tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("not a folder\n")
    for output in (afile, afile / "sub" / "ro"):
        before = tree(tmp_path)
        checked = refusal(run_module.check_output, str(output))
        assert tree(tmp_path) == before and afile.read_text() == "not a folder\n"
        assert checked == refusal(runs.Run.open, str(output))
        assert checked.startswith(f"{output}: cannot create the directory (") and "\n" not in checked
        assert checked.endswith("choose a writable --output")


def test_a_live_run_holding_the_lock_is_refused_alike(tmp_path):
    first = runs.Run.open(str(tmp_path / "out"))
    try:
        checked = refusal(run_module.check_output, str(tmp_path / "out"))
        assert checked == refusal(runs.Run.open, str(tmp_path / "out"))
        assert "is being written by run " + first.run_id in checked
    finally:
        first.release()
    run_module.check_output(str(tmp_path / "out"))  # released: nothing to refuse, still nothing written


def test_a_new_output_under_a_writable_folder_passes_and_is_not_created(tmp_path):
    run_module.check_output(str(tmp_path / "new" / "ro"))
    assert not (tmp_path / "new").exists()


def test_an_unwritable_folder_is_refused_for_a_user_who_cannot_write_it():
    # root may write anywhere: the check runs as `nobody` (setpriv), as a user would meet it
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv (util-linux) not found: cannot drop root to check a permission")
        prefix = [setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    else:
        prefix = []
    top = Path(tempfile.mkdtemp(prefix="nli-readonly-"))  # under /tmp: every user may enter it
    top.chmod(0o755)
    folder = top / "readonly"
    folder.mkdir()
    folder.chmod(0o555)
    code = ("import sys\nfrom extractor import runs\nfrom extractor.runs import run\n"
            "from extractor.runs.errors import OutputError\n"
            "out = sys.argv[1]\nmsgs = []\n"
            "for call in (run.check_output, runs.Run.open):\n"
            "    try:\n        call(out)\n    except OutputError as exc:\n        msgs.append(str(exc))\n"
            "print(len(msgs), msgs[0] == msgs[-1], msgs[0])\n")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([*prefix, sys.executable, "-c", code, str(folder / "ro")], capture_output=True,
                          text=True, cwd=repo, env={**os.environ, "PYTHONPATH": repo})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"2 True {folder / 'ro'}: cannot create the directory ("), done.stdout
    assert "permission denied" in done.stdout.lower()
    assert list(folder.iterdir()) == []
    shutil.rmtree(top)
