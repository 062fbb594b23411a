"""Stress tests of a run (`python -m trainer stress`, trainer/commands/stress.py).

Four parallel copies of the test data (Naik et al. 2018, as ESNLIR §3.5 used them), built
from the `stress_tests` templates of `phrase_lexicons/<lang>.yaml`:

- ``length_mismatch``: the premise gets a tautology appended `times` times;
- ``negation``: the hypothesis gets a negated tautology appended;
- ``overlap``: the hypothesis gets the tautology appended once;
- ``spelling``: one word of the premise is misspelt (the seeded rule of :func:`misspell`).

`--data` is a file or a dataset folder (its `--split`, default test, else its only split).
`--label-map`/`--unmapped` are `evaluate`'s: data with another label set is scored in the
mapped label space. The run is evaluated on the original and on each copy. Output (``--output``,
default ``RUN/stress/``, written beside it and swapped in at the end): ``metrics.json``
keyed by test name (accuracy, macro-F1, per-class F1, and the change from the original),
``sets/<test>.parquet`` (the test sets), ``predictions.parquet``, ``table.md`` (ESNLIR Table 6
layout) and ``config.json``.
"""
from __future__ import annotations

import re

import pandas as pd

from extractor.core.errors import UserError
from extractor.core.hashing import stable_hash
from extractor.lexicon.lexicon import LexiconError, lexicon_path, load_lexicon

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
