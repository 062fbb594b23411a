"""The job with `--semantic-check on` on the bundled Romanian sample (Spark, the session's
local session): `checked/` is a subset of `pairs/`, the check's counts add up in stats.json,
`splits` reads `checked/`, and the card names the head's hash."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from extractor.check import head as check_head


@pytest.mark.spark
@pytest.mark.slow  # the whole job, the encoder loaded in a Python worker: about half a minute
def test_the_job_with_the_check_on_writes_a_subset_of_the_pairs_and_counts_every_drop(spark, tmp_path):
    pytest.importorskip("torch")
    from jobs.extract import main  # the job's CLI module

    out = tmp_path / "out"
    assert main(["--lang", "ro", "--output", str(out), "--semantic-check", "on"]) == 0
    pairs = {r["pair_id"]: r for r in pq.read_table(str(out / "pairs")).to_pylist()}
    checked = pq.read_table(str(out / "checked")).to_pylist()
    assert checked and len(checked) < len(pairs)
    assert all(pairs[r["pair_id"]] == r for r in checked)  # every kept row as the pairs stage wrote it
    stats = json.loads((out / "stats.json").read_text())
    check = stats["check"]
    assert check["input_pairs"] == len(pairs) and check["kept"] == len(checked)
    assert check["kept"] + sum(check["dropped"].values()) == check["input_pairs"]
    for label, entry in check["labels"].items():
        assert entry["kept"] + sum(entry["dropped"].values()) == entry["pairs"]
        assert entry["kept"] == sum(r["label"] == label for r in checked)
    assert stats["splits"]["input_pairs"] == len(checked)  # splits read checked/, not pairs/
    sha = check_head.load().sha256
    assert check["settings"]["head_sha256"] == sha and check["settings"]["encoder"] == "multilingual-e5-small"
    card = (out / "splits" / "README.md").read_text(encoding="utf-8")
    assert sha in card and "semantic check: encoder multilingual-e5-small" in card
    # the card's estimate is the lexicon's measurement with this head (measured_precision.semantic_check)
    assert stats["splits"]["label_precision"]["semantic_check"] == "measured"
    assert "--semantic-check on" in stats["splits"]["label_precision"]["about"] and "measured with it on" in card
    assert stats["job"]["stages_run"] == ["sentences", "pairs", "check", "splits"]
