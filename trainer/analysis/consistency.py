"""Meta-inferential consistency of a run's labels (`python -m trainer consistency`, trainer/commands/consistency.py).

The method of "Reverse-engineering NLI" (Blanck, Noble & Chatzikyriakidis): from labelled
items that share sentences, build *inferred* items whose label a reading of the label set
constrains (§5.3), let the model label everything, and report, per reading (MC, SC, EI),
the share of inferred items whose predicted label the reading allows (Tables 4 and 7):

- swapped items ``(b, a)`` from ``(a, b)``                                  (``ab; ba``)
- shared-premise items ``(b, c)`` from ``(a, b)`` and ``(a, c)``            (``ab, ac; bc``)
- chained items ``(a, c)`` and ``(c, a)`` from ``(a, b)`` and ``(b, c)``    (``ab, bc; ac``, ``ab, bc; ca``)

Sources: ``--data`` (any NLI file the trainer reads), ``--generated`` (JSONL of premise,
hypothesis, intended label, e.g. written by an LLM from the data's hypotheses, §5.2) and
``--sentences`` (our sentence table: consecutive sentences of a paragraph as chains).
Allowed label sets come from :mod:`trainer.analysis.logic`. Outputs (``--output``, default
``RUN_DIR/consistency/``, written beside it and swapped in at the end): ``metrics.json``,
``table.md``, ``items.parquet`` (inferred items with predictions), ``sources.parquet``,
``consistency.png``. See docs/consistency.md.
"""
from __future__ import annotations

import logging
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from extractor.core.errors import UserError
from extractor.core.hashing import stable_hash
from trainer.analysis import logic
from trainer.data.loading import normalize, read_table

log = logging.getLogger("trainer")

LETTER_NAMES = {"entailment": "E", "contradiction": "C", "neutral": "N", "e": "E", "c": "C", "n": "N"}
KIND_ORDER = ["swap", "chain_ac", "chain_ca", "shared"]
C_ORIGIN = {"data": "h", "generated": "g", "sentences": "s"}
OTHER = "-"  # a model label that names no NLI relation (e.g. our `reasoning` unless mapped)


# ---------------------------------------------------------------------------- labels

def parse_letter_map(specs) -> dict[str, str]:
    """`consistency --label-map`: ``["contrasting=N", "reasoning=-"]`` -> {model label: NLI letter
    E, C, N, or "-" for none}; one-line errors. (`trainer.data.loading.parse_label_map` renames
    labels into other labels, for `evaluate` and `stress`.)"""
    out: dict[str, str] = {}
    for spec in specs or []:
        label, sep, target = str(spec).partition("=")
        label, target = label.strip(), target.strip()
        if not sep or not label or not target:
            raise UserError(f"--label-map {spec!r}: expected LABEL=E, LABEL=C, LABEL=N or LABEL=- "
                            "(e.g. --label-map contrasting=N)")
        letter = target.upper() if target.upper() in logic.LETTERS else LETTER_NAMES.get(target.lower())
        if target == OTHER:
            letter = OTHER
        if letter is None:
            raise UserError(f"--label-map {spec!r}: {target!r} is not E, C, N (entailment, contradiction, "
                            "neutral) or - (no NLI relation)")
        out[label] = letter
    return out


def letter_of(label, label_map: dict[str, str]) -> str | None:
    """E, C, N or "-" for a label name; None when it is unknown."""
    if label is None or (isinstance(label, float) and np.isnan(label)):
        return None
    label = str(label)
    if label in label_map:
        return label_map[label]
    return LETTER_NAMES.get(label.strip().lower())


def model_letters(labels: list[str], label_map: dict[str, str]) -> dict[str, str]:
    """The letter of every label the model predicts; an error names the labels left unmapped."""
    out = {lab: letter_of(lab, label_map) for lab in labels}
    missing = [lab for lab, letter in out.items() if letter is None]
    if missing:
        raise UserError(f"model labels {missing} have no NLI relation: map each with --label-map LABEL=E|C|N|- "
                        f"(e.g. --label-map {missing[0]}=-); see docs/consistency.md")
    if not any(v in logic.LETTERS for v in out.values()):
        raise UserError(f"no model label maps to E, C or N (labels {labels}): give --label-map LABEL=E|C|N")
    return {lab: letter for lab, letter in out.items() if letter is not None}  # all of them, after the check


def gold_letters(values: pd.Series, label_map: dict[str, str], where: str) -> list[str | None]:
    out: list[str | None] = []
    for v in values:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            out.append(None)
            continue
        letter = letter_of(v, label_map)
        if letter is None:
            raise UserError(f"{where}: label {v!r} is not an NLI relation: map it with --label-map {v}=E|C|N|-")
        out.append(letter)
    return out


# ---------------------------------------------------------------------------- items

def normalize_text(text: str) -> str:
    """Premise groups and chains match on exact text after whitespace normalisation."""
    return " ".join(str(text).split())


def source_frame(df: pd.DataFrame, origin: str, label_map: dict[str, str], where: str) -> pd.DataFrame:
    """Canonical NLI rows -> source items: sid, premise, hypothesis, gold (letter or None), origin."""
    gold = gold_letters(df["label"], label_map, where) if "label" in df.columns else [None] * len(df)
    ids = df["pair_id"].astype(str)
    sid = [f"{origin}:{i}" for i in ids] if ids.is_unique else [f"{origin}:{n}:{i}" for n, i in enumerate(ids)]
    return pd.DataFrame({"sid": sid,
                         "premise": df["premise"].astype(str).to_numpy(),
                         "hypothesis": df["hypothesis"].astype(str).to_numpy(),
                         "gold_label": df["label"].to_numpy() if "label" in df.columns else None,
                         "gold": gold, "origin": origin})


def dedupe_sources(sources: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """One source item per (origin, premise, hypothesis) after normalisation; first kept."""
    key = sources["origin"] + "\x1f" + sources["premise"].map(normalize_text) + "\x1f" + \
        sources["hypothesis"].map(normalize_text)
    keep = ~key.duplicated()
    return sources[keep].reset_index(drop=True), int((~keep).sum())


def build_inferred(sources: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Inferred items (§5.3) from source items; counts of groups, items and exclusions.

    Swapped and shared-premise items come from ``data`` sources; chains join a ``data``
    item (a, b) to any item (b, c) whose premise is b (data or generated). Items whose two
    sentences are the same text are left out and counted.
    """
    prem = sources["premise"].map(normalize_text).tolist()
    hyp = sources["hypothesis"].map(normalize_text).tolist()
    origin = sources["origin"].tolist()
    sid = sources["sid"].tolist()
    rows: list[tuple] = []  # kind, c_origin, src1, src2, premise_text, hypothesis_text
    skipped: Counter[str] = Counter()
    data_idx = [i for i, o in enumerate(origin) if o == "data"]

    for i in data_idx:  # ab; ba
        if prem[i] == hyp[i]:
            skipped["swap_same_text"] += 1
            continue
        rows.append(("swap", "–", sid[i], None, hyp[i], prem[i]))

    groups: dict[str, list[int]] = defaultdict(list)
    for i in data_idx:
        groups[prem[i]].append(i)
    for members in groups.values():  # ab, ac; bc for every ordered pair of hypotheses
        for i in members:
            for j in members:
                if i == j:
                    continue
                if hyp[i] == hyp[j]:
                    skipped["shared_same_text"] += 1
                    continue
                rows.append(("shared", "h", sid[i], sid[j], hyp[i], hyp[j]))

    by_premise: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(prem):
        if origin[i] in ("data", "generated"):
            by_premise[p].append(i)
    for i in data_idx:  # ab, bc; ac and ab, bc; ca
        for j in by_premise.get(hyp[i], ()):
            if j == i:
                continue
            if prem[i] == hyp[j]:
                skipped["chain_same_text"] += 1
                continue
            c = C_ORIGIN[origin[j]]
            rows.append(("chain_ac", c, sid[i], sid[j], prem[i], hyp[j]))
            rows.append(("chain_ca", c, sid[i], sid[j], hyp[j], prem[i]))

    items = pd.DataFrame(rows, columns=["kind", "c", "source1", "source2", "premise", "hypothesis"])
    sizes = Counter(len(m) for m in groups.values())
    counts = {"premise_groups": len(groups),
              "premise_groups_with_2_or_more": sum(n for k, n in sizes.items() if k >= 2),
              "premise_group_sizes": {str(k): n for k, n in sorted(sizes.items())},
              "chain_links": int((items["kind"] == "chain_ac").sum()) if len(items) else 0,
              "skipped": dict(skipped)}
    return items, counts


def sentence_chains(sentences: pd.DataFrame, *, max_chains: int | None = None,
                    seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Consecutive sentences a, b, c of one paragraph -> source items (a, b), (b, c) and chains.

    ``sentences`` has our sentence-table columns (corpus, doc_id, para_idx, sent_idx, text,
    optionally short). Short sentences (flagged by the extractor) break chains, as they
    break pairs. Returns (sources, items, counts).
    """
    need = ["corpus", "doc_id", "para_idx", "sent_idx", "text"]
    missing = [c for c in need if c not in sentences.columns]
    if missing:
        raise UserError(f"sentence table: no column {missing[0]!r}; columns are {', '.join(sentences.columns)}")
    s = sentences
    n_short = 0
    if "short" in s.columns:
        short = s["short"].fillna(False).astype(bool)
        n_short = int(short.sum())
        s = s[~short]
    s = s[need].sort_values(["corpus", "doc_id", "para_idx", "sent_idx"]).reset_index(drop=True)
    same = lambda k: ((s["corpus"] == s["corpus"].shift(-k)) & (s["doc_id"] == s["doc_id"].shift(-k))  # noqa: E731
                      & (s["para_idx"] == s["para_idx"].shift(-k)) & (s["sent_idx"] + k == s["sent_idx"].shift(-k)))
    start = np.flatnonzero((same(1) & same(2)).to_numpy())
    n_all = len(start)
    if max_chains is not None and n_all > max_chains:
        keys = [stable_hash(s.at[i, "corpus"], s.at[i, "doc_id"], s.at[i, "para_idx"], s.at[i, "sent_idx"], seed=seed)
                for i in start]
        start = np.sort(start[np.argsort(keys, kind="stable")[:max_chains]])
    text = s["text"].astype(str).to_numpy()
    ref = (s["corpus"].astype(str) + "/" + s["doc_id"].astype(str) + "/" + s["para_idx"].astype(str) + "/"
           + s["sent_idx"].astype(str)).to_numpy()
    src: dict[str, tuple[str, str]] = {}
    rows = []
    for i in start:
        ab, bc = f"sentences:{ref[i]}+1", f"sentences:{ref[i + 1]}+1"
        src.setdefault(ab, (text[i], text[i + 1]))
        src.setdefault(bc, (text[i + 1], text[i + 2]))
        if normalize_text(text[i]) == normalize_text(text[i + 2]):
            continue
        rows.append(("chain_ac", "s", ab, bc, text[i], text[i + 2]))
        rows.append(("chain_ca", "s", ab, bc, text[i + 2], text[i]))
    sources = pd.DataFrame({"sid": list(src), "premise": [p for p, _ in src.values()],
                            "hypothesis": [h for _, h in src.values()], "gold_label": None, "gold": None,
                            "origin": "sentences"})
    items = pd.DataFrame(rows, columns=["kind", "c", "source1", "source2", "premise", "hypothesis"])
    counts = {"sentences": int(len(sentences)), "short_sentences_skipped": n_short,
              "chains_available": int(n_all), "chains_used": int(len(start))}
    return sources, items, counts


def sample_items(items: pd.DataFrame, max_items: int | None, seed: int) -> tuple[pd.DataFrame, dict]:
    """At most max_items per kind, chosen by a stable hash of the item (same every run)."""
    if not max_items or len(items) == 0:
        return items, {}
    keys = [stable_hash(k, a, b, seed=seed) for k, a, b in zip(items["kind"], items["source1"], items["source2"])]
    items = items.assign(_key=keys)
    dropped = {}
    parts = []
    for kind, part in items.groupby("kind", sort=False):
        if len(part) > max_items:
            dropped[kind] = int(len(part) - max_items)
            part = part.nsmallest(max_items, "_key")
        parts.append(part)
    return pd.concat(parts).sort_index().drop(columns="_key").reset_index(drop=True), dropped


# ---------------------------------------------------------------------------- predictions

def predict_pairs(run_, premises: list[str], hypotheses: list[str], *, batch_size: int = 1024,
                  progress: bool = True) -> np.ndarray:
    """Probabilities for every distinct (premise, hypothesis), batched, one tqdm bar."""
    from tqdm.auto import tqdm

    n = len(premises)
    probs = np.zeros((n, len(run_.labels)), dtype=np.float32)
    with tqdm(total=n, desc="consistency: predicting", unit="pair", disable=not progress or n == 0) as bar:
        for start in range(0, n, batch_size):
            stop = min(start + batch_size, n)
            df = pd.DataFrame({"pair_id": [str(i) for i in range(start, stop)], "premise": premises[start:stop],
                               "hypothesis": hypotheses[start:stop]})
            probs[start:stop] = run_.predict_proba(df)
            bar.update(stop - start)
    return probs


# ---------------------------------------------------------------------------- scoring

def has_nli_letters(letters) -> bool:
    """Source letters that all name NLI relations (not unknown, not "-")."""
    return isinstance(letters, str) and all(L in logic.LETTERS for L in letters)


def allowed_columns(items: pd.DataFrame, letters_col: str, readings) -> pd.DataFrame:
    """allowed_<R>: the labels reading R allows given the source letters ("" never; None: vacuous/unknown)."""
    out: dict[str, list[str | None]] = {}
    for r in readings:
        col: list[str | None] = []
        for kind, letters in zip(items["kind"], items[letters_col]):
            if not has_nli_letters(letters):
                col.append(None)
                continue
            allowed = logic.allowed_labels(r, kind, tuple(letters))
            col.append(None if allowed is None else "".join(L for L in logic.LETTERS if L in allowed))
        out[f"allowed_{r}"] = col
    return pd.DataFrame(out, index=items.index)


def score_rows(items: pd.DataFrame, letters_col: str, readings) -> list[dict]:
    """One row per (kind, c, source letters): counts, prediction shares, constraint and score per reading."""
    rows = []
    valid = items[items[letters_col].map(has_nli_letters).astype(bool)]
    for (kind, c, letters), part in valid.groupby(["kind", "c", letters_col], sort=False):
        n = len(part)
        pred = part["pred_letter"]
        row = {"kind": kind, "pattern": logic.KINDS[kind]["pattern"], "item": "".join(logic.KINDS[kind]["target"]),
               "c": c, "sources": logic.source_text(kind, tuple(letters)), "letters": letters, "count": n}
        for L in logic.LETTERS:
            row[L] = round(100.0 * float((pred == L).mean()), 1)
        row["other"] = round(100.0 * float((~pred.isin(logic.LETTERS)).mean()), 1)
        for r in readings:
            allowed = logic.allowed_labels(r, kind, tuple(letters))
            text = logic.constraint_text(r, kind, allowed)
            row[r] = text
            ok = [p in allowed for p in pred] if allowed is not None else []
            row[f"{r}_ok"] = round(100.0 * float(np.mean(ok)), 1) if allowed is not None else None
            # what a model that labels uniformly at random would score on this row
            row[f"{r}_chance"] = round(100.0 * len(allowed) / len(logic.LETTERS), 1) if allowed is not None else None
            row[f"{r}_constrains"] = text not in ("—", "∅")
        rows.append(row)
    kind_rank = {k: i for i, k in enumerate(KIND_ORDER)}
    letter_rank = {L: i for i, L in enumerate(logic.LETTERS)}
    rows.sort(key=lambda r: (kind_rank[r["kind"]], r["c"], [letter_rank[L] for L in r["letters"]]))
    return rows


def summarize(items: pd.DataFrame, letters_col: str, readings) -> dict:
    """Per reading: share of allowed predictions over the items it constrains, overall and per kind,
    and over the items where the modal readings (SC, EI) allow different sets."""
    out: dict = {}
    usable = items[letters_col].map(has_nli_letters).astype(bool)
    sub = items[usable]
    for r in readings:
        allowed = allowed_columns(sub, letters_col, [r])[f"allowed_{r}"]
        texts = [logic.constraint_text(r, k, None if a is None else frozenset(a)) for k, a in zip(sub["kind"], allowed)]
        constrained = np.array([t not in ("—", "∅") for t in texts], dtype=bool)
        ok = np.array([a is not None and p in a for p, a in zip(sub["pred_letter"], allowed)], dtype=bool)
        size = np.array([len(a) if a is not None else 0 for a in allowed], dtype=float) / len(logic.LETTERS)
        entry: dict[str, Any] = {"constrained_items": int(constrained.sum()),
                                 "score": _pct(ok[constrained]), "chance": _mean_pct(size[constrained]),
                                 "vacuous_items": int(sum(a is None for a in allowed)), "per_kind": {}}
        for kind in KIND_ORDER:
            m = constrained & (sub["kind"] == kind).to_numpy()
            if m.any():
                entry["per_kind"][kind] = {"constrained_items": int(m.sum()), "score": _pct(ok[m]),
                                           "chance": _mean_pct(size[m])}
        out[r] = entry
    modal = [r for r in ("SC", "EI") if r in readings]
    if len(modal) == 2:
        a = allowed_columns(sub, letters_col, modal)
        differ = (a["allowed_SC"] != a["allowed_EI"]).to_numpy()
        for r in modal:
            allowed = a[f"allowed_{r}"]
            texts = [logic.constraint_text(r, k, None if x is None else frozenset(x))
                     for k, x in zip(sub["kind"], allowed)]
            m = differ & np.array([t not in ("—", "∅") for t in texts], dtype=bool)
            ok = np.array([x is not None and p in x for p, x in zip(sub["pred_letter"], allowed)], dtype=bool)
            size = np.array([len(x) if x is not None else 0 for x in allowed], dtype=float) / len(logic.LETTERS)
            out[r]["only_this_reading"] = {"items": int(m.sum()), "score": _pct(ok[m]), "chance": _mean_pct(size[m])}
    return out


def _pct(mask: np.ndarray) -> float | None:
    return round(100.0 * float(np.mean(mask)), 1) if len(mask) else None


def _mean_pct(values: np.ndarray) -> float | None:
    return round(100.0 * float(np.mean(values)), 1) if len(values) else None


def markdown_table(rows: list[dict], readings, *, title: str = "") -> str:
    """The paper's layout (Tables 4 and 7); rows that no reading constrains are left out (in metrics.json)."""
    shown = [r for r in rows if any(r[f"{x}_constrains"] for x in readings)]
    other = any(r["other"] for r in shown)
    head = ["input items", "item", "c", "count", "E", "C", "N"] + (["other"] if other else [])
    for x in readings:
        head += [x, f"{x}✓"]
    lines = [f"**{title}**", ""] if title else []
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    prev = None
    for r in shown:
        first = (r["kind"], r["c"]) != prev
        prev = (r["kind"], r["c"])
        cells = [r["sources"], r["item"] if first else "", r["c"] if first else "", str(r["count"]),
                 f"{r['E']:.1f}", f"{r['C']:.1f}", f"{r['N']:.1f}"] + ([f"{r['other']:.1f}"] if other else [])
        for x in readings:
            c = r[f"{x}_constrains"]
            cells += [r[x], f"{r[f'{x}_ok']:.1f}" if c else "—"]
        lines.append("| " + " | ".join(cells) + " |")
    left = [r for r in rows if r not in shown]
    if left:
        lines += ["", f"{len(left)} rows ({sum(r['count'] for r in left)} items) where no reading infers anything "
                      "are in metrics.json."]
    return "\n".join(lines) + "\n"


def plot_scores(rows: list[dict], readings, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if any(r[f"{x}_constrains"] for x in readings)]
    if not shown:
        return
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(shown) + 1.5))
    y = np.arange(len(shown))
    h = 0.8 / len(readings)
    for k, x in enumerate(readings):
        vals = [r[f"{x}_ok"] if r[f"{x}_constrains"] else np.nan for r in shown]
        ax.barh(y + (k - (len(readings) - 1) / 2) * h, vals, height=h, label=x)
    ax.set_yticks(y, [f"{r['sources']}; {r['item']} (n={r['count']})" for r in shown], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of predictions the reading allows (rows it constrains)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------- command

def read_generated(path: Path) -> pd.DataFrame:
    """Generated items: premise, hypothesis, label rows, or one row per premise with a column per label."""
    raw = read_table(path)
    wide = [c for c in raw.columns if str(c).lower() in ("entailment", "contradiction", "neutral")]
    if "hypothesis" not in raw.columns and wide and "premise" in raw.columns:
        long = raw.melt(id_vars=[c for c in raw.columns if c not in wide], value_vars=wide,
                        var_name="label", value_name="hypothesis").dropna(subset=["hypothesis"])
        id_col = next((c for c in ("pair_id", "id") if c in long.columns), None)
        base = long[id_col].astype(str) if id_col else long.index.astype(str)
        long = long.drop(columns=[id_col] if id_col else [])
        long["pair_id"] = [f"{b}-{lab}" for b, lab in zip(base, long["label"])]
        raw = long.reset_index(drop=True)
    return normalize(raw, str(path))


def read_sentences(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise UserError(f"{path}: no such sentence table")
    try:
        table = ds.dataset(str(path), format="parquet", partitioning="hive")
        cols = [c for c in ("corpus", "doc_id", "para_idx", "sent_idx", "text", "short") if c in table.schema.names]
        return table.to_table(columns=cols, use_threads=False).to_pandas(use_threads=False)
    except (pa.ArrowException, OSError) as exc:  # pyarrow's refusal of the user's table: one line
        raise UserError(f"{path}: cannot read the sentence table: {str(exc).splitlines()[0]}") from exc


def choose_split(splits: dict, wanted: str | None, where: Path) -> pd.DataFrame:
    if wanted:
        if wanted not in splits:
            raise UserError(f"{where}: no split {wanted!r} (splits: {', '.join(splits)}); use --split NAME")
        return splits[wanted]
    if len(splits) == 1:
        return next(iter(splits.values()))
    if "test" in splits:
        return splits["test"]
    raise UserError(f"{where}: several splits ({', '.join(splits)}) and none named test; use --split NAME")


def summary_text(reading: str, s: dict) -> str:
    text = f"{reading} {_fmt(s['score'])} of {s['constrained_items']} (chance {_fmt(s['chance'])})"
    only = s.get("only_this_reading")
    if only:
        text += f", only-{reading} {_fmt(only['score'])} of {only['items']} (chance {_fmt(only['chance'])})"
    return text


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.1f}%"


def write_frame(df: pd.DataFrame, path: Path) -> None:
    df.to_parquet(path, index=False)
