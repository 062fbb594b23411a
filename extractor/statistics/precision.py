"""Label precision measured on a gold set, and the estimate of a run's label precision from it
(docs/label-quality.md).

A lexicon carries what `benchmarks/label_precision.py` measured on its language's gold set
(`measured_precision`: per phrase and per neutral strategy, pairs checked and pairs whose
label was right). A run's estimate per label weighs each phrase's (or strategy's) measured
precision by how many pairs of that label it gave in the run's own splits: a corpus rich in
a poor phrase gets a lower estimate than one rich in a good phrase. Phrases without a
measurement take their label's pooled measurement. The interval is that weighted mix of the
Wilson 95 % intervals of the parts: each part's interval is exact for its own pairs, and a
weighted mean of the bounds is a conservative bound of the weighted mean (it ignores that the
parts' errors partly cancel).
"""
from __future__ import annotations

import math

Z95 = 1.959963984540054


def wilson(correct: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (`statsmodels`' `proportion_confint(...,
    method="wilson")`, checked in the tests); (0, 1) when n is 0."""
    if n <= 0:
        return 0.0, 1.0
    p = correct / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def summary(correct: int, n: int) -> dict:
    """{precision, n, correct, low, high} of one group of checked pairs."""
    low, high = wilson(correct, n)
    return {"precision": (correct / n) if n else None, "n": n, "correct": correct, "low": low, "high": high}


def _part(measured: dict, label: str, key: str | None) -> dict | None:
    """The measurement a group of a run's pairs takes: its phrase's or strategy's own, else the
    label's pooled one."""
    group = measured.get("neutral" if label == "neutral" else "phrases", {})
    own = group.get(key) if key is not None else None
    if own and own.get("n"):
        return own
    pooled = measured.get("labels", {}).get(label)
    return pooled if pooled and pooled.get("n") else None


def estimate(counts: dict, measured: dict) -> dict:
    """The run's estimated precision per label. `counts`: {label: {phrase or neutral strategy:
    pairs in the splits}}; `measured`: a lexicon's `measured_precision`. Returns {label:
    {precision, low, high, pairs, pairs_measured_by_own_phrase}} (precision None when nothing of
    that label was measured)."""
    out: dict[str, dict] = {}
    for label, groups in sorted(counts.items()):
        total = sum(groups.values())
        acc = {"precision": 0.0, "low": 0.0, "high": 0.0}
        weight = own = 0
        for key, n in groups.items():
            part = _part(measured, label, key)
            if part is None or not n:
                continue
            s = summary(int(part["correct"]), int(part["n"]))
            for k in acc:
                acc[k] += n * s[k]
            weight += n
            group = measured.get("neutral" if label == "neutral" else "phrases", {})
            own += n if (group.get(key) or {}).get("n") else 0
        out[label] = ({k: v / weight for k, v in acc.items()} if weight else
                      {"precision": None, "low": None, "high": None})
        out[label].update(pairs=total, pairs_measured_by_own_phrase=own)
    return out


def genre_note(gold_genres, genres) -> str:
    """What the estimate is worth for this corpus's genres: the gold set's own, or not."""
    if not gold_genres:
        return "The gold set's genres are not recorded: the estimate may not hold for this corpus's text."
    theirs = sorted({str(g) for g in genres or ()}) or ["unknown"]
    other = [g for g in theirs if g not in gold_genres]
    said = (f"The gold set's text is {', '.join(gold_genres)}; this corpus's is {', '.join(theirs)}")
    if not other:
        return said + ": the same genres."
    return (said + f": **genre mismatch** ({', '.join(other)} not in the gold set). Phrases are used differently "
            "across genres, so these figures are a rough guide here, not a measurement; check a sample by hand "
            "(docs/label-quality.md).")


def markdown(block: dict | None, genres=()) -> str:
    """The card's "Estimated label precision" section body, from stats.json's
    `label_precision` block ({gold_set, about, genres, labels: `estimate`'s result});
    `genres`: the corpus's, compared with the gold set's."""
    if not block or not block.get("gold_set"):
        return ("No gold set is recorded for this lexicon (`measured_precision`): the precision of these "
                "labels is unknown. docs/label-quality.md says how to measure it.")
    lines = ["Estimated share of pairs whose label is right, per label: the precision of each phrase (and "
             f"neutral strategy) measured by hand on the gold set `{block['gold_set']}` ({block.get('about') or ''}), "
             "weighted by this corpus's own mix of phrases; the 95 % interval mixes the parts' Wilson "
             "intervals the same way (docs/label-quality.md). Distant supervision: these labels were not "
             "checked one by one.", "",
             "| label | pairs | estimated precision | 95 % interval | pairs whose own phrase was measured |",
             "|---|---:|---:|---|---:|"]
    for label, e in block["labels"].items():
        if e["precision"] is None:
            lines.append(f"| {label} | {e['pairs']:,} | unknown | - | 0 |")
            continue
        lines.append(f"| {label} | {e['pairs']:,} | {e['precision']:.1%} | {e['low']:.1%} - {e['high']:.1%} | "
                     f"{e['pairs_measured_by_own_phrase']:,} |")
    lines += ["", genre_note(block.get("genres"), genres)]
    if block.get("semantic_check") == "measured":
        lines += ["", "These pairs went through the semantic check, and the figures were measured with it on (the "
                  f"same head, sha256 `{block['head_sha256'][:12]}`, and thresholds): the gold pairs the check keeps."]
    elif block.get("semantic_check"):
        lines += ["", "These pairs went through the semantic check, but no measurement with its head (sha256 "
                  f"`{(block.get('head_sha256') or '')[:12]}`) and thresholds is recorded in the lexicon: the figures "
                  "are those of the pairs before the check (benchmarks/label_precision.py --semantic-check "
                  "--write-lexicon records them)."]
    return "\n".join(lines)
