"""What two runs of the job are compared by: sha256 of every file of a published run, with
what differs between any two runs of the same inputs and settings left out. The
byte-identity checks use it: a resumed run against an uninterrupted one
(tests/test_resume.py, benchmarks/resume.py) and a refactor's output against the
recorded hashes (benchmarks/output_hashes.py).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

# the fields of stats.json's `job` section that differ between any two runs of the same
# inputs and settings (docs/deployment.md: a resumed run publishes the same bytes but these)
VOLATILE_JOB = ("run_id", "seconds", "total_seconds", "executor_python")


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
