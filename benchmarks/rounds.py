"""Rounds of a benchmark back to back, and the medians of their figures: on a shared
machine one run of unchanged code varies by up to a third, so a target is judged on the
median of a few rounds (`--rounds N` of benchmarks/pairs_throughput.py and
benchmarks/splits_throughput.py)."""
from __future__ import annotations

from pathlib import Path
from statistics import median
from typing import Callable


def run_rounds(n: int, one_round: Callable[[], dict]) -> list[dict]:
    """`one_round()` n times (at least once), each announced when there are several."""
    out = []
    for k in range(max(1, n)):
        if n > 1:
            print(f"== round {k + 1} of {n}", flush=True)
        out.append(one_round())
    return out


def print_medians(n_rounds: int, lines: list[tuple[str, list[float], str, str]]) -> None:
    """One line per figure: (what, values of the rounds, format, target or ''), as
    'what: median M (rounds: a, b, c) (target T)'; figures without values are left out."""
    print(f"== summary of {n_rounds} rounds")
    for what, values, fmt, target in lines:
        if values:
            rounds = ", ".join(fmt.format(v) for v in values)
            print(f"{what}: median {fmt.format(median(values))} (rounds: {rounds})" + (f" (target {target})" if target else ""))


def add_rounds_argument(parser, what: str) -> None:
    """`--rounds N`, the same flag in every benchmark that has rounds."""
    parser.add_argument("--rounds", type=int, default=1,
                        help=f"rounds of {what} back to back: the figures of each round, then their medians "
                             "(a shared machine varies by a third between runs)")


def same_files(a: Path, b: Path) -> bool:
    """The Parquet files under two table folders are byte-identical (and there are some):
    a stage's files against those of its plain-process run."""
    files = sorted(p.relative_to(a) for p in a.rglob("*.parquet"))
    return bool(files) and files == sorted(p.relative_to(b) for p in b.rglob("*.parquet")) \
        and all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
