"""Cartography measures, groups and RoNLI's s(c, v) on hand-made training dynamics."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from trainer.analysis import cartography as cg
from trainer.cli import UserError, main

LABELS = ["contrasting", "entailment", "neutral", "reasoning"]


def write_dynamics(run_dir, probs: dict[str, list[float]], gold: dict[str, str], preds=None):
    """epoch_N.parquet files from {id: [gold_prob per epoch]}; pred = gold when prob > 0.5."""
    dyn = run_dir / "dynamics"
    dyn.mkdir(parents=True)
    epochs = len(next(iter(probs.values())))
    for e in range(epochs):
        rows = []
        for i, ps in probs.items():
            if preds is not None:
                pred = preds[i][e]
            else:
                pred = gold[i] if ps[e] > 0.5 else next(lab for lab in LABELS if lab != gold[i])
            rows.append({"pair_id": i, "gold": gold[i], "gold_prob": np.float32(ps[e]), "pred": pred,
                         "correct": pred == gold[i]})
        pd.DataFrame(rows).to_parquet(dyn / f"epoch_{e}.parquet", index=False)
    return dyn


def test_measures_match_hand_computation(tmp_path):
    probs = {"a": [0.2, 0.6, 1.0], "b": [0.9, 0.9, 0.9], "c": [0.1, 0.3, 0.2]}
    gold = {"a": "entailment", "b": "neutral", "c": "reasoning"}
    dyn = write_dynamics(tmp_path, probs, gold)
    m = cg.compute_measures(cg.read_dynamics(dyn)).set_index("pair_id")
    # a: mean 0.6; population std sqrt(((0.4)^2 + 0 + 0.4^2) / 3) = 0.32660 (sample std would be 0.4)
    assert m.loc["a", "confidence"] == pytest.approx(0.6, abs=1e-6)
    assert m.loc["a", "variability"] == pytest.approx(math.sqrt(0.32 / 3), abs=1e-6)
    assert m.loc["a", "correctness"] == pytest.approx(2 / 3)
    assert m.loc["b", "variability"] == pytest.approx(0.0, abs=1e-6)
    assert m.loc["b", "correctness"] == 1.0
    assert m.loc["c", "confidence"] == pytest.approx(0.2, abs=1e-6)
    assert m.loc["c", "correctness"] == 0.0
    assert (m["epochs"] == 3).all()
    assert m.loc["c", "gold"] == "reasoning"


def test_burn_out_keeps_first_epochs(tmp_path):
    dyn = write_dynamics(tmp_path, {"a": [0.2, 0.6, 1.0]}, {"a": "neutral"})
    m = cg.compute_measures(cg.read_dynamics(dyn), burn_out=2).set_index("pair_id")
    assert m.loc["a", "confidence"] == pytest.approx(0.4, abs=1e-6)
    assert m.loc["a", "variability"] == pytest.approx(0.2, abs=1e-6)


def test_epoch_files_are_ordered_numerically(tmp_path):
    probs = {"a": [0.1 * k for k in range(1, 12)]}
    dyn = write_dynamics(tmp_path, probs, {"a": "neutral"})
    files = cg.dynamics_files(dyn)
    assert [f.stem for f in files][:3] == ["epoch_0", "epoch_1", "epoch_2"]
    assert files[-1].stem == "epoch_10"
    long = cg.read_dynamics(dyn)
    assert long.sort_values("epoch")["gold_prob"].tolist() == pytest.approx(probs["a"], abs=1e-6)


def test_dynamics_errors_name_the_file(tmp_path):
    dyn = write_dynamics(tmp_path, {"a": [0.5, 0.6], "b": [0.1, 0.2]}, {"a": "neutral", "b": "neutral"})
    pd.read_parquet(dyn / "epoch_1.parquet").iloc[:1].to_parquet(dyn / "epoch_1.parquet")
    with pytest.raises(UserError, match=r"epoch_1\.parquet.*same training ids"):
        cg.read_dynamics(dyn)
    pd.read_parquet(dyn / "epoch_0.parquet").drop(columns=["gold_prob"]).to_parquet(dyn / "epoch_1.parquet")
    with pytest.raises(UserError, match=r"epoch_1\.parquet: missing column\(s\) \['gold_prob'\]"):
        cg.read_dynamics(dyn)
    with pytest.raises(UserError, match="no dynamics"):
        cg.resolve_dynamics_dir(tmp_path / "elsewhere")


def test_score_at_boundary_values():
    s = cg.difficulty_score
    # the three corners of the data map: easy 0, ambiguous 1, hard 2 (codomain [0, 2])
    assert s(1.0, 0.0) == pytest.approx(0.0)
    assert s(0.5, 0.5) == pytest.approx(1.0)
    assert s(0.0, 0.0) == pytest.approx(2.0)
    # c = 0.5 belongs to the high-confidence branch (1 - c + v); just below, the other one
    assert s(0.5, 0.0) == pytest.approx(0.5)
    assert s(0.4999, 0.0) == pytest.approx(1.5001)
    assert s(0.4999, 0.5) == pytest.approx(1.0001)
    # ordering the paper describes: easy < ambiguous < hard
    assert s(0.95, 0.02) < s(0.55, 0.4) < s(0.1, 0.05)


def test_printed_equation_is_kept_literally():
    p = cg.difficulty_score_printed
    assert p(0.49, 0.1) == pytest.approx(1 - 0.49 + 0.1)   # c < 0.5: 1 - c + v
    assert p(0.5, 0.1) == pytest.approx(2 - 0.5 - 0.1)     # otherwise: 2 - c - v
    # the literal formula cannot tell easy from hard, which is why the branches are swapped back
    assert p(1.0, 0.0) == pytest.approx(p(0.0, 0.0))
    assert p(0.0, 0.0) == pytest.approx(1.0)
    c = np.linspace(0, 1, 101)
    v = np.minimum(np.sqrt(c * (1 - c)), 0.5)
    for vv in (np.zeros_like(c), v):
        assert cg.difficulty_score(c, vv).min() >= 0 and cg.difficulty_score(c, vv).max() <= 2


def measures(conf, var, gold=None):
    n = len(conf)
    return pd.DataFrame({
        "pair_id": [f"x{i:02d}" for i in range(n)],
        "gold": gold or [LABELS[i % 4] for i in range(n)],
        "epochs": 5, "confidence": conf, "variability": var, "correctness": conf,
    })


def test_fraction_rule_takes_exactly_the_ranked_share_with_ties_by_id():
    conf = [0.9, 0.9, 0.9, 0.5, 0.5, 0.1, 0.1, 0.2, 0.7]
    var = [0.0, 0.0, 0.1, 0.4, 0.3, 0.0, 0.05, 0.35, 0.2]
    table, thr = cg.assign_groups(measures(conf, var), cg.GroupRules(1 / 3, 1 / 3, 1 / 3))
    assert table["e2l"].sum() == table["a"].sum() == table["h2l"].sum() == 3
    assert table.loc[table["e2l"], "pair_id"].tolist() == ["x00", "x01", "x02"]
    assert table.loc[table["h2l"], "pair_id"].tolist() == ["x05", "x06", "x07"]
    assert table.loc[table["a"], "pair_id"].tolist() == ["x03", "x04", "x07"]
    assert thr["e2l_min_confidence"] == 0.9 and thr["h2l_max_confidence"] == 0.2
    assert thr["a_min_variability"] == 0.3
    # x07 is both hard and ambiguous; x08 (c=0.7, v=0.2) is in no group
    assert table.set_index("pair_id").loc["x07", "n_groups"] == 2
    assert table.set_index("pair_id").loc["x08", "n_groups"] == 0
    # ties: three ids share confidence 0.9; with a share of 2/9 the two smallest ids win
    t2, _ = cg.assign_groups(measures(conf, var), cg.GroupRules(2 / 9, 1 / 3, 1 / 3))
    assert t2.loc[t2["e2l"], "pair_id"].tolist() == ["x00", "x01"]


def test_absolute_thresholds_are_inclusive_at_the_boundary():
    conf = [0.8, 0.79999, 0.3, 0.30001, 0.5]
    var = [0.0, 0.0, 0.0, 0.25, 0.25]
    rules = cg.GroupRules(e2l_min_confidence=0.8, h2l_max_confidence=0.3, a_min_variability=0.25)
    t, thr = cg.assign_groups(measures(conf, var), rules)
    assert t["e2l"].tolist() == [True, False, False, False, False]
    assert t["h2l"].tolist() == [False, False, True, False, False]
    assert t["a"].tolist() == [False, False, False, True, True]
    assert t["n_groups"].tolist() == [1, 0, 1, 1, 1]
    assert thr == {"e2l_min_confidence": 0.8, "h2l_max_confidence": 0.3, "a_min_variability": 0.25}
    with pytest.raises(ValueError, match="e2l_fraction"):
        cg.GroupRules(e2l_fraction=1.5)


def test_group_table_has_table3_layout():
    conf = [0.9, 0.9, 0.9, 0.5, 0.5, 0.1, 0.1, 0.2, 0.7]
    var = [0.0, 0.0, 0.1, 0.4, 0.3, 0.0, 0.05, 0.35, 0.2]
    gold = ["neutral", "neutral", "reasoning", "contrasting", "entailment", "contrasting", "entailment",
            "reasoning", "neutral"]
    t, _ = cg.cartography_table(measures(conf, var, gold), cg.GroupRules(1 / 3, 1 / 3, 1 / 3))
    g = cg.group_table(t, LABELS)
    assert list(g.index) == ["E2L", "A", "H2L", "no group", "two groups", "all"]
    assert list(g.columns) == LABELS + ["total"]
    assert g.loc["E2L"].tolist() == [0, 0, 2, 1, 3]
    assert g.loc["H2L"].tolist() == [1, 1, 0, 1, 3]
    assert g.loc["two groups", "reasoning"] == 1 and g.loc["no group", "neutral"] == 1
    assert g.loc["all", "total"] == 9
    md = cg.markdown_table(g)
    assert md.splitlines()[0] == "| group | contrasting | entailment | neutral | reasoning | total |"


def test_cli_writes_metrics_table_and_data_map(tmp_path, capsys):
    rng = np.random.default_rng(0)
    probs, gold = {}, {}
    for i in range(120):
        base = rng.uniform(0, 1)
        probs[f"p{i:03d}"] = list(np.clip(base + rng.normal(0, 0.15, size=4), 0, 1))
        gold[f"p{i:03d}"] = LABELS[i % 4]
    run = tmp_path / "run"
    write_dynamics(run, probs, gold)
    assert main(["cartography", str(run), "--fraction", "0.25"]) == 0
    out = capsys.readouterr().out
    assert "in no group" in out and "| E2L |" in out
    carto = run / "cartography"
    m = pd.read_parquet(carto / "metrics.parquet")
    assert len(m) == 120 and set(m["pair_id"]) == set(probs)
    assert {"confidence", "variability", "correctness", "e2l", "a", "h2l", "n_groups", "s", "s_printed"} <= set(m.columns)
    assert m["e2l"].sum() == m["h2l"].sum() == m["a"].sum() == 30
    summary = json.loads((carto / "summary.json").read_text())
    assert summary["in_no_group"] == int((m["n_groups"] == 0).sum())
    assert summary["in_two_groups"] == int((m["n_groups"] == 2).sum())
    assert summary["dynamics_cost"] is None  # no config.json in this hand-made run
    png = (carto / "data_map.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    assert (carto / "groups.md").read_text().startswith("| group |")
    # a bad rule is a one-line error
    assert main(["cartography", str(run), "--fraction", "2"]) == 2
    assert "e2l_fraction must lie in [0, 1]" in capsys.readouterr().err


def test_select_subset_unions_groups_and_checks_ids(tmp_path):
    conf = [0.9, 0.9, 0.9, 0.5, 0.5, 0.1, 0.1, 0.2, 0.7]
    var = [0.0, 0.0, 0.1, 0.4, 0.3, 0.0, 0.05, 0.35, 0.2]
    t, _ = cg.cartography_table(measures(conf, var), cg.GroupRules(1 / 3, 1 / 3, 1 / 3))
    (tmp_path / "cartography").mkdir()
    t.to_parquet(tmp_path / "cartography" / "metrics.parquet")
    train = pd.DataFrame({"pair_id": [f"x{i:02d}" for i in range(9)][::-1], "premise": "p", "hypothesis": "h",
                          "label": "neutral"})
    e2l_a = cg.select_subset(train, tmp_path, "e2l+a")
    assert sorted(e2l_a["pair_id"]) == ["x00", "x01", "x02", "x03", "x04", "x07"]
    assert sorted(cg.select_subset(train, tmp_path / "cartography", "h2l")["pair_id"]) == ["x05", "x06", "x07"]
    assert sorted(cg.select_subset(train, tmp_path / "cartography" / "metrics.parquet", "a")["pair_id"]) == ["x03", "x04", "x07"]
    with pytest.raises(UserError, match="unknown subset"):
        cg.select_subset(train, tmp_path, "easy")
    other = train.assign(pair_id=[f"y{i}" for i in range(9)])
    with pytest.raises(UserError, match="none of the 9 training ids"):
        cg.select_subset(other, tmp_path, "a")
    partial = pd.concat([train, train.iloc[:1].assign(pair_id="zz")])
    with pytest.raises(UserError, match="1 of 10 training ids have no cartography"):
        cg.select_subset(partial, tmp_path, "a")


def test_multi_seed_run_uses_the_selected_seed(tmp_path):
    run = tmp_path / "run"
    write_dynamics(run / "seed_3", {"a": [0.5, 0.6]}, {"a": "neutral"})
    write_dynamics(run / "seed_4", {"b": [0.5, 0.6]}, {"b": "neutral"})
    (run / "seeds.json").write_text(json.dumps({"selected_seed": 4, "runs": {}}))
    assert cg.resolve_dynamics_dir(run) == run / "seed_4" / "dynamics"
    write_dynamics(run, {"c": [0.1, 0.2]}, {"c": "neutral"})  # the top-level copy wins when present
    assert cg.resolve_dynamics_dir(run) == run / "dynamics"


def test_dynamics_and_cartography_of_an_older_run_with_an_id_column_are_read(tmp_path):
    """Runs written before `pair_id` was kept end to end have an `id` column: still readable."""
    probs = {"a": [0.2, 0.6, 1.0], "b": [0.9, 0.9, 0.9], "c": [0.1, 0.3, 0.2]}
    gold = {"a": "entailment", "b": "neutral", "c": "reasoning"}
    dyn = write_dynamics(tmp_path, probs, gold)
    for f in dyn.glob("epoch_*.parquet"):
        pd.read_parquet(f).rename(columns={"pair_id": "id"}).to_parquet(f, index=False)
    new = write_dynamics(tmp_path / "new", probs, gold)
    assert cg.read_dynamics(dyn).equals(cg.read_dynamics(new))
    table = cg.cartography_table(cg.compute_measures(cg.read_dynamics(dyn)))[0]
    table.rename(columns={"pair_id": "id"}).to_parquet(tmp_path / "metrics.parquet", index=False)
    assert cg.load_cartography(tmp_path / "metrics.parquet")["pair_id"].tolist() == ["a", "b", "c"]
