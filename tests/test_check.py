"""The semantic check (extractor/check/): its pure functions on real Romanian sentences
(RO-STS, ../shared/data), the shipped head, the table whatever the slicing and files, and
the stage switched off by default (the job's list, `--stages`). No Spark: an in-process runner."""
from __future__ import annotations

import argparse
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from extractor.check import head as check_head
from extractor.check import options as check_options
from extractor.check import rounds
from extractor.check import stage as check_stage
from extractor.core.schemas import PAIRS
from extractor.engine.runner import InProcessRunner
from extractor.job import stages
from extractor.lexicon.lexicon import load_lexicon
from tests.conftest import REPO, shared_file
from tests.task_tables import writer

LABELS = ("contrasting", "entailment", "reasoning", "neutral")


def sts_pairs(n: int) -> list[tuple[str, str]]:
    """The first `n` sentence pairs of RO-STS's dev part (real Romanian)."""
    lines = shared_file("sts/ro-sts/RO-STS.dev.tsv").read_text(encoding="utf-8").splitlines()
    return [tuple(line.split("\t")[1:3]) for line in lines[:n]]  # type: ignore[misc]


@pytest.fixture(scope="module")
def encoder_embed():
    """The check's own encoder and head, loaded once (the rounds' per-process cache)."""
    pytest.importorskip("torch")
    found = check_head.load()
    plan = check_stage.CheckPlan(units=(), schema=None, slices=(), scratch=None, encoder=found.encoder,  # type: ignore
                                 head_sha256=found.sha256, threshold=0.5, neutral_threshold=0.5, batch=8)
    try:
        encoder, _ = rounds.models(plan)
    except Exception as exc:  # the encoder is built at set-up; without it the check cannot run
        pytest.skip(f"the encoder is not built: {exc}")
    return lambda texts: encoder.embed(texts, kind=check_head.KIND, batch_size=8)


def test_the_shipped_head_names_its_encoder_and_reads_back_as_written():
    data = check_head.head_bytes()
    found = check_head.from_bytes(data)
    assert found.sha256 == hashlib.sha256(data).hexdigest() and found.encoder == "multilingual-e5-small"
    assert len(data) < 300_000 and 0 < found.threshold < 1 and 0 < found.neutral_threshold < 1
    doc = json.loads(data)
    assert doc["training"]["script"] == "benchmarks/check_head.py" and "test" not in doc["training"]["data"].split(
        "(")[0]
    prior_data = doc["training"]["prior"]
    assert prior_data["data"].startswith("../shared/data/nli/") and prior_data["pairs"] == 4000
    # to_json is a fixed point of its own output: the rebuild's bytes depend on the numbers only
    again = check_head.to_json((doc["prior"]["coef"], doc["prior"]["intercept"]),
                               (doc["marked"]["coef"], doc["marked"]["intercept"]),
                               (doc["related"]["coef"], doc["related"]["intercept"]), doc["marked"]["phrases"],
                               doc["thresholds"], doc["encoder"], doc["training"])
    assert again == data
    d, zeros = 384, np.zeros((1, 384))
    assert np.asarray(doc["prior"]["coef"]).shape == (4, check_head.related_features(zeros, zeros).shape[1])
    assert "Prin urmare" in found.phrases and found.phrases == sorted(found.phrases)
    prior = found.prior.predict(check_head.related_features(zeros, zeros))
    assert prior.shape == (1, 4) and np.isclose(prior.sum(), 1.0)
    assert len(doc["marked"]["coef"]) == check_head.marked_features(zeros, zeros, ["reasoning"], ["Prin urmare"],
                                                                     found.phrases, prior).shape[1]
    assert len(doc["related"]["coef"]) == check_head.neutral_features(zeros, zeros, prior).shape[1] == 4 * d + 5


def test_each_distinct_sentence_is_embedded_once_and_verdicts_follow_the_thresholds(encoder_embed):
    pairs = sts_pairs(6)
    # a sentence in several pairs: the first premise is also every other pair's hypothesis
    premises = [p for p, _ in pairs] + [pairs[0][0]] * 2
    hypotheses = [h for _, h in pairs] + [pairs[1][1], pairs[2][1]]
    labels = [LABELS[i % 4] for i in range(len(premises))]
    phrases = [None if lab == "neutral" else "Prin urmare" for lab in labels]
    calls: list[list[str]] = []

    def embed(texts):
        calls.append(list(texts))
        return encoder_embed(texts)

    found = check_head.load()
    p, reasons = rounds.verdicts(premises, hypotheses, labels, phrases, embed, found, found.threshold,
                                 found.neutral_threshold)
    assert len(calls) == 1 and sorted(calls[0]) == sorted(set(premises + hypotheses))
    assert ((p >= 0) & (p <= 1)).all()
    for q, lab, why in zip(p, labels, reasons):
        if lab == "neutral":
            assert why == (rounds.RELATED_NEUTRAL if q >= found.neutral_threshold else None)
        else:
            assert why == (rounds.UNLIKELY_LABEL if q < found.threshold else None)
    # the same pairs one at a time: the same probabilities (a verdict is the pair's own)
    alone = [rounds.verdicts([a], [b], [c], [f], encoder_embed, found, 0.5, 0.5)[0][0]
             for a, b, c, f in zip(premises, hypotheses, labels, phrases)]
    assert np.allclose(alone, p, atol=1e-6)
    # the head knows phrases: the same pair under another phrase (or one it never saw) changes p
    other = rounds.verdicts(premises[:1], hypotheses[:1], labels[:1], ["a phrase it never saw"], encoder_embed, found,
                            0.5, 0.5)[0][0]
    assert labels[0] != "neutral" and abs(other - p[0]) > 1e-3
    _, none = rounds.verdicts(premises, hypotheses, labels, phrases, encoder_embed, found, 0.0, 1.01)
    assert none == [None] * len(premises)
    _, every = rounds.verdicts(premises, hypotheses, labels, phrases, encoder_embed, found, 1.01, 0.0)
    assert every == [rounds.RELATED_NEUTRAL if lab == "neutral" else rounds.UNLIKELY_LABEL for lab in labels]
    assert rounds.tally(labels, every)[0] == ["contrasting", rounds.UNLIKELY_LABEL, 2]


@dataclass
class _Ctx:
    root: Path
    lexicon: object = None

    def table_path(self, name: str) -> str:
        return str(self.root / name)


def _pairs_table(root: Path, files: int) -> str:
    """A pairs table of real sentences, written as stage 2 writes `pairs/` (label partitions,
    hash-partitioned files sorted by pair_id)."""
    rows = []
    for i, (p, h) in enumerate(sts_pairs(10)):
        rows.append((f"{i:016x}", "ro-sts", "news", "ro", f"d{i // 3}", p, h, LABELS[i % 4],
                     None if i % 4 == 3 else "Prin urmare", "marker" if i % 4 != 3 else "second_random", None, None))
    target = root / "pairs"
    target.mkdir(parents=True)
    writer(rows, PAIRS.names, partition_by="label", sort_by=["pair_id"], files=files, schema=PAIRS)(str(target))
    return str(target)


def _checked(root: Path, table: str, slice_rows: int, threshold: float) -> dict[str, bytes]:
    options = check_options.Options(semantic_check="on", check_threshold=threshold, check_batch=3)
    plan = check_stage.make_plan(_Ctx(root, load_lexicon("ro")), options, table, slice_rows=slice_rows)
    runner = InProcessRunner()
    judged = rounds.JUDGE.run(runner, plan, plan.slices)
    out = root / "checked"
    rounds.FILES.run(runner, check_stage.Output(plan, table, str(out)), plan.files())
    counts = check_stage.count(judged)
    assert sum(v["pairs"] for v in counts.values()) == 10
    return {str(f.relative_to(out)): f.read_bytes() for f in sorted(out.rglob("*.parquet"))}


def test_the_table_is_the_same_whatever_the_slices_and_a_subset_of_the_pairs(tmp_path, encoder_embed):
    threshold = 0.7  # about half of these pairs either side
    table = _pairs_table(tmp_path / "a", files=2)
    one = _checked(tmp_path / "a", table, slice_rows=3, threshold=threshold)
    other = _checked(tmp_path / "b", table, slice_rows=1000, threshold=threshold)
    assert one == other and one  # byte for byte: the slicing is no part of the result
    # another file count of the pairs table: the same rows
    third = _checked(tmp_path / "c", _pairs_table(tmp_path / "c", files=3), slice_rows=4, threshold=threshold)

    def rows(root):
        return sorted(pq.read_table(str(root / "checked")).drop_columns(["label"]).to_pylist(), key=repr)

    assert rows(tmp_path / "a") == rows(tmp_path / "c") and len(third) >= 1
    pairs = {r["pair_id"]: r for r in pq.read_table(table).drop_columns(["label"]).to_pylist()}
    kept = rows(tmp_path / "a")
    assert kept and all(pairs[r["pair_id"]] == r for r in kept) and len(kept) < len(pairs)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stages", default="all")
    parser.add_argument("--start-at", default=stages.NAMES[0])
    for spec in stages.STAGES:
        spec.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_switched_off_by_default_the_check_is_left_out_before_any_input_resolves():
    off, on = _args(), _args("--semantic-check", "on")
    assert stages.NAMES == ("sentences", "pairs", "check", "splits")
    assert [s.name for s in stages.switched_on(off)] == ["sentences", "pairs", "splits"]
    assert stages.selected(off, stages.NAMES) == ["sentences", "pairs", "splits"]
    assert stages.input_table("splits", stages.switched_on(off)) == "pairs"
    assert stages.input_table("splits", stages.switched_on(on)) == "checked"
    assert stages.selected(on, stages.NAMES) == list(stages.NAMES)
    for flag in ("--stages", "--start-at"):
        with pytest.raises(stages.StageOffError, match=f"{flag} check: .*--semantic-check on"):
            stages.selected(_args(flag, "check"), stages.NAMES)
    assert stages.selected(_args("--stages", "check", "--semantic-check", "on"), stages.NAMES[:3]) == list(
        stages.NAMES[:3])
    with pytest.raises(check_options.CheckError, match="--check-threshold 2"):
        check_options.Options(check_threshold=2)


def test_the_job_refuses_a_switched_off_stage_named_by_stages_in_one_line(capsys, tmp_path):
    from jobs.extract import main  # the job's CLI module (imports the run's modules once parsed)

    assert main(["--lang", "ro", "--output", str(tmp_path / "out"), "--stages", "check"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --stages check: stage 'check' is switched off by its flags (it runs only with "
                   "--semantic-check on); name another stage or switch it on"]
    assert not (tmp_path / "out").exists()


def test_the_library_imports_torch_only_where_a_check_task_runs():
    text = (REPO / "extractor" / "check" / "rounds.py").read_text(encoding="utf-8")
    top = text.split("\ndef ", 1)[0]
    assert "import torch" not in top and "encoder.embed" not in top
