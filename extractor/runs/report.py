"""stats.json and the summary table the job prints."""
from __future__ import annotations

import json

from extractor.core.names import SPLITS
from extractor.io import fs


def stats_bytes(stats: dict) -> bytes:
    """stats.json (sorted keys, so two runs give the same bytes)."""
    return (json.dumps(stats, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def _flatten(prefix: str, value, rows: list) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            _flatten(f"{prefix}.{key}" if prefix else str(key), value[key], rows)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        rows.append((prefix, value))


# (dropped_lines_by_file: one warning per file says it on the console)
_NOT_SHOWN = ("inputs", "punkt", "seconds", "min_chars", "job", "dropped_lines_by_file")


def summary_table(stats: dict, sections=None, max_rows: int | None = 60) -> str:
    """A two-column table of the numeric counts of stats.json, per stage, at most `max_rows`
    a stage (None: all; details such as input partitions and timings stay in stats.json
    only). The job prints it with --verbose."""
    lines = []
    for stage in sections or [k for k in stats if isinstance(stats[k], dict)]:
        if stage not in stats or not isinstance(stats[stage], dict):
            continue
        rows: list = []
        _flatten("", {k: v for k, v in stats[stage].items() if k not in _NOT_SHOWN}, rows)
        if not rows:
            continue
        shown_rows = len(rows) if max_rows is None else max_rows
        width = max(len(k) for k, _ in rows[:shown_rows])
        lines.append(f"== {stage} ==")
        for key, value in rows[:shown_rows]:
            shown = f"{value:,}" if isinstance(value, int) else f"{value:,.3f}"
            lines.append(f"  {key:<{width}}  {shown:>12}")
        if len(rows) > shown_rows:
            lines.append(f"  ... {len(rows) - shown_rows} more in stats.json")
    return "\n".join(lines)


def split_table(labels: dict) -> str:
    """The pairs per split and label (stats.json's `splits.labels`: {split: {label: n}})
    as a plain-text table, splits in their order, a total column."""
    splits = [s for s in SPLITS if s in labels] + sorted(set(labels) - set(SPLITS))
    names = sorted({name for counts in labels.values() for name in counts})
    head = ["split", *names, "pairs"]
    rows = [[split, *(f"{labels[split].get(n, 0):,}" for n in names), f"{sum(labels[split].values()):,}"]
            for split in splits]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    return "\n".join("  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
                     for r in [head, *rows])


def end_summary(stats: dict, output: str, tables: list[str]) -> str:
    """What a run made, printed at its end: the split table, then the paths of the tables,
    the dataset card, the charts and stats.json under the output root (every counter stays
    in stats.json; the job's --verbose prints them too)."""
    lines = []
    labels = stats.get("splits", {}).get("labels")
    if labels:
        lines += ["[extract] splits (pairs per label):", split_table(labels)]
    lines.append("[extract] wrote:")
    for name in tables:
        lines.append(f"  {fs.join(output, name)}/")
    splits = fs.join(output, "splits")
    if "splits" in tables:
        charts = sorted(p for p, _ in fs.list_files(splits, recursive=False) if p.endswith(".png"))
        lines.append(f"  dataset card: {fs.join(splits, 'README.md')}")
        lines += [f"  chart: {fs.join(splits, p.rsplit('/', 1)[-1])}" for p in charts]
    lines.append(f"  stats.json: {fs.join(output, 'stats.json')} (every counter; --verbose prints them)")
    return "\n".join(lines)
