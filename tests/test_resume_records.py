"""The completion records of `--resume` (extractor/engine/records.py, extractor/runs/run.py)
across versions of the code: a run recorded by the code before the stage contract
(`extractor/engine/stage.py`) is continued, and records that do not fit are redone or
refused in one line. No Spark: the records only."""
from __future__ import annotations

import json

import pytest

from extractor import runs
from extractor.engine.records import Progress
from extractor.engine.runner import InProcessRunner
from extractor.job.paths import resolve_job_args
from extractor.lexicon.lexicon import load_lexicon
from jobs import extract

# The settings of `--lang ro` as the code before the stage contract recorded them in
# `_progress/run.json` (its `run_fingerprint`: the lexicon's neutral mix filled in).
PREVIOUS_RO = {
    "balance": ["downsample"], "corpus": None, "files_per_table": 4, "genre": None, "genre_field": "genre",
    "id_field": "id", "input": None, "lang": "ro", "license": "cc-by-sa-4.0", "manifest": None,
    "max_eval_per_corpus": 15000, "min_chars": 50, "near_duplicate_bands": 20, "near_duplicate_permutations": 120,
    "near_duplicate_shingle": 1, "near_duplicate_threshold": 0.8, "near_duplicates": "on",
    "neutral_mix": "second_random=1", "neutral_ratio": 1.0, "no_label_filter": None, "phrase_set": None,
    "pos_filter": "auto", "pos_words": "on", "punkt_params": None, "punkt_sample_mb": 4.0, "seed": 0,
    "spacy_model": None, "split_ratios": "0.8,0.1,0.1", "stages": "all", "start_at": "sentences",
    "text_field": "text", "title_field": "title", "unit_mb": 8}


def _fingerprint(*argv: str) -> dict:
    args = resolve_job_args(extract.build_parser().parse_args(["--lang", "ro", *argv]))
    extract._import_run_modules()
    return extract.run_fingerprint(args, load_lexicon("ro"), [])


def test_the_fingerprint_holds_the_settings_the_previous_code_recorded():
    # flags added since: at their None default they change no byte; --language-check (on)
    # drops sentences in another language and --license's default is now the inputs' own,
    # so a record without them is another output's
    settings = _fingerprint()["settings"]
    assert {k: v for k, v in settings.items() if k not in PREVIOUS_RO} == {
        "pair_filter": None, "semantic_check": None, "check_threshold": None, "check_neutral_threshold": None,
        "check_batch": None, "author": None, "url": None, "language_check": "on"}
    assert {k: v for k, v in settings.items() if k in PREVIOUS_RO} == {**PREVIOUS_RO, "license": ""}
    # a flag given wins over the lexicon's choice, as before
    assert _fingerprint("--neutral-mix", "both_random=1")["settings"]["neutral_mix"] == "both_random=1"


def _killed_run(root: str, settings: dict) -> str:
    """A run started with `settings` and killed before publishing: its run.json is left."""
    run = runs.Run.open(root, "jobs/extract.py --lang ro", fingerprint={**_fingerprint(), "settings": settings})
    run.release()
    return run.run_id


def test_a_run_the_previous_code_recorded_is_refused_in_one_line_naming_what_changed(tmp_path):
    # its output would differ (no language check, another license): continuing it would mix two outputs
    _killed_run(str(tmp_path), PREVIOUS_RO)
    with pytest.raises(runs.ResumeError) as caught:
        runs.Run.open(str(tmp_path), "jobs/extract.py --lang ro --resume", fingerprint=_fingerprint(), resume=True)
    message = caught.value.one_line()
    assert "\n" not in message and '--license differs ("cc-by-sa-4.0" then, "" now)' in message
    assert message.endswith("run without --resume to start a new run")


def test_a_record_without_the_flags_whose_none_changes_nothing_is_resumed(tmp_path):
    # a key an old record lacks reads as None: --author and --url left out, as then
    now = _fingerprint()["settings"]
    killed = _killed_run(str(tmp_path), {k: v for k, v in now.items() if k not in ("author", "url")})
    again = runs.Run.open(str(tmp_path), "jobs/extract.py --lang ro --resume", fingerprint=_fingerprint(),
                          resume=True)
    try:
        assert again.resumed == killed
    finally:
        again.release()


def test_a_run_recorded_with_other_settings_is_refused_in_one_line(tmp_path):
    _killed_run(str(tmp_path), {**_fingerprint()["settings"], "neutral_mix": "both_random=1"})
    with pytest.raises(runs.ResumeError) as caught:
        runs.Run.open(str(tmp_path), "jobs/extract.py --lang ro --resume", fingerprint=_fingerprint(), resume=True)
    message = caught.value.one_line()
    assert "\n" not in message and "--neutral-mix differs" in message and "without --resume" in message


@pytest.mark.parametrize("plan_record", [b"{not json", b'{"units": [], "format": "older"}'])
def test_a_stage_plan_record_that_does_not_fit_is_redone(tmp_path, plan_record):
    """A stage's plan record that is unreadable or of another plan: the stage starts over
    (its round records are cleared), it never reads a result it cannot trust."""
    progress = Progress(str(tmp_path / "_progress"), resuming=True)
    folder = tmp_path / "_progress" / "pairs"
    (folder / "rounds" / "marked").mkdir(parents=True)
    (folder / "plan.json").write_bytes(plan_record)
    (folder / "rounds" / "marked" / "000000.json").write_text(json.dumps({"i": 0, "task": 0, "result": {"x": 1}}))
    runner = progress.runner("pairs", InProcessRunner())
    assert runner.plan({"units": [["a", 0]], "buckets": 2, "files": 4, "model": None}) is False
    assert not (folder / "rounds").exists()
    assert json.loads((folder / "plan.json").read_text())["buckets"] == 2
