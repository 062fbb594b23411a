"""`python -m trainer stress RUN --data FILE_OR_SPLITS --lang LANG`: stress tests of a run.

Four parallel copies of the test data (Naik et al. 2018, as ESNLIR §3.5 used them), built
from the `stress_tests` templates of `phrase_lexicons/<lang>.yaml`:

- ``length_mismatch``: the premise gets a tautology appended `times` times;
- ``negation``: the hypothesis gets a negated tautology appended;
- ``overlap``: the hypothesis gets the tautology appended once;
- ``spelling``: one word of the premise is misspelt (the seeded rule of :func:`misspell`).

`--data` is a file or a dataset folder (its `--split`, default test, else its only split).
`--label-map`/`--unmapped` are `evaluate`'s: data with another label set is scored in the
mapped label space. The run is evaluated on the original and on each copy. Output (``--output``,
default ``RUN/stress/``, written beside it and swapped in at the end; ``--out`` is a deprecated alias): ``metrics.json`` keyed by test name (accuracy, macro-F1,
per-class F1, and the change from the original), ``sets/<test>.parquet`` (the test sets),
``predictions.parquet``, ``table.md`` (ESNLIR Table 6 layout) and ``config.json``.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from extractor.core.errors import UserError
from extractor.core.hashing import stable_hash
from extractor.io.atomic import WorkFolder
from extractor.lexicon.lexicon import LexiconError, lexicon_path, load_lexicon
from trainer.data import (add_column_arguments, apply_label_map, check_ids, drop_unlabeled, load_one_split,
                          parse_label_map)
from trainer.errors import RunError
from trainer.evaluate import add_label_map_arguments, evaluate_frames, note_unmapped, run_mapping
from trainer.flags import add_data, add_output
from trainer.runs import check_labels, load_run, write_json, write_parquet

TESTS = ("length_mismatch", "negation", "overlap", "spelling")
APPEND_TESTS = ("length_mismatch", "negation", "overlap")
TARGETS = ("premise", "hypothesis")
_FINAL = ".!?…;:"
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)


# ---------------------------------------------------------------------------- templates

def load_templates(lang_or_path: str) -> tuple[dict, str]:
    """The validated `stress_tests` entry of a lexicon and the lexicon's path."""
    try:
        lex = load_lexicon(lang_or_path)
    except LexiconError as exc:
        raise UserError(str(exc).splitlines()[0] if str(exc) else f"{lang_or_path}: cannot read the lexicon") from exc
    path = str(lang_or_path) if str(lang_or_path).endswith((".yaml", ".yml")) else str(lexicon_path(lang_or_path))
    return validate_templates(lex.stress_tests, path), path


def validate_templates(raw, where: str) -> dict:
    """{test: {"target", "text", "times"} or {"target", "min_word_length"}}; one-line errors."""
    if not raw:
        raise UserError(f"{where}: no stress_tests entry; add one (format: phrase_lexicons/README.md)")
    if not isinstance(raw, dict):
        raise UserError(f"{where}: stress_tests must map test names to settings")
    unknown = sorted(set(raw) - set(TESTS))
    if unknown:
        raise UserError(f"{where}: stress_tests: unknown test {unknown[0]!r} (tests: {', '.join(TESTS)})")
    out = {}
    for name in TESTS:
        if name not in raw:
            raise UserError(f"{where}: stress_tests.{name} is missing")
        t = raw[name] or {}
        if not isinstance(t, dict):
            raise UserError(f"{where}: stress_tests.{name} must be a mapping")
        target = t.get("target", "hypothesis" if name in ("negation", "overlap") else "premise")
        if target not in TARGETS:
            raise UserError(f"{where}: stress_tests.{name}.target must be premise or hypothesis (got {target!r})")
        if name in APPEND_TESTS:
            text = str(t.get("text") or "").strip()
            if not text:
                raise UserError(f"{where}: stress_tests.{name}.text is missing or empty")
            times = t.get("times", 1)
            if not isinstance(times, int) or times < 1:
                raise UserError(f"{where}: stress_tests.{name}.times must be a positive integer (got {times!r})")
            out[name] = {"target": target, "text": text, "times": times}
        else:
            n = t.get("min_word_length", 4)
            if not isinstance(n, int) or n < 3:
                raise UserError(f"{where}: stress_tests.{name}.min_word_length must be an integer >= 3 (got {n!r})")
            out[name] = {"target": target, "min_word_length": n}
    return out


# ---------------------------------------------------------------------------- transformations

def append_phrase(sentence: str, phrase: str, times: int = 1) -> str:
    """``sentence`` with ``phrase`` appended `times` times (joined by spaces), before a final
    punctuation mark if there is one: "The cat sat." -> "The cat sat and true is true."."""
    s = str(sentence).rstrip()
    tail = " ".join([phrase] * times)
    if s and s[-1] in _FINAL:
        return f"{s[:-1].rstrip()} {tail}{s[-1]}"
    return f"{s} {tail}" if s else tail


def misspell(sentence: str, key: str, seed: int = 0, min_word_length: int = 4) -> str | None:
    """The seeded spelling rule: swap two adjacent inner letters of one word.

    Candidates are the words of at least `min_word_length` letters. The word is chosen by
    ``stable_hash(key, "word", seed) % n_candidates``; in it, the pair of neighbouring letters
    (never the first or last letter) by ``stable_hash(key, "pos", seed)``, moving on to the next
    pair, then the next word, when the two letters are the same. Returns None when no word
    can change (the row is kept as it is and counted as unchanged).
    """
    words = [m for m in _WORD.finditer(sentence) if len(m.group()) >= min_word_length]
    if not words:
        return None
    w0 = stable_hash(key, "word", seed=seed) % len(words)
    p0 = stable_hash(key, "pos", seed=seed)
    for k in range(len(words)):
        m = words[(w0 + k) % len(words)]
        word = m.group()
        inner = len(word) - 3  # swap positions 1 .. len-3 with their right neighbour
        for j in range(inner):
            i = 1 + (p0 + j) % inner
            if word[i] != word[i + 1]:
                new = word[:i] + word[i + 1] + word[i] + word[i + 2:]
                return sentence[:m.start()] + new + sentence[m.end():]
    return None


def build_sets(df: pd.DataFrame, templates: dict, seed: int = 0, tests=TESTS) -> dict[str, pd.DataFrame]:
    """The stress copies of `df` (same rows, same ids, one sentence changed), with a `changed` column."""
    sets = {}
    for name in tests:
        t = templates[name]
        out = df.copy()
        col = t["target"]
        if name in APPEND_TESTS:
            out[col] = [append_phrase(s, t["text"], t["times"]) for s in df[col]]
            out["changed"] = True
        else:
            new = [misspell(s, k, seed, t["min_word_length"]) for s, k in zip(df[col], df["pair_id"])]
            out[col] = [n if n is not None else s for n, s in zip(new, df[col])]
            out["changed"] = [n is not None for n in new]
        out.attrs = dict(df.attrs)
        sets[name] = out
    return sets


# ---------------------------------------------------------------------------- report

def stress_report(metrics: dict[str, dict], labels: list[str]) -> dict:
    """metrics.json: each test's metrics plus `change` (test minus original)."""
    base = metrics["original"]
    out = {}
    for name, m in metrics.items():
        entry = {"n": m["n"], "accuracy": m["accuracy"], "macro_f1": m["macro_f1"],
                 "per_class_f1": {lab: m["per_class"][lab]["f1"] for lab in labels},
                 "per_class": m["per_class"], "confusion_matrix": m["confusion_matrix"]}
        for k in ("changed_rows", "unchanged_rows", "predictions_changed", "label_map"):
            if k in m:
                entry[k] = m[k]
        if name != "original":
            entry["change"] = {"accuracy": m["accuracy"] - base["accuracy"],
                               "macro_f1": m["macro_f1"] - base["macro_f1"],
                               "per_class_f1": {lab: m["per_class"][lab]["f1"] - base["per_class"][lab]["f1"]
                                                for lab in labels}}
        out[name] = entry
    return out


def table_markdown(report: dict, labels: list[str], split: str = "test") -> str:
    """ESNLIR Table 6: one row per test set, per-class F1, then accuracy, macro-F1 and its change."""
    head = ["stress test", *labels, "accuracy", "macro-F1", "Δ macro-F1"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for name, e in report.items():
        row = split if name == "original" else f"{split}_{name}"
        delta = "" if name == "original" else f"{e['change']['macro_f1']:+.3f}"
        cells = [row, *[f"{e['per_class_f1'][lab]:.3f}" for lab in labels], f"{e['accuracy']:.3f}",
                 f"{e['macro_f1']:.3f}", delta]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- command

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN")
    add_data(p, "test file, or a dataset folder (see --split)", required=True)
    p.add_argument("--split", default=None, help="split of a dataset folder (default: test, or its only split)")
    p.add_argument("--lang", required=True,
                   help="lexicon whose stress_tests templates to use: a language code (ro, es, en) or a YAML path")
    p.add_argument("--tests", default=",".join(TESTS), help=f"comma-separated subset of {', '.join(TESTS)}")
    p.add_argument("--seed", type=int, default=0, help="seed of the spelling rule (default 0)")
    add_output(p, "output directory (default: RUN/stress)")
    p.add_argument("--duplicate-ids", choices=["error", "drop"], default="error")
    add_label_map_arguments(p)
    add_column_arguments(p, from_run=True)


def run(args) -> int:
    tests = [t.strip() for t in args.tests.split(",") if t.strip()]
    bad = [t for t in tests if t not in TESTS]
    if bad or not tests:
        raise UserError(f"--tests {args.tests!r}: unknown test {bad[0] if bad else ''!r} (tests: {', '.join(TESTS)})")
    if not args.data.exists():
        raise UserError(f"{args.data}: no such file or folder (--data)")
    templates, lexicon = load_templates(args.lang)
    label_map = parse_label_map(args.label_map)
    run_ = load_run(args.run_dir)
    split, df = load_one_split(args.data, args.split, **run_mapping(args, run_))
    split = "test" if split == "data" else split
    df, n_unlabeled = drop_unlabeled(df)
    df, n_dup = check_ids(df, str(args.data), args.duplicate_ids)
    df = apply_label_map(df, label_map)
    if not label_map:
        try:
            check_labels(df, run_.labels, str(args.data))
        except RunError as exc:
            raise UserError(f"{exc}; map the file's labels with --label-map FILE_LABEL=MODEL_LABEL") from exc
    if not len(df):
        raise UserError(f"{args.data}: no labelled rows to stress")
    sets = build_sets(df, templates, args.seed, tests)
    frames = {"original": df, **sets}
    metrics, preds, labels = evaluate_frames(run_, frames, label_map, args.unmapped)
    base_pred = preds.loc[preds["split"] == "original", "pred"].to_numpy()
    for name, s in sets.items():
        metrics[name]["changed_rows"] = int(s["changed"].sum())
        metrics[name]["unchanged_rows"] = int((~s["changed"]).sum())
        metrics[name]["predictions_changed"] = float(
            np.mean(preds.loc[preds["split"] == name, "pred"].to_numpy() != base_pred))
    report = stress_report(metrics, labels)
    out = args.output or Path(args.run_dir) / "stress"
    with WorkFolder(out) as work:
        write_json(work / "metrics.json", report)
        (work / "sets").mkdir()
        for name, s in sets.items():
            write_parquet(s, work / "sets" / f"{name}.parquet")
        write_parquet(preds, work / "predictions.parquet")
        (work / "table.md").write_text(table_markdown(report, labels, split))
        write_json(work / "config.json", {"run": str(args.run_dir), "data": str(args.data), "split": split,
                                         "lexicon": lexicon, "templates": {t: templates[t] for t in tests},
                                         "seed": args.seed, "n": len(df), "label_map": label_map,
                                         "unmapped": args.unmapped if label_map else None,
                                         "dropped": {k: v for k, v in (("unlabeled", n_unlabeled),
                                                                      ("duplicate_id", n_dup)) if v}})
    print(table_markdown(report, labels, split), end="")
    for name in tests:
        e = report[name]
        print(f"{name}: accuracy {e['accuracy']:.4f} ({e['change']['accuracy']:+.4f}), macro-F1 {e['macro_f1']:.4f} "
              f"({e['change']['macro_f1']:+.4f}); {e['predictions_changed']:.1%} of predictions changed"
              + (f"; {e['unchanged_rows']} rows had no word to misspell" if e.get("unchanged_rows") else ""))
    note_unmapped({"original": metrics["original"]})
    print(f"wrote {out}/metrics.json, {out}/table.md and {len(tests)} test sets in {out}/sets/", file=sys.stderr)
    return 0
