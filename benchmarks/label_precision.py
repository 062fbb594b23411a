"""Label precision of the job, measured on the hand-checked gold sets (docs/label-quality.md).

    .venv/bin/python benchmarks/label_precision.py                       # ro, es, en; default vs no filters
    .venv/bin/python benchmarks/label_precision.py --lang ro --ablation   # + each filter off on its own
    .venv/bin/python benchmarks/label_precision.py --lang ro --write-lexicon   # record it in ro.yaml
    .venv/bin/python benchmarks/label_precision.py --lang ro --semantic-check   # + the check (stage `check`)

For each language it runs the job (this checkout's code, stages 1-2, default settings plus
each configuration's flags) on the gold set's sources in ../shared/data, joins the pairs it
emits with the gold items by location (corpus, premise ref, hypothesis ref: a relabelled pair
keeps its location), and prints, on the tuning part, the test part and both:

- precision per label: of the gold pairs the job emits with label L, the share whose gold
  label is L (n, and the Wilson 95 % interval);
- precision per phrase (marked pairs) and per neutral strategy;
- yield: of the marked gold pairs of the initial round (the default job's output before any
  filter, as the readers checked it) whose automatic label was right, the share the job still
  emits with that label; `added` counts the right pairs of the extension round (phrases of the
  extended set, checked later) it emits besides;
- neutral (strategies): every checked neutral candidate of the strategies the run draws
  from, emitted by this run or not. The draw takes the lowest selection hashes among many
  candidates, so a run with another mix or other marked pairs emits few of the checked ones;
  the checked ones are a random sample of the same strategies' candidates;
- coverage: how many of the emitted pairs the gold set checks.

Gold pairs that the readers could not judge (`gold` null) are left out of every figure. The
figures and the configurations go to `benchmarks/results/label-precision.json`. `--write-lexicon`
records the first configuration's per-phrase and per-strategy counts (the test part) in the
lexicon's `measured_precision` block, which the dataset card's "Estimated label precision"
section reads; with `--semantic-check` also the default configuration with the check on
(`semantic_check`: the head's sha256 and thresholds, the pairs the check keeps), which the card
reads for a run that went through the check with that head and those thresholds.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from cleanlab.filter import find_label_issues  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.feature_extraction.text import TfidfVectorizer  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import StratifiedKFold, cross_val_predict  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402

from extractor.check import head as check_head  # noqa: E402
from extractor.lexicon.lexicon import lexicon_path, load_lexicon  # noqa: E402
from extractor.statistics.precision import summary  # noqa: E402
from gold_sets import LABELS, WORK, gold_location, load_gold, phrase_of, read_pairs, run_job  # noqa: E402

RESULTS = REPO / "benchmarks" / "results"
PARTS = ("tune", "test", "all")
# name -> flags added to the job's defaults
CONFIGS = {"default": [], "no label filters": ["--no-label-filter", "all"]}
ABLATION = {"without context rules": ["--no-label-filter", "context"],
            "without phrase drops": ["--no-label-filter", "phrases"],
            "without neutral strategy choice": ["--no-label-filter", "neutral"]}
BLOCK_START = "# >>> measured_precision: written by benchmarks/label_precision.py --write-lexicon"
BLOCK_END = "# <<< measured_precision"


def measure(gold: list[dict], emitted: dict, lexicon) -> dict:
    """Every figure of one run against one gold set. `emitted`: location -> (label, phrase or
    neutral strategy) of the run's pairs."""
    out = {}
    judged = [g for g in gold if g.get("gold")]
    strategies = {group for label, group in emitted.values() if label == "neutral"}
    for part in PARTS:
        items = [g for g in judged if part == "all" or g["part"] == part]
        by_label, by_group = defaultdict(lambda: [0, 0]), defaultdict(lambda: [0, 0])
        right_auto = kept_right = added_right = 0
        for g in items:
            hit = emitted.get(gold_location(g))
            if g["auto_label"] != "neutral" and g["gold"] == g["auto_label"]:
                if g.get("round", "initial") == "initial":
                    right_auto += 1
                    kept_right += hit is not None and hit[0] == g["gold"]
                elif g.get("round") == "extension":  # extension-2 was drawn from the filtered output: no yield
                    added_right += hit is not None and hit[0] == g["gold"]
            if hit is None:
                continue
            label, group = hit
            ok = int(g["gold"] == label)
            by_label[label][0] += ok
            by_label[label][1] += 1
            key = f"{label}|{group}"
            by_group[key][0] += ok
            by_group[key][1] += 1
        out[part] = {
            "labels": {lab: summary(*by_label[lab]) for lab in LABELS},
            "groups": {k: summary(*v) for k, v in sorted(by_group.items())},
            # every checked neutral candidate of the strategies the run draws from, emitted or not:
            # a sample of those strategies' candidates (the draw takes others of the same kind)
            "neutral_strategies": summary(
                sum(g["gold"] == "neutral" for g in items if g["auto_label"] == "neutral" and g["source"] in strategies),
                sum(1 for g in items if g["auto_label"] == "neutral" and g["source"] in strategies)),
            "strategies": {s: summary(sum(g["gold"] == "neutral" for g in items if g["source"] == s),
                                      sum(1 for g in items if g["source"] == s))
                           for s in sorted({g["source"] for g in items if g["auto_label"] == "neutral"})},
            "yield": summary(kept_right, right_auto),
            "added_right": added_right,
            "checked": len(items),
        }
    return out


CHECK = "default + semantic check"
CHECK_FLAGS = ["--semantic-check", "on"]
# the ablation's third row: the check without any label filter
CHECK_ALONE = {"semantic check alone (no label filters)": ["--no-label-filter", "all", *CHECK_FLAGS]}


def emitted_pairs(out: Path, lexicon, table: str = "pairs") -> tuple[dict, int]:
    pairs = read_pairs(out, table)
    groups = [phrase_of(lexicon, m) if s == "marker" else s for m, s in zip(pairs["marker"], pairs["source"])]
    return dict(zip(pairs["location"], zip(pairs["label"], groups))), pairs.height


def confident_learning(out: Path, frac_noise: float = 1.0, seed: int = 0) -> set:
    """The locations of the run's pairs that confident learning flags as label errors
    (cleanlab's `find_label_issues` over 5-fold out-of-fold probabilities of a TF-IDF logistic
    regression trained on the run's own pairs: premise and hypothesis words, separately)."""
    pairs = read_pairs(out)
    labels = sorted(set(pairs["label"]))
    y = np.array([labels.index(x) for x in pairs["label"]])
    features = ColumnTransformer([("premise", TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True), "premise"),
                                  ("hypothesis", TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True),
                                   "hypothesis")])
    model = make_pipeline(features, LogisticRegression(max_iter=2000, C=4.0, random_state=seed))
    frame = pairs.select(["premise", "hypothesis"]).to_pandas()
    probs = cross_val_predict(model, frame, y, cv=StratifiedKFold(5, shuffle=True, random_state=seed),
                              method="predict_proba")
    flagged = find_label_issues(y, probs, filter_by="prune_by_noise_rate", frac_noise=frac_noise)
    return set(pairs["location"].filter(pl.Series(flagged)))


def fmt(s: dict) -> str:
    if not s["n"]:
        return "    -  (n 0)"
    return f"{s['precision']:6.1%} (n {s['n']:3d}, {s['low']:.0%}-{s['high']:.0%})"


def show(lang: str, name: str, result: dict, coverage: tuple[int, int]) -> None:
    print(f"\n== {lang}: {name} (emitted {coverage[1]} pairs, {coverage[0]} of them in the gold set)")
    print(f"{'label':<14}" + "".join(f"{p:>30}" for p in PARTS))
    for lab in LABELS:
        print(f"{lab:<14}" + "".join(f"{fmt(result[p]['labels'][lab]):>30}" for p in PARTS))
    print(f"{'(strategies)':<14}" + "".join(f"{fmt(result[p]['neutral_strategies']):>30}" for p in PARTS))
    print(f"{'yield':<14}" + "".join(f"{fmt(result[p]['yield']):>30}" for p in PARTS))
    print(f"{'added':<14}" + "".join(f"{result[p]['added_right']:>30}" for p in PARTS))


def show_groups(result: dict) -> None:
    print(f"  {'label|phrase or strategy':<48}" + "".join(f"{p:>30}" for p in PARTS))
    for key in result["all"]["groups"]:
        print(f"  {key:<48}" + "".join(f"{fmt(result[p]['groups'].get(key, summary(0, 0))):>30}" for p in PARTS))


# The genres of each gold set's sources (benchmarks/gold_sets.py SOURCES), for the card.
GOLD_GENRES = {"ro": ("news", "speeches", "novels", "wikipedia"), "es": ("novels",), "en": ("wikipedia",)}


def _measured_lines(result: dict, part: str, indent: str, neutral_emitted: bool) -> list[str]:
    """`labels`, `phrases` and `neutral` of one configuration's figures on `part`, as YAML lines."""
    groups = result[part]["groups"]
    lines = [f"{indent}labels:"]
    for lab in LABELS:
        s = result[part]["labels"][lab]
        lines.append(f"{indent}  {lab}: {{correct: {s['correct']}, n: {s['n']}}}")
    lines.append(f"{indent}phrases:")
    for key, s in groups.items():
        label, group = key.split("|", 1)
        if label != "neutral":
            name = json.dumps(group, ensure_ascii=False)
            lines.append(f"{indent}  {name}: {{label: {label}, correct: {s['correct']}, n: {s['n']}}}")
    if neutral_emitted:  # the check judges only the drawn candidates: those it kept
        lines.append(f"{indent}neutral:  # the strategy's checked candidates that the run emits and the check keeps")
        strategies = {k.split("|", 1)[1]: s for k, s in groups.items() if k.startswith("neutral|")}
    else:
        lines.append(f"{indent}neutral:  # every checked candidate of the strategy "
                     "(the draw takes others of the same kind)")
        strategies = result[part]["strategies"]
    for group, s in strategies.items():
        lines.append(f"{indent}  {group}: {{correct: {s['correct']}, n: {s['n']}}}")
    return lines


def lexicon_block(lang: str, result: dict, gold_path: str, about: str, part: str = "test",
                  checked: dict | None = None) -> str:
    """The YAML text of `measured_precision`, from the gold set's test part: the tuning part
    chose the filters, so its figures are optimistic for the pairs they keep. `checked`: the
    same measurement with the semantic check on ({result, head_sha256, threshold,
    neutral_threshold, about}), which the card uses for a run that went through the check with
    that head and those thresholds."""
    lines = [BLOCK_START,
             "# Label precision measured by hand-checked gold pairs (docs/label-quality.md): per phrase and",
             "# per neutral strategy, the pairs of the gold set's test part the default job emits (n) and",
             "# those whose label readers confirmed (correct); the tuning part chose the filters, so only",
             "# the test part is unbiased. The dataset card's \"Estimated label precision\" reads it.",
             "measured_precision:",
             f"  gold_set: {gold_path}",
             f"  genres: [{', '.join(GOLD_GENRES[lang])}]  # the genres of the gold set's text (the card compares "
             "the corpus's)",
             f"  about: {json.dumps(about, ensure_ascii=False)}",
             *_measured_lines(result, part, "  ", neutral_emitted=False)]
    if checked:
        lines += ["  # the same test part with --semantic-check on: the card's figures for a run whose check used",
                  "  # this head (sha256) and these thresholds; the tuning part also trained the head",
                  "  semantic_check:",
                  f"    head_sha256: {checked['head_sha256']}",
                  f"    threshold: {checked['threshold']}",
                  f"    neutral_threshold: {checked['neutral_threshold']}",
                  f"    about: {json.dumps(checked['about'], ensure_ascii=False)}",
                  *_measured_lines(checked["result"], part, "    ", neutral_emitted=True)]
    lines.append(BLOCK_END)
    return "\n".join(lines) + "\n"


def write_lexicon(lang: str, block: str) -> Path:
    path = Path(str(lexicon_path(lang)))
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(BLOCK_START) + r".*?" + re.escape(BLOCK_END) + r"\n", re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip("\n") + "\n\n" + block
    path.write_text(text, encoding="utf-8")
    load_lexicon(lang)  # still a valid lexicon
    return path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lang", action="append", choices=("ro", "es", "en"), help="repeatable (default: all three)")
    ap.add_argument("--ablation", action="store_true", help="also run each filter off on its own")
    ap.add_argument("--groups", action="store_true", help="print per-phrase and per-strategy precision")
    ap.add_argument("--learned", type=float, default=None, metavar="FRAC",
                    help="also measure the default run after confident learning (cleanlab) drops the pairs it "
                         "flags; FRAC: cleanlab's frac_noise, the share of the estimated errors to drop")
    ap.add_argument("--write-lexicon", action="store_true",
                    help="record the default configuration's figures in the lexicon's measured_precision")
    ap.add_argument("--semantic-check", action="store_true",
                    help="also run the default configuration with the semantic check on (stages 1-2 and `check`; "
                         "its table `checked/` is measured), and the check without the label filters")
    ap.add_argument("--round", action="append", help="only the gold items of this round (initial, extension, "
                    "extension-2); repeatable (default: all)")
    ap.add_argument("--json", type=Path, default=RESULTS / "label-precision.json")
    args = ap.parse_args(argv)
    configs = dict(CONFIGS, **(ABLATION if args.ablation else {}),
                   **({CHECK: CHECK_FLAGS, **CHECK_ALONE} if args.semantic_check else {}))
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    results = {"commit": commit, "configs": configs, "languages": {}}
    for lang in args.lang or ["ro", "es", "en"]:
        lexicon = load_lexicon(lang)
        gold = [g for g in load_gold(lang) if not args.round or g.get("round", "initial") in args.round]
        per = results["languages"][lang] = {}
        for name, flags in configs.items():
            slug = re.sub(r"[^a-z0-9]+", "-", name)
            checked = "--semantic-check" in flags
            out = run_job(lang, WORK / "gold-runs" / f"{lang}-{slug}", flags, stages="check" if checked else "pairs")
            emitted, total = emitted_pairs(out, lexicon, "checked" if checked else "pairs")
            if args.learned is not None and name == "default":
                result = measure(gold, emitted, lexicon)
                per[name] = dict(result, emitted=total, emitted_in_gold=sum(1 for g in gold if gold_location(g) in emitted))
                show(lang, name, result, (per[name]["emitted_in_gold"], total))
                flagged = confident_learning(out, args.learned)
                emitted = {k: v for k, v in emitted.items() if k not in flagged}
                total -= len(flagged)
                name = f"default + confident learning (frac_noise {args.learned})"
            result = measure(gold, emitted, lexicon)
            covered = sum(1 for g in gold if gold_location(g) in emitted)
            per[name] = dict(result, emitted=total, emitted_in_gold=covered)
            show(lang, name, result, (covered, total))
            if args.groups:
                show_groups(result)
        if args.write_lexicon:
            first = next(iter(configs))
            about = (f"the test part of benchmarks/gold/{lang}.jsonl, "
                     f"{sum(1 for g in gold if g.get('gold') and g['part'] == 'test')} judged pairs; "
                     f"the job's default settings at commit {commit}")
            checked = None
            if CHECK in per:
                found = check_head.load()
                checked = {"result": per[CHECK], "head_sha256": found.sha256, "threshold": found.threshold,
                           "neutral_threshold": found.neutral_threshold,
                           "about": about.replace("default settings at", "default settings with --semantic-check on "
                                                  f"(head sha256 {found.sha256[:12]}) at")}
            path = write_lexicon(lang, lexicon_block(lang, per[first], f"benchmarks/gold/{lang}.jsonl", about,
                                                     checked=checked))
            print(f"wrote measured_precision to {path}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    print(f"\nwrote {args.json}")


if __name__ == "__main__":
    main()
