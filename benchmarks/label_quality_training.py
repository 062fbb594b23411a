"""What the label filters buy a trained model (issue "Labels you can trust", item 6).

    .venv/bin/python benchmarks/label_quality_training.py            # ~10 min on 2 busy cores

The job (this checkout's code, every stage, so `splits/` exist) runs twice on the Romanian
gold set's sources (`gold_sets.SOURCES['ro']` under ../shared/data): at its defaults (label
filters on) and with `--no-label-filter all`. `tfidf-lr` and `cbow-softmax` (RoNLI's "CBOW +
Softmax", fastText vectors trained on the training split) are trained with the trainer's CLI
(`python -m trainer train --train TRAIN.jsonl --test GOLD.jsonl ...`, fixed seeds, run in
this process) on each run's `splits/train`, and scored on the test part of the hand-checked
gold set (benchmarks/gold/ro.jsonl, `part == "test"`, gold label not null): macro-F1 and
accuracy against the readers' labels. Neither side gets validation data: on these sources the
split stage's label balancing leaves the no-filter run's validation and test splits empty
(and the default run's at 8 pairs each), so cbow-softmax keeps its last epoch on both sides.

The gold test file (`{pair_id, premise, hypothesis, label=gold}`) takes its texts from the
pairs tables of runs that hold the pairs: the no-filter run, and a run with `--phrase-set
extended --neutral-mix second_random=1 --no-label-filter all` for the extension round's items;
items whose text none holds are counted and reported. The gold items were drawn from the
same small pool the job builds here, so many of them are in one run's training split: a
gold test item that is in the training split of *either* run (by location -- corpus,
premise ref, hypothesis ref -- or by its (premise, hypothesis) text) is left out of the
`clean` evaluation set, which both runs' models share. The scores on all gold test items
(`all`, leaked ones included) are reported beside it, marked as such.

The filters change the amount of data as well as the labels (their `added_phrases` make the
default run's training split larger), so a third row trains on the default run's training
split subsampled to the no-filter run's size (the trainer's stratified, seeded
`--train-size`). Each row's difference to the no-filter row comes with a paired bootstrap
interval over the gold items.

Results: benchmarks/results/label-quality-training.{json,log}.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from gold_sets import WORK, location, read_pairs, run_job  # noqa: E402
from label_precision import gold_location, load_gold  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
LANG = "ro"
CONFIGS = {"default (filters on)": [], "no label filters": ["--no-label-filter", "all"]}
RUN_DIRS = {"default (filters on)": "ro-default", "no label filters": "ro-no-label-filters",
            "extended text run": "ro-extended-sr"}
TEXT_RUN = ["--phrase-set", "extended", "--neutral-mix", "second_random=1", "--no-label-filter", "all"]
# model -> extra `trainer train` flags (cbow-softmax: its defaults, 10 epochs, last epoch kept
# as there is no validation data; 100-d fastText vectors trained on the training split, seeded)
MODELS = {"tfidf-lr": [], "cbow-softmax": ["--epochs", "10"]}
# `--compare semantic-check` (issue 55, item 6): the job with the semantic check off and on
# (docs/label-quality.md "The semantic check"); models: tfidf-lr, the frozen multilingual
# encoder with a linear head and the multilingual transformer fine-tuned (3 epochs, CPU)
CHECK_CONFIGS = {"default (check off)": [], "semantic check on": ["--semantic-check", "on"]}
CHECK_RUN_DIRS = {"default (check off)": "ro-default", "semantic check on": "ro-semantic-check",
                  "extended text run": "ro-extended-sr"}
CHECK_MODELS = {"tfidf-lr": [], "e5-linear": [],
                "transformer": ["--pretrained", "multilingual-e5-small", "--epochs", "3", "--batch-size", "16"]}
# tfidf-lr is trained once: its solver (lbfgs) does not use the seed; cbow-softmax on --seeds
EVAL_SETS = ("clean", "all")
BOOT = 2000


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def splits_dir(out: Path) -> Path:
    for cand in (out / "splits", out / "current" / "splits"):
        if (cand / "train").exists():
            return cand
    raise SystemExit(f"error: no splits/ under {out}")


def norm(text: str) -> str:
    return " ".join(str(text).split())


def read_split(out: Path, split: str) -> pl.DataFrame | None:
    if not any((splits_dir(out) / split).rglob("*.parquet")):
        return None  # the split stage's balancing can leave a split empty
    df = pl.read_parquet(str(splits_dir(out) / split / "**" / "*.parquet"), hive_partitioning=True)
    if {"corpus", "premise_ref", "hypothesis_ref"} <= set(df.columns):
        keys = [location(c, p, h) for c, p, h in zip(df["corpus"], df["premise_ref"], df["hypothesis_ref"])]
        df = df.with_columns(pl.Series("location", keys))
    return df


def gold_test_items(log) -> tuple[list[dict], dict]:
    """The judged gold test items with their texts, and the counts of what was found where."""
    gold = [g for g in load_gold(LANG) if g["part"] == "test" and g.get("gold")]
    texts = {}
    # the runs named in the brief first; the default run last, as a fallback (a pair's text is
    # the same in every run that emits it: same sources, same refs)
    sources = (("no label filters", "ro-no-label-filters", ["--no-label-filter", "all"]),
               ("extended text run", "ro-extended-sr", TEXT_RUN), ("default (filters on)", "ro-default", []))
    for name, folder, flags in sources:
        out = WORK / "train-runs" / folder
        out = run_job(LANG, out, flags, stages="all" if folder in {RUN_DIRS[n] for n in CONFIGS} else "pairs")
        pairs = read_pairs(out)
        for loc, p, h in zip(pairs["location"], pairs["premise"], pairs["hypothesis"]):
            texts.setdefault(loc, (p, h, name))
    items, missing, where = [], [], {}
    for g in gold:
        hit = texts.get(gold_location(g))
        if hit is None:
            missing.append(g["pair_id"])
            continue
        where[hit[2]] = where.get(hit[2], 0) + 1
        items.append({"pair_id": g["pair_id"], "premise": hit[0], "hypothesis": hit[1], "label": g["gold"],
                      "location": gold_location(g), "round": g.get("round", "initial")})
    counts = {"judged_test_items": len(gold), "with_text": len(items), "text_from": where,
              "text_not_found": len(missing), "text_not_found_ids": missing}
    log(f"gold test part: {len(gold)} judged items; text found for {len(items)} ({where}); "
        f"not found: {len(missing)}")
    return items, counts


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({k: r[k] for k in ("pair_id", "premise", "hypothesis", "label")},
                               ensure_ascii=False) + "\n")


def macro_f1(gold: np.ndarray, pred: np.ndarray, labels: list[str]) -> float:
    f1s = []
    for lab in labels:
        tp = np.sum((pred == lab) & (gold == lab))
        fp = np.sum((pred == lab) & (gold != lab))
        fn = np.sum((pred != lab) & (gold == lab))
        f1s.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return float(np.mean(f1s))


def bootstrap_ci(gold, pred, labels, seed=0) -> list[float]:
    """Percentile 95 % interval of macro-F1 over resampled gold items (seeded)."""
    rng = np.random.default_rng(seed)
    n = len(gold)
    vals = [macro_f1(gold[idx], pred[idx], labels) for idx in (rng.integers(0, n, n) for _ in range(BOOT))]
    return [float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))]


def train(train_file: Path, model: str, seed: int, tests: list[Path], run_dir: Path, log, extra=()) -> dict:
    """`python -m trainer train ...`, run in this process through `trainer.cli.main` (the same
    code path; one import of torch and scikit-learn for every run). Its output goes to
    RUN_DIR.stdout."""
    from trainer.cli import main as trainer_main
    argv = ["train", "--train", str(train_file), "--model", model, "--seed", str(seed), "--output", str(run_dir),
            "--overwrite", "--no-progress", "--test", *map(str, tests), *MODELS[model], *extra]
    t = time.time()
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(run_dir.parent / f"{run_dir.name}.stdout", "w", encoding="utf-8") as f, \
            contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
        rc = trainer_main(argv)
    if rc:
        raise SystemExit(f"error: python -m trainer {' '.join(argv)} exited {rc}; see {run_dir}.stdout")
    log(f"  trained {model} seed {seed} on {train_file.name} {' '.join(extra)} in {time.time() - t:.0f} s")
    return json.loads((run_dir / "metrics.json").read_text())


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0,1,2", help="training seeds of cbow-softmax (tfidf-lr: the first)")
    ap.add_argument("--json", type=Path, default=None,
                    help="default: results/label-quality-training.json (label-filters), "
                         "results/label-quality-training-check.json (semantic-check)")
    ap.add_argument("--compare", choices=("label-filters", "semantic-check"), default="label-filters",
                    help="what the two runs differ in: the label filters (on/off) or the semantic check (off/on)")
    args = ap.parse_args(argv)
    global CONFIGS, RUN_DIRS, MODELS
    if args.compare == "semantic-check":
        CONFIGS, RUN_DIRS, MODELS = CHECK_CONFIGS, CHECK_RUN_DIRS, CHECK_MODELS
        control, treated = "default (check off)", "semantic check on"
    else:
        control, treated = "no label filters", "default (filters on)"
    if args.json is None:
        args.json = RESULTS / ("label-quality-training-check.json" if args.compare == "semantic-check"
                               else "label-quality-training.json")
    seeds = [int(s) for s in args.seeds.split(",")]
    lines = []

    def log(msg=""):
        print(msg, flush=True)
        lines.append(msg)

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    log(f"label_quality_training.py at commit {commit}; lang {LANG}; seeds {seeds}")
    work = WORK / "label-quality-training"
    work.mkdir(parents=True, exist_ok=True)

    # (1) the job, every stage, with and without the label filters
    outs, sizes, train_keys, train_files = {}, {}, {}, {}
    for name, flags in CONFIGS.items():
        t = time.time()
        outs[name] = run_job(LANG, WORK / "train-runs" / RUN_DIRS[name], flags, stages="all")
        sizes[name] = {}
        for split in ("train", "validation", "test"):
            df = read_split(outs[name], split)
            if df is None:
                sizes[name][split] = {"n": 0, "labels": {}}
                continue
            sizes[name][split] = {"n": df.height, "labels": dict(sorted(df["label"].value_counts().rows()))}
            if split == "train":
                train_files[name] = work / f"train-{slug(name)}.jsonl"
                write_jsonl(train_files[name], df.select("pair_id", "premise", "hypothesis", "label").to_dicts())
                train_keys[name] = {
                    "location": set(df["location"]) if "location" in df.columns else set(),
                    "text": {(norm(p), norm(h)) for p, h in zip(df["premise"], df["hypothesis"])},
                    "pair_id": set(df["pair_id"])}
        log(f"job {name!r} {' '.join(flags) or '(defaults)'}: {outs[name]} ({time.time() - t:.0f} s); "
            f"splits {', '.join(s + ' ' + str(v['n']) for s, v in sizes[name].items())}; "
            f"train labels {sizes[name]['train']['labels']}")

    # (2) the gold test file, and its overlap with each training split
    items, text_counts = gold_test_items(log)
    overlap = {}
    for name, keys in train_keys.items():
        by_loc = {r["pair_id"] for r in items if r["location"] in keys["location"]}
        by_text = {r["pair_id"] for r in items if (norm(r["premise"]), norm(r["hypothesis"])) in keys["text"]}
        by_id = {r["pair_id"] for r in items if r["pair_id"] in keys["pair_id"]}
        overlap[name] = {"by_location": len(by_loc), "by_text": len(by_text), "by_pair_id": len(by_id),
                         "any": len(by_loc | by_text | by_id), "ids": sorted(by_loc | by_text | by_id)}
        log(f"gold test items in the training split of {name!r}: {len(by_loc)} by location, "
            f"{len(by_text)} by (premise, hypothesis) text, {len(by_id)} by pair_id; {overlap[name]['any']} in all")
    leaked = set().union(*(set(o["ids"]) for o in overlap.values()))
    sets = {"clean": [r for r in items if r["pair_id"] not in leaked], "all": items}
    files = {}
    for s, rows in sets.items():
        files[s] = work / f"gold-test-{s}.jsonl"
        write_jsonl(files[s], rows)
        labs = {}
        for r in rows:
            labs[r["label"]] = labs.get(r["label"], 0) + 1
        log(f"evaluation set {s!r}: {len(rows)} items {dict(sorted(labs.items()))} "
            f"({sum(r['round'] != 'initial' for r in rows)} of the extension round) -> {files[s]}")

    # (3) train and evaluate. A third row trains on the default run's training split
    # subsampled (the trainer's stratified, seeded --train-size) to the no-filter run's size:
    # the filters change the labels and also the amount of data (their added phrases), and
    # this row separates the two.
    larger, smaller = sorted((treated, control), key=lambda n: -sizes[n]["train"]["n"])
    n_small = sizes[smaller]["train"]["n"]
    short = "default" if larger == "default (filters on)" else larger
    rows = {treated: (treated, []), f"{short}, train-size {n_small}": (larger, ["--train-size", str(n_small)]),
            control: (control, [])}
    # the differences reported: each row against the run without the filters; the run with the
    # check against each run without it (the full one and the one cut to its size)
    compared = ([(r, control) for r in rows if r != control] if args.compare == "label-filters"
                else [(treated, r) for r in rows if r != treated])
    results, preds_of = {}, {}
    for row, (name, extra) in rows.items():
        for model in MODELS:
            per_seed = []
            for seed in (seeds[:1] if model == "tfidf-lr" else seeds):
                run_dir = work / "runs" / f"{slug(row)}-{model}-s{seed}"
                metrics = train(train_files[name], model, seed, list(files.values()), run_dir, log, extra)
                config = json.loads((run_dir / "config.json").read_text())
                preds = pl.read_parquet(run_dir / "predictions.parquet")
                labels = config["labels"]
                entry = {"seed": seed, "n_train": config.get("n_train")}
                for s in EVAL_SETS:
                    m = metrics[f"gold-test-{s}"]
                    p = preds.filter(pl.col("split") == f"gold-test-{s}").sort("pair_id")
                    g, pr = p["gold"].to_numpy(), p["pred"].to_numpy()
                    assert abs(macro_f1(g, pr, labels) - m["macro_f1"]) < 1e-9, (m["macro_f1"], macro_f1(g, pr, labels))
                    entry[s] = {"macro_f1": m["macro_f1"], "accuracy": m["accuracy"], "n": m["n"],
                                "macro_f1_ci95": bootstrap_ci(g, pr, labels, seed=seed),
                                "per_class_f1": {k: v["f1"] for k, v in m["per_class"].items()}}
                    preds_of.setdefault((row, model, s), []).append((g, pr, labels))
                per_seed.append(entry)
            summ = {}
            for s in EVAL_SETS:
                f1s = [e[s]["macro_f1"] for e in per_seed]
                accs = [e[s]["accuracy"] for e in per_seed]
                summ[s] = {"macro_f1_mean": float(np.mean(f1s)), "macro_f1_std": float(np.std(f1s, ddof=1)) if len(f1s) > 1 else 0.0,
                           "accuracy_mean": float(np.mean(accs)), "accuracy_std": float(np.std(accs, ddof=1)) if len(accs) > 1 else 0.0,
                           "n": per_seed[0][s]["n"]}
            results.setdefault(row, {})[model] = {"train_flags": extra, "seeds": per_seed, "summary": summ}

    # paired bootstrap over gold items of the difference of the seed-mean macro-F1
    diffs = {}
    for a, b in compared:
        for model in MODELS:
            for s in EVAL_SETS:
                A, B = preds_of[(a, model, s)], preds_of[(b, model, s)]
                n = len(A[0][0])
                rng = np.random.default_rng(0)
                obs = np.mean([macro_f1(g, p, lab) for g, p, lab in A]) - np.mean([macro_f1(g, p, lab) for g, p, lab in B])
                vals = []
                for _ in range(BOOT):
                    idx = rng.integers(0, n, n)
                    vals.append(np.mean([macro_f1(g[idx], p[idx], lab) for g, p, lab in A])
                                - np.mean([macro_f1(g[idx], p[idx], lab) for g, p, lab in B]))
                diffs[f"{a} - {b}|{model}|{s}"] = {
                    "diff": float(obs), "ci95": [float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5))],
                    "share_above_0": float(np.mean(np.array(vals) > 0))}

    # (4) the table
    log("")
    log(f"Gold test part (ro, hand-checked labels); cbow-softmax: mean over seeds {seeds} (± sample std), "
        "tfidf-lr: one run; `clean` = not in either run's training split")
    head = (f"{'training data':<26}{'train':>6}{'val':>5}{'test':>5}  {'model':<13}"
            + "".join(f"{'F1 ' + s:>16}{'acc ' + s:>16}{'n':>5}" for s in EVAL_SETS))
    log(head)
    log("-" * len(head))
    for row, (name, extra) in rows.items():
        sz = sizes[name]
        n_train = n_small if extra else sz["train"]["n"]
        for model in MODELS:
            summ = results[row][model]["summary"]
            log(f"{row:<26}{n_train:>6}{sz['validation']['n']:>5}{sz['test']['n']:>5}  {model:<13}"
                + "".join(f"{summ[s]['macro_f1_mean']:>9.3f} ±{summ[s]['macro_f1_std']:.3f}"
                          f"{summ[s]['accuracy_mean']:>9.3f} ±{summ[s]['accuracy_std']:.3f}{summ[s]['n']:>5}"
                          for s in EVAL_SETS))
    log("(train/val/test: the run's split sizes; models train on `train` only, no validation data)")
    log("")
    log("per seed, clean set: macro-F1 [bootstrap 95 % interval]")
    for row in rows:
        for model in MODELS:
            log(f"  {row:<26} {model:<13} " + "  ".join(
                f"s{e['seed']} {e['clean']['macro_f1']:.3f} [{e['clean']['macro_f1_ci95'][0]:.2f}-{e['clean']['macro_f1_ci95'][1]:.2f}]"
                for e in results[row][model]["seeds"]))
    log("")
    log(f"paired bootstrap ({BOOT} resamples of the gold items, seed-mean macro-F1): differences")
    for key, d in diffs.items():
        a, model, s = key.split("|")
        log(f"  {a:<60} {model:<13} {s:<6} {d['diff']:+.3f} [{d['ci95'][0]:+.3f}, {d['ci95'][1]:+.3f}]"
            f"  P(>0) {d['share_above_0']:.2f}")
    out = {"commit": commit, "lang": LANG, "compare": args.compare, "seeds": seeds, "configs": CONFIGS, "text_run": TEXT_RUN,
           "models": MODELS, "split_sizes": sizes, "gold_test": text_counts, "overlap": overlap,
           "eval_sets": {s: len(r) for s, r in sets.items()},
           "rows": {r: {"split_run": n, "train_flags": e} for r, (n, e) in rows.items()}, "results": results,
           "paired_differences": diffs}
    RESULTS.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    args.json.with_suffix(".log").write_text("\n".join(lines) + "\n")
    print(f"\nwrote {args.json} and {args.json.with_suffix('.log')}")


if __name__ == "__main__":
    main()
