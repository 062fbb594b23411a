"""Fit the semantic check's head (extractor/check/head.json) on the gold sets' tuning parts,
and choose its thresholds by cross-validation there (docs/label-quality.md "The semantic
check"). The test parts are never read.

    .venv/bin/python benchmarks/check_head.py            # rebuild extractor/check/head.json
    .venv/bin/python benchmarks/check_head.py --check    # exit 1 unless the rebuild gives the same bytes

The texts of the gold items are resolved from ../shared/data: the job (stages 1-2, every label
filter off, so that the pairs the filters would drop are there too) runs over each language's
sources (`gold_sets.run_job`) and its pairs are joined with the items by location; an item the
run does not emit (a phrase of an extension round, a neutral candidate the draw left out)
takes its sentences from the run's `sentences/` table by its refs (a marked hypothesis
stripped of its phrase by the lexicon's matcher, a neutral one re-cased as the pairs stage
does). Embeddings: the derived multilingual-e5-small, float32, E5's "query: " prompt.

The prior: a 4-way logistic regression (C 1.0) on SciNLI's 4,000 human-labelled pairs
(`../shared/data/nli/scinli-train-2k-human.jsonl` and `scinli-dev.jsonl`, embedded the same
way). Heads: scikit-learn logistic regressions (lbfgs, L2) on `extractor.check.head`'s
features (with the prior's probabilities and, for marked pairs, the phrases of at least
MIN_PHRASE tuning pairs); C by 5-fold stratified cross-validation (log loss); the
thresholds from the same folds' out-of-fold probabilities:
- marked: the largest threshold that keeps at least KEEP_RIGHT of the right marked pairs;
- neutral: the smallest threshold that keeps at least KEEP_NEUTRAL of the right neutral pairs.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import log_loss, roc_auc_score  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402

from extractor.check import head as check_head  # noqa: E402
from extractor.core.names import NEUTRAL  # noqa: E402
from extractor.encoder import cache  # noqa: E402
from extractor.lexicon.lexicon import load_lexicon  # noqa: E402
from extractor.pairs.matching import matcher_for  # noqa: E402
from extractor.pairs.pairing import as_hypothesis  # noqa: E402
from gold_sets import LABELS, SHARED, WORK, gold_location, load_gold, read_pairs, run_job  # noqa: E402

LANGS = ("ro", "es", "en")
HEAD = REPO / "extractor" / "check" / check_head.HEAD_FILE
EMBEDDINGS = WORK / "check-head-variants"  # git-ignored
CS = (0.03, 0.1, 0.3, 1.0, 3.0, 10.0)
FOLDS, SEED = 5, 0
KEEP_RIGHT = 0.80     # marked: the share of right pairs the check keeps, out of fold
KEEP_NEUTRAL = 0.90   # neutral: likewise
GRID = np.round(np.arange(0.01, 1.0, 0.01), 2)
PRIOR_C = 1.0
MIN_PHRASE = 5        # a phrase with fewer marked tuning pairs gets no intercept of its own
SCINLI = ("scinli-train-2k-human.jsonl", "scinli-dev.jsonl")


def gold_run(lang: str) -> Path:
    return run_job(lang, WORK / "gold-runs" / f"{lang}-no-label-filters", ["--no-label-filter", "all"])


def resolve(lang: str, part: str = "tune") -> list[dict]:
    """The judged gold items of `part` with their texts (`premise`, `hypothesis`)."""
    out = gold_run(lang)
    pairs = read_pairs(out)
    texts = dict(zip(pairs["location"], zip(pairs["premise"], pairs["hypothesis"])))
    sentences = pq.read_table(str(out / "sentences"), columns=["doc_id", "para_idx", "sent_idx", "text"]).to_pydict()
    by_ref = {(d, p, s): t for d, p, s, t in zip(sentences["doc_id"], sentences["para_idx"], sentences["sent_idx"],
                                                 sentences["text"])}
    matcher = matcher_for(load_lexicon(lang, phrase_set=["extended"]) if lang == "ro" else load_lexicon(lang))
    items = []
    for g in load_gold(lang):
        if not g.get("gold") or g["part"] != part:
            continue
        found = texts.get(gold_location(g))
        if found is None:
            p, h = (by_ref.get((r["doc_id"], r["para_idx"], r["sent_idx"])) for r in (g["premise_ref"],
                                                                                    g["hypothesis_ref"]))
            if p is None or h is None:
                continue
            if g["auto_label"] == NEUTRAL:
                h = as_hypothesis(h)
            else:
                m = matcher.match(h)
                if m is None:
                    continue
                h = m.hypothesis
            found = (p, h)
        items.append(dict(g, premise=found[0], hypothesis=found[1]))
    return items


def embed_items(items: list[dict]) -> tuple[np.ndarray, np.ndarray]:
    """The check's embeddings of the items' premises and hypotheses."""
    return embed_pairs([g["premise"] for g in items], [g["hypothesis"] for g in items])


def embed_pairs(premises: list[str], hypotheses: list[str]) -> tuple[np.ndarray, np.ndarray]:
    vectors = embed_cached(premises + hypotheses)
    return vectors[:len(premises)], vectors[len(premises):]


def embed_cached(texts: list[str]) -> np.ndarray:
    """The check's embeddings of `texts` (distinct texts once), cached under EMBEDDINGS by
    their digest (this machine's: float32 embeddings differ in their last bits between CPU kinds)."""
    key = hashlib.blake2b("\0".join(texts).encode(), digest_size=8).hexdigest()
    path = EMBEDDINGS / f"{key}.npy"
    if path.exists():
        return np.load(path)
    from extractor.check.rounds import distinct_embeddings  # after sys.path (the checkout's code)
    from extractor.encoder.embed import Encoder

    encoder = Encoder(cache.require(cache.NAME), dtype="float32")
    vectors = distinct_embeddings(texts, lambda t: encoder.embed(t, kind=check_head.KIND, batch_size=64))
    EMBEDDINGS.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def scinli() -> list[dict]:
    """SciNLI's human-labelled pairs under ../shared/data/nli (sentence1, sentence2, label)."""
    return [json.loads(line) for name in SCINLI
            for line in (SHARED / "nli" / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def fit_prior(rows: list[dict]) -> LogisticRegression:
    """The 4-way prior p(label | pair) on SciNLI, classes in LABELS order."""
    su, sv = embed_pairs([r["sentence1"] for r in rows], [r["sentence2"] for r in rows])
    return LogisticRegression(C=PRIOR_C, max_iter=3000).fit(check_head.related_features(su, sv),
                                                            np.array([LABELS.index(r["label"]) for r in rows]))


def known_phrases(items: list[dict]) -> list[str]:
    """The phrases of at least MIN_PHRASE marked tuning items, sorted."""
    counts: dict = {}
    for g in items:
        if g["auto_label"] != NEUTRAL and g.get("phrase"):
            counts[g["phrase"]] = counts.get(g["phrase"], 0) + 1
    return sorted(p for p, n in counts.items() if n >= MIN_PHRASE)


def fit_cv(x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, dict]:
    """(C, out-of-fold probabilities, figures): C by cross-validated log loss."""
    folds = list(StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(x, y))
    best = None
    for c in CS:
        oof = np.zeros(len(y))
        for train, test in folds:
            model = LogisticRegression(C=c, max_iter=5000).fit(x[train], y[train])
            oof[test] = model.predict_proba(x[test])[:, 1]
        loss = log_loss(y, oof, labels=[0, 1])
        if best is None or loss < best[0] - 1e-12:
            best = (loss, c, oof)
    assert best is not None
    loss, c, oof = best
    return c, oof, {"C": c, "cv_log_loss": round(loss, 4), "cv_auc": round(float(roc_auc_score(y, oof)), 4),
                    "n": int(len(y)), "positives": int(y.sum())}


def fit(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    model = LogisticRegression(C=c, max_iter=5000).fit(x, y)
    return model.coef_[0], float(model.intercept_[0])


def build() -> bytes:
    items = [g for lang in LANGS for g in resolve(lang)]
    u, v = embed_items(items)
    rows = scinli()
    prior_model = fit_prior(rows)
    prior = prior_model.predict_proba(check_head.related_features(u, v))
    marked = np.array([g["auto_label"] != NEUTRAL for g in items])
    right = np.array([g["gold"] == g["auto_label"] for g in items])
    labels = [g["auto_label"] for g, m in zip(items, marked) if m]
    phrases = [g.get("phrase") or "" for g, m in zip(items, marked) if m]
    known = known_phrases(items)
    xm = check_head.marked_features(u[marked], v[marked], labels, phrases, known, prior[marked])
    ym = right[marked].astype(int)
    cm, oof_m, fig_m = fit_cv(xm, ym)
    xn = check_head.neutral_features(u[~marked], v[~marked], prior[~marked])
    yn = (~right[~marked]).astype(int)  # related: the readers' label is not neutral
    cn, oof_n, fig_n = fit_cv(xn, yn)
    t_marked = max(t for t in GRID if (oof_m[ym == 1] >= t).mean() >= KEEP_RIGHT)
    t_neutral = min(t for t in GRID if (oof_n[yn == 0] < t).mean() >= KEEP_NEUTRAL)
    for fig, y, keep in ((fig_m, ym, oof_m >= t_marked), (fig_n, 1 - yn, oof_n < t_neutral)):
        fig["cv_precision_before"] = round(float(y.mean()), 4)
        fig["cv_precision_after"] = round(float(y[keep].mean()), 4) if keep.any() else None
        fig["cv_kept_right"] = round(float(keep[y == 1].mean()), 4)
    training = {"data": "the tuning parts (part != test) of benchmarks/gold/{ro,es,en}.jsonl, judged items",
                "per_language": {lang: sum(g["lang"] == lang for g in items) for lang in LANGS},
                "prior": {"data": "../shared/data/nli/" + ", ".join(SCINLI) + " (SciNLI, human labels)",
                          "pairs": len(rows), "C": PRIOR_C},
                "marked": fig_m, "related": fig_n, "folds": FOLDS, "seed": SEED, "min_phrase": MIN_PHRASE,
                "threshold_rule": {"marked": f"largest keeping >= {KEEP_RIGHT} of the right marked pairs out of fold",
                                   "neutral": f"smallest keeping >= {KEEP_NEUTRAL} of the right neutral pairs "
                                              "out of fold"},
                "script": "benchmarks/check_head.py"}
    return check_head.to_json((prior_model.coef_, prior_model.intercept_), fit(xm, ym, cm), fit(xn, yn, cn), known,
                              {"marked": t_marked, "neutral": t_neutral}, cache.NAME, training)


def differences(committed: bytes, rebuilt: bytes) -> str:
    """How far a rebuild is from the committed head: the thresholds, and the largest
    difference of any coefficient against the largest coefficient of its model. The float32
    embeddings differ in their last bits between CPU kinds (vector instruction sets), so a
    rebuild is byte-identical on the CPU kind that built the head, and close elsewhere."""
    a, b = json.loads(committed), json.loads(rebuilt)
    parts = [f"thresholds {a['thresholds']} -> {b['thresholds']}"]
    for name in ("prior", "marked", "related"):
        x = np.concatenate([np.ravel(a[name]["coef"]), np.ravel(a[name]["intercept"])])
        y = np.concatenate([np.ravel(b[name]["coef"]), np.ravel(b[name]["intercept"])])
        if x.shape != y.shape:
            parts.append(f"{name}: {x.size} -> {y.size} coefficients")
            continue
        parts.append(f"{name}: largest coefficient change {np.abs(x - y).max():.2g} (largest coefficient "
                     f"{np.abs(x).max():.3g})")
    return "; ".join(parts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed head instead of writing it")
    ap.add_argument("--out", type=Path, default=HEAD)
    args = ap.parse_args(argv)
    data = build()
    training = json.loads(data)["training"]
    print(json.dumps({k: training[k] for k in ("per_language", "marked", "related")}, indent=1))
    print("thresholds", json.loads(data)["thresholds"])
    if args.check:
        same = args.out.read_bytes() == data
        print("same bytes" if same else "DIFFERS from the committed head: " + differences(args.out.read_bytes(), data))
        return 0 if same else 1
    args.out.write_bytes(data)
    print(f"wrote {args.out} ({len(data):,} bytes; sha256 {check_head.from_bytes(data).sha256})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
