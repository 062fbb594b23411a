"""`python -m trainer consistency RUN_DIR --data FILE`: meta-inferential consistency of a run's labels.

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
Allowed label sets come from :mod:`trainer.logic`. Outputs (``--output``, default
``RUN_DIR/consistency/``, written beside it and swapped in at the end; ``--out`` is a
deprecated alias): ``metrics.json``, ``table.md``, ``items.parquet`` (inferred items
with predictions), ``sources.parquet``, ``consistency.png``. See docs/consistency.md.
"""
from __future__ import annotations

import argparse
import logging
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from extractor.errors import UserError
from extractor.hashing import stable_hash
from extractor.staging import WorkFolder
from trainer import logic
from trainer.data import add_column_arguments, load_nli, normalize, read_table
from trainer.evaluate import run_mapping
from trainer.flags import add_output
from trainer.metrics import compute_metrics
from trainer.runs import load_run, write_json

log = logging.getLogger("trainer")

LETTER_NAMES = {"entailment": "E", "contradiction": "C", "neutral": "N", "e": "E", "c": "C", "n": "N"}
KIND_ORDER = ["swap", "chain_ac", "chain_ca", "shared"]
C_ORIGIN = {"data": "h", "generated": "g", "sentences": "s"}
OTHER = "-"  # a model label that names no NLI relation (e.g. our `reasoning` unless mapped)


# ---------------------------------------------------------------------------- labels

def parse_label_map(specs) -> dict[str, str]:
    """``["contrasting=N", "reasoning=-"]`` -> {label: letter or "-"}; one-line errors."""
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
    return out


def gold_letters(values: pd.Series, label_map: dict[str, str], where: str) -> list[str | None]:
    out = []
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
    skipped = Counter()
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

def _usable(letters) -> bool:
    """Source letters that all name NLI relations (not unknown, not "-")."""
    return isinstance(letters, str) and all(L in logic.LETTERS for L in letters)


def allowed_columns(items: pd.DataFrame, letters_col: str, readings) -> pd.DataFrame:
    """allowed_<R>: the labels reading R allows given the source letters ("" never; None: vacuous/unknown)."""
    out = {}
    for r in readings:
        col = []
        for kind, letters in zip(items["kind"], items[letters_col]):
            if not _usable(letters):
                col.append(None)
                continue
            allowed = logic.allowed_labels(r, kind, tuple(letters))
            col.append(None if allowed is None else "".join(L for L in logic.LETTERS if L in allowed))
        out[f"allowed_{r}"] = col
    return pd.DataFrame(out, index=items.index)


def score_rows(items: pd.DataFrame, letters_col: str, readings) -> list[dict]:
    """One row per (kind, c, source letters): counts, prediction shares, constraint and score per reading."""
    rows = []
    valid = items[items[letters_col].map(_usable).astype(bool)]
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
    usable = items[letters_col].map(_usable).astype(bool)
    sub = items[usable]
    for r in readings:
        allowed = allowed_columns(sub, letters_col, [r])[f"allowed_{r}"]
        texts = [logic.constraint_text(r, k, None if a is None else frozenset(a)) for k, a in zip(sub["kind"], allowed)]
        constrained = np.array([t not in ("—", "∅") for t in texts], dtype=bool)
        ok = np.array([a is not None and p in a for p, a in zip(sub["pred_letter"], allowed)], dtype=bool)
        size = np.array([len(a) if a is not None else 0 for a in allowed], dtype=float) / len(logic.LETTERS)
        entry = {"constrained_items": int(constrained.sum()),
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

def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--data", type=Path, help="NLI data with shared premises (file or dataset folder)")
    p.add_argument("--split", default=None, help="split of a dataset folder (default: test, or the only split)")
    p.add_argument("--generated", type=Path, action="extend", nargs="+", default=[],
                   help="JSONL of generated items: premise, hypothesis, label (intended), or premise with "
                        "entailment/contradiction/neutral columns; repeatable")
    p.add_argument("--sentences", type=Path, help="our sentence table (sentences/ Parquet): consecutive "
                                                  "sentences of a paragraph form chains")
    p.add_argument("--max-chains", type=int, default=20000,
                   help="at most this many sentence triples from --sentences (stable sample; default 20000)")
    p.add_argument("--label-map", action="extend", nargs="+", default=[], metavar="LABEL=E|C|N|-",
                   help="the NLI relation a label names (E, C, N, or - for none); repeatable. "
                        "entailment/contradiction/neutral map themselves")
    p.add_argument("--source-labels", choices=["pred", "gold"], default="pred",
                   help="labels of the source items that the readings start from in the unfiltered view: "
                        "the model's (default) or the gold ones (the paper's Table 7)")
    p.add_argument("--readings", action="extend", nargs="+", choices=list(logic.READINGS), default=None,
                   help="readings to report (default: MC SC EI)")
    p.add_argument("--max-items", type=int, default=None, help="at most this many inferred items per kind "
                                                               "(stable sample)")
    p.add_argument("--seed", type=int, default=0, help="seed of the stable samples")
    p.add_argument("--batch-size", type=int, default=1024, help="pairs per prediction batch")
    add_output(p, "output folder (default: RUN_DIR/consistency)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_column_arguments(p, from_run=True)


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


def _choose_split(splits: dict, wanted: str | None, where: Path) -> pd.DataFrame:
    if wanted:
        if wanted not in splits:
            raise UserError(f"{where}: no split {wanted!r} (splits: {', '.join(splits)}); use --split NAME")
        return splits[wanted]
    if len(splits) == 1:
        return next(iter(splits.values()))
    if "test" in splits:
        return splits["test"]
    raise UserError(f"{where}: several splits ({', '.join(splits)}) and none named test; use --split NAME")


def run(args) -> int:
    if args.data is None and args.sentences is None:
        raise UserError("nothing to test: give --data FILE (and optionally --generated FILE) or --sentences DIR")
    if args.generated and args.data is None:
        raise UserError("--generated needs --data: generated items chain onto the data's hypotheses")
    readings = list(dict.fromkeys(args.readings or logic.READINGS))
    label_map = parse_label_map(args.label_map)
    run_ = load_run(args.run_dir)
    to_letter = model_letters(run_.labels, label_map)

    parts, counts = [], {}
    items = pd.DataFrame(columns=["kind", "c", "source1", "source2", "premise", "hypothesis"])
    if args.data is not None:
        splits = load_nli(args.data, **run_mapping(args, run_), require_label=False)
        df = _choose_split(splits, args.split, args.data)
        parts.append(source_frame(df, "data", label_map, str(args.data)))
        for path in args.generated:
            parts.append(source_frame(read_generated(path), "generated", label_map, str(path)))
        sources, dupes = dedupe_sources(pd.concat(parts, ignore_index=True))
        items, counts = build_inferred(sources)
        counts["duplicate_sources_dropped"] = dupes
        counts["data_items"] = int((sources["origin"] == "data").sum())
        counts["generated_items"] = int((sources["origin"] == "generated").sum())
    else:
        sources = pd.DataFrame(columns=["sid", "premise", "hypothesis", "gold_label", "gold", "origin"])
    if args.sentences is not None:
        s_sources, s_items, s_counts = sentence_chains(read_sentences(args.sentences), max_chains=args.max_chains,
                                                       seed=args.seed)
        sources = pd.concat([sources, s_sources], ignore_index=True)
        items = pd.concat([items, s_items], ignore_index=True)
        counts["sentence_table"] = s_counts
    items, sampled_out = sample_items(items, args.max_items, args.seed)
    counts["items_per_kind"] = {k: int((items["kind"] == k).sum()) for k in KIND_ORDER}
    if sampled_out:
        counts["items_left_out_by_max_items"] = sampled_out
    if len(items) == 0:
        raise UserError(f"{args.data or args.sentences}: no inferred items (no shared premises, no chains); "
                        "the data needs premises with several hypotheses (as SNLI) or --generated/--sentences")

    # predict every distinct text pair once
    pair_key = list(zip(sources["premise"], sources["hypothesis"])) + list(zip(items["premise"], items["hypothesis"]))
    uniq = list(dict.fromkeys(pair_key))
    probs = predict_pairs(run_, [p for p, _ in uniq], [h for _, h in uniq], batch_size=args.batch_size,
                          progress=not args.no_progress)
    index = {k: i for i, k in enumerate(uniq)}
    labels = np.asarray(run_.labels, dtype=object)

    def attach(frame: pd.DataFrame) -> pd.DataFrame:
        rows = np.array([index[k] for k in zip(frame["premise"], frame["hypothesis"])], dtype=np.int64)
        p = probs[rows] if len(rows) else np.zeros((0, len(labels)), dtype=np.float32)
        frame = frame.copy()
        frame["pred"] = labels[p.argmax(1)] if len(p) else []
        frame["pred_letter"] = frame["pred"].map(to_letter)
        for k, lab in enumerate(run_.labels):
            frame[f"prob_{lab}"] = p[:, k]
        return frame

    sources = attach(sources)
    items = attach(items)
    by_sid = sources.set_index("sid")
    pred_of, gold_of = by_sid["pred_letter"].to_dict(), by_sid["gold"].to_dict()

    def letters(row, table):
        out = [table.get(s) for s in (row.source1, row.source2) if s is not None and not pd.isna(s)]
        return None if any(not isinstance(v, str) for v in out) else "".join(out)

    items["source_pred"] = [letters(r, pred_of) for r in items.itertuples()]
    items["source_gold"] = [letters(r, gold_of) for r in items.itertuples()]
    items["filtered"] = [g is not None and g == p for g, p in zip(items["source_gold"], items["source_pred"])]
    base = "source_pred" if args.source_labels == "pred" else "source_gold"
    if base == "source_gold" and items["source_gold"].isna().all():
        raise UserError(f"{args.data or args.sentences}: --source-labels gold needs gold labels on the source items "
                        "(none here); use --source-labels pred")
    items = pd.concat([items, allowed_columns(items, base, readings)], axis=1)
    for r in readings:
        items[f"ok_{r}"] = [a is not None and p in a for p, a in zip(items["pred_letter"], items[f"allowed_{r}"])]

    views = {"unfiltered": (items, base), "filtered": (items[items["filtered"].astype(bool)], "source_pred")}
    result = {"run_dir": str(args.run_dir), "data": str(args.data) if args.data else None,
              "split": args.split, "generated": [str(p) for p in args.generated],
              "sentences": str(args.sentences) if args.sentences else None,
              "model_labels": run_.labels, "label_map": to_letter, "source_labels": args.source_labels,
              "readings": readings, "counts": counts, "views": {}, "derivation": logic.allowed_table(readings)}
    has = items[base].map(lambda t: isinstance(t, str))
    counts["items_with_non_nli_source_label"] = int((has & ~items[base].map(_usable)).sum())
    counts["items_without_source_labels"] = int((~has).sum())
    for view, (frame, col) in views.items():
        result["views"][view] = {"items": int(len(frame)), "summary": summarize(frame, col, readings),
                                 "rows": score_rows(frame, col, readings)}
    gen = sources[sources["origin"] == "generated"]
    if len(gen):
        g = gen[gen["gold"].isin(logic.LETTERS)]
        m = compute_metrics(g["gold"].tolist(), g["pred_letter"].fillna(OTHER).tolist(), list(logic.LETTERS))
        result["generated_items"] = {"n": int(len(g)), "accuracy": m["accuracy"], "macro_f1": m["macro_f1"]}
    data_src = sources[(sources["origin"] == "data") & sources["gold"].isin(logic.LETTERS)]
    if len(data_src):
        m = compute_metrics(data_src["gold"].tolist(), data_src["pred_letter"].fillna(OTHER).tolist(),
                            list(logic.LETTERS))
        result["data_items"] = {"n": int(len(data_src)), "accuracy": m["accuracy"], "macro_f1": m["macro_f1"]}

    md = []
    has_gold = bool(items["filtered"].any())
    if has_gold:
        md.append(markdown_table(result["views"]["filtered"]["rows"], readings,
                                 title="filtered: source predictions correct (Table 4 layout)"))
    md.append(markdown_table(result["views"]["unfiltered"]["rows"], readings,
                             title=f"unfiltered, source labels = {args.source_labels} (Table 7 layout)"))
    table = "\n".join(md)

    out = Path(args.output) if args.output else Path(args.run_dir) / "consistency"
    with WorkFolder(out) as work:
        write_json(work / "metrics.json", result)
        (work / "table.md").write_text(table, encoding="utf-8")
        _parquet(items, work / "items.parquet")
        _parquet(sources, work / "sources.parquet")
        view = "filtered" if has_gold else "unfiltered"
        plot_scores(result["views"][view]["rows"], readings, work / "consistency.png",
                    f"meta-inferential consistency ({view}): {Path(args.run_dir).name}")

    per_kind = ", ".join(f"{k} {n}" for k, n in counts["items_per_kind"].items())
    print(f"inferred items: {per_kind}")
    if "premise_groups" in counts:
        print(f"premise groups: {counts['premise_groups']} ({counts['premise_groups_with_2_or_more']} with 2+ "
              f"hypotheses); chain links: {counts['chain_links']}")
    for key, label in (("data_items", "data items"), ("generated_items", "generated items")):
        if key in result:
            print(f"{label}: n={result[key]['n']}, accuracy {result[key]['accuracy']:.4f}, "
                  f"macro-F1 {result[key]['macro_f1']:.4f}")
    print()
    print(table)
    for view in ("filtered", "unfiltered") if has_gold else ("unfiltered",):
        print(f"{view}: % allowed over constrained items: "
              + "; ".join(_summary_text(r, result["views"][view]["summary"][r]) for r in readings))
    print(f"wrote {out}/metrics.json, table.md, items.parquet")
    return 0


def _summary_text(reading: str, s: dict) -> str:
    text = f"{reading} {_fmt(s['score'])} of {s['constrained_items']} (chance {_fmt(s['chance'])})"
    only = s.get("only_this_reading")
    if only:
        text += f", only-{reading} {_fmt(only['score'])} of {only['items']} (chance {_fmt(only['chance'])})"
    return text


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.1f}%"


def _parquet(df: pd.DataFrame, path: Path) -> None:
    df.to_parquet(path, index=False)
