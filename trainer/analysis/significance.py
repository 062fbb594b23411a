"""Significance tests between runs (`python -m trainer compare`, trainer/commands/compare.py).

- McNemar's test on the paired correctness of the runs' predictions (exact binomial test
  on the discordant pairs when they are few, chi-square with Edwards' continuity
  correction otherwise, as R's ``mcnemar.test``),
- Cochran's Q test on the same correctness table (RoNLI §5; for two runs it equals the
  uncorrected McNemar chi-square),
- a Mann-Whitney U test (scipy.stats) on the runs' per-seed scores (``--seeds N`` runs),
- a table of micro-F1, macro-F1 and per-class F1 of every run, with the p-values against
  the first run.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from extractor.core.errors import UserError
from trainer.data.loading import read_parquet_frame

EXACT_BELOW = 25  # discordant pairs under which the exact binomial McNemar test is used



# --------------------------------------------------------------------------- tests


@dataclass
class TestResult:
    name: str
    statistic: float
    pvalue: float
    detail: str = ""


def contingency(correct_a, correct_b) -> np.ndarray:
    """2x2 table [[both right, A right B wrong], [A wrong B right, both wrong]]."""
    a = np.asarray(correct_a, dtype=bool)
    b = np.asarray(correct_b, dtype=bool)
    if a.shape != b.shape:
        raise ValueError("the two correctness vectors differ in length")
    return np.array([[np.sum(a & b), np.sum(a & ~b)], [np.sum(~a & b), np.sum(~a & ~b)]], dtype=np.int64)


def mcnemar(table, method: str = "auto", correction: bool = True) -> TestResult:
    """McNemar's test on a 2x2 table (only the discordant cells b = table[0,1], c = table[1,0] count).

    method: ``exact`` (two-sided binomial test, b ~ Bin(b + c, 1/2)), ``chi2`` ((|b - c| - 1)^2 /
    (b + c) with ``correction``, else (b - c)^2 / (b + c), 1 df), or ``auto`` (exact when
    b + c < 25, chi2 otherwise).
    """
    t = np.asarray(table, dtype=np.int64)
    b, c = int(t[0, 1]), int(t[1, 0])
    n = b + c
    if method == "auto":
        method = "exact" if n < EXACT_BELOW else "chi2"
    if n == 0:
        return TestResult("McNemar", 0.0, 1.0, "no discordant pairs")
    if method == "exact":
        p = stats.binomtest(b, n, 0.5, alternative="two-sided").pvalue
        return TestResult("McNemar", float(min(b, c)), float(min(1.0, p)), f"exact binomial, b={b}, c={c}")
    if method != "chi2":
        raise ValueError(f"unknown McNemar method {method!r}")
    diff = abs(b - c) - (1 if correction else 0)
    statistic = max(diff, 0) ** 2 / n
    what = "chi2 with continuity correction" if correction else "chi2"
    return TestResult("McNemar", float(statistic), float(stats.chi2.sf(statistic, 1)), f"{what}, b={b}, c={c}")


def cochrans_q(correct) -> TestResult:
    """Cochran's Q on an (n examples x k runs) 0/1 table: Q = k(k-1) sum_j (C_j - N/k)^2 / sum_i R_i (k - R_i)."""
    x = np.asarray(correct, dtype=np.int64)
    if x.ndim != 2 or x.shape[1] < 2:
        raise ValueError("Cochran's Q needs an (examples x runs) table with at least two runs")
    k = x.shape[1]
    col = x.sum(axis=0)
    row = x.sum(axis=1)
    total = row.sum()
    denominator = float(np.sum(row * (k - row)))
    if denominator == 0:  # every example right (or wrong) for all runs: no evidence of a difference
        return TestResult("Cochran's Q", 0.0, 1.0, f"k={k}, all runs agree on every example")
    q = k * (k - 1) * float(np.sum((col - total / k) ** 2)) / denominator
    return TestResult("Cochran's Q", q, float(stats.chi2.sf(q, k - 1)), f"k={k}, df={k - 1}")


def mann_whitney(scores_a, scores_b) -> TestResult | None:
    """Two-sided Mann-Whitney U on two runs' per-seed scores; None when a run has fewer than 2."""
    a = [float(s) for s in scores_a]
    b = [float(s) for s in scores_b]
    if len(a) < 2 or len(b) < 2:
        return None
    res = stats.mannwhitneyu(a, b, alternative="two-sided")
    return TestResult("Mann-Whitney U", float(res.statistic), float(res.pvalue), f"n={len(a)} vs {len(b)} seeds")


# --------------------------------------------------------------------------- runs


def load_predictions(run_dir: Path, split: str | None) -> tuple[pd.DataFrame, str]:
    path = Path(run_dir) / "predictions.parquet"
    if not path.exists():
        raise UserError(f"{path}: not found (is {run_dir} a finished run?)")
    df = read_parquet_frame(path)
    if "pair_id" not in df.columns and "id" in df.columns:  # an older run (column `id`)
        df = df.rename(columns={"id": "pair_id"})
    missing = [c for c in ("pair_id", "split", "gold", "pred") if c not in df.columns]
    if missing:
        raise UserError(f"{path}: missing column(s) {missing}; has {list(df.columns)}")
    splits = list(dict.fromkeys(df["split"].astype(str)))
    if split is None:
        split = "test" if "test" in splits else next((s for s in splits if s != "validation"), splits[0])
    if split not in splits:
        raise UserError(f"{path}: no predictions for split {split!r}; it has {', '.join(splits)}")
    part = df[df["split"].astype(str) == split]
    part = part[part["gold"].notna()]
    if part.empty:
        raise UserError(f"{path}: split {split!r} has no gold labels to compare")
    if part["pair_id"].duplicated().any():
        raise UserError(f"{path}: duplicated ids in split {split!r}")
    return part[["pair_id", "gold", "pred"]].astype(str).set_index("pair_id"), split


def per_seed_scores(run_dir: Path, split: str, metric: str) -> list[float]:
    """Per-seed scores from seeds.json (``--seeds N`` runs); [] for a one-seed run."""
    path = Path(run_dir) / "seeds.json"
    if not path.exists():
        return []
    runs = json.loads(path.read_text()).get("runs", {})
    out = []
    for seed in sorted(runs, key=lambda s: int(s) if str(s).isdigit() else str(s)):
        value = runs[seed].get(split, {}).get(metric)
        if value is not None:
            out.append(float(value))
    return out


def scores(gold: pd.Series, pred: pd.Series, labels: list[str]) -> dict:
    from sklearn.metrics import f1_score

    per_class = f1_score(gold, pred, labels=labels, average=None, zero_division=0)
    return {
        "micro_f1": float(f1_score(gold, pred, labels=labels, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(gold, pred, labels=labels, average="macro", zero_division=0)),
        "per_class_f1": {lab: float(f) for lab, f in zip(labels, per_class)},
    }


def compare_runs(run_dirs: list[Path], split: str | None = None, metric: str = "macro_f1",
                 mcnemar_method: str = "auto") -> dict:
    """Scores of each run and the tests of every run against the first one, as a dict."""
    preds = []
    for rd in run_dirs:
        p, split_used = load_predictions(rd, split)
        split = split_used
        preds.append(p)
    assert split is not None  # the split load_predictions chose for the first run
    base = preds[0]
    for rd, p in zip(run_dirs[1:], preds[1:]):
        if set(p.index) != set(base.index):
            raise UserError(
                f"{rd}: its {split!r} predictions cover {len(p)} ids, {run_dirs[0]}'s cover {len(base)}; "
                f"{len(set(p.index) ^ set(base.index))} differ (compare runs evaluated on the same file)"
            )
        p = p.loc[base.index]
        if not (p["gold"] == base["gold"]).all():
            raise UserError(f"{rd}: gold labels differ from {run_dirs[0]} on split {split!r}")
    preds = [base] + [p.loc[base.index] for p in preds[1:]]
    labels = sorted(set(base["gold"]) | set().union(*(set(p["pred"]) for p in preds)))
    correct = np.column_stack([(p["pred"] == p["gold"]).to_numpy() for p in preds])
    result: dict[str, Any] = {"split": split, "n": int(len(base)), "labels": labels, "runs": [], "tests": {}}
    for rd, p in zip(run_dirs, preds):
        entry = {"run": str(rd), **scores(p["gold"], p["pred"], labels)}
        entry["seed_scores"] = per_seed_scores(rd, split, metric)
        result["runs"].append(entry)
    result["tests"]["cochrans_q_all"] = vars(cochrans_q(correct)) if len(run_dirs) > 2 else None
    pairwise = []
    for j in range(1, len(run_dirs)):
        table = contingency(correct[:, 0], correct[:, j])
        mw = mann_whitney(result["runs"][0]["seed_scores"], result["runs"][j]["seed_scores"])
        pairwise.append({
            "a": str(run_dirs[0]), "b": str(run_dirs[j]),
            "contingency": table.tolist(),
            "mcnemar": vars(mcnemar(table, mcnemar_method)),
            "cochrans_q": vars(cochrans_q(correct[:, [0, j]])),
            "mann_whitney": vars(mw) if mw else None,
        })
    result["tests"]["pairwise"] = pairwise
    result["metric"] = metric
    return result


def _fmt_p(p: float | None) -> str:
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "n/a"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.4f}"


def format_report(result: dict) -> str:
    labels = result["labels"]
    names = [Path(r["run"]).name or r["run"] for r in result["runs"]]
    header = ["run", "micro-F1", "macro-F1", *[f"F1 {lab}" for lab in labels],
              "McNemar p", "Cochran's Q p", f"Mann-Whitney p ({result['metric']})"]
    lines = [f"split {result['split']!r}, {result['n']} examples; p-values against {names[0]}", "",
             "| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for i, (name, r) in enumerate(zip(names, result["runs"])):
        cells = [name, f"{r['micro_f1']:.4f}", f"{r['macro_f1']:.4f}",
                 *[f"{r['per_class_f1'][lab]:.4f}" for lab in labels]]
        if i == 0:
            cells += ["", "", ""]
        else:
            t = result["tests"]["pairwise"][i - 1]
            mw = t["mann_whitney"]
            cells += [_fmt_p(t["mcnemar"]["pvalue"]), _fmt_p(t["cochrans_q"]["pvalue"]),
                      _fmt_p(mw["pvalue"]) if mw else "n/a (needs >= 2 seeds per run)"]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for t in result["tests"]["pairwise"]:
        m, q = t["mcnemar"], t["cochrans_q"]
        (both, a_only), (b_only, neither) = t["contingency"]
        lines.append(f"{Path(t['a']).name} vs {Path(t['b']).name}: both right {both}, only first {a_only}, "
                     f"only second {b_only}, both wrong {neither}; McNemar ({m['detail']}) stat {m['statistic']:.4f} "
                     f"p {_fmt_p(m['pvalue'])}; Cochran's Q {q['statistic']:.4f} p {_fmt_p(q['pvalue'])}"
                     + (f"; Mann-Whitney U {t['mann_whitney']['statistic']:.1f} p {_fmt_p(t['mann_whitney']['pvalue'])}"
                        f" ({t['mann_whitney']['detail']})" if t["mann_whitney"] else ""))
    if result["tests"].get("cochrans_q_all"):
        q = result["tests"]["cochrans_q_all"]
        lines.append(f"Cochran's Q over all {len(names)} runs: Q {q['statistic']:.4f} ({q['detail']}) "
                     f"p {_fmt_p(q['pvalue'])}")
    return "\n".join(lines)


# --------------------------------------------------------------------------- CLI
