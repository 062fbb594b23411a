"""Data cartography (Swayamdipta et al., 2020) of a run's training dynamics, as used by RoNLI.

`python -m trainer cartography RUN_DIR` (trainer/commands/cartography.py) reads
``RUN_DIR/dynamics/epoch_N.parquet`` (one file per epoch: id, gold, gold_prob, pred, correct)
and writes ``RUN_DIR/cartography/``:

- ``metrics.parquet``: id, gold, epochs, confidence, variability, correctness, e2l, a, h2l,
  n_groups, s, s_printed
- ``groups.md`` / ``groups.csv``: the per-class group table (layout of RoNLI Table 3), with the
  rows that fall into no group and into two groups
- ``summary.json``: rules, thresholds, counts
- ``data_map.png``: confidence against variability coloured by correctness, with histograms
  of the three measures (RoNLI Figure 1)

Definitions (Swayamdipta et al. 2020, §2; allenai/cartography ``compute_train_dy_metrics``):
confidence is the mean gold-label probability over epochs, variability its *population*
standard deviation (``np.std``, ddof=0, the paper's sqrt(sum (p - mu)^2 / E)), correctness
the share of epochs in which the prediction was the gold label (the reference code stores
the count; we store the share in [0, 1]).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from extractor.core.errors import UserError
from trainer.data.loading import read_parquet_frame

GROUPS = ("e2l", "a", "h2l")
GROUP_NAMES = {"e2l": "E2L", "a": "A", "h2l": "H2L"}
SUBSETS = {"e2l": ("e2l",), "a": ("a",), "h2l": ("h2l",), "e2l+a": ("e2l", "a")}
DYNAMICS_COLUMNS = ("pair_id", "gold", "gold_prob", "pred", "correct")



# --------------------------------------------------------------------------- dynamics


def dynamics_files(dynamics_dir: Path) -> list[Path]:
    """The epoch files of a dynamics folder, in epoch order (epoch_2 before epoch_10)."""
    files = list(Path(dynamics_dir).glob("epoch_*.parquet"))

    def epoch_of(p: Path) -> int:
        try:
            return int(p.stem.split("_", 1)[1])
        except ValueError:
            raise UserError(f"{p}: dynamics file name is not epoch_<N>.parquet") from None

    return sorted(files, key=epoch_of)


def resolve_dynamics_dir(run_dir: Path) -> Path:
    """RUN_DIR/dynamics, or for a multi-seed run the selected seed's (else the first seed's)."""
    run_dir = Path(run_dir)
    if (run_dir / "dynamics").is_dir():
        return run_dir / "dynamics"
    if run_dir.name == "dynamics" and run_dir.is_dir():
        return run_dir
    selected = None
    for name in ("seeds.json", "config.json"):  # --seeds runs record the selected seed in both
        path = run_dir / name
        if selected is None and path.exists():
            try:
                selected = json.loads(path.read_text()).get("selected_seed")
            except (ValueError, AttributeError):
                selected = None
    candidates = []
    if selected is not None:
        candidates.append(run_dir / f"seed_{selected}" / "dynamics")
    candidates += sorted(run_dir.glob("seed_*/dynamics"))
    for c in candidates:
        if c.is_dir():
            return c
    raise UserError(
        f"{run_dir}: no dynamics/ folder (train an epoch-trained model, e.g. --model cbow-softmax "
        "or transformer, to record training dynamics)"
    )


def read_dynamics(dynamics_dir: Path) -> pd.DataFrame:
    """All epochs in one long table: epoch, id, gold, gold_prob, pred, correct."""
    files = dynamics_files(dynamics_dir)
    if not files:
        raise UserError(f"{dynamics_dir}: no epoch_N.parquet files")
    frames = []
    ids0 = None
    for i, path in enumerate(files):
        df = read_parquet_frame(path)
        if "pair_id" not in df.columns and "id" in df.columns:  # an older run (column `id`)
            df = df.rename(columns={"id": "pair_id"})
        missing = [c for c in DYNAMICS_COLUMNS if c not in df.columns]
        if missing:
            raise UserError(f"{path}: missing column(s) {missing}; has {list(df.columns)}")
        if df.empty:
            raise UserError(f"{path}: empty dynamics file")
        if df["pair_id"].duplicated().any():
            raise UserError(f"{path}: duplicated ids, e.g. {df['pair_id'][df['pair_id'].duplicated()].iloc[0]!r}")
        ids = set(df["pair_id"])
        if ids0 is None:
            ids0 = ids
        elif ids != ids0:
            raise UserError(
                f"{path}: holds {len(ids)} ids, {files[0].name} holds {len(ids0)}; "
                f"{len(ids0 ^ ids)} differ (every epoch must cover the same training ids)"
            )
        df = df[list(DYNAMICS_COLUMNS)].copy()
        df.insert(0, "epoch", i)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- measures


def compute_measures(dynamics: pd.DataFrame, burn_out: int | None = None) -> pd.DataFrame:
    """confidence, variability (population std), correctness per id, from the long dynamics table.

    ``burn_out`` keeps only the first N epochs, as the reference implementation allows.
    """
    dyn = dynamics
    if burn_out is not None:
        dyn = dyn[dyn["epoch"] < burn_out]
    dyn = dyn.assign(correct=dyn["correct"].astype(float), gold_prob=dyn["gold_prob"].astype(float))
    g = dyn.groupby("pair_id", sort=True)
    out = pd.DataFrame(
        {
            "gold": g["gold"].first(),
            "epochs": g["epoch"].count().astype("int64"),
            "confidence": g["gold_prob"].mean(),
            # ddof=0: population std, as Swayamdipta et al. (np.std); pandas defaults to ddof=1
            "variability": g["gold_prob"].std(ddof=0),
            "correctness": g["correct"].mean(),
        }
    ).reset_index()
    return out


def difficulty_score(confidence, variability):
    """RoNLI's difficulty s(c, v) in [0, 2], as the paper describes it: low for easy, high for hard.

    The printed equation (1) reads ``1 - c + v if c < 0.5 else 2 - c - v``. Taken literally it
    maps easy (c=1, v=0), ambiguous (c=0.5, v=0.5) and hard (c=0, v=0) examples all to 1 and
    its range is [0.5, 1.5], contradicting both the text ("low scores to ... low variability
    and high [confidence], medium scores for ... ambiguous, and high scores to difficult
    examples") and the stated codomain [0, 2]. The two branches are swapped; swapped back,
    ``s = 1 - c + v if c >= 0.5 else 2 - c - v`` gives easy 0, ambiguous 1, hard 2 over
    exactly [0, 2]. That is the score used for ordering; ``difficulty_score_printed`` keeps
    the literal formula for comparison.
    """
    c = np.asarray(confidence, dtype=float)
    v = np.asarray(variability, dtype=float)
    return np.where(c >= 0.5, 1.0 - c + v, 2.0 - c - v)


def difficulty_score_printed(confidence, variability):
    """Equation (1) of RoNLI exactly as printed: ``1 - c + v if c < 0.5 else 2 - c - v``."""
    c = np.asarray(confidence, dtype=float)
    v = np.asarray(variability, dtype=float)
    return np.where(c < 0.5, 1.0 - c + v, 2.0 - c - v)


# --------------------------------------------------------------------------- groups


@dataclass(frozen=True)
class GroupRules:
    """Swayamdipta et al.'s regions, each defined on ONE measure.

    By default each group is a fraction of the training set ranked on its measure (their
    selection experiments use 33%; RoNLI's Table 3 groups are each a third of the training
    set): E2L = the most confident, H2L = the least confident, A = the most variable. An
    absolute threshold, when given, replaces the fraction for that group:
    E2L: confidence >= e2l_min_confidence; H2L: confidence <= h2l_max_confidence;
    A: variability >= a_min_variability.
    Because A is ranked on another measure than E2L/H2L, the groups are not a partition:
    some examples fall into two groups and some into none (the problem RoNLI notes).
    """

    e2l_fraction: float = 0.33
    a_fraction: float = 0.33
    h2l_fraction: float = 0.33
    e2l_min_confidence: float | None = None
    h2l_max_confidence: float | None = None
    a_min_variability: float | None = None

    def __post_init__(self):
        for name in ("e2l_fraction", "a_fraction", "h2l_fraction"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {value}")


def _top_k(values: np.ndarray, ids: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """Mask of the k rows with the largest (smallest) values; ties broken by id, so exactly k."""
    key = -values if largest else values
    order = np.lexsort((ids, key))  # last key is primary
    mask = np.zeros(len(values), dtype=bool)
    mask[order[:k]] = True
    return mask


def assign_groups(measures: pd.DataFrame, rules: GroupRules = GroupRules()) -> tuple[pd.DataFrame, dict]:
    """Adds boolean e2l, a, h2l and n_groups; returns the table and the thresholds used."""
    n = len(measures)
    conf = measures["confidence"].to_numpy(float)
    var = measures["variability"].to_numpy(float)
    ids = measures["pair_id"].astype(str).to_numpy()
    out = measures.copy()
    thresholds: dict[str, float | None] = {}

    def k_of(fraction: float) -> int:
        return int(math.floor(fraction * n + 0.5))

    if rules.e2l_min_confidence is not None:
        out["e2l"] = conf >= rules.e2l_min_confidence
        thresholds["e2l_min_confidence"] = rules.e2l_min_confidence
    else:
        out["e2l"] = _top_k(conf, ids, k_of(rules.e2l_fraction), largest=True)
        thresholds["e2l_min_confidence"] = float(conf[out["e2l"]].min()) if out["e2l"].any() else None
    if rules.h2l_max_confidence is not None:
        out["h2l"] = conf <= rules.h2l_max_confidence
        thresholds["h2l_max_confidence"] = rules.h2l_max_confidence
    else:
        out["h2l"] = _top_k(conf, ids, k_of(rules.h2l_fraction), largest=False)
        thresholds["h2l_max_confidence"] = float(conf[out["h2l"]].max()) if out["h2l"].any() else None
    if rules.a_min_variability is not None:
        out["a"] = var >= rules.a_min_variability
        thresholds["a_min_variability"] = rules.a_min_variability
    else:
        out["a"] = _top_k(var, ids, k_of(rules.a_fraction), largest=True)
        thresholds["a_min_variability"] = float(var[out["a"]].min()) if out["a"].any() else None
    out["n_groups"] = out[list(GROUPS)].sum(axis=1).astype("int64")
    return out, thresholds


def cartography_table(measures: pd.DataFrame, rules: GroupRules = GroupRules()) -> tuple[pd.DataFrame, dict]:
    """measures + groups + s + s_printed, one row per training id."""
    table, thresholds = assign_groups(measures, rules)
    table["s"] = difficulty_score(table["confidence"], table["variability"])
    table["s_printed"] = difficulty_score_printed(table["confidence"], table["variability"])
    return table, thresholds


def group_table(table: pd.DataFrame, labels: list[str] | None = None) -> pd.DataFrame:
    """Per-class counts per group (RoNLI Table 3 layout) plus 'no group', 'two groups', 'all'."""
    labels = labels or sorted(table["gold"].astype(str).unique())
    gold = table["gold"].astype(str)
    rows = {}
    for g in GROUPS:
        rows[GROUP_NAMES[g]] = gold[table[g]].value_counts()
    rows["no group"] = gold[table["n_groups"] == 0].value_counts()
    rows["two groups"] = gold[table["n_groups"] == 2].value_counts()
    if (table["n_groups"] >= 3).any():
        rows["three groups"] = gold[table["n_groups"] >= 3].value_counts()
    rows["all"] = gold.value_counts()
    result = pd.DataFrame(rows).T.reindex(columns=labels).fillna(0).astype("int64")
    result["total"] = result.sum(axis=1)
    result.index.name = "group"
    return result


def markdown_table(df: pd.DataFrame, index_name: str | None = None) -> str:
    """A small GitHub markdown table (no tabulate dependency)."""
    cols = [index_name or df.index.name or ""] + [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for idx, row in df.iterrows():
        cells = [str(idx)] + [str(v) for v in row.tolist()]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


# --------------------------------------------------------------------------- plot


def plot_data_map(table: pd.DataFrame, path: Path, *, title: str = "", thresholds: dict | None = None,
                  max_points: int = 25000) -> Path:
    """Confidence (y) against variability (x) coloured by correctness, with the three histograms."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import colors

    data = table
    if len(data) > max_points:  # keep the plot readable; deterministic choice by id order
        step = len(data) / max_points
        data = data.sort_values("pair_id").iloc[(np.arange(max_points) * step).astype(int)]
    epochs = int(table["epochs"].max())
    fig = plt.figure(figsize=(13, 8))
    gs = fig.add_gridspec(3, 2, width_ratios=[3.2, 1], hspace=0.45, wspace=0.38)
    ax = fig.add_subplot(gs[:, 0])
    levels = np.linspace(0, 1, epochs + 1)
    cmap = plt.get_cmap("coolwarm_r", epochs + 1)
    norm = colors.BoundaryNorm(np.append(levels - 0.5 / epochs, 1 + 0.5 / epochs), cmap.N)
    # draw the most-correct points last so the dense easy region stays visible
    data = data.sort_values("correctness", kind="stable")
    sc = ax.scatter(data["variability"], data["confidence"], c=data["correctness"], cmap=cmap, norm=norm,
                    s=9, alpha=0.75, linewidths=0)
    cb = fig.colorbar(sc, ax=ax, ticks=levels, fraction=0.04, pad=0.01)
    cb.ax.set_yticklabels([f"{x:.1f}" for x in levels])
    cb.set_label("correctness (share of epochs)")
    ax.set_xlabel("variability")
    ax.set_ylabel("confidence")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlim(-0.01, max(0.5, float(table["variability"].max()) + 0.01))
    if thresholds:
        style: dict[str, Any] = dict(ls="--", lw=1, color="0.3")
        if thresholds.get("e2l_min_confidence") is not None:
            ax.axhline(thresholds["e2l_min_confidence"], **style)
        if thresholds.get("h2l_max_confidence") is not None:
            ax.axhline(thresholds["h2l_max_confidence"], **style)
        if thresholds.get("a_min_variability") is not None:
            ax.axvline(thresholds["a_min_variability"], **style)
    box = lambda c: dict(boxstyle="round,pad=0.3", ec=c, lw=1.5, fc="white", alpha=0.85)  # noqa: E731
    ax.annotate("easy-to-learn", xy=(0.18, 0.93), xycoords="axes fraction", ha="center", bbox=box("tab:red"))
    ax.annotate("ambiguous", xy=(0.88, 0.5), xycoords="axes fraction", ha="center", bbox=box("black"))
    ax.annotate("hard-to-learn", xy=(0.18, 0.06), xycoords="axes fraction", ha="center", bbox=box("tab:blue"))
    counts = {g: int(table[g].sum()) for g in GROUPS}
    none = int((table["n_groups"] == 0).sum())
    two = int((table["n_groups"] >= 2).sum())
    ax.set_title(
        f"{title + ': ' if title else ''}data map of {len(table)} training examples, {epochs} epochs\n"
        f"E2L {counts['e2l']}, A {counts['a']}, H2L {counts['h2l']}; in no group {none}, in two groups {two}",
        fontsize=11,
    )
    for row, (col, color) in enumerate([("confidence", "#622a87"), ("variability", "teal"),
                                        ("correctness", "#86bf91")]):
        h = fig.add_subplot(gs[row, 1])
        # correctness: one bin per level (k of `epochs`); the others: 30 bins
        bins = np.append(levels - 0.5 / epochs, 1 + 0.5 / epochs).tolist() if col == "correctness" else 30
        h.hist(table[col], bins=bins, color=color)
        h.set_xlabel(col)
        h.set_ylabel("examples")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- API for train


def load_cartography(cartography_dir_or_run_dir) -> pd.DataFrame:
    """metrics.parquet from RUN_DIR/cartography, a cartography folder, or the file itself.

    When a run has dynamics but no cartography yet, it is computed with the default rules
    (nothing is written).
    """
    p = Path(cartography_dir_or_run_dir)
    for candidate in (p, p / "metrics.parquet", p / "cartography" / "metrics.parquet"):
        if candidate.is_file() and candidate.suffix == ".parquet":
            table = read_parquet_frame(candidate)
            if "pair_id" not in table.columns and "id" in table.columns:  # an older run (column `id`)
                table = table.rename(columns={"id": "pair_id"})
            missing = [c for c in ("pair_id", "confidence", "variability", *GROUPS, "s") if c not in table.columns]
            if missing:
                raise UserError(f"{candidate}: not a cartography metrics file, missing {missing}")
            return table
    if p.is_dir():
        measures = compute_measures(read_dynamics(resolve_dynamics_dir(p)))
        return cartography_table(measures)[0]
    raise UserError(f"{p}: no such cartography folder or run directory")


def _join(train_df: pd.DataFrame, table: pd.DataFrame, source) -> pd.DataFrame:
    keyed = table.set_index(table["pair_id"].astype(str))
    ids = train_df["pair_id"].astype(str)
    found = ids.isin(keyed.index)
    if not found.any():
        raise UserError(f"{source}: none of the {len(train_df)} training ids has cartography "
                          "(was it computed on another training set?)")
    if not found.all():
        missing = int((~found).sum())
        raise UserError(f"{source}: {missing} of {len(train_df)} training ids have no cartography "
                          f"(e.g. {ids[~found].iloc[0]!r}); compute it on this training set")
    return keyed.loc[ids.to_numpy()].reset_index(drop=True)


def select_subset(train_df: pd.DataFrame, cartography_dir_or_run_dir, subset: str) -> pd.DataFrame:
    """Rows of train_df whose id is in the group(s) of ``subset`` (e2l, a, h2l, e2l+a)."""
    if subset not in SUBSETS:
        raise UserError(f"unknown subset {subset!r}; choose one of {', '.join(SUBSETS)}")
    table = load_cartography(cartography_dir_or_run_dir)
    joined = _join(train_df, table, cartography_dir_or_run_dir)
    mask = np.zeros(len(train_df), dtype=bool)
    for g in SUBSETS[subset]:
        mask |= joined[g].to_numpy(bool)
    if not mask.any():
        raise UserError(f"{cartography_dir_or_run_dir}: subset {subset} is empty")
    return train_df[mask].copy()


def cartography_for(train_df: pd.DataFrame, cartography_dir_or_run_dir) -> pd.DataFrame:
    """The cartography rows aligned with train_df's rows (same order)."""
    return _join(train_df, load_cartography(cartography_dir_or_run_dir), cartography_dir_or_run_dir)


# --------------------------------------------------------------------------- CLI
