"""extractor.io.atomic: a folder or a file is written beside its destination and swapped in whole."""
import os
import subprocess
import sys

import pytest

from extractor.io.atomic import (WorkFile, WorkFolder, claim, live_claim, pid_alive, swap_in, unfinished_path,
                                 work_path)


def test_work_folder_swaps_in_on_success_and_leaves_out_alone_on_error(tmp_path):
    out = tmp_path / "out"
    with WorkFolder(out) as work:
        assert work == tmp_path / f"out.inprogress-{os.getpid()}" == work_path(out)
        (work / "a.txt").write_text("first")
    assert (out / "a.txt").read_text() == "first" and not work.exists()
    with pytest.raises(RuntimeError):
        with WorkFolder(out) as work:
            (work / "a.txt").write_text("second")
            raise RuntimeError("boom")
    assert (out / "a.txt").read_text() == "first" and not work.exists()
    with WorkFolder(out) as work:
        (work / "b.txt").write_text("second")
    assert sorted(p.name for p in out.iterdir()) == ["b.txt"]  # replaced whole, not merged
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing left beside it


def test_a_kept_work_folder_survives_a_failure_and_is_continued(tmp_path):
    out = tmp_path / "run"
    work = unfinished_path(out)
    assert work.name == "run.inprogress"
    with pytest.raises(KeyboardInterrupt):
        with WorkFolder(out, work=work, keep=True) as w:
            claim(w)
            (w / "epoch_1").write_text("done")
            raise KeyboardInterrupt
    assert (work / "epoch_1").exists() and not (work / ".lock").exists() and not out.exists()
    with WorkFolder(out, work=work, resume=True) as w:
        assert (w / "epoch_1").exists()  # continued, not emptied
    assert (out / "epoch_1").exists() and not work.exists()


def test_claims_of_live_and_dead_processes(tmp_path):
    assert pid_alive(os.getpid()) and live_claim(tmp_path) is None
    claim(tmp_path)
    assert live_claim(tmp_path) is None  # our own claim is not another writer
    (tmp_path / ".lock").write_text(f"{os.getppid()}\n")
    assert live_claim(tmp_path) == os.getppid()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert not pid_alive(dead.pid)
    (tmp_path / ".lock").write_text(f"{dead.pid}\n")
    assert live_claim(tmp_path) is None
    (tmp_path / ".lock").write_text("garbage\n")
    assert live_claim(tmp_path) is None


def test_swap_in_replaces_a_file_or_link_too(tmp_path):
    out, work = tmp_path / "out", tmp_path / "w"
    out.write_text("a file")
    work.mkdir()
    swap_in(work, out)
    assert out.is_dir() and not work.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_work_file_replaces_the_file_on_success_and_leaves_it_intact_on_error(tmp_path):
    path = tmp_path / "metrics.json"
    with WorkFile(path) as tmp:
        assert tmp == tmp_path / f"metrics.json.inprogress-{os.getpid()}" == work_path(path)
        tmp.write_text("first")
        assert not path.exists()  # nothing at the target until the block ends
    assert path.read_text() == "first" and not tmp.exists()
    with pytest.raises(RuntimeError):
        with WorkFile(path) as tmp:
            tmp.write_text("sec")  # half written when the writer fails
            raise RuntimeError("boom")
    assert path.read_text() == "first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]  # no temp file left
    with WorkFile(path) as tmp:
        tmp.write_bytes(b"second")
    assert path.read_bytes() == b"second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]


def test_work_file_that_was_never_written_leaves_the_old_file(tmp_path):
    path = tmp_path / "state.pt"
    path.write_bytes(b"old")
    work_path(path).write_bytes(b"a dead writer's leftover")
    with pytest.raises(FileNotFoundError):
        with WorkFile(path):
            pass  # a writer that wrote nothing is a bug: nothing is renamed over the file
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.pt"]
