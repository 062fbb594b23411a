"""benchmarks/refactor_metrics.py on a small planted tree: each counter finds its planted
case and leaves the clean twin beside it alone."""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "refactor_metrics.py"


def _load():
    spec = importlib.util.spec_from_file_location("refactor_metrics", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["refactor_metrics"] = module
    spec.loader.exec_module(module)
    return module


rm = _load()


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    write(root, "extractor/__init__.py", "")
    write(root, "extractor/flatmod.py", '''
        import os
        import tempfile


        def planned(plan, clean_plan):
            plan["cuts"] = [1, 2]          # planted: a key written after creation
            plan.update(limits=None)       # planted
            fresh = {"work": "w"}          # clean: a dict that is not a plan
            fresh["x"] = 1
            return clean_plan["cuts"]      # clean: a read


        def names(work, b, text):
            bad = f"bucket-{b:05d}.arrow"  # planted: a hand-formatted scratch name
            ok = f"{text} has {b} rows"    # clean: a message
            return bad, ok


        def classify(path):
            try:
                open(path)
            except OSError as exc:
                if "permission denied" in str(exc):  # planted: a substring classifier
                    return "perm"
                if exc.errno == 13:                   # clean: classified by its code
                    return "perm"
            return None


        def moved(path, data):
            tmp = path + ".tmp"
            with open(tmp, "w") as fh:
                fh.write(data)
            os.replace(tmp, path)               # planted: a temp file moved by hand
            os.replace(path, path + ".old")     # clean: not a temp name
            return tempfile.gettempdir()


        def measured():
            """Takes 15 ms per call."""       # planted: a measurement in a docstring
            return 1


        def described():
            """Returns one."""                 # clean
            return 1


        def _helper():
            return 2


        DEAD_CONSTANT = 3                      # planted: referred to nowhere
        USED_CONSTANT = 4
        TESTED_ONLY = 5                        # planted: used by tests/ only
        REGISTERED = 6                         # clean: reached through a "module:name" string


        def user():
            return USED_CONSTANT + _helper()
        ''')
    write(root, "extractor/pkg/__init__.py", "")
    write(root, "extractor/pkg/scratchy.py", '''
        from extractor import fs
        from extractor.flatmod import _helper   # planted: a private name across modules


        def paths(plan, b):
            a = fs.join(plan["work"], "kept", str(b))  # planted: a folder-name literal
            c = fs.join(plan["output"], "kept")        # clean: not a work path
            return a, c, _helper()
        ''')
    write(root, "extractor/engine/scratch.py", '''
        def folder(work, name, i):
            return f"{name}-{i:05d}.arrow"   # clean: the scratch module names scratch paths
        ''')
    write(root, "extractor/io/atomic.py", '''
        import os


        def swap(tmp, out):
            os.replace(tmp, out)   # clean: the atomic helper
        ''')
    write(root, "trainer/__init__.py", "")
    write(root, "trainer/cli.py", '''
        import importlib

        COMMANDS = {"alpha": ("trainer.alpha", "a"), "beta": ("trainer.beta", "b")}
        REGISTRY = {"r": "extractor.flatmod:REGISTERED"}


        def main(name, args):
            return importlib.import_module(COMMANDS[name][0]).run(args)
        ''')
    write(root, "trainer/alpha.py", '''
        from trainer.beta import run as beta_run   # planted: a command importing a command
        from trainer import helpers                 # clean: a library module


        def run(args):
            return beta_run(args) + helpers.one()
        ''')
    write(root, "trainer/beta.py", '''
        def run(args):
            return 0
        ''')
    write(root, "trainer/helpers.py", '''
        def one():
            return 1
        ''')
    write(root, "jobs/__init__.py", "")
    write(root, "tests/test_x.py", '''
        from extractor.flatmod import TESTED_ONLY


        def test_x():
            assert TESTED_ONLY == 5
        ''')
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "-C", str(root), *env, "add", "."], check=True)
    subprocess.run(["git", "-C", str(root), *env, "commit", "-q", "-m", "short subject"], check=True)
    subprocess.run(["git", "-C", str(root), *env, "commit", "-q", "--allow-empty", "-m", "x" * 73], check=True)
    return root


@pytest.fixture(scope="module")
def metrics(tree) -> dict:
    return {m.key: m for m in rm.measure(tree)}


def hits(metrics, key) -> str:
    return "\n".join(metrics[key].hits)


def test_plan_keys(metrics):
    assert metrics["plan_keys_written"].value == 2
    text = hits(metrics, "plan_keys_written")
    assert '"cuts"' in text and "limits" in text and "fresh" not in text


def test_scratch_names_and_folders(metrics):
    assert [h.split(": ", 1)[1] for h in metrics["scratch_names_formatted"].hits] == ['f"bucket-{b:05d}.arrow"']
    assert len(metrics["scratch_folder_literals"].hits) == 1
    assert "'kept' in fs.join(plan[\"work\"]" in hits(metrics, "scratch_folder_literals")


def test_substring_classifiers(metrics):
    assert len(metrics["substring_classifiers"].hits) == 1
    assert '"permission denied" in str(exc)' in hits(metrics, "substring_classifiers")


def test_flat_modules(metrics):
    # the scratch module and the atomic writer live in packages: not flat
    assert sorted(metrics["flat_modules_extractor"].hits) == ["extractor/flatmod.py"]


def test_commands_importing_commands(metrics):
    assert [h.split(": ", 1)[1] for h in metrics["commands_importing_commands"].hits] == [
        "trainer.alpha imports trainer.beta"]


def test_commands_under_a_commands_package(tmp_path):
    write(tmp_path, "trainer/__init__.py", "")
    write(tmp_path, "trainer/commands/__init__.py", "")
    write(tmp_path, "trainer/commands/one.py", "from trainer.commands import two\nfrom trainer import lib\n")
    write(tmp_path, "trainer/commands/two.py", "from trainer import lib\n")
    write(tmp_path, "trainer/lib.py", "X = 1\n")
    result = rm.commands_importing_commands(tmp_path, rm.load_modules(tmp_path, rm.LIBRARY))
    assert [h.split(": ", 1)[1] for h in result.hits] == ["trainer.commands.one imports trainer.commands.two"]


def test_temp_writers(metrics):
    assert [h.split(": ", 1)[1] for h in metrics["temp_file_writers"].hits] == ["os.replace(tmp, path)"]
    assert "extractor/flatmod.py" in hits(metrics, "temp_file_writers")


def test_dead_and_test_only_names(metrics):
    dead = hits(metrics, "dead_names")
    assert "flatmod.DEAD_CONSTANT" in dead
    for alive in ("USED_CONSTANT", "_helper", "REGISTERED", "TESTED_ONLY", "alpha.run", "helpers.one"):
        assert alive not in dead
    test_only = hits(metrics, "names_only_tests_use")
    assert "flatmod.TESTED_ONLY" in test_only and "USED_CONSTANT" not in test_only


def test_a_name_kept_for_users_is_listed_not_counted(tree, metrics, monkeypatch):
    monkeypatch.setitem(rm.KEPT_FOR_USERS, "extractor.flatmod.TESTED_ONLY", "planted: a documented API")
    kept = {m.key: m for m in rm.measure(tree)}["names_only_tests_use"]
    assert kept.value == metrics["names_only_tests_use"].value - 1
    assert any("flatmod.TESTED_ONLY (kept, not counted: planted: a documented API)" in h for h in kept.hits)


def test_private_names(metrics):
    assert metrics["private_names_across_modules"].value == 1
    assert "from extractor.flatmod import _helper" in hits(metrics, "private_names_across_modules")


def test_measurements(metrics):
    assert len(metrics["measurements_in_comments"].hits) == 1
    assert "'15 ms'" in hits(metrics, "measurements_in_comments")


def test_commit_subjects(metrics, tree):
    assert metrics["commit_subjects_over_72"].value == 1
    assert "73 chars" in hits(metrics, "commit_subjects_over_72")
    first = subprocess.run(["git", "-C", str(tree), "rev-list", "--max-parents=0", "HEAD"], capture_output=True,
                           text=True, check=True).stdout.strip()
    assert rm.commit_subjects(tree, first, 20).value == 1
    assert rm.commit_subjects(tree, "HEAD", 20).value == 0


def test_the_command_line(tree):
    proc = subprocess.run([sys.executable, str(SCRIPT), "--root", str(tree), "--json"], capture_output=True,
                          text=True, check=True)
    data = json.loads(proc.stdout)
    assert data["flat_modules_extractor"]["value"] == 1
    assert any("DEAD_CONSTANT" in h for h in data["dead_names"]["hits"])
    table = subprocess.run([sys.executable, str(SCRIPT), "--root", str(tree), "--verbose"], capture_output=True,
                           text=True, check=True).stdout
    assert "substring_classifiers" in table and '"permission denied" in str(exc)' in table


def test_module_aliases(tmp_path, monkeypatch):
    write(tmp_path, "extractor/__init__.py", "")
    write(tmp_path, "extractor/pkg/__init__.py", "")
    write(tmp_path, "extractor/pkg/helpers.py", "def one():\n    return 1\n")
    write(tmp_path, "extractor/pkg/aliased.py", '''
        import glob as _glob                             # planted: a module under another name
        import numpy as np                               # clean: a third-party convention
        import numpy as numbers                          # planted: not the convention
        import os.path as path                           # clean: its own name
        import xml.etree.ElementTree as ET               # clean: a convention
        from extractor.pkg import helpers as hp          # planted
        from extractor.pkg import helpers                # clean
        from extractor.pkg.helpers import one as first   # clean: a function, not a module
        from . import helpers as rel                     # planted: relative
        ''')
    library = rm.load_modules(tmp_path, rm.LIBRARY)
    found = rm.module_aliases(library)
    assert found.value == 4
    assert sorted(h.split(": ", 1)[1] for h in found.hits) == [
        "extractor.pkg.helpers as hp", "extractor.pkg.helpers as rel", "glob as _glob", "numpy as numbers"]
    monkeypatch.setitem(rm.SAME_NAME_ALIASES, "extractor/pkg/aliased.py: hp", "planted: two helpers modules")
    kept = rm.module_aliases(library)
    assert kept.value == 3
    assert any("helpers as hp (kept, not counted: planted: two helpers modules)" in h for h in kept.hits)
