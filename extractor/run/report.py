"""stats.json and the summary table the job prints."""
from __future__ import annotations

import json
from pathlib import Path


def stats_bytes(stats: dict) -> bytes:
    """stats.json (sorted keys, so two runs give the same bytes)."""
    return (json.dumps(stats, indent=2, sort_keys=True, ensure_ascii=False, default=str) + "\n").encode("utf-8")


def write_stats(path: str | Path, stats: dict) -> None:
    """Write stats.json to a local path via a temporary file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(stats_bytes(stats))
    tmp.replace(path)


def read_stats(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


def _flatten(prefix: str, value, rows: list) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            _flatten(f"{prefix}.{key}" if prefix else str(key), value[key], rows)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        rows.append((prefix, value))


_NOT_SHOWN = ("inputs", "punkt", "seconds", "min_chars", "job")


def summary_table(stats: dict, sections=None, max_rows: int = 60) -> str:
    """A short two-column table of the numeric counts of stats.json, per stage (details
    such as input partitions and timings stay in stats.json only)."""
    lines = []
    for stage in sections or [k for k in stats if isinstance(stats[k], dict)]:
        if stage not in stats or not isinstance(stats[stage], dict):
            continue
        rows: list = []
        _flatten("", {k: v for k, v in stats[stage].items() if k not in _NOT_SHOWN}, rows)
        if not rows:
            continue
        width = max(len(k) for k, _ in rows[:max_rows])
        lines.append(f"== {stage} ==")
        for key, value in rows[:max_rows]:
            shown = f"{value:,}" if isinstance(value, int) else f"{value:,.3f}"
            lines.append(f"  {key:<{width}}  {shown:>12}")
        if len(rows) > max_rows:
            lines.append(f"  ... {len(rows) - max_rows} more in stats.json")
    return "\n".join(lines)
