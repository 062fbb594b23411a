"""Real datasets as they come (issue 31, item 3): a row that repeats an id with the same
content is dropped and counted (``duplicate_identical``) with one ``note:`` line; an id
repeated with different content stays a one-line error naming the file and both rows.

The fixture (tests/data/indonli/) has the exact row shape of the official IndoNLI files,
whose ``val.jsonl`` holds one row twice; the real NLI files of ../shared/data are checked
the same way.
"""
from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import REPO, SHARED_DATA
from trainer.cli import main
from trainer.data.loading import NLIDataError, check_ids, load_nli, load_one_split, load_split_file

FIXTURE = REPO / "tests" / "data" / "indonli"
NLI_FILES = sorted((SHARED_DATA / "nli").glob("*.jsonl")) if (SHARED_DATA / "nli").exists() else []


def _notes(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("note:")]


def test_indonli_val_repeat_is_dropped_counted_and_noted(caplog):
    raw = pd.read_json(FIXTURE / "val.jsonl", lines=True, dtype=False)
    assert len(raw) == 7 and raw["pair_id"].duplicated().sum() == 1
    with caplog.at_level(logging.WARNING):
        df = load_split_file(FIXTURE / "val.jsonl")
    assert len(df) == 6 and df["pair_id"].is_unique
    assert df.attrs["dropped"] == {"duplicate_identical": 1}
    assert "id_rows" not in df.attrs  # nothing left that conflicts
    # the kept row is the first one; the other columns stay
    assert df.loc[df["pair_id"] == "104684", "hypothesis"].item() == "Pasar Beringharjo menjual batik."
    assert {"premise_id", "data_split", "annotator_type", "sentence_size"} <= set(df.columns)
    notes = _notes(caplog)
    assert len(notes) == 1
    assert str(FIXTURE / "val.jsonl") in notes[0] and "duplicate_identical" in notes[0]
    assert "id '104684', row 1 again at row 5" in notes[0]
    # the check every command runs afterwards passes with the default policy
    assert check_ids(df, str(FIXTURE / "val.jsonl"))[1] == 0


def test_train_file_without_repeats_is_unchanged(caplog):
    with caplog.at_level(logging.WARNING):
        df = load_nli(FIXTURE / "train.jsonl")["data"]
    assert len(df) == 18 and df.attrs["dropped"] == {} and not _notes(caplog)


def test_conflicting_id_names_the_file_and_both_rows(tmp_path):
    rows = [json.loads(line) for line in (FIXTURE / "val.jsonl").read_text(encoding="utf-8").splitlines()]
    rows[4] = {**rows[4], "label": "n"}  # line 5 now says otherwise about pair 104684
    path = tmp_path / "val.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    df = load_split_file(path)
    assert len(df) == 7 and df.attrs["dropped"] == {}
    assert df.attrs["id_rows"] == {"104684": [1, 5]}
    with pytest.raises(NLIDataError) as err:
        check_ids(df, str(path))
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith(f"{path}: id '104684' occurs more than once with different content (rows 1 and 5;")
    # --duplicate-ids drop still keeps the first row of each id
    kept, n = check_ids(df, str(path), "drop")
    assert n == 1 and kept.loc[kept["pair_id"] == "104684", "label"].item() == "e"


def test_repeat_and_conflict_in_one_file(tmp_path, caplog):
    """Two exact repeats and one conflict: the repeats go, the conflict's rows are the file's."""
    base = {"premise": "Hujan turun sejak pagi.", "hypothesis": "Jalanan basah.", "label": "e"}
    rows = [{"pair_id": 1, **base}, {"pair_id": 2, **base, "hypothesis": "Jalanan kering.", "label": "c"},
            {"pair_id": 1, **base}, {"pair_id": 2, **base, "hypothesis": "Jalanan kering.", "label": "c"},
            {"pair_id": 3, **base, "label": "n"}, {"pair_id": 3, **base, "label": "c"}]
    path = tmp_path / "mixed.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    with caplog.at_level(logging.WARNING):
        df = load_split_file(path)
    assert len(df) == 4 and df.attrs["dropped"] == {"duplicate_identical": 2}
    assert df.attrs["id_rows"] == {"3": [5, 6]}
    assert len(_notes(caplog)) == 1 and "2 rows repeat an earlier row exactly" in _notes(caplog)[0]
    with pytest.raises(NLIDataError, match=r"id '3' occurs more than once with different content \(rows 5 and 6;"):
        check_ids(df, str(path))


def test_ids_hashed_from_the_text_are_not_deduplicated(tmp_path):
    """Without an id column each row is its own example (SNLI-style files repeat pairs on purpose)."""
    path = tmp_path / "noid.jsonl"
    row = json.dumps({"premise": "A.", "hypothesis": "B.", "label": "e"})
    path.write_text(row + "\n" + row + "\n")
    df = load_split_file(path)
    assert len(df) == 2 and df["pair_id"].is_unique and df.attrs["dropped"] == {}


def test_train_evaluate_and_consistency_load_indonli_with_no_flag(tmp_path):
    """The paths the issue names: train --validation, evaluate, consistency on the val file."""
    run = tmp_path / "run"
    assert main(["train", "--model", "tfidf-lr", "--train", str(FIXTURE / "train.jsonl"),
                 "--validation", str(FIXTURE / "val.jsonl"), "--output", str(run)]) == 0
    config = json.loads((run / "config.json").read_text())
    assert config["data"]["dropped"] == {"validation": {"duplicate_identical": 1}}
    assert config["data"]["n_validation"] == 6
    assert main(["evaluate", str(run), "--data", str(FIXTURE / "val.jsonl"), "--output", str(tmp_path / "ev")]) == 0
    metrics = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert metrics["val"]["n"] == 6 and metrics["val"]["dropped"] == {"duplicate_identical": 1}
    _, split = load_one_split(FIXTURE / "val.jsonl")
    assert len(split) == 6
    out = tmp_path / "cons"
    assert main(["consistency", str(run), "--data", str(FIXTURE / "val.jsonl"), "--label-map", "e=E", "n=N", "c=C",
                 "--output", str(out), "--no-progress"]) == 0
    counts = json.loads((out / "metrics.json").read_text())["counts"]
    assert counts["data_items"] == 6 and counts["premise_groups"] == 2


def test_cli_prints_one_note_line_naming_the_repeat(tmp_path):
    """What a user sees on stderr (logging as the command line sets it up, not pytest's)."""
    proc = subprocess.run([sys.executable, "-m", "trainer", "stats", "--data", str(FIXTURE / "val.jsonl")], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    notes = [line for line in proc.stderr.splitlines() if "duplicate_identical" in line]
    assert len(notes) == 1 and notes[0].startswith("note: ") and "id '104684'" in notes[0]


@pytest.mark.parametrize("path", NLI_FILES, ids=[p.name for p in NLI_FILES])
def test_real_nli_files_load_and_their_repeats_are_counted(path, caplog):
    """Every real NLI file of ../shared/data loads with no flag; SciNLI's have no repeated ids."""
    with caplog.at_level(logging.WARNING):
        df = load_split_file(path, premise="sentence1", hypothesis="sentence2")
    raw_ids = pd.read_json(path, lines=True, dtype=False)["id"].astype(str)
    repeats = int(raw_ids.duplicated().sum())
    assert df.attrs["dropped"].get("duplicate_identical", 0) == repeats
    assert df["pair_id"].is_unique and len(df) == len(raw_ids) - repeats
    assert len(_notes(caplog)) == (1 if repeats else 0)


def test_real_nli_files_are_found():
    if not NLI_FILES:
        pytest.skip(f"{SHARED_DATA / 'nli'} not found (set NLI_SHARED_DATA to the shared data folder)")
    assert {p.name for p in NLI_FILES} >= {"scinli-dev.jsonl"}
