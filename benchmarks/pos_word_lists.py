"""Word lists that decide the POS completeness check without a tagger, derived from the
tagger's own tags, and measured against it on held-out text.

    .venv/bin/python benchmarks/pos_word_lists.py                 # derive, measure, print
    .venv/bin/python benchmarks/pos_word_lists.py --write         # and write them into phrase_lexicons/ro.yaml
    .venv/bin/python benchmarks/pos_word_lists.py --verdicts F    # also measure on F (JSONL {t, ok})

The POS filter (ESNLIR §2.2, `extractor.pairs.pos_filter`) asks whether a sentence holds a
subject-like tag (NOUN, PRON, PROPN) and a predicate tag (VERB, AUX). Most sentences
hold a word the tagger tags the same way wherever it stands ("este" AUX, "se" PRON):
a sentence with one such predicate word and one such subject word is complete whatever
the tagger says of the rest. This script

1. takes the dense scale pool's Romanian documents (`benchmarks/scale.py --pool dense`:
   the ELTeC novels, the rowiki prose, the speeches, the news, cut into sentences) and
   splits them in two halves by a stable hash of the document: derive and held-out;
2. tags the derive half with the lexicon's spaCy pipeline and keeps, as the lexicon's
   `pos_filter.complete_words`, every lower-cased word form seen at least `--min-count`
   times whose tags are `--min-share` or more of one side (subject-like or predicate);
3. on the held-out half (and on `--verdicts`), compares the word lists' verdict with the
   tagger's (`pos_filter.pos_verdicts` without the lists): the share of sentences the
   lists decide, and every sentence they call complete that the tagger does not (printed);
4. times both on the held-out sentences (CPU-s per 1,000 sentences).
"""
from __future__ import annotations

import argparse
import functools
import json
import pickle
import sys
import textwrap
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import scale  # noqa: E402  (after the repository is on the path)
from extractor.core.hashing import stable_hash  # noqa: E402
from extractor.lexicon.lexicon import WORD, CompleteWords, load_lexicon  # noqa: E402
from extractor.pairs import pos_filter  # noqa: E402

LEXICON = REPO / "phrase_lexicons" / "ro.yaml"
WORK = REPO / "benchmarks" / "_work" / "pos-words"


def cached(name: str, compute):
    """`compute()`, kept under benchmarks/_work/pos-words/ (the tagging takes minutes)."""
    path = WORK / f"{name}.pickle"
    if path.exists():
        return pickle.loads(path.read_bytes())
    value = compute()
    WORK.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(value))
    return value


def halves(pool: dict, lang: str = "ro") -> tuple[list[str], list[str]]:
    """The pool's sentences of `lang`, split by a stable hash of their document."""
    derive: list[str] = []
    held: list[str] = []
    for i, (name, doc_lang, paragraphs) in enumerate(pool["documents"]):
        if doc_lang != lang:
            continue
        side = derive if stable_hash("pos-word-lists", name, i) % 2 == 0 else held
        side.extend(pool["sentences"][s] for para in paragraphs for s in para)
    return derive, held


def tag_counts(texts: list[str], model: str) -> dict[str, Counter]:
    """Lower-cased word form -> Counter of its coarse tags over `texts`."""
    nlp = pos_filter.load_model(model)
    counts: dict[str, Counter] = defaultdict(Counter)
    for start in range(0, len(texts), pos_filter.TEXTS_PER_CALL):
        part = texts[start:start + pos_filter.TEXTS_PER_CALL]
        with pos_filter.memory_zone(nlp):
            for doc in pos_filter.tag_docs(nlp, nlp.tokenizer.pipe(part)):
                for tok in doc:
                    if not tok.is_space:
                        counts[tok.text.lower()][tok.pos_] += 1
    return counts


def choose(counts: dict[str, Counter], tags: set[str], min_count: int, min_share: float) -> list[str]:
    """Word forms (letters only, hyphen inside allowed) seen `min_count` times or more whose
    tags are in `tags` at least `min_share` of the time."""
    out = []
    for word, c in counts.items():
        n = sum(c.values())
        if n >= min_count and sum(c[t] for t in tags) / n >= min_share and WORD.fullmatch(word):
            out.append(word)
    return sorted(out, key=lambda w: (-sum(counts[w].values()), w))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--min-count", type=int, default=10)
    ap.add_argument("--min-share", type=float, default=0.995)
    ap.add_argument("--grid", action="store_true",
                    help="also print the held-out figures for other --min-count and --min-share values")
    ap.add_argument("--verdicts", type=Path, action="append", default=[],
                    help="JSONL of {t: sentence, ok: the tagger's verdict} to measure on as well (repeatable); "
                         "the log's dense250-verdicts.jsonl: the texts and verdicts `pos_filter.pos_verdicts` "
                         "returned, recorded by a wrapper around it, during benchmarks/stage2_profile.py "
                         "--run out-250mb-default before the lists existed")
    ap.add_argument("--write", action="store_true", help="write the lists into phrase_lexicons/ro.yaml")
    args = ap.parse_args()

    plain = load_lexicon("ro")
    model = plain.spacy_model
    derive, held = halves(scale.build_pool("dense"))
    print(f"pool dense, ro: {len(derive):,} sentences to derive from, {len(held):,} held out; model {model}")
    t0 = time.process_time()
    counts = cached(f"counts-{model}", lambda: tag_counts(derive, model))
    print(f"tagged the derive half in {time.process_time() - t0:.1f} CPU-s (0: cached); {len(counts):,} word forms")
    t0 = time.process_time()
    held_verdicts = cached(f"held-{model}", lambda: [ok for ok, _ in pos_filter.tagged_verdicts(held, model, plain)])
    t_tagger = time.process_time() - t0
    if args.grid:
        for min_count in (5, 10, 20, 30):
            for min_share in (0.98, 0.99, 0.995, 0.999):
                grid = word_lists(counts, plain, min_count, min_share)
                decided, wrong = agreement(grid, held, held_verdicts)
                print(f"   grid --min-count {min_count:3d} --min-share {min_share}: {len(grid.subject):5d} subject, "
                      f"{len(grid.predicate):5d} predicate words; held-out decided "
                      f"{100 * decided / len(held):.1f} %, {len(wrong)} against the tagger")
    lists = word_lists(counts, plain, args.min_count, args.min_share)
    subject = sorted(lists.subject, key=lambda w: (-sum(counts[w].values()), w))
    predicate = sorted(lists.predicate, key=lambda w: (-sum(counts[w].values()), w))
    print(f"subject words: {len(subject)} (first 40: {' '.join(subject[:40])})")
    print(f"predicate words: {len(predicate)} (first 40: {' '.join(predicate[:40])})")
    measure("held-out half", held, lists, held_verdicts)
    if t_tagger > 1:
        print(f"   tagger on the held-out half: {1000 * t_tagger / len(held):.2f} CPU-s per 1,000 sentences")
    for path in args.verdicts:
        rows = [json.loads(line) for line in path.open(encoding="utf-8")]
        measure(path.name, [r["t"] for r in rows], lists, [bool(r["ok"]) for r in rows])
    if args.write:
        write_lists(LEXICON, subject, predicate, args)
        print(f"wrote pos_filter.complete_words to {LEXICON}")


def word_lists(counts: dict[str, Counter], lexicon, min_count: int, min_share: float) -> CompleteWords:
    pick = functools.partial(choose, counts, min_count=min_count, min_share=min_share)
    return CompleteWords(subject=frozenset(pick(set(lexicon.subject_pos))),
                         predicate=frozenset(pick(set(lexicon.predicate_pos))))


def agreement(lists: CompleteWords, texts: list[str], given: list[bool]) -> tuple[int, list[str]]:
    """(texts the lists call complete, those of them the tagger does not: `given` False)."""
    decided = [lists.complete(t) for t in texts]
    return sum(decided), [t for t, d, g in zip(texts, decided, given) if d and not g]


def measure(name: str, texts: list[str], lists: CompleteWords, given: list[bool]) -> None:
    t0 = time.process_time()
    hit, wrong = agreement(lists, texts, given)
    t_lists = time.process_time() - t0
    n = len(texts)
    print(f"== {name}: {n:,} sentences, the tagger rejects {n - sum(given):,}; the word lists decide {hit:,} "
          f"({100 * hit / n:.1f} %), {len(wrong)} of them against the tagger's verdict "
          f"({100 * len(wrong) / max(hit, 1):.3f} %); lists {1000 * t_lists / n:.3f} CPU-s per 1,000 sentences")
    for t in wrong[:25]:
        print(f"   complete by the lists, not by the tagger: {t[:160]}")


def flow(words: list[str]) -> str:
    """A YAML flow list's items, quoted, wrapped at 100 characters."""
    text = ", ".join(json.dumps(w, ensure_ascii=False) for w in words)
    return "\n      ".join(textwrap.wrap(text, 100, break_long_words=False, break_on_hyphens=False))


def write_lists(path: Path, subject: list[str], predicate: list[str], args) -> None:
    """Replace the `complete_words` block of the lexicon's pos_filter section (kept as the
    section's last key, generated by this script)."""
    text = path.read_text(encoding="utf-8")
    start = text.index("pos_filter:\n")
    end = text.index("\n\n", start)
    section = text[start:end].split("\n  # complete_words:")[0]
    block = (f"\n  # complete_words: generated by benchmarks/pos_word_lists.py (--min-count {args.min_count}, "
             f"--min-share {args.min_share})\n"
             "  # from the spaCy pipeline's tags of half the dense scale pool; a sentence holding a word\n"
             "  # of each list is complete without tagging (docs/pairs.md, \"Word lists before the tagger\").\n"
             "  # Delete the block, or pass --pos-words off, to tag every sentence.\n"
             "  complete_words:\n"
             f"    subject: [{flow(subject)}]\n"
             f"    predicate: [{flow(predicate)}]")
    path.write_text(text[:start] + section + block + text[end:], encoding="utf-8")
    load_lexicon(str(path))  # still a valid lexicon


if __name__ == "__main__":
    main()
