"""The job's cost model as data: CPU, scratch and output per MB of input, per stage.

The figures are docs/scale.md's "Cost model" (the whole job on dumps of unique pages of
real Romanian prose, 250 MB to 4 GB, `benchmarks/scale.py`), measured on one machine:
`MACHINE`; each stage declares its own (`StageSpec.cost`, in the job's list of stages,
extractor/job/stages.py). `jobs/extract.py --dry-run` prints `estimate(...)` from them; change them here
and in docs/scale.md together.

CPU-s per MB (low - high):
- stage 1: the range of every quiet 1 GB and 4 GB round (the machine's drift);
- stage 2: the rounds of the batched stage 2 (low); high: the dense pool (novels, speeches
  and news: Wikipedia's density of linking phrases) with the label filters' added phrases
  and every sentence tagged (`--pos-words off`, or a lexicon without POS word lists), at
  1 GB, 0.43, taken as 0.46; with the Romanian word lists the same run takes 0.13
  (docs/scale.md);
- stage 3: up to 0.013 (the same 1 GB run).
Scratch: the peak of the stage's work folders and Spark's local dir; output: its table.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from extractor.engine.stage import Cost
from extractor.job import stages

SOURCE = "docs/scale.md, \"Cost model\""
MACHINE = ("2 cores (AMD EPYC, CPU family 26), local[2], unique-page Romanian dumps of 250 MB - 4 GB, "
           "2026-11-26..28")

# stage -> its figures (`StageSpec.cost`: CPU-s per MB low and high, scratch MB per MB at
# its peak, output MB per MB), declared with each stage of the job's list
COSTS: dict[str, Cost] = {s.name: s.cost for s in stages.STAGES}

# MB of text per MB of file, by how a file is compressed: the benchmark dumps hold 245.6 MB
# of XML in 61.7 MB of bz2 (3.98; docs/scale.md); gzip is taken the same (not measured).
# Plain text and JSONL count as XML of their size (stage 1 skips the wikitext cleaning, so
# its figure is an upper bound there); Parquet as its size (compressed: an under-estimate).
EXPANSION = {".bz2": 4.0, ".gz": 4.0}

USE = 0.85              # share of the cores a stage keeps busy (docs/scale.md: executors at 85 %)
# Fixed cost of a run whatever its size (JVM and session start-up, Python workers, spaCy
# loads, a few Spark jobs per round): the bundled ro sample through spark-submit.sh, the CPU
# of every process of the run (the JVM, the driver and the Python workers it forks) and its
# wall time; a small run is mostly serial. The measurements: docs/scale.md "Cost model".
FIXED_CPU_S = 15.0
FIXED_WALL_S_LOCAL = 16.0
FIXED_WALL_S_CLUSTER = 120.0  # a cluster's start-up (docs/scale.md: "+ ~2 min start-up")


def text_mb(path: str, size_bytes: int) -> float:
    """MB of text a file of `size_bytes` holds (EXPANSION by its suffix)."""
    for suffix, factor in EXPANSION.items():
        if path.endswith(suffix):
            return size_bytes / 1e6 * factor
    return size_bytes / 1e6


def local_cores(master: str | None) -> int | None:
    """Cores of a local master (`local`, `local[4]`, `local[*]`, `local[4,2]`); None for
    any other master (a cluster: its cores are not known here)."""
    if master == "local":
        return 1
    found = re.fullmatch(r"local\[(\*|\d+)(?:,\s*\d+)?\]", master or "")
    if not found:
        return None
    return (os.cpu_count() or 1) if found.group(1) == "*" else int(found.group(1))


@dataclass
class Estimate:
    mb: float                 # MB of text in
    stages: list
    cpu_s: tuple              # (low, high), fixed cost included
    scratch_mb: float         # peak, the largest stage's
    output_mb: float          # every table of `stages`
    per_stage: dict           # stage -> {"cpu_s": (lo, hi), "scratch_mb", "output_mb"}

    def wall_s(self, cores: int, cluster: bool = False) -> tuple:
        fixed = FIXED_WALL_S_CLUSTER if cluster else FIXED_WALL_S_LOCAL
        busy = max(1.0, cores * USE)
        return tuple(fixed + (cpu - FIXED_CPU_S) / busy for cpu in self.cpu_s)


def estimate(mb: float, names: list) -> Estimate:
    """The cost of running the stages `names` over `mb` MB of text."""
    per_stage: dict[str, dict[str, Any]] = {s: {"cpu_s": tuple(mb * f for f in COSTS[s].cpu_s_per_mb),
                                                 "scratch_mb": mb * COSTS[s].scratch_mb_per_mb,
                                                 "output_mb": mb * COSTS[s].output_mb_per_mb
                                                               + COSTS[s].output_mb_fixed}
                                             for s in names}
    cpu = tuple(FIXED_CPU_S + sum(p["cpu_s"][i] for p in per_stage.values()) for i in (0, 1))
    return Estimate(mb=mb, stages=list(names), cpu_s=cpu,
                    scratch_mb=max((p["scratch_mb"] for p in per_stage.values()), default=0.0),
                    output_mb=sum(p["output_mb"] for p in per_stage.values()), per_stage=per_stage)


def duration(seconds: float) -> str:
    """`45 s`, `12.5 min`, `3.2 h`."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def size(mb: float) -> str:
    if mb < 1:
        return f"{mb * 1000:.0f} KB"
    if mb < 1000:
        return f"{mb:.1f} MB"
    return f"{mb / 1000:.1f} GB"


def render(est: Estimate, master: str | None) -> list[str]:
    """The estimate's lines: CPU, wall on `master`, scratch and output, and the figures."""
    lo, hi = est.cpu_s
    lines = [f"  CPU time: {duration(lo)} - {duration(hi)} (stages {', '.join(est.stages)} on {size(est.mb)} "
             f"of text, start-up included)"]
    cores = local_cores(master)
    if cores is not None:
        w = est.wall_s(cores)
        lines.append(f"  wall time on {master} ({cores} cores at {USE:.0%}): {duration(w[0])} - {duration(w[1])}")
    else:
        for n in (8, 32, 64):
            w = est.wall_s(n, cluster=True)
            lines.append(f"  wall time on {n} cluster cores (at {USE:.0%}, ~2 min start-up): "
                         f"{duration(w[0])} - {duration(w[1])}")
    tables = ", ".join(f"{stages.BY_NAME[s].writes}/ {size(p['output_mb'])}" for s, p in est.per_stage.items())
    lines.append(f"  scratch (peak): {size(est.scratch_mb)}; output: {size(est.output_mb)} ({tables})")
    lines.append(f"  model ({SOURCE}), per MB of text: "
                 + "; ".join(f"{s} {COSTS[s].cpu_s_per_mb[0]}-{COSTS[s].cpu_s_per_mb[1]} CPU-s, scratch "
                             f"{COSTS[s].scratch_mb_per_mb} MB, output {COSTS[s].output_mb_per_mb} MB"
                             + (f" + {COSTS[s].output_mb_fixed} MB" if COSTS[s].output_mb_fixed else "")
                             for s in est.stages)
                 + f"; fixed {FIXED_CPU_S:.0f} CPU-s and {FIXED_WALL_S_LOCAL:.0f} s of wall time locally "
                   f"({FIXED_WALL_S_CLUSTER:.0f} s on a cluster)")
    lines.append(f"  measured on: {MACHINE}")
    return lines
