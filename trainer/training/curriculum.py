"""The five curricula of RoNLI (§4) as plain schedulers of training-row indices.

Every schedule follows the RoNLI rule: the curriculum occupies the first half of the
iterations (``total_steps // 2``), the second half is standard shuffled training on all
the data, and the total equals the baseline's iterations. A curriculum is a list of
``Stage`` objects (a name, the pool of row positions it draws from, its number of
iterations); ``Schedule`` turns the stages into batches.

- ``length`` (Length-CL, Nagatsuka et al. 2023): pairs ordered by length (words of premise +
  hypothesis), shortest first; stages grow (baby steps: stage k of K draws from the first
  k/K of the order).
- ``sts`` (STS-CL): ordered by the cosine similarity of the premise and hypothesis
  embeddings of a trained run (``trainer.training.runs.load_run(dir).embed``), most similar first;
  growing stages.
- ``cart`` (Cart-CL): N/4 iterations on E2L, N/4 on A, N/2 on H2L, N being the curriculum's
  iterations (half the total). As in the paper, an example in two groups is drawn in both
  stages and an example in none is seen only in the second half.
- ``cart++`` (Cart-CL++): ordered by the RoNLI difficulty s, easy to hard; growing stages.
- ``cart-stra++`` (Cart-Stra-CL++): ordered by s within each class; stage k draws the first
  k/K of EVERY class, so every class is present in every stage.

Within a stage, batches are drawn from the stage pool in shuffled passes (numpy PCG64
seeded with the seed and the stage number): deterministic for a seed, all batches full.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pandas as pd

from extractor.core.errors import UserError
from trainer.analysis.cartography import cartography_for
from trainer.training.runs import load_run

CURRICULA = ("length", "sts", "cart", "cart++", "cart-stra++")
DEFAULT_STAGES = 5  # RoNLI's released code unlocks 20%, 40%, ..., 100% of the ordered data


@dataclass
class Stage:
    name: str
    rows: np.ndarray  # positions in train_df
    steps: int = 0
    weight: float = 1.0  # share of the curriculum iterations (before rounding)

    def __repr__(self) -> str:
        return f"Stage({self.name!r}, {len(self.rows)} rows, {self.steps} steps)"


def split_steps(total: int, weights: list[float]) -> list[int]:
    """Integers proportional to weights that sum exactly to total (largest remainder)."""
    w = np.asarray(weights, dtype=float)
    raw = total * w / w.sum()
    steps = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - steps), kind="stable")[: total - steps.sum()]:
        steps[i] += 1
    return steps.tolist()


def _order(keys: np.ndarray, ids: np.ndarray, descending: bool = False) -> np.ndarray:
    """Row positions sorted by key, ties broken by id (deterministic, independent of row order)."""
    k = -np.asarray(keys, dtype=float) if descending else np.asarray(keys, dtype=float)
    return np.lexsort((ids.astype(str), k))


def growing_stages(order: np.ndarray, n_stages: int = DEFAULT_STAGES, prefix: str = "") -> list[Stage]:
    """Baby steps: stage k (1..K) draws from the first ceil(k/K * n) rows of the order."""
    n = len(order)
    return [Stage(f"{prefix}{k}/{n_stages}", order[: max(1, math.ceil(k * n / n_stages))])
            for k in range(1, n_stages + 1)]


def stratified_stages(order: np.ndarray, labels: np.ndarray, n_stages: int = DEFAULT_STAGES) -> list[Stage]:
    """Growing stages taken per class: stage k holds the first ceil(k/K * n_c) rows of each class c."""
    labels = np.asarray(labels).astype(str)
    per_class = {c: order[labels[order] == c] for c in sorted(set(labels))}
    stages = []
    for k in range(1, n_stages + 1):
        parts = [rows[: max(1, math.ceil(k * len(rows) / n_stages))] for rows in per_class.values()]
        pool = np.concatenate(parts)
        # keep the easy-to-hard interleaving of the classes (pool order is informative only)
        stages.append(Stage(f"stratified {k}/{n_stages}", pool))
    return stages


class Schedule:
    """The full list of batches: curriculum stages for the first half, all data for the rest."""

    def __init__(self, stages: list[Stage], n_rows: int, *, total_steps: int, batch_size: int, seed: int,
                 name: str = "curriculum"):
        if total_steps < 2:
            raise UserError(f"a curriculum needs at least 2 iterations, got total_steps={total_steps}")
        if batch_size < 1:
            raise UserError(f"batch_size must be positive, got {batch_size}")
        if not stages:
            raise UserError(f"{name}: the curriculum has no stage")
        for s in stages:
            if len(s.rows) == 0:
                raise UserError(f"{name}: stage {s.name} is empty")
        self.name = name
        self.total_steps = int(total_steps)
        self.batch_size = int(batch_size)
        self.seed = int(seed)
        self.curriculum_steps = self.total_steps // 2
        for stage, steps in zip(stages, split_steps(self.curriculum_steps, [s.weight for s in stages])):
            stage.steps = steps
        self.stages = list(stages) + [Stage("all", np.arange(n_rows), self.total_steps - self.curriculum_steps)]

    def __len__(self) -> int:
        return self.total_steps

    def iter_stages(self) -> Iterator[tuple[str, list[int]]]:
        """(stage name, batch of row positions) for every iteration."""
        for number, stage in enumerate(self.stages):
            rng = np.random.default_rng([self.seed, number])
            buffer = np.empty(0, dtype=np.int64)
            for _ in range(stage.steps):
                while len(buffer) < self.batch_size:  # shuffled passes over the pool
                    buffer = np.concatenate([buffer, rng.permutation(stage.rows)])
                yield stage.name, buffer[: self.batch_size].tolist()
                buffer = buffer[self.batch_size:]

    def iter_ids(self, ids) -> Iterator[tuple[str, list[str]]]:
        """(stage name, example ids of the batch) for every iteration; ``ids`` = train_df["pair_id"]."""
        ids = np.asarray(ids, dtype=object)
        for name, batch in self.iter_stages():
            yield name, ids[batch].tolist()

    def __iter__(self) -> Iterator[list[int]]:
        for _, batch in self.iter_stages():
            yield batch

    def batches(self) -> list[list[int]]:
        return list(self)

    def describe(self) -> list[dict]:
        return [{"stage": s.name, "rows": int(len(s.rows)), "steps": int(s.steps)} for s in self.stages]


# --------------------------------------------------------------------------- orders


def pair_lengths(train_df: pd.DataFrame) -> np.ndarray:
    """Words in premise + hypothesis (whitespace tokens: the same for every tokenizer)."""
    return (train_df["premise"].astype(str).str.split().str.len()
            + train_df["hypothesis"].astype(str).str.split().str.len()).to_numpy()


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    num = (a * b).sum(axis=1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def sts_similarities(train_df: pd.DataFrame, run_dir) -> np.ndarray:
    """Cosine similarity of premise and hypothesis embeddings from a trained run."""
    run = load_run(run_dir)
    premises = run.embed(train_df["premise"].astype(str).tolist())
    hypotheses = run.embed(train_df["hypothesis"].astype(str).tolist())
    return cosine_rows(premises, hypotheses)


# --------------------------------------------------------------------------- curricula


def length_curriculum(train_df: pd.DataFrame, n_stages: int = DEFAULT_STAGES) -> list[Stage]:
    order = _order(pair_lengths(train_df), train_df["pair_id"].to_numpy())
    return growing_stages(order, n_stages, "length ")


def sts_curriculum(train_df: pd.DataFrame, similarities: np.ndarray, n_stages: int = DEFAULT_STAGES) -> list[Stage]:
    order = _order(similarities, train_df["pair_id"].to_numpy(), descending=True)
    return growing_stages(order, n_stages, "sts ")


def cart_curriculum(cart: pd.DataFrame) -> list[Stage]:
    """E2L, A, H2L stages with weights 1/4, 1/4, 1/2 (``cart`` aligned with train_df's rows)."""
    stages = []
    for group, weight in (("e2l", 0.25), ("a", 0.25), ("h2l", 0.5)):
        rows = np.flatnonzero(cart[group].to_numpy(bool))
        stages.append(Stage(group.upper(), rows, weight=weight))
    return stages


def cart_plus_plus_curriculum(cart: pd.DataFrame, n_stages: int = DEFAULT_STAGES) -> list[Stage]:
    order = _order(cart["s"].to_numpy(float), cart["pair_id"].to_numpy())
    return growing_stages(order, n_stages, "s ")


def cart_stra_plus_plus_curriculum(cart: pd.DataFrame, labels, n_stages: int = DEFAULT_STAGES) -> list[Stage]:
    order = _order(cart["s"].to_numpy(float), cart["pair_id"].to_numpy())
    return stratified_stages(order, np.asarray(labels), n_stages)


def build_schedule(name: str, train_df: pd.DataFrame, *, total_steps: int, batch_size: int, seed: int,
                   cartography_from=None, sts_from=None, n_stages: int = DEFAULT_STAGES) -> Schedule:
    """The Schedule object of a named curriculum (see ``make_schedule``)."""
    if name not in CURRICULA:
        raise UserError(f"unknown curriculum {name!r}; choose one of {', '.join(CURRICULA)}")
    train_df = train_df.reset_index(drop=True)
    if name == "length":
        stages = length_curriculum(train_df, n_stages)
    elif name == "sts":
        if sts_from is None:
            raise UserError("--curriculum sts needs --sts-from RUN_DIR (a trained run that embeds sentences)")
        stages = sts_curriculum(train_df, sts_similarities(train_df, sts_from), n_stages)
    else:
        if cartography_from is None:
            raise UserError(f"--curriculum {name} needs --cartography-from RUN_DIR")
        cart = cartography_for(train_df, cartography_from)
        if name == "cart":
            stages = cart_curriculum(cart)
        elif name == "cart++":
            stages = cart_plus_plus_curriculum(cart, n_stages)
        else:
            stages = cart_stra_plus_plus_curriculum(cart, train_df["label"].astype(str).to_numpy(), n_stages)
    return Schedule(stages, len(train_df), total_steps=total_steps, batch_size=batch_size, seed=seed, name=name)


def make_schedule(name: str, train_df: pd.DataFrame, *, total_steps: int, batch_size: int, seed: int,
                  cartography_from=None, sts_from=None) -> list[list[int]]:
    """The FULL list of ``total_steps`` batches of train_df row positions for a curriculum."""
    return build_schedule(name, train_df, total_steps=total_steps, batch_size=batch_size, seed=seed,
                          cartography_from=cartography_from, sts_from=sts_from).batches()
