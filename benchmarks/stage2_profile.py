"""Where stage 2's CPU goes on a `benchmarks/scale.py` run: its rounds and, with
`--profile`, cProfile's top functions, in one process.

    .venv/bin/python benchmarks/stage2_profile.py --run out-250mb-default            # rounds only
    .venv/bin/python benchmarks/stage2_profile.py --run out-250mb-default --profile  # and cProfile
    .venv/bin/python benchmarks/stage2_profile.py --run out-250mb-compare --no-label-filter all

Runs `pairs_in_one_process` (tests/one_process.py) over the `sentences/` table the run left in
`benchmarks/_work/scale/<run>/current/` (or, while
the run goes on past its stage 1, its newest `_runs/*/`), with the job's defaults for `--lang ro`: the
lexicon's label filters (less those `--no-label-filter` turns off), its neutral mix
(`label_filters.neutral_mix`, else every strategy, as jobs/extract.py resolves it), POS
filter on, near-duplicates on. Each round's tasks run one after another in this process
(`InProcessRunner`); the CPU-s of each round's tasks are summed by round name, and the
stage's counts (pairs kept, marked, POS-checked sentences, rejections) are printed beside
them. The job's stage 2 costs more than this sum (Spark, Arrow transfers, two workers'
duplicated model loads); the split between rounds is what this shows.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from extractor.engine.runner import InProcessRunner  # noqa: E402  (after the repository is on the path)
from extractor.lexicon.lexicon import load_lexicon  # noqa: E402
from extractor.pairs import neutral as nt  # noqa: E402
from extractor.pairs import stage as ps  # noqa: E402
from extractor.lexicon.label_filters import parse_disabled  # noqa: E402
from tests.one_process import pairs_in_one_process  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", default="out-250mb-default", help="the scale run under benchmarks/_work/scale/")
    ap.add_argument("--no-label-filter", action="append", default=None, metavar="NAME")
    ap.add_argument("--profile", action="store_true", help="cProfile the whole stage; print the top functions")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    root = REPO / "benchmarks" / "_work" / "scale" / args.run
    table = root / "current" / "sentences"
    if not table.exists():   # a run still going (its stage 1 done): the newest run folder's table
        found = sorted(root.glob("_runs/*/sentences"))
        table = found[-1] if found else table
    if not table.exists():
        sys.exit(f"error: no {table}; run benchmarks/scale.py first")
    lexicon = load_lexicon("ro", disabled_filters=parse_disabled(args.no_label_filter))
    options = ps.Options(pos_filter="on", near_duplicates="on",
                         neutral_mix=lexicon.label_filters.neutral_mix or nt.DEFAULT_MIX)
    by_round: dict = defaultdict(lambda: [0, 0.0])
    plain_map = InProcessRunner.map

    def map_(self, fn, tasks, *a, name=None, **kw):
        def timed(task):
            cpu = time.process_time()
            try:
                return fn(task)
            finally:
                by_round[name][0] += 1
                by_round[name][1] += time.process_time() - cpu
        return plain_map(self, timed, tasks, *a, name=name, **kw)

    InProcessRunner.map = map_
    dest = Path(tempfile.mkdtemp(prefix="stage2-profile-"))
    prof = cProfile.Profile() if args.profile else None
    try:
        cpu = time.process_time()
        if prof:
            prof.enable()
        _, stats = pairs_in_one_process(str(table), str(dest / "pairs"), lexicon, options)
        if prof:
            prof.disable()
        cpu = time.process_time() - cpu
    finally:
        shutil.rmtree(dest, ignore_errors=True)
    print(f"{args.run}: stage 2 in one process {cpu:.1f} CPU-s (mix {options.neutral_mix}; label filters off: "
          f"{sorted(parse_disabled(args.no_label_filter)) or 'none'})")
    for name, (n, s) in by_round.items():
        print(f"   round {name}: {n} tasks, {s:.1f} CPU-s ({s / cpu:.0%})")
    pos = stats["pos_filter"]
    rej = {k: v for k, v in stats["rejected"].items() if v}
    print(f"   pairs {stats['total']:,} ({stats['sources']}); POS-checked sentences: marked "
          f"{pos.get('sentences_checked', 0):,}, neutral {pos.get('neutral_sentences_checked', 0):,}; "
          f"rejected {rej}")
    if prof:
        for key in ("cumulative", "tottime"):
            buf = io.StringIO()
            pstats.Stats(prof, stream=buf).sort_stats(key).print_stats(args.top)
            print(f"== top {args.top} by {key}")
            print("\n".join(buf.getvalue().splitlines()[6:]))


if __name__ == "__main__":
    main()
