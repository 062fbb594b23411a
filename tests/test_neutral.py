"""Neutral-sampling arithmetic: the mix flag, targets, allocations, exact hash cut-offs."""
from __future__ import annotations

import pytest

from extractor.core.hashing import stable_hash
from extractor.pairs.neutral import (BIN_BITS, DEFAULT_MIX, STRATEGIES, NeutralMixError, allocate, bin_cutoff,
                               neutral_target, oversample, parse_neutral_mix)


def test_parse_mix_defaults_and_partial():
    assert parse_neutral_mix(DEFAULT_MIX) == {s: 1.0 for s in STRATEGIES}
    mix = parse_neutral_mix("both_random=2, first_random")
    assert mix["both_random"] == 2.0 and mix["first_random"] == 1.0 and mix["adjacent_unmarked"] == 0.0


@pytest.mark.parametrize("text, words", [
    ("random=1", "unknown strategy 'random'"),
    ("both_random=x", "must be a number"),
    ("both_random=-1", ">= 0"),
    ("both_random=0", "positive weight"),
    ("", "positive weight"),
])
def test_parse_mix_errors(text, words):
    with pytest.raises(NeutralMixError, match=words):
        parse_neutral_mix(text)


def test_target_is_relative_to_largest_marked_class():
    assert neutral_target({"contrasting": 14, "entailment": 14, "reasoning": 21}, 1.0) == 21
    assert neutral_target({"contrasting": 3, "reasoning": 5}, 0.5) == 3  # 2.5 rounds half up
    assert neutral_target({}, 1.0) == 0
    with pytest.raises(NeutralMixError):
        neutral_target({"reasoning": 3}, -1)


def test_allocate_by_weight_with_exact_total():
    weights = {s: 1.0 for s in STRATEGIES}
    alloc = allocate(21, weights, {s: 100 for s in STRATEGIES})
    assert sum(alloc.values()) == 21 and max(alloc.values()) - min(alloc.values()) <= 1
    # deterministic remainder order: earlier strategies get the extra unit
    assert alloc["both_random"] == 5 and alloc["adjacent_unmarked"] == 4


def test_allocate_redistributes_what_a_strategy_lacks():
    weights = {s: 1.0 for s in STRATEGIES}
    available = {"both_random": 100, "first_random": 2, "second_random": 0, "marked_different_paragraphs": 1,
                 "adjacent_unmarked": 100}
    alloc = allocate(40, weights, available)
    assert alloc["first_random"] == 2 and alloc["second_random"] == 0 and alloc["marked_different_paragraphs"] == 1
    assert sum(alloc.values()) == 40 and abs(alloc["both_random"] - alloc["adjacent_unmarked"]) <= 1


def test_allocate_shortfall_and_zero_weight():
    weights = {"both_random": 1.0, "first_random": 0.0}
    assert allocate(10, weights, {"both_random": 4, "first_random": 50}) == {"both_random": 4, "first_random": 0}
    assert allocate(0, weights, {"both_random": 4}) == {"both_random": 0, "first_random": 0}


def test_oversample_bounds():
    assert oversample(0, 0.5, 100) == 0
    assert oversample(10, None, 1000) == 20  # 10 * 1.2 + 8
    assert oversample(10, 0.5, 1000) == 32
    assert oversample(10, 0.01, 1000) == 68  # pass rate clamped at 0.2
    assert oversample(10, 0.5, 15) == 15


def test_bin_cutoff_gives_exactly_the_n_lowest_hashes():
    hashes = sorted(stable_hash("doc", i, seed=3) for i in range(5000))
    shift = 63 - BIN_BITS
    bins: dict = {}
    for h in hashes:
        bins[h >> shift] = bins.get(h >> shift, 0) + 1
    for n in (0, 1, 17, 999, 5000, 6000):
        cut, extra = bin_cutoff(bins, n)
        below = [h for h in hashes if (h >> shift) < cut]
        in_cut = sorted(h for h in hashes if (h >> shift) == cut)[:extra]
        assert sorted(below + in_cut) == hashes[:min(n, len(hashes))]


def test_neutral_flags_fail_when_the_command_line_is_parsed():
    import argparse

    import pytest

    from extractor.pairs import stage as pairs_stage

    parser = argparse.ArgumentParser()
    pairs_stage.add_arguments(parser)
    for bad in (["--neutral-mix", "both_random=x"], ["--neutral-mix", "nosuch=1"], ["--neutral-ratio", "-1"],
                ["--neutral-ratio", "many"]):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
    assert parser.parse_args(["--neutral-mix", "both_random=2"]).neutral_mix == "both_random=2"
