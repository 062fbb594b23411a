"""A YAML syntax error in a file the user wrote names its line and column (lexicon,
manifest, experiment line-up), in one line."""
from __future__ import annotations

from pathlib import Path

import pytest

from extractor.core.errors import UserError
from extractor.job.inputs import load_manifest
from extractor.lexicon.lexicon import load_lexicon
from trainer.training.lineup import load_lineup

REPO = Path(__file__).resolve().parents[1]


def broken_copy(source: Path, target: Path, line: int) -> Path:
    """`source` with line `line` (1-based) made invalid: a second `: ` after its key."""
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    assert ":" in lines[line - 1]
    lines[line - 1] = lines[line - 1].replace(":", ": x:", 1)
    target.write_text("".join(lines), encoding="utf-8")
    return target


def message(call, path) -> str:
    with pytest.raises(UserError) as info:
        call(path)
    text = str(info.value)
    assert "\n" not in text
    return text


def test_a_broken_lexicon_names_the_line(tmp_path):
    ro = REPO / "phrase_lexicons" / "ro.yaml"
    line = next(i for i, text in enumerate(ro.read_text(encoding="utf-8").splitlines(), 1)
                if i > 20 and text.startswith("  ") and ": " in text)  # a nested key with a value
    text = message(load_lexicon, broken_copy(ro, tmp_path / "ro.yaml", line))
    assert text.startswith(f"{tmp_path / 'ro.yaml'}: not valid YAML: line {line}, column ")


def test_a_broken_manifest_names_the_line(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("- name: news\n  genre: news\n  format: jsonl\n  path: news.jsonl\n", encoding="utf-8")
    text = message(load_manifest, broken_copy(good, tmp_path / "corpora.yaml", 3))
    assert text.startswith(f"{tmp_path / 'corpora.yaml'}: not a valid YAML manifest: line 3, column ")


def test_a_broken_lineup_names_the_line(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text("name: x\nlineup:\n  - name: a\n    train_args: [--model, tfidf-lr]\n", encoding="utf-8")
    text = message(load_lineup, broken_copy(good, tmp_path / "lineup.yaml", 3))
    assert "not valid YAML (line 3, column " in text
