"""The five curricula: stage sizes, order, class coverage, total iterations (RoNLI §4)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from trainer.training import curriculum as cu
from trainer.analysis.cartography import GroupRules, cartography_table
from trainer.cli import UserError

LABELS = ["contrasting", "entailment", "neutral", "reasoning"]


def toy_train(n=200, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(50)]
    rows = []
    for i in range(n):
        lp, lh = int(rng.integers(3, 30)), int(rng.integers(3, 30))
        rows.append({"pair_id": f"t{i:04d}", "premise": " ".join(rng.choice(words, lp)),
                     "hypothesis": " ".join(rng.choice(words, lh)), "label": LABELS[i % 4]})
    return pd.DataFrame(rows)


def toy_cartography(train, hard_classes=("contrasting", "entailment")):
    """Confidence low for two classes (as in RoNLI Table 3, where E2L has none of them)."""
    rng = np.random.default_rng(1)
    hard = train["label"].isin(hard_classes).to_numpy()
    conf = np.where(hard, rng.uniform(0.0, 0.45, len(train)), rng.uniform(0.55, 1.0, len(train)))
    var = rng.uniform(0, 0.3, len(train)) * np.sqrt(conf * (1 - conf)) * 2
    m = pd.DataFrame({"pair_id": train["pair_id"], "gold": train["label"], "epochs": 5, "confidence": conf,
                      "variability": var, "correctness": conf})
    return cartography_table(m, GroupRules())[0]


def check_common(schedule, total_steps, batch_size, n_rows):
    batches = schedule.batches()
    assert len(batches) == total_steps == len(schedule)
    assert all(len(b) == batch_size for b in batches)
    assert all(0 <= i < n_rows for b in batches for i in b)
    assert sum(s.steps for s in schedule.stages[:-1]) == total_steps // 2
    assert schedule.stages[-1].name == "all" and schedule.stages[-1].steps == total_steps - total_steps // 2
    assert len(schedule.stages[-1].rows) == n_rows
    return batches


def test_split_steps_sums_exactly():
    assert cu.split_steps(10, [0.25, 0.25, 0.5]) == [3, 2, 5]  # ties go to the earlier stage
    for total in (1, 7, 50, 101):
        for w in ([1, 1, 1, 1, 1], [0.25, 0.25, 0.5], [3, 1]):
            steps = cu.split_steps(total, w)
            assert sum(steps) == total
            assert max(abs(s - total * x / sum(w)) for s, x in zip(steps, w)) < 1


def test_length_curriculum_grows_from_shortest_pairs():
    train = toy_train()
    sched = cu.build_schedule("length", train, total_steps=101, batch_size=16, seed=3)
    batches = check_common(sched, 101, 16, len(train))
    lengths = cu.pair_lengths(train)
    stages = sched.stages[:-1]
    assert [len(s.rows) for s in stages] == [math.ceil(k * 200 / 5) for k in range(1, 6)]
    assert [s.steps for s in stages] == [10, 10, 10, 10, 10]  # 50 curriculum steps in 5 equal stages
    # stage 1 holds exactly the 40 shortest pairs
    assert lengths[stages[0].rows].max() <= np.sort(lengths)[39]
    assert set(stages[0].rows) < set(stages[1].rows)
    # the first 10 batches draw only from stage 1
    first = {i for b in batches[:10] for i in b}
    assert first <= set(stages[0].rows)
    named = list(sched.iter_ids(train["pair_id"]))
    assert named[0] == ("length 1/5", train["pair_id"].iloc[batches[0]].tolist()) and named[-1][0] == "all"
    assert np.mean(lengths[list(first)]) < np.mean(lengths)


def test_sts_curriculum_starts_with_most_similar():
    train = toy_train(100)
    sims = np.linspace(-1, 1, 100)[::-1].copy()  # row 0 most similar
    stages = cu.sts_curriculum(train, sims, n_stages=4)
    assert list(stages[0].rows) == list(range(25))
    sched = cu.Schedule(stages, len(train), total_steps=40, batch_size=8, seed=0)
    check_common(sched, 40, 8, 100)


def test_sts_needs_a_run():
    with pytest.raises(UserError, match="--sts-from"):
        cu.make_schedule("sts", toy_train(10), total_steps=10, batch_size=2, seed=0)


def test_cart_curriculum_quarter_quarter_half(tmp_path):
    train = toy_train()
    carto = toy_cartography(train)
    (tmp_path / "cartography").mkdir()
    carto.to_parquet(tmp_path / "cartography" / "metrics.parquet")
    sched = cu.build_schedule("cart", train, total_steps=200, batch_size=10, seed=0, cartography_from=tmp_path)
    batches = check_common(sched, 200, 10, len(train))
    assert [(s.name, s.steps) for s in sched.stages] == [("E2L", 25), ("A", 25), ("H2L", 50), ("all", 100)]
    aligned = carto.set_index("pair_id").loc[train["pair_id"]]
    groups = {g: set(np.flatnonzero(aligned[g].to_numpy())) for g in ("e2l", "a", "h2l")}
    assert {i for b in batches[:25] for i in b} <= groups["e2l"]
    assert {i for b in batches[25:50] for i in b} <= groups["a"]
    assert {i for b in batches[50:100] for i in b} <= groups["h2l"]
    # the list of batches is what make_schedule returns
    assert cu.make_schedule("cart", train, total_steps=200, batch_size=10, seed=0, cartography_from=tmp_path) == batches


def test_cart_plus_plus_orders_by_score_and_may_miss_classes(tmp_path):
    train = toy_train()
    carto = toy_cartography(train)
    carto.to_parquet(tmp_path / "metrics.parquet")
    sched = cu.build_schedule("cart++", train, total_steps=100, batch_size=8, seed=0,
                              cartography_from=tmp_path / "metrics.parquet")
    batches = check_common(sched, 100, 8, len(train))
    s = carto.set_index("pair_id").loc[train["pair_id"], "s"].to_numpy()
    stage1 = sched.stages[0].rows
    assert len(stage1) == 40
    assert s[stage1].max() <= np.sort(s)[39]  # the 40 easiest by s
    for a, b in zip(sched.stages[:-2], sched.stages[1:-1]):
        assert set(a.rows) < set(b.rows)
    first_labels = set(train["label"].iloc[[i for b in batches[:10] for i in b]])
    assert first_labels <= {"neutral", "reasoning"}  # the easy stage lacks the hard classes


def test_cart_stra_plus_plus_has_every_class_in_every_stage(tmp_path):
    train = toy_train()
    carto = toy_cartography(train)
    carto.to_parquet(tmp_path / "metrics.parquet")
    sched = cu.build_schedule("cart-stra++", train, total_steps=100, batch_size=8, seed=0,
                              cartography_from=tmp_path)
    batches = check_common(sched, 100, 8, len(train))
    s = carto.set_index("pair_id").loc[train["pair_id"], "s"].to_numpy()
    labels = train["label"].to_numpy()
    for k, stage in enumerate(sched.stages[:-1], start=1):
        counts = pd.Series(labels[stage.rows]).value_counts()
        assert set(counts.index) == set(LABELS)
        assert (counts == math.ceil(k * 50 / 5)).all()  # 50 per class, k/5 of each
        for lab in LABELS:  # within each class the easiest by s come first
            cls = np.flatnonzero(labels == lab)
            taken = np.intersect1d(stage.rows, cls)
            assert s[taken].max() <= np.sort(s[cls])[len(taken) - 1]
    first_labels = set(labels[[i for b in batches[:10] for i in b]])
    assert first_labels == set(LABELS)


def test_schedules_are_deterministic_per_seed():
    train = toy_train()
    a = cu.make_schedule("length", train, total_steps=30, batch_size=8, seed=1)
    b = cu.make_schedule("length", train, total_steps=30, batch_size=8, seed=1)
    c = cu.make_schedule("length", train, total_steps=30, batch_size=8, seed=2)
    assert a == b and a != c
    # row order of the input does not change which ids form the stages
    shuffled = train.sample(frac=1, random_state=0).reset_index(drop=True)
    s1 = cu.build_schedule("length", train, total_steps=30, batch_size=8, seed=1).stages[0]
    s2 = cu.build_schedule("length", shuffled, total_steps=30, batch_size=8, seed=1).stages[0]
    assert set(train["pair_id"].iloc[s1.rows]) == set(shuffled["pair_id"].iloc[s2.rows])


def test_stage_passes_cover_the_pool_before_repeating():
    sched = cu.Schedule([cu.Stage("one", np.arange(10))], 20, total_steps=10, batch_size=5, seed=0)
    batches = sched.batches()
    assert sorted(batches[0] + batches[1]) == list(range(10))  # one shuffled pass = two batches
    assert [name for name, _ in sched.iter_stages()] == ["one"] * 5 + ["all"] * 5


def test_bad_arguments_are_user_errors():
    train = toy_train(20)
    with pytest.raises(UserError, match="unknown curriculum"):
        cu.make_schedule("random", train, total_steps=10, batch_size=2, seed=0)
    with pytest.raises(UserError, match="--cartography-from"):
        cu.make_schedule("cart", train, total_steps=10, batch_size=2, seed=0)
    with pytest.raises(UserError, match="at least 2 iterations"):
        cu.make_schedule("length", train, total_steps=1, batch_size=2, seed=0)
