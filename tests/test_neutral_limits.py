"""The neutral round's POS check up to an exact limit (`corpus.check_limits`): the stage
tags only as many neutral candidates as the allocation with its margin, not every
candidate of the cut bins, and draws the same pairs. On Romanian novels with the real
Romanian pipeline (ro_legal_fl), through the stage's own rounds in one process
(`InProcessRunner`) and through `reference_pairs` (tests/pairs_reference.py)."""
from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from extractor.lexicon.lexicon import load_lexicon
from extractor.pairs import buckets as pb
from extractor.pairs import corpus
from extractor.pairs import rounds as pair_rounds
from extractor.pairs import stage as ps
from extractor.pairs.options import Options
from extractor.engine.runner import InProcessRunner
from tests.one_process import build_pairs
from tests.pairs_reference import reference_pairs
from tests.test_pairing_batch import novel_docs
from tests.test_pairs_stage import write_sentences

NEUTRAL_COUNTS = ("neutral_sentences_checked", "neutral_sentences_rejected")


@pytest.fixture(scope="module")
def novels_table(tmp_path_factory):
    pytest.importorskip("ro_legal_fl")
    rows = [(d.corpus, d.genre, d.lang, d.doc_id, d.doc_id, d.section[i], d.para_idx[i], d.sent_idx[i], d.text[i],
             d.short[i]) for d in novel_docs(900) for i in range(len(d))]
    return write_sentences(tmp_path_factory.mktemp("novels"), 3, rows=rows)


class Watching(InProcessRunner):
    """The in-process runner, keeping the plan each neutral round ran with."""

    def __init__(self, checks: list):
        self.checks = checks

    def map(self, fn, tasks, spread=False, costs=None, name=None, reuse_memory=False):
        if name in ("neutral", "neutral-whole-cuts"):
            self.checks.append(fn.plan)
        return super().map(fn, tasks, spread=spread, costs=costs, name=name, reuse_memory=reuse_memory)


def _stage(table, out, checks: list):
    """The stage's rounds in one process: (pair rows, stats), and in `checks` the plan of
    each neutral round."""
    options = Options(min_chars=50, seed=0, pos_filter="on", neutral_ratio=0.5, near_duplicates="off")
    write, stats, cleanup = build_pairs(Watching(checks), table, load_lexicon("ro"), options,
                                           work=str(out / "scratch"), files=2)
    try:
        files = write(str(out / "pairs"))
    finally:
        cleanup()
    rows = pa.concat_tables([pq.read_table(f["path"]) for f in files]).to_pylist()
    return sorted(rows, key=lambda r: (r["label"], r["pair_id"])), stats


def _without(stats: dict) -> dict:
    """stats["pairs"] without the counts of what the neutral round checked."""
    out = {k: v for k, v in stats.items() if k not in ("neutral", "pos_filter")}
    out["neutral"] = {k: v for k, v in stats["neutral"].items()
                      if k not in ("pos_rejected_candidates", "identical_candidates_dropped")}
    out["pos_filter"] = {k: v for k, v in stats["pos_filter"].items() if k not in NEUTRAL_COUNTS}
    return out


def test_the_limits_tag_fewer_candidates_and_draw_the_same_pairs(novels_table, tmp_path, monkeypatch):
    rounds: list = []
    limited, stats = _stage(novels_table, tmp_path / "limited", rounds)
    assert len(rounds) == 1 and any(v is not None for v in rounds[0].pos_limits().values()), rounds

    monkeypatch.setattr(ps, "check_limits", lambda lowest, wanted: {key: None for key in wanted})
    whole, whole_stats = _stage(novels_table, tmp_path / "whole", rounds)
    checked = stats["pos_filter"]["neutral_sentences_checked"]
    assert checked < whole_stats["pos_filter"]["neutral_sentences_checked"], (checked, whole_stats["pos_filter"])
    assert stats["labels"]["neutral"] > 50 and limited == whole
    assert _without(stats) == _without(whole_stats)

    reference, reference_stats = reference_pairs(novels_table, load_lexicon("ro"), Options(
        min_chars=50, seed=0, pos_filter="on", neutral_ratio=0.5, near_duplicates="off"), "ro_legal_fl",
        {"status": "on"}, without_torch=True)
    assert sorted(reference.to_pylist(), key=lambda r: (r["label"], r["pair_id"])) == limited
    assert reference_stats["pos_filter"]["neutral_sentences_checked"] == checked


def test_a_strategy_short_under_its_limit_checks_the_whole_cuts_in_one_round_more(novels_table, tmp_path,
                                                                                 monkeypatch):
    """Limits far too low (one candidate per strategy): after the POS filter a strategy keeps
    no more than its allocation, so the stage checks every candidate under the cuts in a
    second round: the same rows and the same stats as the whole cuts from the start."""
    rounds: list = []
    monkeypatch.setattr(ps, "check_limits", lambda lowest, wanted: {key: None for key in wanted})
    whole, whole_stats = _stage(novels_table, tmp_path / "whole", rounds)
    assert [p.pos_limits() for p in rounds] == [{key: None for key in rounds[0].limits}]

    rounds.clear()
    real_limits = corpus.check_limits
    monkeypatch.setattr(ps, "check_limits", lambda lowest, wanted: real_limits(lowest, {k: 1 for k in wanted}))
    low, low_stats = _stage(novels_table, tmp_path / "low", rounds)
    assert len(rounds) == 2 and rounds[1].pos_limits() is None and rounds[1].whole_cuts
    assert any(v is not None for v in rounds[0].pos_limits().values())
    assert low == whole and low_stats == whole_stats


def test_the_neutral_round_run_directly_checks_more_over_the_whole_cuts(novels_table, tmp_path):
    """One round of the stage run directly with the in-process runner: the neutral round
    over the plan the driver decided (POS check up to the limits), and over the same plan
    with `whole_cuts`: the whole cuts POS-check more candidates."""
    options = Options(min_chars=50, seed=0, pos_filter="on", neutral_ratio=0.5, near_duplicates="off")
    runner = InProcessRunner()
    model, status = ps.pos_status(options, load_lexicon("ro"))
    plan = ps.make_plan(runner, novels_table, load_lexicon("ro"), options, model, str(tmp_path / "scratch"), files=2)
    check = ps.decide(runner, plan, options, status, [])[0].check
    assert check is not None and not check.whole_cuts and any(v is not None for v in check.pos_limits().values())
    buckets = range(plan.buckets)
    limited = [r["tallies"] for r in pair_rounds.NEUTRAL.run(runner, check, buckets)]
    whole = [r["tallies"] for r in pair_rounds.NEUTRAL.run(runner, replace(check, whole_cuts=True), buckets)]
    pos_limited = corpus.tally_neutral([tuple(t) for ts in limited for t in ts])
    pos_whole = corpus.tally_neutral([tuple(t) for ts in whole for t in ts])
    assert sum(pos_limited[0].values()) < sum(pos_whole[0].values())  # POS-checked candidates
    plan.scratch.delete()


def test_lowest_selects_and_limits_per_corpus_and_strategy():
    cands = pa.table({"corpus": ["a", "a", "a", None, "b", "a"], "source": ["x", "x", "y", "x", "x", "x"],
                      "select": [50, 10, 7, 3, 1, 30]})
    assert pb.lowest_selects(cands, {("a", "x"): 1, ("b", "x"): 2, (None, "x"): 1}) == [
        ["a", "x", [10, 30]], ["b", "x", [1]], [None, "x", [3]]]
    # two buckets' lowest hashes of (a, x): the 2nd lowest of all is the limit; fewer than
    # wanted + 1 in all: no limit
    limits = corpus.check_limits({("a", "x"): [30, 10, 40], ("b", "x"): [1]}, {("a", "x"): 2, ("b", "x"): 1})
    assert limits == {("a", "x"): 30, ("b", "x"): None}
    kept = pb.under_limits(cands, {("a", "x"): 30, ("b", "x"): None})
    assert kept.column("select").to_pylist() == [10, 7, 3, 1, 30]
    assert corpus.limits_hold({("a", "x"): 30}, {"a": {"x": 3}}, {"a": {"x": 2}})
    assert not corpus.limits_hold({("a", "x"): 30}, {"a": {"x": 2}}, {"a": {"x": 2}})
    assert corpus.limits_hold({("a", "x"): None}, {"a": {"x": 0}}, {"a": {"x": 2}})
