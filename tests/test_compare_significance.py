"""McNemar, Cochran's Q and Mann-Whitney U against textbook values; `compare` on two run dirs."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from trainer.analysis import significance as cp
from trainer.cli import main


def test_mcnemar_agresti_presidential_approval():
    # Agresti (1990) p. 350, the example of R's mcnemar.test: 794, 150 / 86, 570.
    # R prints: McNemar's chi-squared = 16.818, df = 1, p-value = 4.115e-05
    r = cp.mcnemar([[794, 150], [86, 570]], method="chi2")
    assert r.statistic == pytest.approx(16.818, abs=5e-4)
    assert r.pvalue == pytest.approx(4.115e-05, rel=1e-3)
    # without the continuity correction: Agresti's z^2 = (150 - 86)^2 / 236 = 17.36
    assert cp.mcnemar([[794, 150], [86, 570]], method="chi2", correction=False).statistic == pytest.approx(17.356, abs=1e-3)


def test_mcnemar_navarro_agpp_example():
    # Navarro, Learning Statistics with R, 12.8: table 5, 5 / 25, 65 -> chi-squared 12.033, p 0.0005226
    r = cp.mcnemar([[5, 5], [25, 65]], method="chi2")
    assert r.statistic == pytest.approx(12.033, abs=5e-4)
    assert r.pvalue == pytest.approx(0.0005226, rel=1e-3)


def test_mcnemar_exact_binomial_small_table():
    # b = 1, c = 9: two-sided P = 2 * (C(10,0) + C(10,1)) / 2^10 = 22 / 1024
    r = cp.mcnemar([[40, 1], [9, 50]])  # auto -> exact below 25 discordant pairs
    assert "exact" in r.detail
    assert r.pvalue == pytest.approx(22 / 1024)
    assert cp.mcnemar([[3, 0], [0, 4]]).pvalue == 1.0
    assert cp.mcnemar([[1, 5], [5, 1]]).pvalue == pytest.approx(1.0)


def test_cochrans_q_two_runs_equals_uncorrected_mcnemar():
    a = np.array([1] * 794 + [1] * 150 + [0] * 86 + [0] * 570)
    b = np.array([1] * 794 + [0] * 150 + [1] * 86 + [0] * 570)
    q = cp.cochrans_q(np.column_stack([a, b]))
    assert q.statistic == pytest.approx(64 ** 2 / 236)
    assert q.pvalue == pytest.approx(cp.mcnemar(cp.contingency(a, b), "chi2", correction=False).pvalue)


def test_cochrans_q_three_runs_by_hand():
    x = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0], [1, 0, 0], [1, 1, 0]])
    # column totals C = (5, 3, 1), N = 9, k = 3; rows R = (2, 1, 3, 0, 1, 2), sum R(k - R) = 2+2+0+0+2+2 = 8
    # Q = k(k-1) sum (C_j - N/k)^2 / sum R(k-R) = 6 * (4 + 0 + 4) / 8 = 6
    q = cp.cochrans_q(x)
    assert q.statistic == pytest.approx(6.0)
    assert q.pvalue == pytest.approx(np.exp(-3.0))  # chi2 with 2 df: sf(6) = e^{-3}


def test_mann_whitney_textbook():
    # complete separation of 3 vs 3: U = 0, exact two-sided p = 2 / C(6,3) = 0.1
    r = cp.mann_whitney([0.50, 0.51, 0.52], [0.60, 0.61, 0.62])
    assert r.statistic == 0 and r.pvalue == pytest.approx(0.1)
    assert cp.mann_whitney([0.5], [0.6, 0.7]) is None


def fake_run(path, preds, gold, seeds=None, split="test"):
    path.mkdir(parents=True)
    pd.DataFrame({"pair_id": [f"e{i}" for i in range(len(gold))], "split": split, "gold": gold, "pred": preds}).to_parquet(
        path / "predictions.parquet")
    if seeds:
        (path / "seeds.json").write_text(json.dumps({"selected_seed": 0, "runs": {
            str(i): {split: {"macro_f1": s, "micro_f1": s}} for i, s in enumerate(seeds)}}))
    return path


def test_compare_cli_prints_scores_and_p_values(tmp_path, capsys):
    rng = np.random.default_rng(0)
    labels = np.array(["contrasting", "entailment", "neutral", "reasoning"])
    gold = labels[rng.integers(0, 4, 400)]
    good = np.where(rng.uniform(size=400) < 0.8, gold, labels[rng.integers(0, 4, 400)])
    bad = np.where(rng.uniform(size=400) < 0.5, gold, labels[rng.integers(0, 4, 400)])
    a = fake_run(tmp_path / "base", bad, gold, seeds=[0.40, 0.42, 0.41, 0.39, 0.43])
    b = fake_run(tmp_path / "cart", good, gold, seeds=[0.70, 0.72, 0.71, 0.69, 0.73])
    assert main(["compare", str(a), str(b), "--test", "test"]) == 0
    out = capsys.readouterr().out
    assert "| run | micro-F1 | macro-F1 | F1 contrasting |" in out
    # --json is a switch (as in `stats`): JSON on stdout instead of the table; --output writes what is printed
    assert main(["compare", str(a), str(b), "--test", "test", "--json", "--output", str(tmp_path / "c.json")]) == 0
    res = json.loads((tmp_path / "c.json").read_text())
    assert json.loads(capsys.readouterr().out) == res
    t = res["tests"]["pairwise"][0]
    (both, a_only), (b_only, neither) = t["contingency"]
    assert both + a_only + b_only + neither == 400
    assert a_only == int(((bad == gold) & (good != gold)).sum())
    assert t["mcnemar"]["pvalue"] < 1e-6 and t["cochrans_q"]["pvalue"] < 1e-6
    assert t["mann_whitney"]["pvalue"] == pytest.approx(2 / 252)  # 5 vs 5 separated: 2 / C(10,5)
    micro = res["runs"][1]["micro_f1"]
    assert micro == pytest.approx((good == gold).mean())


def test_compare_errors(tmp_path, capsys):
    gold = ["neutral", "reasoning", "neutral"]
    a = fake_run(tmp_path / "a", gold, gold)
    b = fake_run(tmp_path / "b", gold[:2], gold[:2])
    assert main(["compare", str(a), str(b)]) == 2
    assert "differ" in capsys.readouterr().err
    assert main(["compare", str(a), str(a), "--test", "dev"]) == 2
    assert "no predictions for split 'dev'" in capsys.readouterr().err
    assert main(["compare", str(a), str(tmp_path / "nope")]) == 2
    assert "no such run directory" in capsys.readouterr().err
