"""One name per thing and one error base in the trainer (issue 29): --output/--overwrite/--data
on every command (the old spellings are gone), exactly UserError as a one-line error, anything
else a traceback."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from extractor.core.errors import UserError
from trainer import cli
from trainer.data.loading import NLIDataError
from trainer.errors import ModelError, RunError, RunFileNotFound

REPO = Path(__file__).resolve().parents[1]
WRITERS = {  # command -> (writes with --output, refuses without --overwrite, reads NLI data with --data)
    "train": (True, True, True), "evaluate": (True, True, True), "predict": (True, True, True),
    "stress": (True, True, True), "consistency": (True, True, True), "cartography": (True, True, False),
    "experiment": (True, True, False), "stats": (True, True, True), "compare": (True, True, False),
    "annotate export": (True, True, True), "annotate import": (True, True, True),
}


def _help(command: str, capsys) -> str:
    argv = [*command.split(), "--help"]
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(WRITERS))
def test_every_command_spells_the_flags_like_the_job(command, capsys):
    text = _help(command, capsys)
    output, overwrite, data = WRITERS[command]
    assert ("--output PATH" in text) == output
    assert ("--overwrite " in text) == overwrite
    assert ("--data" in text) == data
    assert "deprecated" not in text and "--out PATH" not in text and "--force" not in text


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _rows(n: int, prefix: str) -> list[dict]:
    labels = ["entailment", "contrasting", "neutral", "reasoning"]
    return [{"pair_id": f"{prefix}{i}", "premise": f"the cat number {i} sat on the mat",
             "hypothesis": f"a {'dog' if i % 2 else 'cat'} sat {'there' if i % 3 else 'here'}",
             "label": labels[i % 4]} for i in range(n)]


def test_the_new_spellings_work_and_the_old_ones_are_refused(tmp_path, capsys):
    train = _jsonl(tmp_path / "train.jsonl", _rows(40, "t"))
    test = _jsonl(tmp_path / "test.jsonl", _rows(12, "x"))
    assert cli.main(["train", "--model", "tfidf-lr", "--train", str(train), "--output", str(tmp_path / "run")]) == 0
    assert (tmp_path / "run" / "config.json").exists()
    assert cli.main(["evaluate", str(tmp_path / "run"), "--data", str(test), "--output", str(tmp_path / "ev")]) == 0
    preds = __import__("pandas").read_parquet(tmp_path / "ev" / "predictions.parquet")
    assert list(preds.columns[:2]) == ["pair_id", "split"] and sorted(preds["pair_id"]) == sorted(
        r["pair_id"] for r in _rows(12, "x"))
    assert cli.main(["predict", str(tmp_path / "run"), "--data", str(test), "--output", str(tmp_path / "q.csv")]) == 0
    assert "deprecated" not in capsys.readouterr().err
    for argv in (["evaluate", str(tmp_path / "run"), "--test", str(test), "--output", str(tmp_path / "e2")],
                 ["predict", str(tmp_path / "run"), "--input", str(test), "--output", str(tmp_path / "p.csv")],
                 ["predict", str(tmp_path / "run"), "--data", str(test), "--output", str(tmp_path / "q.csv"),
                  "--force"]):
        with pytest.raises(SystemExit) as exc:
            cli.main(argv)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1
    assert not (tmp_path / "e2").exists() and not (tmp_path / "p.csv").exists()


def test_user_errors_are_one_line_and_bugs_keep_their_traceback(tmp_path, capsys, monkeypatch):
    for cls in (NLIDataError, RunError, RunFileNotFound, ModelError):
        assert issubclass(cls, UserError)
    assert cli.UserError is UserError  # re-exported for older imports
    missing = tmp_path / "nope.jsonl"
    assert cli.main(["stats", "--data", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {missing}: no such file or folder\n"
    assert cli.main(["evaluate", str(tmp_path), "--data", str(missing)]) == 2
    assert capsys.readouterr().err == f"error: {tmp_path}: not a run directory (no config.json)\n"

    import trainer.commands.stats

    def bug(args):
        raise ValueError("a bug, not the user's fault")

    monkeypatch.setattr(trainer.commands.stats, "run", bug)
    with pytest.raises(ValueError, match="a bug"):
        cli.main(["stats", "--data", str(missing)])


def test_no_library_module_imports_the_cli_and_own_imports_are_at_the_top():
    lazy = []
    for path in sorted((REPO / "trainer").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                if path.name not in ("cli.py", "__main__.py"):
                    assert not any(n == "trainer.cli" for n in names), f"{path} imports trainer.cli"
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("trainer", "extractor"):
                        lazy.append(f"{path.relative_to(REPO)}:{node.lineno} {node.module}")
    # the only lazy ones import torch and transformers (start-up time): trainer.models.transformer
    # and the encoder's embedding module
    assert lazy and all(item.endswith(("trainer.models.transformer", "extractor.encoder.embed")) for item in lazy), lazy


def test_train_prints_each_split_score_once(tmp_path, capsys):
    train = _jsonl(tmp_path / "train.jsonl", _rows(40, "t"))
    dev = _jsonl(tmp_path / "dev.jsonl", _rows(12, "d"))
    assert cli.main(["train", "--model", "tfidf-lr", "--train", str(train), "--validation", str(dev),
                     "--output", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    both = captured.out + captured.err
    assert both.count("validation: accuracy") == 1, both
    assert "validation: accuracy" in (tmp_path / "run" / "train.log").read_text()  # the log keeps it


# ---------------------------------------------------------------------------- one output rule (issue 47)

@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A tfidf-lr run on 40 rows, its test file, and a folder for the outputs."""
    root = tmp_path_factory.mktemp("outputs")
    train = _jsonl(root / "train.jsonl", _rows(40, "t"))
    test = _jsonl(root / "test.jsonl", _rows(12, "x"))
    assert cli.main(["train", "--model", "tfidf-lr", "--train", str(train), "--test", str(test),
                     "--output", str(root / "run"), "--no-progress"]) == 0
    return root / "run", test, root


def _with_dynamics(run: Path) -> Path:
    """A run folder with a dynamics/ folder: enough for cartography to reach its --output check."""
    (run / "dynamics").mkdir(parents=True, exist_ok=True)
    return run


REFUSERS = {  # command -> (its argv without --output, what --output names: a folder or a file)
    "evaluate": (lambda run, data: ["evaluate", run, "--data", data], "folder"),
    "predict": (lambda run, data: ["predict", run, "--data", data], "labelled.jsonl"),
    "stats": (lambda run, data: ["stats", "--data", data], "stats.md"),
    "stress": (lambda run, data: ["stress", run, "--data", data, "--lang", "en"], "folder"),
    "cartography": (lambda run, data: ["cartography", _with_dynamics(run.parent / "carto-run")], "folder"),
    "compare": (lambda run, data: ["compare", run, run], "compare.md"),
    "consistency": (lambda run, data: ["consistency", run, "--data", data], "folder"),
    "annotate export": (lambda run, data: ["annotate", "export", "--data", data], "folder"),
}


@pytest.mark.parametrize("command", sorted(REFUSERS))
def test_every_writing_command_refuses_an_existing_output_without_overwrite(command, small_run, capsys):
    """The message of `annotate` (and of the job's words): one line, exit 2, the old output intact.
    `train` refuses in its own words (it also offers --resume; tests/test_faults_trainer.py)."""
    run, data, root = small_run
    argv, kind = REFUSERS[command]
    out = root / command.replace(" ", "-") / ("out" if kind == "folder" else kind)
    out.parent.mkdir(exist_ok=True)
    if kind == "folder":
        out.mkdir(exist_ok=True)
        (out / "old.txt").write_text("old")
    else:
        out.write_text("old")
    capsys.readouterr()
    assert cli.main([*map(str, argv(run, data)), "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {out}: already exists; choose another --output or pass --overwrite to replace it\n"
    assert (out / "old.txt" if kind == "folder" else out).read_text() == "old"
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]  # no work folder or file left


@pytest.mark.parametrize("command", ["evaluate", "predict", "stats", "compare"])
def test_overwrite_replaces_the_output(command, small_run, capsys):
    run, data, root = small_run
    argv, kind = REFUSERS[command]
    out = root / f"{command}-again" / ("out" if kind == "folder" else kind)
    out.parent.mkdir()
    out.mkdir() if kind == "folder" else out.write_text("old")
    if kind == "folder":
        (out / "old.txt").write_text("old")
    assert cli.main([*map(str, argv(run, data)), "--output", str(out), "--overwrite"]) == 0
    if kind == "folder":
        assert not (out / "old.txt").exists() and (out / "metrics.json").exists()
    else:
        assert out.read_text() != "old"
    assert sorted(p.name for p in out.parent.iterdir()) == [out.name]


def test_default_output_under_the_run_is_refused_too(small_run, capsys):
    run, data, _ = small_run
    assert cli.main(["evaluate", str(run), "--data", str(data)]) == 0
    capsys.readouterr()
    assert cli.main(["evaluate", str(run), "--data", str(data)]) == 2
    assert capsys.readouterr().err == (f"error: {run / 'evaluation'}: already exists; choose another --output or "
                                       "pass --overwrite to replace it\n")
    assert cli.main(["evaluate", str(run), "--data", str(data), "--overwrite"]) == 0


def test_json_is_a_switch_in_every_command(capsys):
    for command in ("stats", "compare"):
        text = " ".join(_help(command, capsys).split())
        assert "--json print" in text, text
