"""`python -m extractor.lexicon.discover`: candidate linking phrases of a sentence table.

    python -m extractor.lexicon.discover --sentences output/uk/sentences --lang uk --out draft-uk.yaml
    python -m extractor.lexicon.discover --promote draft-uk.yaml        # the labelled phrases as a `phrases:` block

Pure Python over the Parquet sentence table (pyarrow + polars); no Spark. The logic and
every score are in `extractor/lexicon/discovery.py`; the workflow from a raw dump to a first corpus
is in phrase_lexicons/README.md ("Discovering phrases for a new language").
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from extractor.core.errors import UserError, yaml_problem
from extractor.lexicon import discovery
from extractor.lexicon.lexicon import LexiconError, available_languages, load_lexicon


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m extractor.lexicon.discover",
                                description="Mine a sentence table for candidate linking phrases.")
    p.add_argument("--sentences", metavar="PATH",
                   help="sentences/ folder of a run (jobs/extract.py --stages sentences) or a Parquet file")
    p.add_argument("--lang", help="language code: its lexicon (if any) gives the matching normalisation "
                                  "and known labels; the translation table pre-fills the others")
    p.add_argument("--corpus", action="append", default=[], metavar="NAME",
                   help="only these corpora of the table (repeatable; default: all)")
    p.add_argument("--out", metavar="draft.yaml", help="write the draft lexicon here")
    p.add_argument("--top", type=int, default=30, help="candidates printed (default 30; the draft keeps --keep)")
    p.add_argument("--keep", type=int, default=200, help="candidates written to the draft (default 200)")
    p.add_argument("--min-count", type=int, default=5, help="at least this many sentences (default 5)")
    p.add_argument("--min-docs", type=int, default=2, help="in at least this many documents (default 2)")
    p.add_argument("--max-words", type=int, default=discovery.MAX_WORDS, help="longest phrase in words (default 5)")
    p.add_argument("--sort", default="score", choices=("score", "count", "docs", "lift", "spread", "pairs"))
    p.add_argument("--examples", type=int, default=3, help="example pairs per candidate (default 3)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random sentences and example choice")
    p.add_argument("--translations", default=str(discovery.TRANSLATIONS), metavar="TSV",
                   help="translation table of known connectives (default phrase_lexicons/translations.tsv)")
    p.add_argument("--json", action="store_true", help="print the ranked candidates as JSON")
    p.add_argument("--promote", metavar="DRAFT",
                   help="print the `phrases:` block of a draft whose labels a person filled, and exit")
    return p


def _short(text: str, n: int = 110) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _lexicons(lang: str | None) -> dict:
    out = {}
    for code in available_languages():
        try:
            lex = load_lexicon(code)
            sets = lex.phrase_sets_available
            out[code] = load_lexicon(code, phrase_set=sets) if sets else lex
        except LexiconError as exc:
            print(f"warning: {exc}", file=sys.stderr)
    return out


def run(args) -> int:
    if args.promote:
        try:
            draft = yaml.safe_load(Path(args.promote).read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise discovery.DiscoveryError(f"{args.promote}: cannot read the draft lexicon "
                                           f"({yaml_problem(exc)})") from None
        phrases = discovery.promote(draft)
        if not phrases:
            raise discovery.DiscoveryError(f"{args.promote}: no candidate has a label yet")
        sys.stdout.write(yaml.safe_dump({"phrases": phrases}, allow_unicode=True, sort_keys=False))
        return 0
    if not args.sentences or not args.lang:
        raise discovery.DiscoveryError("--sentences and --lang are required (or --promote DRAFT)")
    lexicons = _lexicons(args.lang)
    own = lexicons.get(args.lang)
    key = discovery.make_key(own.fold_cedilla, own.match_without_diacritics) if own else discovery.make_key()
    n_docs, documents = discovery.read_sentence_documents(args.sentences, args.corpus)
    try:
        from tqdm import tqdm
        documents = tqdm(documents, total=n_docs, unit="doc", desc="mining", file=sys.stderr,
                         disable=not sys.stderr.isatty())
    except ImportError:  # tqdm comes with the train extra; the mining is seconds anyway
        pass
    cands, totals = discovery.mine_documents(documents, key=key, max_words=args.max_words, seed=args.seed,
                                             n_examples=args.examples)
    rows = discovery.rank(cands, totals, min_count=args.min_count, min_docs=args.min_docs, sort=args.sort,
                          n_examples=args.examples)
    known = discovery.known_labels(args.lang, lexicons, discovery.read_translations(Path(args.translations)))
    rows = discovery.prefill(rows, known)
    base = discovery.baseline(totals)
    if args.json:
        print(json.dumps({"baseline": base, "candidates": rows[: args.top]}, ensure_ascii=False, indent=1))
    else:
        print(f"{base['documents']:,} documents, {base['sentences']:,} sentences, {base['pairs']:,} consecutive "
              f"pairs; {len(cands):,} distinct sentence openings before a separator, {len(rows):,} with "
              f">= {args.min_count} sentences in >= {args.min_docs} documents. Baseline over all pairs: "
              f"overlap with previous {base['overlap_prev']:.3f}, with a random sentence of the document "
              f"{base['overlap_random']:.3f}, lift_all {base['lift_all']:.2f}.")
        print()
        print("| # | phrase | count | pairs | docs | spread | lift | score | label (pre-filled) |")
        print("|---:|---|---:|---:|---:|---:|---:|---:|---|")
        for i, r in enumerate(rows[: args.top], 1):
            print(f"| {i} | {r['phrase']} | {r['count']:,} | {r['pairs']:,} | {r['docs']} | {r['spread']:.2f} | "
                  f"{r['lift']:.2f} | {r['score']:.2f} | {r['label'] or '?'}"
                  + (f" ({r['label_source']})" if r.get("label_source") else "") + " |")
        print()
        for i, r in enumerate(rows[: args.top], 1):
            print(f"{i}. {r['phrase']} ({r['count']:,})")
            for p, h in r["examples"]:
                print(f"   - {_short(p, 90)}  =>  {_short(h, 110)}")
    if args.out:
        draft = discovery.draft_lexicon(args.lang, rows[: args.keep], base, source=str(args.sentences))
        header = (f"# Draft lexicon for '{args.lang}' from {args.sentences} (python -m extractor.lexicon.discover).\n"
                  "# Fill `label` (contrasting, entailment, reasoning or null), then:\n"
                  f"#   python -m extractor.lexicon.discover --promote {args.out}\n")
        Path(args.out).write_text(header + yaml.safe_dump(draft, allow_unicode=True, sort_keys=False, width=120),
                                  encoding="utf-8")
        print(f"\ndraft: {args.out} ({min(len(rows), args.keep)} candidates)", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except UserError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
