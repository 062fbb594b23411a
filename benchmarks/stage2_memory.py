"""Peak resident memory of each task of stage 2, in one process: where a Python worker's
peak comes from, and whether it grows with the input.

    .venv/bin/python benchmarks/stage2_memory.py --size 1000            # the 1 GB scale run's sentences
    .venv/bin/python benchmarks/stage2_memory.py --size 4000 --release  # hand memory back after each task

Runs `pairs_in_one_process` of tests/one_process.py (`ro_legal_fl`, POS filter on,
near-duplicates on, as the job) over the `sentences/` table a `benchmarks/scale.py` run left
in `benchmarks/_work/scale/out-<size>mb/current/`, every round's tasks one after another
in this process. Before each task the kernel's peak-RSS mark is reset
(`/proc/self/clear_refs`), so the peak printed is that task's. One line per task: round,
task, RSS before, peak during, RSS after (MiB), CPU-s. `--release` calls
`extractor.engine.worker.release_memory` after each task, as a Spark task does between the
round's tasks it runs (`extractor.spark.session._task_results`); without it the process keeps
the pages Arrow's pool and the C heap kept, as the job did before. Linux only.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from extractor.engine import worker  # noqa: E402  (after the repository is on the path)
from extractor.engine.runner import InProcessRunner  # noqa: E402
from extractor.lexicon.lexicon import load_lexicon  # noqa: E402
from extractor.pairs import stage as ps  # noqa: E402
from tests.one_process import pairs_in_one_process  # noqa: E402


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith(key))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1000, help="MB of the scale dump whose sentences/ to read")
    ap.add_argument("--release", action="store_true", help="release_memory() after each task")
    args = ap.parse_args()
    table = REPO / "benchmarks" / "_work" / "scale" / f"out-{args.size}mb" / "current" / "sentences"
    if not table.exists():
        sys.exit(f"error: no {table}; run `benchmarks/scale.py --sizes {args.size}` first")
    rows = []

    def map_(self, fn, tasks, spread=False, costs=None, name=None, reuse_memory=False):
        out = []
        for task in tasks:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # reset the peak-RSS mark (VmHWM)
            before, cpu = _status("VmRSS"), time.process_time()
            out.append(json.loads(json.dumps(fn(task))))
            if args.release and not reuse_memory:
                worker.release_memory()
            rows.append((name, task if isinstance(task, int) else str(task)[:20], before, _status("VmHWM"),
                         _status("VmRSS"), round(time.process_time() - cpu, 1)))
            print(*rows[-1], flush=True)
        return out

    InProcessRunner.map = map_
    dest = Path(tempfile.mkdtemp(prefix="stage2-memory-"))
    try:
        cpu = time.process_time()
        pairs_in_one_process(str(table), str(dest / "pairs"), load_lexicon("ro"),
                             ps.Options(pos_filter="on", near_duplicates="on"))
        cpu = time.process_time() - cpu
    finally:
        shutil.rmtree(dest, ignore_errors=True)
    print(f"{args.size} MB: {len(rows)} tasks, {cpu:.1f} CPU-s; peak of a task by round (MiB):")
    for name in dict.fromkeys(r[0] for r in rows):
        peaks = [r[3] for r in rows if r[0] == name]
        print(f"   {name}: {min(peaks)} - {max(peaks)} over {len(peaks)} tasks")


if __name__ == "__main__":
    main()
