"""Which training data and features would make a better semantic-check head: out-of-fold
figures on the gold sets' tuning parts only (the test parts are never read), for the shipped
head's features and for heads that also learn from two human-labelled public sets under
../shared/data (docs/label-quality.md, "Other training data for the check").

    .venv/bin/python benchmarks/check_head_variants.py        # table to stdout and results/check-head-variants.json
    .venv/bin/python benchmarks/check_head_variants.py --export benchmarks/_work/check-head-variants/tune.jsonl
    .venv/bin/python benchmarks/check_head_variants.py --cross-encoder PREDICTIONS.jsonl
    .venv/bin/python benchmarks/check_head_variants.py --test     # the chosen variant on the test parts, once

`--export` writes the resolved tuning items (item, premise, hypothesis, the readers' label,
the automatic one; never committed: the texts have no license to copy) for the trainer;
`--cross-encoder` reads `python -m trainer predict --id-col item` output of a pair model
trained elsewhere (a cross-encoder fine-tuned on SciNLI) and adds `+cross-encoder`: the
shipped features and its probability of the automatic label, per label.

The extra data:

- SciNLI (`nli/scinli-train-2k-human.jsonl` and `nli/scinli-dev.jsonl`): 4,000 English pairs
  of scientific prose, labelled by people with the same four labels (contrasting,
  entailment, reasoning, neutral). A 4-way logistic regression over the pair's embeddings
  (`related_features`) gives a prior p(label | premise, hypothesis); the multilingual
  encoder carries it to Romanian and Spanish.
- RO-STS (`sts/ro-sts/RO-STS.{train,dev}.tsv`): 7,249 Romanian pairs with a human
  similarity score 0-5. A ridge regression over `pair_features` predicts it: how related two
  sentences are.

Marked variants (p(the phrase's label is right)):
- `shipped`: the features of the head shipped until 2026-12-02 (`base_marked_features`: embeddings, label, cosine);
- `+scinli`: those and the SciNLI prior (its 4 probabilities and the label's own, per label);
- `scinli-only`: per label, the SciNLI prior's probability of the label and its logarithm;
- `+phrase`: the shipped features and a one-hot of the phrase (phrases with >= 5 tuning items);
- `+phrase+scinli`: both;
- `+phrase+scinli+context`: both, and per label the sentence before the premise (`contexts`,
  from the gold run's `sentences/`): its cosine with the hypothesis, that cosine less the
  premise's, and the SciNLI prior's probability of the label for (that sentence, hypothesis):
  does the hypothesis conclude from earlier text rather than from its premise?
- with `--cross-encoder`: `+cross-encoder`, `+phrase+scinli+cross-encoder` (the shipped or the
  chosen features and the pair model's probability of the label), `cross-encoder-only`;
- `joint`: one 4-way regression fitted on SciNLI and the gold tuning items together
  (the readers' labels), its probability of the automatic label as the score.
Neutral variants (p(related)): `shipped` (`related_features`), `+sts` (and the RO-STS
prediction), `+scinli` (and the SciNLI prior), `+sts+scinli` (both), `small` (cosine,
RO-STS prediction, the prior's neutral probability only).

`--test` then reads the test parts once, for two heads only: the shipped features and the
variant chosen beforehand by the out-of-fold AUC on the tuning parts (`CHOSEN`). Each is
fitted on every tuning item (C from the folds), with the threshold rule of
benchmarks/check_head.py on the folds' probabilities, and judges the test items that the
default job emits (the label filters on: "filters + check", as label_precision.py measures).

Every variant is scored with the same 5 stratified folds over the gold items as
benchmarks/check_head.py (C by cross-validated log loss); the extra data is always in the
training side only. Printed per variant: the out-of-fold AUC over all items, over the
Romanian ones and over Romanian reasoning, and the precision before and after the
threshold that keeps 80 % of the right marked pairs (90 % of the right neutral ones).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
import numpy as np  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from sklearn.linear_model import LogisticRegression, Ridge  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.model_selection import StratifiedKFold  # noqa: E402

import check_head as check_head_build  # noqa: E402
from check_head import CS, FOLDS, GRID, KEEP_NEUTRAL, KEEP_RIGHT, LANGS, SEED, fit_cv, resolve  # noqa: E402
from extractor.check import head as check_head  # noqa: E402
from extractor.core.names import MARKED_LABELS, NEUTRAL  # noqa: E402
from gold_sets import LABELS, SHARED, WORK, gold_location, run_job  # noqa: E402
from label_precision import emitted_pairs  # noqa: E402
from extractor.lexicon.lexicon import load_lexicon  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "check-head-variants.json"
MIN_PHRASE = 5
# chosen by the tuning folds' AUC (marked 0.676 against the shipped 0.603, neutral 0.801
# against 0.768) before any test item was read
CHOSEN = {"marked": "+phrase+scinli", "neutral": "+scinli"}


def pairs_embedded(first: list[str], second: list[str]) -> tuple[np.ndarray, np.ndarray]:
    return check_head_build.embed_pairs(first, second)


def scinli() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = check_head_build.scinli()
    u, v = pairs_embedded([r["sentence1"] for r in rows], [r["sentence2"] for r in rows])
    return u, v, np.array([LABELS.index(r["label"]) for r in rows])


def ro_sts() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rows = [line.split("\t") for name in ("RO-STS.train.tsv", "RO-STS.dev.tsv")
            for line in (SHARED / "sts" / "ro-sts" / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if len(r) >= 3]
    u, v = pairs_embedded([r[1] for r in rows], [r[2] for r in rows])
    return u, v, np.array([float(r[0]) / 5.0 for r in rows])


def contexts(items: list[dict]) -> list[str | None]:
    """The sentence before each item's premise in its document (the paragraph's previous
    sentence, else the previous paragraph's last), from the gold run's `sentences/`; None for
    a document's first sentence."""
    out = []
    for lang in sorted({g["lang"] for g in items}):
        sentences = pq.read_table(str(check_head_build.gold_run(lang) / "sentences"),
                                  columns=["doc_id", "para_idx", "sent_idx", "text"]).to_pydict()
        order = sorted(zip(sentences["doc_id"], sentences["para_idx"], sentences["sent_idx"], sentences["text"]))
        before = {(d, p, s): (order[i - 1][3] if i and order[i - 1][0] == d else None)
                  for i, (d, p, s, _) in enumerate(order)}
        out += [(g["item"], before.get(tuple(g["premise_ref"][k] for k in ("doc_id", "para_idx", "sent_idx"))))
                for g in items if g["lang"] == lang]
    found = dict(out)
    return [found[g["item"]] for g in items]


def context_features(u: np.ndarray, v: np.ndarray, c: np.ndarray, has: np.ndarray, onehot: np.ndarray,
                     p_ctx_auto: np.ndarray) -> np.ndarray:
    """Per label (one-hot interactions): how close the hypothesis is to the sentence before the
    premise, against its closeness to the premise, and the SciNLI prior's probability of the
    label for (that sentence, hypothesis): a conclusion of earlier text."""
    cos_uv = np.sum(u * v, axis=1, keepdims=True)
    cos_cv = np.sum(c * v, axis=1, keepdims=True) * has
    cols = [has, cos_cv, (cos_cv - cos_uv) * has, p_ctx_auto * has]
    return np.hstack([onehot * col for col in cols])


def label_index(labels) -> np.ndarray:
    return np.array([LABELS.index(lab) for lab in labels])


def threshold_figures(score: np.ndarray, right: np.ndarray, keep_share: float, keep_high: bool) -> dict:
    """The threshold that keeps `keep_share` of the right items (high scores kept when
    `keep_high`), and the precision of what it keeps."""
    if keep_high:
        t = max(t for t in GRID if (score[right] >= t).mean() >= keep_share)
        keep = score >= t
    else:
        t = min(t for t in GRID if (score[right] < t).mean() >= keep_share)
        keep = score < t
    return {"threshold": float(t), "kept": int(keep.sum()), "precision_after": float(right[keep].mean())}


def auc(y: np.ndarray, score: np.ndarray) -> float | None:
    return float(roc_auc_score(y, score)) if 0 < y.sum() < len(y) else None


def joint_oof(x_gold: np.ndarray, gold_labels: np.ndarray, auto: np.ndarray, y_right: np.ndarray,
              x_extra: np.ndarray, extra_labels: np.ndarray) -> tuple[float, np.ndarray]:
    """Out-of-fold p(automatic label) of a 4-way regression on the extra pairs and the gold
    training folds (the readers' labels); C by the folds' log loss of right/wrong."""
    folds = list(StratifiedKFold(FOLDS, shuffle=True, random_state=SEED).split(x_gold, y_right))
    best = None
    for c in CS:
        oof = np.zeros(len(y_right))
        for train, test in folds:
            model = LogisticRegression(C=c, max_iter=3000).fit(np.vstack([x_extra, x_gold[train]]),
                                                               np.concatenate([extra_labels, gold_labels[train]]))
            proba = model.predict_proba(x_gold[test])
            oof[test] = proba[np.arange(len(test)), np.searchsorted(model.classes_, auto[test])]
        p = np.clip(oof, 1e-6, 1 - 1e-6)
        loss = -float(np.mean(y_right * np.log(p) + (1 - y_right) * np.log(1 - p)))
        if best is None or loss < best[0]:
            best = (loss, c, oof)
    assert best is not None
    return best[1], best[2]


def features_of(group: list[dict], prior, common: list[str]) -> dict:
    """The shipped and chosen features of `group` (items with texts), marked and neutral: the
    chosen ones are the job's own (`head.marked_features`, `head.neutral_features`)."""
    u, v = pairs_embedded([g["premise"] for g in group], [g["hypothesis"] for g in group])
    marked = np.array([g["auto_label"] != NEUTRAL for g in group])
    p_prior = prior.predict_proba(check_head.related_features(u, v))
    labels = [g["auto_label"] for g, m in zip(group, marked) if m]
    phrases = [g.get("phrase") or "" for g, m in zip(group, marked) if m]
    return {"marked": marked,
            "m": {"shipped": check_head.base_marked_features(u[marked], v[marked], labels),
                  CHOSEN["marked"]: check_head.marked_features(u[marked], v[marked], labels, phrases, common,
                                                               p_prior[marked])},
            "n": {"shipped": check_head.related_features(u[~marked], v[~marked]),
                  CHOSEN["neutral"]: check_head.neutral_features(u[~marked], v[~marked], p_prior[~marked])}}


def test_part(items, variants_m, variants_n, ym, yn, marked, right, prior, common) -> dict:
    """The shipped and the chosen heads, fitted on every tuning item, on the test items the
    default job emits (with the label filters), per language and label: precision before and
    after, and the share of the right marked pairs kept."""
    out: dict = {}
    test = [g for lang in LANGS for g in resolve(lang, part="test")]
    emitted = {}
    for lang in LANGS:
        found, _ = emitted_pairs(run_job(lang, WORK / "gold-runs" / f"{lang}-default", []), load_lexicon(lang))
        emitted.update(found)
    test = [g for g in test if emitted.get(gold_location(g), (None,))[0] == g["auto_label"]]
    f = features_of(test, prior, common)
    t_right = np.array([g["gold"] == g["auto_label"] for g in test])
    t_lang = np.array([g["lang"] for g in test])
    t_label = np.array([g["auto_label"] for g in test])
    for which in ("shipped", "chosen"):
        name_m = "shipped" if which == "shipped" else CHOSEN["marked"]
        name_n = "shipped" if which == "shipped" else CHOSEN["neutral"]
        c_m, oof_m, _ = fit_cv(variants_m[name_m], ym)
        c_n, oof_n, _ = fit_cv(variants_n[name_n], yn)
        t_m = threshold_figures(oof_m, ym == 1, KEEP_RIGHT, keep_high=True)["threshold"]
        t_n = threshold_figures(oof_n, yn == 0, KEEP_NEUTRAL, keep_high=False)["threshold"]
        model_m = LogisticRegression(C=c_m, max_iter=5000).fit(variants_m[name_m], ym)
        model_n = LogisticRegression(C=c_n, max_iter=5000).fit(variants_n[name_n], yn)
        keep = np.zeros(len(test), dtype=bool)
        keep[f["marked"]] = model_m.predict_proba(f["m"][name_m])[:, 1] >= t_m
        keep[~f["marked"]] = model_n.predict_proba(f["n"][name_n])[:, 1] < t_n
        rows = {}
        for lang in LANGS:
            for label in LABELS:
                sel = (t_lang == lang) & (t_label == label)
                kept = sel & keep
                rows[f"{lang} {label}"] = {"n": int(sel.sum()),
                                           "before": float(t_right[sel].mean()) if sel.any() else None,
                                           "kept": int(kept.sum()),
                                           "after": float(t_right[kept].mean()) if kept.any() else None,
                                           "right_kept": float(keep[sel & t_right].mean()) if (sel & t_right).any()
                                           else None}
        out[which] = {"marked": name_m, "neutral": name_n, "thresholds": [t_m, t_n], "labels": rows}
        print(f"test part, {which} head (marked {name_m}, neutral {name_n}; thresholds {t_m}, {t_n}):")
        for key, r in rows.items():
            if r["n"]:
                print(f"   {key:<16} n {r['n']:>3}  {r['before']:.3f} -> {r['after'] or 0:.3f} (n {r['kept']}); "
                      f"right pairs kept {r['right_kept'] or 0:.2f}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--export", type=Path, default=None, help="write the resolved tuning items here and stop")
    ap.add_argument("--test", action="store_true", help="also judge the test parts with the shipped and the chosen "
                    "heads (once)")
    ap.add_argument("--cross-encoder", type=Path, default=None, metavar="PREDICTIONS",
                    help="`trainer predict --id-col item` output on the exported items")
    ap.add_argument("--json", type=Path, default=RESULTS, help="where the figures go (default: %(default)s)")
    args = ap.parse_args(argv)
    items = [g for lang in LANGS for g in resolve(lang)]
    if args.export:
        args.export.parent.mkdir(parents=True, exist_ok=True)
        keys = {"item": "item", "premise": "premise", "hypothesis": "hypothesis", "label": "gold",
                "auto_label": "auto_label", "lang": "lang"}
        args.export.write_text("".join(json.dumps({k: g[f] for k, f in keys.items()}, ensure_ascii=False) + "\n"
                                       for g in items), encoding="utf-8")
        print(f"wrote {len(items)} items to {args.export}")
        return 0
    u, v = pairs_embedded([g["premise"] for g in items], [g["hypothesis"] for g in items])
    su, sv, sl = scinli()
    ru, rv, rs = ro_sts()
    print(f"gold tuning items {len(items)}; SciNLI {len(sl)} pairs; RO-STS {len(rs)} pairs", flush=True)

    prior = LogisticRegression(C=1.0, max_iter=3000).fit(check_head.related_features(su, sv), sl)
    p_prior = prior.predict_proba(check_head.related_features(u, v))  # columns: LABELS order (0..3)
    sts = Ridge(alpha=10.0).fit(check_head.pair_features(ru, rv), rs)
    s_pred = sts.predict(check_head.pair_features(u, v))[:, None]

    marked = np.array([g["auto_label"] != NEUTRAL for g in items])
    right = np.array([g["gold"] == g["auto_label"] for g in items])
    lang = np.array([g["lang"] for g in items])
    auto_all = label_index([g["auto_label"] for g in items])
    gold_all = label_index([g["gold"] for g in items])
    mu, mv = u[marked], v[marked]
    m_labels = [g["auto_label"] for g, m in zip(items, marked) if m]
    onehot = np.array([[lab == m for m in MARKED_LABELS] for lab in m_labels], dtype=np.float64)
    p_auto = p_prior[marked][np.arange(marked.sum()), auto_all[marked]][:, None]
    phrases = [g.get("phrase") or "" for g, m in zip(items, marked) if m]
    common = sorted({p for p in phrases if phrases.count(p) >= MIN_PHRASE})
    phrase_onehot = np.array([[p == c for c in common] for p in phrases], dtype=np.float64)
    base_m = check_head.base_marked_features(mu, mv, m_labels)
    ym = right[marked].astype(int)
    if args.cross_encoder:
        rows = {r["item"]: r for r in map(json.loads, args.cross_encoder.read_text(encoding="utf-8").splitlines())}
        p_xenc = np.array([rows[g["item"]][f"prob_{g['auto_label']}"] for g, m in zip(items, marked) if m])[:, None]
    ctx = contexts(items)
    has_ctx = np.array([[c is not None] for c, m in zip(ctx, marked) if m], dtype=np.float64)
    cu, _ = pairs_embedded([c or g["premise"] for c, g, m in zip(ctx, items, marked) if m],
                           [g["hypothesis"] for g, m in zip(items, marked) if m])
    p_ctx = prior.predict_proba(check_head.related_features(cu, mv))
    p_ctx_auto = p_ctx[np.arange(len(cu)), auto_all[marked]][:, None]
    chosen_m = check_head.marked_features(mu, mv, m_labels, phrases, common, p_prior[marked])
    variants_m = {
        "shipped": base_m,
        "+phrase+scinli+context": np.hstack([chosen_m, context_features(mu, mv, cu, has_ctx, onehot, p_ctx_auto)]),
        **({"+cross-encoder": np.hstack([base_m, onehot * p_xenc, onehot * np.log(np.clip(p_xenc, 1e-6, 1))]),
            "+phrase+scinli+cross-encoder": np.hstack([chosen_m, onehot * p_xenc,
                                                       onehot * np.log(np.clip(p_xenc, 1e-6, 1))]),
            "cross-encoder-only": np.hstack([onehot, onehot * p_xenc, onehot * np.log(np.clip(p_xenc, 1e-6, 1))])}
           if args.cross_encoder else {}),
        "+scinli": np.hstack([base_m, p_prior[marked], onehot * p_auto]),
        "scinli-only": np.hstack([onehot, onehot * p_auto, onehot * np.log(p_auto)]),
        "+phrase": np.hstack([base_m, phrase_onehot]),
        "+phrase+scinli": chosen_m,
    }
    out: dict = {"items": len(items), "scinli_pairs": int(len(sl)), "ro_sts_pairs": int(len(rs)),
                 "phrases_one_hot": common, "marked": {}, "neutral": {}}
    m_lang, m_reason = lang[marked], np.array(m_labels) == "reasoning"
    ro_reason = (m_lang == "ro") & m_reason

    def report_marked(name: str, oof: np.ndarray, c) -> None:
        row = {"C": c, "auc": auc(ym, oof), "auc_ro": auc(ym[m_lang == "ro"], oof[m_lang == "ro"]),
               "auc_ro_reasoning": auc(ym[ro_reason], oof[ro_reason]),
               **threshold_figures(oof, ym == 1, KEEP_RIGHT, keep_high=True)}
        t = row["threshold"]
        for label in MARKED_LABELS:
            sel = (m_lang == "ro") & (np.array(m_labels) == label)
            kept = sel & (oof >= t)
            row[f"ro_{label}"] = {"n": int(sel.sum()), "before": float(ym[sel].mean()),
                                  "kept": int(kept.sum()), "after": float(ym[kept].mean()) if kept.any() else None}
        out["marked"][name] = row
        print(f"marked {name:<12} C {c:<5} AUC {row['auc']:.3f}  ro {row['auc_ro']:.3f}  ro reasoning "
              f"{row['auc_ro_reasoning']:.3f} | kept {row['kept']} of {len(ym)}, precision {ym.mean():.3f} -> "
              f"{row['precision_after']:.3f} | ro reasoning {row['ro_reasoning']['before']:.3f} (n "
              f"{row['ro_reasoning']['n']}) -> {row['ro_reasoning']['after'] or 0:.3f} "
              f"(n {row['ro_reasoning']['kept']})", flush=True)

    for name, x in variants_m.items():
        c, oof, _ = fit_cv(x, ym)
        report_marked(name, oof, c)
    x_gold = check_head.related_features(mu, mv)
    c, oof = joint_oof(x_gold, gold_all[marked], auto_all[marked], ym, check_head.related_features(su, sv), sl)
    report_marked("joint", oof, c)

    nu, nv = u[~marked], v[~marked]
    yn = (~right[~marked]).astype(int)
    cos = np.sum(nu * nv, axis=1, keepdims=True).astype(np.float64)
    base_n = check_head.related_features(nu, nv)
    n_neutral = p_prior[~marked][:, [LABELS.index(NEUTRAL)]]
    variants_n = {"shipped": base_n, "+sts": np.hstack([base_n, s_pred[~marked]]),
                  "+scinli": check_head.neutral_features(nu, nv, p_prior[~marked]),
                  "+sts+scinli": np.hstack([base_n, s_pred[~marked], p_prior[~marked]]),
                  "small": np.hstack([cos, s_pred[~marked], n_neutral])}
    n_lang = lang[~marked]
    for name, x in variants_n.items():
        c, oof, _ = fit_cv(x, yn)
        row = {"C": c, "auc": auc(yn, oof), "auc_ro": auc(yn[n_lang == "ro"], oof[n_lang == "ro"]),
               **threshold_figures(oof, yn == 0, KEEP_NEUTRAL, keep_high=False)}
        row["precision_after"] = 1 - float(yn[oof < row["threshold"]].mean())  # of the kept: truly neutral
        ro_kept = (n_lang == "ro") & (oof < row["threshold"])
        row["ro_neutral"] = {"n": int((n_lang == "ro").sum()), "before": 1 - float(yn[n_lang == "ro"].mean()),
                             "kept": int(ro_kept.sum()), "after": 1 - float(yn[ro_kept].mean())}
        out["neutral"][name] = row
        print(f"neutral {name:<11} C {c:<5} AUC {row['auc']:.3f}  ro {row['auc_ro']:.3f} | ro neutral "
              f"{row['ro_neutral']['before']:.3f} (n {row['ro_neutral']['n']}) -> {row['ro_neutral']['after']:.3f} "
              f"(n {row['ro_neutral']['kept']})", flush=True)
    if args.test:
        out["test"] = test_part(items, variants_m, variants_n, ym, yn, marked, right, prior, common)
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
