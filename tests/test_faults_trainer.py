"""Fault table of the trainer (issue 13): misuse and damaged input, one row per case.

Each case sets up a directory, runs one command in-process, and asserts the exit code,
the one line printed to stderr (``error: ...`` for failures, or a ``note: ...`` line that must
be there), and the state of the output directory afterwards. Fast: tfidf-lr on 80 rows.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd
import pytest

from tests.trainer_fixtures import synthetic_nli, write_jsonl
from trainer.cli import main


# ---------------------------------------------------------------------------- fixtures

@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """Data files and one good run (the run every --overwrite case must leave intact)."""
    root = tmp_path_factory.mktemp("faults")
    files = {"train": write_jsonl(synthetic_nli(80), root / "train.jsonl"),
             "dev": write_jsonl(synthetic_nli(40, seed=1), root / "dev.jsonl"),
             "dev2": write_jsonl(synthetic_nli(24, seed=2), root / "other.jsonl")}
    good = root / "good"
    assert main(["train", "--train", str(files["train"]), "--validation", str(files["dev"]), "--test",
                 str(files["dev"]), "--model", "tfidf-lr", "--output", str(good)]) == 0
    files["good"] = good
    files["good_config"] = (good / "config.json").read_text()
    return files


@dataclass
class Case:
    name: str
    argv: Callable[[dict, Path], list[str]]         # (files, tmp) -> argv
    code: int
    line: str                                      # a stderr line must contain this
    state: str                                     # what the test checks on the output afterwards
    setup: Callable[[dict, Path], None] | None = None
    check: Callable[[dict, Path], None] | None = None
    extra: list = field(default_factory=list)


def T(files, tmp, *extra, out=None, train=None, val=True, test=True, model="tfidf-lr"):
    argv = ["train", "--train", str(train or files["train"])]
    if val:
        argv += ["--validation", str(files["dev"])]
    if test:
        argv += ["--test", str(files["dev"])]
    return argv + ["--model", model, "--output", str(out or tmp / "run"), *extra]


def copy_good(files, tmp):
    shutil.copytree(files["good"], tmp / "run")


def good_intact(files, tmp):
    run = tmp / "run"
    assert (run / "config.json").read_text() == files["good_config"]
    assert (run / "metrics.json").exists() and (run / "model" / "model.json").exists()


def absent(files, tmp):
    assert not (tmp / "run").exists() and not (tmp / "run.inprogress").exists()


def data_file(name, df_fn):
    def setup(files, tmp):
        df_fn(tmp / name)
    return setup


def write_rows(rows):
    def make(path):
        pd.DataFrame(rows).to_json(path, orient="records", lines=True)
    return make


def misspelt(path):
    df = synthetic_nli(80)
    df.loc[[3, 11, 19, 27, 35], "label"] = "contrastng"
    write_jsonl(df, path)


def with_bad_texts(path):
    df = synthetic_nli(80).astype(object)
    df.loc[2, "premise"] = None
    df.loc[5, "hypothesis"] = float("nan")
    df.loc[9, "premise"] = "   "
    df.loc[13, "hypothesis"] = ["a", "list"]
    write_jsonl(df, path)


def with_dup_ids(path):
    df = synthetic_nli(80)
    df.loc[6, "pair_id"] = df.loc[2, "pair_id"]
    write_jsonl(df, path)


def stale_stage(files, tmp):
    """What a --seeds run killed after its first seed leaves: a finished seed to resume from."""
    (tmp / "run.inprogress" / "seed_0").mkdir(parents=True)
    (tmp / "run.inprogress" / "train.log").write_text("killed\n")
    (tmp / "run.inprogress" / "seed_0" / "metrics.json").write_text("{}")


def stale_start(files, tmp):
    """What a run killed while loading its model leaves: nothing trained."""
    (tmp / "run.inprogress").mkdir()
    (tmp / "run.inprogress" / "train.log").write_text("killed\n")
    (tmp / "run.inprogress" / "resume.json").write_text("{}")


def live_lock(files, tmp):
    (tmp / "run.inprogress").mkdir()
    (tmp / "run.inprogress" / ".lock").write_text(f"{os.getppid()}\n")  # a live process that is not us


def resumable_stage(files, tmp):
    """An unfinished run as a kill leaves it: the stage with resume.json of C=1."""
    copy_good(files, tmp)
    stage = tmp / "run.inprogress"
    stage.mkdir()
    from trainer.training.pipeline import resume_fingerprint

    cfg = json.loads(files["good_config"])
    (stage / "resume.json").write_text(json.dumps(resume_fingerprint(cfg)))


def metrics_of(tmp):
    return json.loads((tmp / "run" / "metrics.json").read_text())


def config_of(tmp):
    return json.loads((tmp / "run" / "config.json").read_text())


def check_new_label(files, tmp):
    cfg = config_of(tmp)
    assert "contrastng" in cfg["labels"] and cfg["label_set"]["new_labels"] == {"contrastng": 5}


def check_two_tests(files, tmp):
    assert set(metrics_of(tmp)) == {"validation", "dev", "other"}


def check_bad_texts(files, tmp):
    d = config_of(tmp)["data"]["dropped"]["train"]
    assert d == {"missing_text": 2, "empty_text": 1, "non_text": 1}
    preds = pd.read_parquet(tmp / "run" / "predictions.parquet")
    assert not preds["premise"].isin(["nan", "None", "NaN"]).any()


def check_dup_dropped(files, tmp):
    assert config_of(tmp)["data"]["dropped"]["train"] == {"duplicate_id": 1}


def check_no_validation(files, tmp):
    cfg = config_of(tmp)
    assert cfg["validation"].startswith("no validation data")
    assert set(metrics_of(tmp)) == {"dev"}


def check_resumed(files, tmp):
    assert not (tmp / "run.inprogress").exists() and (tmp / "run" / "metrics.json").exists()


def stage_kept(files, tmp):
    good_intact(files, tmp)
    assert (tmp / "run.inprogress").exists() and not (tmp / "run.inprogress" / ".lock").exists()


def stage_removed(files, tmp):
    good_intact(files, tmp)
    assert not (tmp / "run.inprogress").exists()


def not_a_run(files, tmp):
    (tmp / "run").mkdir()
    (tmp / "run" / "notes.txt").write_text("my notes")


CASES = [
    Case("overwrite, new training file empty",
         lambda f, t: T(f, t, "--overwrite", train=t / "empty.jsonl"), 2, "empty.jsonl: empty file",
         "old run intact", setup=lambda f, t: (copy_good(f, t), (t / "empty.jsonl").write_text("")),
         check=good_intact),
    Case("overwrite, training file missing",
         lambda f, t: T(f, t, "--overwrite", train=t / "gone.jsonl"), 2, "gone.jsonl: no such file",
         "old run intact", setup=lambda f, t: copy_good(f, t), check=good_intact),
    Case("overwrite, failure after staging (subset of a run without dynamics)",
         lambda f, t: T(f, t, "--overwrite", "--subset", "e2l", "--cartography-from", str(f["good"])), 2,
         "error: ", "old run intact, nothing trained: no unfinished stage left", setup=lambda f, t: copy_good(f, t),
         check=stage_removed),
    Case("existing run, no --overwrite/--resume", lambda f, t: T(f, t), 2,
         "run directory exists and is not empty (use --overwrite or --resume)", "old run intact",
         setup=lambda f, t: copy_good(f, t), check=good_intact),
    Case("--overwrite of a directory that is not a run", lambda f, t: T(f, t, "--overwrite"), 2,
         "not a run directory (no config.json); --overwrite replaces runs only", "directory untouched",
         setup=not_a_run, check=lambda f, t: (t / "run" / "notes.txt").read_text() == "my notes"),
    Case("--output is a file", lambda f, t: T(f, t, out=t / "file.txt"), 2, "--output is a file",
         "file untouched", setup=lambda f, t: (t / "file.txt").write_text("x"),
         check=lambda f, t: (t / "file.txt").read_text() == "x"),
    # refused under other settings when there is a checkpoint: test_killed_torch_run_keeps_the_old_run_and_...
    Case("--resume under other settings of a stage with nothing trained", lambda f, t: T(f, t, "--resume", "--C", "10"),
         0, "nothing trained in it (no checkpoint, no finished seed): removed", "old run kept, the stage removed",
         setup=resumable_stage, check=stage_removed),
    Case("--resume under the same settings", lambda f, t: T(f, t, "--resume"), 0, "",
         "run published, stage gone", setup=resumable_stage, check=check_resumed),
    Case("--resume of a complete run", lambda f, t: T(f, t, "--resume"), 0, "",
         "old run intact", setup=lambda f, t: copy_good(f, t), check=good_intact),
    Case("--resume with --overwrite", lambda f, t: T(f, t, "--resume", "--overwrite"), 2,
         "--resume continues an unfinished run and --overwrite starts again", "nothing written", check=absent),
    Case("unfinished stage left by a kill, no flag", lambda f, t: T(f, t), 2,
         "an unfinished run is there (a failed or killed train): use --resume", "stage kept",
         setup=stale_stage, check=lambda f, t: (t / "run.inprogress" / "train.log").exists()),
    Case("unfinished stage of a killed start (nothing trained), no flag", lambda f, t: T(f, t), 0,
         "nothing trained in it (no checkpoint, no finished seed): removed", "run published",
         setup=stale_start, check=check_resumed),
    Case("--seeds without validation data", lambda f, t: T(f, t, "--seeds", "2", val=False), 0,
         "--seeds 2 without validation data: no seed can be selected", "run of the first seed published",
         check=lambda f, t: json.loads((t / "run" / "seeds.json").read_text())["selected_seed"] == 0
         and set(metrics_of(t)) == {"dev"}),
    Case("another train writing the same --output", lambda f, t: T(f, t, "--overwrite"), 2,
         "another train (pid", "stage of the other process kept", setup=live_lock,
         check=lambda f, t: (t / "run.inprogress" / ".lock").exists()),
    Case("misspelt label in 5 training rows", lambda f, t: T(f, t, train=t / "bad.jsonl"), 2,
         "label 'contrastng' (5 rows, first id 's0_3') is not in the dataset's label set", "nothing written",
         setup=data_file("bad.jsonl", misspelt), check=absent, extra=["--allow-new-labels"]),
    Case("misspelt label with --allow-new-labels", lambda f, t: T(f, t, "--allow-new-labels", train=t / "bad.jsonl",
                                                                  val=False, test=False), 0,
         "note: no validation data", "run with 5 labels", setup=data_file("bad.jsonl", misspelt),
         check=check_new_label),
    Case("--test A --test B keeps both", lambda f, t: T(f, t, "--test", str(f["dev2"])), 0, "",
         "metrics of validation, dev and other", check=check_two_tests),
    Case("None/NaN/blank/list texts", lambda f, t: T(f, t, train=t / "texts.jsonl"), 0,
         "note: train: dropped 4 rows", "run; drops in config.json", setup=data_file("texts.jsonl", with_bad_texts),
         check=check_bad_texts),
    Case("duplicate ids", lambda f, t: T(f, t, train=t / "dup.jsonl"), 2,
         "id 's0_2' occurs more than once with different content (rows 3 and 7", "nothing written",
         setup=data_file("dup.jsonl", with_dup_ids), check=absent),
    Case("duplicate ids, --duplicate-ids drop", lambda f, t: T(f, t, "--duplicate-ids", "drop", train=t / "dup.jsonl"),
         0, "note: train: dropped 1 rows", "run; drop in config.json", setup=data_file("dup.jsonl", with_dup_ids),
         check=check_dup_dropped),
    Case("no validation data", lambda f, t: T(f, t, val=False), 0, "note: no validation data: no validation scores",
         "run, config.json says so", check=check_no_validation),
    Case("--seeds 0", lambda f, t: T(f, t, "--seeds", "0"), 2, "--seeds must be at least 1", "nothing written",
         check=absent),
    Case("--epochs 0", lambda f, t: T(f, t, "--epochs", "0"), 2, "--epochs must be at least 1", "nothing written",
         check=absent),
    Case("--dropout 1.5", lambda f, t: T(f, t, "--dropout", "1.5"), 2, "--dropout must be in [0, 1)",
         "nothing written", check=absent),
    Case("--train-size 0", lambda f, t: T(f, t, "--train-size", "0"), 2, "--train-size must be at least 1",
         "nothing written", check=absent),
    Case("unknown flag (argparse error as one line)", lambda f, t: T(f, t, "--ovewrite"), 2,
         "unrecognized arguments: --ovewrite", "nothing written", check=absent),
    Case("--data and --train", lambda f, t: T(f, t, "--data", str(t)), 2, "give --data DIR or --train FILE, not both",
         "nothing written", check=absent),
    Case("--grid-values without --grid", lambda f, t: T(f, t, "--grid-values", "C=1,2"), 2,
         "--grid-values needs --grid", "nothing written", check=absent),
    Case("--subset without --cartography-from", lambda f, t: T(f, t, "--subset", "e2l"), 2,
         "--subset needs --cartography-from RUN_DIR", "nothing written", check=absent),
    Case("--by a column no test file has", lambda f, t: T(f, t, "--by", "genre"), 2,
         "--by genre: no test data has a column 'genre'", "nothing written", check=absent),
    Case("test label the model does not know", lambda f, t: T(f, t, "--test", str(t / "odd.jsonl")), 2,
         "'contradiction' is not one of the model's labels", "nothing written",
         setup=data_file("odd.jsonl", write_rows([{"premise": "a b", "hypothesis": "c d", "label": "contradiction"}])),
         check=absent),
    Case("two test files with the same name", lambda f, t: T(f, t, "--test", str(t / "sub" / "dev.jsonl")), 2,
         "two evaluation files share the name 'dev'", "nothing written",
         setup=lambda f, t: ((t / "sub").mkdir(), shutil.copy(f["dev"], t / "sub" / "dev.jsonl")), check=absent),
    Case("corrupt JSONL", lambda f, t: T(f, t, train=t / "broken.jsonl"), 2, "broken.jsonl: cannot read as jsonl",
         "nothing written", setup=lambda f, t: (t / "broken.jsonl").write_text('{"premise": "a", "hyp\n'),
         check=absent),
    Case("missing column", lambda f, t: T(f, t, "--premise", "sentence1"), 2, "no column 'sentence1' (use --premise)",
         "nothing written", check=absent),
    Case("--label-names that do not cover a label", lambda f, t: T(f, t, "--label-names", "entailment,neutral"), 2,
         "not in label names ['entailment', 'neutral']", "nothing written", check=absent),
    Case("unknown --grid-values key", lambda f, t: T(f, t, "--grid", "--grid-values", "alpha=1"), 2,
         "unknown key 'alpha'", "nothing written", check=absent),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fault(case: Case, base, tmp_path, capsys):
    if case.setup:
        case.setup(base, tmp_path)
    capsys.readouterr()
    try:
        rc = main(case.argv(base, tmp_path))
    except SystemExit as exc:  # argparse errors exit through SystemExit
        rc = exc.code
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.strip()]
    assert rc == case.code, (rc, err)
    if case.code == 2:
        errors = [l for l in lines if l.startswith("error: ")]
        assert len(errors) == 1, err
        assert case.line in errors[0], errors[0]
        for more in case.extra:
            assert more in errors[0], errors[0]
        assert "Traceback" not in err
    elif case.line:
        assert any(case.line in l for l in lines), err
    if case.check:
        result = case.check(base, tmp_path)
        assert result is None or result is True, result


def test_table_has_at_least_twenty_cases():
    assert len(CASES) >= 20 and len({c.name for c in CASES}) == len(CASES)


def test_killed_torch_run_keeps_the_old_run_and_resumes_only_under_its_settings(base, tmp_path, capsys):
    """A cbow-softmax --overwrite run killed after epoch 1: the old run stays; --resume with
    another --lr is refused with the difference; the same command continues and publishes."""
    from trainer.commands import train as train_cmd
    from trainer.cli import build_parser
    from trainer.models.loop import Callback

    class Kill(Callback):
        def on_epoch_end(self, state):
            if state.epoch == 1:
                raise KeyboardInterrupt

    copy_good(base, tmp_path)
    argv = T(base, tmp_path, "--overwrite", model="cbow-softmax") + ["--epochs", "3", "--patience", "0",
                                                                    "--vector-size", "16", "--no-progress"]
    args = build_parser(argv).parse_args(argv)
    with pytest.raises(KeyboardInterrupt):
        train_cmd.run(args, callbacks=[Kill()])
    good_intact(base, tmp_path)
    stage = tmp_path / "run.inprogress"
    assert (stage / "checkpoint").exists() and (stage / "resume.json").exists() and not (stage / ".lock").exists()
    resume = [a for a in argv if a != "--overwrite"] + ["--resume"]
    capsys.readouterr()
    assert main(resume + ["--lr", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "was started with other settings: params.lr" in err and "-> 0.5" in err
    good_intact(base, tmp_path)
    assert main(resume) == 0
    cfg = config_of(tmp_path)
    assert cfg["model"] == "cbow-softmax" and [h["epoch"] for h in cfg["history"]] == [0, 1, 2]
    assert not stage.exists() and not (tmp_path / "run" / "checkpoint").exists()
