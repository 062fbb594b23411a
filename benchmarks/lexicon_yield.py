"""Yield of a lexicon's phrase sets: marked pairs per label per MB of input text.

    .venv/bin/python benchmarks/lexicon_yield.py --sentences out/eltec/sentences --lang ro \
        --phrase-set "" --phrase-set extended [--pos] [--mb 5.37] [--json yield.json]

Reads a sentence table (`jobs/extract.py --stages sentences`; the run's manifest.json
beside it gives the input bytes, else pass --mb) and, for each phrase set ("" is the
lexicon's own `phrases`, e.g. RoNLI's list for ro), pairs every document with the stage-2
rules (`extractor.pairs.pairing.marked_pairs`: a sentence opening with a phrase and the
previous sentence of its paragraph, neither short, ...). Counts the kept marked pairs per
label before the POS filter, and after it with --pos (the lexicon's preferred spaCy model;
duplicates across documents are not removed, so the counts are the candidates the pairs
stage starts from). Prints one row per label and set: pairs, pairs per MB, and the gain
of each set over the first.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from extractor.lexicon.lexicon import MARKED_LABELS, load_lexicon  # noqa: E402
from extractor.pairs.matching import Matcher  # noqa: E402
from extractor.pairs.pairing import Document, marked_pairs, pos_texts  # noqa: E402


def input_mb(sentences: Path) -> float | None:
    """Input bytes of the run that wrote this sentence table (its manifest.json), in MB."""
    for folder in (sentences.parent, sentences.parent / "current"):
        manifest = folder / "manifest.json"
        if manifest.exists():
            inputs = json.loads(manifest.read_text()).get("inputs") or []
            total = sum(int(i.get("bytes") or 0) for i in inputs)
            if total:
                return total / 1e6
    return None


def documents(sentences: Path):
    import polars as pl
    import pyarrow.dataset as ds

    table = ds.dataset(str(sentences), format="parquet", partitioning="hive").to_table(
        columns=["doc_id", "section", "para_idx", "sent_idx", "text", "short"])
    df = pl.from_arrow(table).sort(["doc_id", "para_idx", "sent_idx"])
    for part in df.partition_by("doc_id", maintain_order=True):
        yield Document.from_rows(part.to_dicts())


def count_set(docs: list, lexicon, pos_model: str | None) -> dict:
    matcher = Matcher(lexicon)
    kept: Counter = Counter()
    rejected: Counter = Counter()
    pairs = []
    for doc in docs:
        for p in marked_pairs(doc, matcher):
            if p.reject is None:
                pairs.append(p)
            else:
                rejected[p.reject] += 1
    for p in pairs:
        kept[p.label] += 1
    out = {"pairs": {l: kept.get(l, 0) for l in MARKED_LABELS}, "rejected": dict(rejected), "markers": {}}
    markers: Counter = Counter((p.label, p.phrase) for p in pairs)
    for (label, phrase), n in sorted(markers.items(), key=lambda kv: (-kv[1], kv[0])):
        out["markers"].setdefault(label, {})[phrase] = n
    if pos_model:
        from extractor.pairs import pos_filter as pf
        texts = pos_texts(pairs)
        verdicts = dict(zip(texts, pf.pos_verdicts(texts, pos_model, lexicon)))
        after: Counter = Counter()
        for p in pairs:
            if verdicts[p.hypothesis][0] and verdicts[p.premise][0]:
                after[p.label] += 1
        out["pairs_after_pos"] = {l: after.get(l, 0) for l in MARKED_LABELS}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", required=True, help="sentences/ table of a run")
    ap.add_argument("--lang", default="ro")
    ap.add_argument("--phrase-set", action="append", default=None, metavar="NAME",
                    help="phrase set to compare ('' = the lexicon's own phrases); repeatable "
                         "(default: '' and every set the lexicon offers)")
    ap.add_argument("--mb", type=float, default=None, help="input size in MB (default: from the run's manifest.json)")
    ap.add_argument("--pos", action="store_true", help="also count after the POS completeness filter")
    ap.add_argument("--json", default=None, help="write the numbers to this file")
    args = ap.parse_args(argv)
    sentences = Path(args.sentences)
    if not sentences.exists():
        print(f"error: {sentences}: no such sentence table", file=sys.stderr)
        return 2
    mb = args.mb or input_mb(sentences)
    if not mb:
        print(f"error: {sentences}: no manifest.json with input bytes beside it; pass --mb", file=sys.stderr)
        return 2
    base = load_lexicon(args.lang)
    sets = args.phrase_set if args.phrase_set is not None else ["", *base.phrase_sets_available]
    t0 = time.time()
    docs = list(documents(sentences))
    n_sent = sum(len(d) for d in docs)
    print(f"{sentences}: {len(docs):,} documents, {n_sent:,} sentences, {mb:.2f} MB of input text "
          f"(read in {time.time() - t0:.1f}s)")
    results = {}
    for name in sets:
        lex = load_lexicon(args.lang, phrase_set=[name] if name else None)
        t0 = time.time()
        model = lex.spacy_model if args.pos else None
        results[name or "base"] = count_set(docs, lex, model)
        results[name or "base"]["phrases"] = {l: len(v) for l, v in lex.phrases.items()}
        results[name or "base"]["seconds"] = round(time.time() - t0, 2)
    first = next(iter(results))
    cols = ["pairs", *(["pairs_after_pos"] if args.pos else [])]
    print()
    print("| phrase set | label | phrases | " + " | ".join(f"{c} | {c} per MB" for c in cols) + " | gain over "
          f"{first} |")
    print("|---|---|---:|" + "---:|---:|" * len(cols) + "---:|")
    for name, r in results.items():
        for label in [*MARKED_LABELS, "all"]:
            cells = []
            for c in cols:
                n = sum(r[c].values()) if label == "all" else r[c][label]
                cells += [f"{n:,}", f"{n / mb:.1f}"]
            n0 = sum(results[first]["pairs"].values()) if label == "all" else results[first]["pairs"][label]
            n1 = sum(r["pairs"].values()) if label == "all" else r["pairs"][label]
            gain = f"{n1 / n0:.2f}x" if n0 else ("-" if not n1 else "new")
            ph = sum(r["phrases"].values()) if label == "all" else r["phrases"].get(label, 0)
            print(f"| {name} | {label} | {ph} | " + " | ".join(cells) + f" | {gain} |")
    print()
    for name, r in results.items():
        top = {l: list(m.items())[:6] for l, m in r["markers"].items()}
        print(f"{name}: most frequent phrases " + "; ".join(
            f"{l}: " + ", ".join(f"{p} {n}" for p, n in items) for l, items in top.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"mb": mb, "sets": results}, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
