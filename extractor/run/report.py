"""stats.json and the summary table the job prints."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

# the fields of stats.json's `job` section that differ between any two runs of the same
# inputs and settings (docs/deployment.md: a resumed run publishes the same bytes but these)
VOLATILE_JOB = ("run_id", "seconds", "total_seconds", "executor_python")


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


def _without_seconds(value):
    """`value` without its timing keys (`seconds`, at any depth)."""
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def comparable_stats(data: bytes, volatile=VOLATILE_JOB) -> bytes:
    """stats.json (its bytes) less what differs between two runs of the same inputs and
    settings: the `job` fields `volatile` and every `seconds` key; keys sorted."""
    stats = json.loads(data)
    for key in volatile:
        stats.get("job", {}).pop(key, None)
    return json.dumps(_without_seconds(stats), sort_keys=True).encode()


def published_hashes(run: Path, volatile=VOLATILE_JOB, replace: tuple[bytes, bytes] | None = None,
                     suffixes: set[str] | None = None) -> dict[str, str]:
    """sha256 of every file of a published run folder (`run`: `<output>/current` or a run
    under `_runs/`), by path relative to it, except manifest.json (run id, times);
    stats.json as `comparable_stats`. With `replace` (old, new), those bytes are replaced
    first in every file, or in the files of `suffixes` only: an output folder's path, which
    the card and stats.json quote, so that runs written to two folders compare equal."""
    run = Path(run).resolve()
    hashes = {}
    for path in sorted(run.rglob("*")):
        if not path.is_file() or path.name == "manifest.json":
            continue
        rel = path.relative_to(run).as_posix()
        data = path.read_bytes()
        if replace and (suffixes is None or path.suffix in suffixes):
            data = data.replace(*replace)
        hashes[rel] = hashlib.sha256(comparable_stats(data, volatile) if rel == "stats.json" else data).hexdigest()
    return hashes


def _flatten(prefix: str, value, rows: list) -> None:
    if isinstance(value, dict):
        for key in sorted(value):
            _flatten(f"{prefix}.{key}" if prefix else str(key), value[key], rows)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        rows.append((prefix, value))


# (dropped_lines_by_file: one warning per file says it on the console)
_NOT_SHOWN = ("inputs", "punkt", "seconds", "min_chars", "job", "dropped_lines_by_file")


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
