"""One name per thing and one error base in the trainer (issue 29): --output/--overwrite/--data
on every command, the old spellings as deprecated aliases, exactly UserError as a one-line
error, anything else a traceback."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from extractor.core.errors import UserError
from trainer import cli
from trainer.data import NLIDataError
from trainer.errors import ModelError, RunError, RunFileNotFound

REPO = Path(__file__).resolve().parents[1]
WRITERS = {  # command -> (writes with --output, refuses without --overwrite, reads NLI data with --data)
    "train": (True, True, True), "evaluate": (True, False, True), "predict": (True, False, True),
    "stress": (True, False, True), "consistency": (True, False, True), "cartography": (True, False, False),
    "experiment": (True, True, False), "stats": (True, False, True),
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
    assert ("--output PATH, --out PATH" in text) == output
    assert ("--overwrite, --force" in text or "--overwrite " in text) == overwrite
    assert ("--data" in text) == data
    if output:
        assert "--out: deprecated alias" in " ".join(text.split())


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _rows(n: int, prefix: str) -> list[dict]:
    labels = ["entailment", "contrasting", "neutral", "reasoning"]
    return [{"pair_id": f"{prefix}{i}", "premise": f"the cat number {i} sat on the mat",
             "hypothesis": f"a {'dog' if i % 2 else 'cat'} sat {'there' if i % 3 else 'here'}",
             "label": labels[i % 4]} for i in range(n)]


def test_old_spellings_still_work_and_say_they_are_deprecated(tmp_path, capsys):
    train = _jsonl(tmp_path / "train.jsonl", _rows(40, "t"))
    test = _jsonl(tmp_path / "test.jsonl", _rows(12, "x"))
    assert cli.main(["train", "--model", "tfidf-lr", "--train", str(train), "--out", str(tmp_path / "run")]) == 0
    err = capsys.readouterr().err
    assert "note: --out is a deprecated alias, removed in the next release; use --output" in err
    assert (tmp_path / "run" / "config.json").exists()
    assert cli.main(["evaluate", str(tmp_path / "run"), "--test", str(test), "--out", str(tmp_path / "ev")]) == 0
    err = capsys.readouterr().err
    assert "--test is a deprecated alias" in err and "use --data" in err
    preds = __import__("pandas").read_parquet(tmp_path / "ev" / "predictions.parquet")
    assert list(preds.columns[:2]) == ["pair_id", "split"] and sorted(preds["pair_id"]) == sorted(
        r["pair_id"] for r in _rows(12, "x"))
    assert cli.main(["predict", str(tmp_path / "run"), "--input", str(test), "--output", str(tmp_path / "p.csv")]) == 0
    assert "--input is a deprecated alias" in capsys.readouterr().err
    # the same run, new spellings: no note
    assert cli.main(["predict", str(tmp_path / "run"), "--data", str(test), "--output", str(tmp_path / "q.csv")]) == 0
    assert "deprecated" not in capsys.readouterr().err
    assert (tmp_path / "p.csv").read_text() == (tmp_path / "q.csv").read_text()


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

    import trainer.stats

    def bug(args):
        raise ValueError("a bug, not the user's fault")

    monkeypatch.setattr(trainer.stats, "run", bug)
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
    # the only lazy ones import trainer.models.transformer (torch and transformers: start-up time)
    assert lazy and all(item.endswith("trainer.models.transformer") for item in lazy), lazy


def test_train_prints_each_split_score_once(tmp_path, capsys):
    train = _jsonl(tmp_path / "train.jsonl", _rows(40, "t"))
    dev = _jsonl(tmp_path / "dev.jsonl", _rows(12, "d"))
    assert cli.main(["train", "--model", "tfidf-lr", "--train", str(train), "--validation", str(dev),
                     "--output", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    both = captured.out + captured.err
    assert both.count("validation: accuracy") == 1, both
    assert "validation: accuracy" in (tmp_path / "run" / "train.log").read_text()  # the log keeps it
