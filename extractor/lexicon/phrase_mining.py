"""Lexicon discovery: mine a sentence table for candidate linking phrases (pure Python).

A new language starts without a phrase list. Following Discovery (Sileo et al., 2019,
who mined discourse markers as sentence-initial phrases followed by a comma), every
sentence that opens with one to five words followed by a separator (`, : ; — –`, the
separators of the matching rule in `extractor/pairs/matching.py`) proposes those words as
a candidate ("Totuși, ..." -> "Totuși"; "Cu toate acestea, ..." -> "Cu toate acestea").
Candidates are grouped by their matching key (case-folded; cedillas folded and diacritics
ignored where the language's lexicon says so), so they are counted the way the matcher
would match them.

Only sentences whose first letter is upper-case (or uncased) propose a candidate: one
that opens in lower case is the tail of a split sentence ("zise el, ..." after a line of
dialogue). Each candidate gets (all documented in phrase_lexicons/README.md, "Discovering phrases"):

- ``count``: sentences that open with it; ``pairs``: those with a previous sentence in
  the same paragraph (the pairs a lexicon entry would yield);
- ``docs`` and ``spread``: documents it occurs in, and the normalised entropy of its
  per-document counts, H / ln(N) with N the documents of the table (0 when all
  occurrences are in one document, 1 when spread evenly over all of them), so a
  character's name in one novel or a template phrase of one page ranks low;
- ``lift``: how far the sentence after the phrase differs from a random one in its tie
  to the previous sentence: (mean J(prev, rest) + eps) / (mean J(rand, rest) + eps), with
  J the Jaccard index of normalised word sets (`extractor.statistics.norm_words`),
  ``rest`` the sentence after the phrase and separator, ``rand`` a sentence of the same
  document drawn by a hash of the sentence's location and the seed (never the sentence
  itself or the previous one), eps = 0.01; both means are shrunk towards the table's
  baseline by 10 pseudo-pairs (`PRIOR_PAIRS`), so a phrase seen in one pair cannot top the
  list. Above 1: what follows the phrase continues the previous sentence more than an
  arbitrary sentence of the same document (topic alone) does;
  ``lift_all`` is the same ratio over every consecutive pair of the table, the baseline;
- ``score`` = ln(1 + count) x spread x lift, the default order.

`draft_lexicon` turns the ranked candidates into a draft YAML with the label left for a
person to fill, pre-filled where the language's own lexicon lists the phrase or where the
translation table (`phrase_lexicons/translations.tsv`) links it to a phrase of an
existing lexicon (its label is taken from that lexicon).
"""
from __future__ import annotations

import csv
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import polars as pl
import pyarrow.compute as pc
import pyarrow.dataset as ds

from extractor.core.errors import UserError
from extractor.core.hashing import stable_hash
from extractor.lexicon.lexicon import LEXICON_DIR, MARKED_LABELS, normalize_for_matching
from extractor.statistics import norm_words

SEPARATORS = ",:;\u2014\u2013"
MAX_WORDS = 5
EPS = 0.01
PRIOR_PAIRS = 10  # pseudo-pairs at the table's baseline overlaps that shrink a candidate's lift
TRANSLATIONS = LEXICON_DIR / "translations.tsv"


class DiscoveryError(UserError, ValueError):
    """A bad flag, sentence table or draft lexicon of `python -m extractor.lexicon.discover`."""

_WORD = r"[^\W\d_]+(?:[-'\u2019][^\W\d_]+)*"
_PREFIX = re.compile(rf"\s*({_WORD}(?:[ \t]+{_WORD})*)[ \t]*([{SEPARATORS}])")


# ---------------------------------------------------------------------------- candidates

def sentence_prefix(text: str, max_words: int = MAX_WORDS,
                    require_capital: bool = True) -> tuple[str, str] | None:
    """(phrase, rest) when ``text`` opens with 1..``max_words`` words (letters, inner
    hyphens and apostrophes: "Într-o", "l'altro") followed by a separator; ``rest`` is
    the text after the separator, stripped. None otherwise (digits, quotes or a dash
    first, more words than ``max_words``, nothing after the separator) and, with
    ``require_capital``, when the first letter is lower-case: a sentence that opens in
    lower case is the tail of a split sentence ("zise el, ..." after a line of dialogue),
    not a sentence start (scripts without case always pass)."""
    if not text:
        return None
    m = _PREFIX.match(text)
    if not m:
        return None
    if require_capital and m.group(1)[0].islower():
        return None
    phrase = " ".join(m.group(1).split())
    if len(phrase.split()) > max_words:
        return None
    rest = text[m.end():].strip()
    if not rest:
        return None
    return phrase, rest


def make_key(fold_cedilla: bool = False, strip_diacritics: bool = False):
    """The grouping key of a phrase: the lexicon's matching normalisation, spaces collapsed."""
    def key(phrase: str) -> str:
        return " ".join(normalize_for_matching(unicodedata.normalize("NFC", phrase), fold_cedilla,
                                               strip_diacritics).split())
    return key


def jaccard(a: set, b: set) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


@dataclass
class Sentence:
    doc_id: str
    section: str | None
    para_idx: int
    sent_idx: int
    text: str


@dataclass
class Candidate:
    key: str
    spellings: Counter = field(default_factory=Counter)
    count: int = 0
    pairs: int = 0
    doc_counts: Counter = field(default_factory=Counter)
    adj_sum: float = 0.0
    rand_sum: float = 0.0
    examples: list = field(default_factory=list)  # (hash, premise, sentence)

    @property
    def phrase(self) -> str:
        """The most frequent spelling (ties: the alphabetically first)."""
        return min(self.spellings.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def _random_other(doc: Sequence[Sentence], i: int, prev: int | None, seed: int) -> int | None:
    """Index of a sentence of the same document other than ``i`` and its previous one,
    drawn by a hash of the location (deterministic, independent of row order)."""
    n = len(doc)
    excluded = {i} | ({prev} if prev is not None else set())
    if n <= len(excluded):
        return None
    s = doc[i]
    j = stable_hash(f"{s.doc_id}|{s.section}|{s.para_idx}|{s.sent_idx}", seed=seed) % n
    while j in excluded:
        j = (j + 1) % n
    return j


def mine_documents(documents: Iterable[Sequence[Sentence]], key=None, max_words: int = MAX_WORDS,
                   seed: int = 0, n_examples: int = 3,
                   require_capital: bool = True) -> tuple[dict[str, Candidate], dict]:
    """One pass over documents (each a list of sentences in document order): the
    candidates by key and the table's totals (documents, sentences, consecutive pairs and
    their mean adjacent/random Jaccard, the baseline of ``lift``)."""
    key = key or make_key()
    cands: dict[str, Candidate] = {}
    totals = {"documents": 0, "sentences": 0, "pairs": 0, "adj_sum": 0.0, "rand_sum": 0.0}
    keep = max(n_examples * 4, n_examples)
    for doc in documents:
        doc = list(doc)
        if not doc:
            continue
        totals["documents"] += 1
        totals["sentences"] += len(doc)
        words: list[set[str] | None] = [None] * len(doc)

        def wset(j, words=words, doc=doc):
            if words[j] is None:
                words[j] = set(norm_words(doc[j].text or ""))
            return words[j]

        for i, s in enumerate(doc):
            prev = None
            if i > 0:
                p = doc[i - 1]
                if p.doc_id == s.doc_id and p.section == s.section and p.para_idx == s.para_idx \
                        and p.sent_idx == s.sent_idx - 1:
                    prev = i - 1
            found = sentence_prefix(s.text or "", max_words, require_capital)
            rand = _random_other(doc, i, prev, seed) if prev is not None else None
            if prev is not None and rand is not None:
                totals["pairs"] += 1
                body = set(norm_words(found[1])) if found else wset(i)
                adj, rnd = jaccard(wset(prev), body), jaccard(wset(rand), body)
                totals["adj_sum"] += adj
                totals["rand_sum"] += rnd
            if not found:
                continue
            phrase, rest = found
            k = key(phrase)
            c = cands.get(k)
            if c is None:
                c = cands[k] = Candidate(key=k)
            c.spellings[phrase] += 1
            c.count += 1
            c.doc_counts[s.doc_id] += 1
            if prev is not None and rand is not None:
                c.pairs += 1
                c.adj_sum += adj
                c.rand_sum += rnd
                h = stable_hash(f"{k}|{s.doc_id}|{s.para_idx}|{s.sent_idx}", seed=seed)
                c.examples.append((h, doc[prev].text, s.text))
                if len(c.examples) > keep:  # keep the lowest hashes only
                    c.examples.sort(key=lambda e: e[0])
                    del c.examples[keep:]
    return cands, totals


def lift(adj_mean: float, rand_mean: float, eps: float = EPS) -> float:
    return (adj_mean + eps) / (rand_mean + eps)


def spread(doc_counts: Counter, n_documents: int) -> float:
    """Normalised entropy of the per-document counts: H / ln(n_documents), in [0, 1]."""
    total = sum(doc_counts.values())
    if n_documents < 2 or total == 0:
        return 0.0
    h = -sum((c / total) * math.log(c / total) for c in doc_counts.values() if c)
    return h / math.log(n_documents)


def rank(cands: dict[str, Candidate], totals: dict, min_count: int = 5, min_docs: int = 2,
         sort: str = "score", n_examples: int = 3, exclude: Iterable[str] = (),
         prior_pairs: float = PRIOR_PAIRS) -> list[dict]:
    """The candidates with at least ``min_count`` sentences in ``min_docs`` documents, as
    rows sorted by ``sort`` (score, count, docs, lift, spread), highest first; ties by phrase.

    ``lift`` is shrunk towards the table's baseline: both mean overlaps are taken over the
    candidate's pairs plus ``prior_pairs`` pseudo-pairs at the baseline means, so that a
    phrase seen in one or two pairs cannot top the list by chance."""
    excluded = set(exclude)
    n_docs = totals["documents"]
    n_base = totals["pairs"]
    base_adj = totals["adj_sum"] / n_base if n_base else 0.0
    base_rnd = totals["rand_sum"] / n_base if n_base else 0.0
    rows: list[dict[str, Any]] = []
    for k, c in cands.items():
        if c.count < min_count or len(c.doc_counts) < min_docs or k in excluded:
            continue
        adj = c.adj_sum / c.pairs if c.pairs else 0.0
        rnd = c.rand_sum / c.pairs if c.pairs else 0.0
        weight = c.pairs + prior_pairs
        lf = lift((c.adj_sum + prior_pairs * base_adj) / weight,
                  (c.rand_sum + prior_pairs * base_rnd) / weight) if weight else 0.0
        sp = spread(c.doc_counts, n_docs)
        examples = [(p, h) for _, p, h in sorted(c.examples, key=lambda e: e[0])[:n_examples]]
        rows.append({"phrase": c.phrase, "key": k, "count": c.count, "pairs": c.pairs,
                     "docs": len(c.doc_counts), "spread": round(sp, 4),
                     "overlap_prev": round(adj, 4), "overlap_random": round(rnd, 4), "lift": round(lf, 4),
                     "score": round(math.log1p(c.count) * sp * lf, 4),
                     "spellings": dict(sorted(c.spellings.items(), key=lambda kv: (-kv[1], kv[0]))),
                     "examples": examples})
    if sort not in ("score", "count", "docs", "lift", "spread", "pairs"):
        raise DiscoveryError(f"--sort must be one of score, count, docs, lift, spread, pairs, not '{sort}'")
    rows.sort(key=lambda r: (-r[sort], r["phrase"]))
    return rows


def baseline(totals: dict) -> dict:
    n = totals["pairs"]
    adj = totals["adj_sum"] / n if n else 0.0
    rnd = totals["rand_sum"] / n if n else 0.0
    return {"documents": totals["documents"], "sentences": totals["sentences"], "pairs": n,
            "overlap_prev": round(adj, 4), "overlap_random": round(rnd, 4),
            "lift_all": round(lift(adj, rnd), 4) if n else 0.0}


# ---------------------------------------------------------------------------- documents

def documents_from_rows(rows: Iterable[dict]) -> Iterator[list[Sentence]]:
    """Group rows (sorted by doc_id, section order, para_idx, sent_idx) into documents."""
    doc: list[Sentence] = []
    current = None
    for r in rows:
        s = Sentence(str(r["doc_id"]), r.get("section"), int(r.get("para_idx") or 0),
                     int(r.get("sent_idx") or 0), r.get("text") or "")
        if current is not None and s.doc_id != current:
            yield doc
            doc = []
        current = s.doc_id
        doc.append(s)
    if doc:
        yield doc


def read_sentence_documents(path: str | Path, corpus: Sequence[str] = ()):
    """The sentence table (a sentences/ folder partitioned by corpus, or a Parquet file)
    as (number of documents, iterator of documents). Read whole with pyarrow: a run's
    sentence table is small next to its dumps."""
    path = Path(path)
    if not path.exists():
        raise DiscoveryError(f"{path}: no such sentence table (run jobs/extract.py --stages sentences first)")
    dataset = ds.dataset(str(path), format="parquet", partitioning="hive")
    cols = [c for c in ("corpus", "doc_id", "section", "para_idx", "sent_idx", "text") if c in dataset.schema.names]
    for needed in ("doc_id", "sent_idx", "text"):
        if needed not in cols:
            raise DiscoveryError(f"{path}: the sentence table has no column '{needed}'")
    flt = pc.field("corpus").isin(list(corpus)) if corpus and "corpus" in cols else None
    table = dataset.to_table(columns=cols, filter=flt)
    # section order inside a document: the first paragraph index it holds
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)  # a table gives a frame
    if "section" not in df.columns:
        df = df.with_columns(pl.lit(None, dtype=pl.Utf8).alias("section"))
    if "para_idx" not in df.columns:
        df = df.with_columns(pl.lit(0).alias("para_idx"))
    df = df.with_columns(pl.col("para_idx").min().over(["doc_id", "section"]).alias("_sec")) \
           .sort(["doc_id", "_sec", "para_idx", "sent_idx"])
    n_docs = df["doc_id"].n_unique()
    rows = df.select("doc_id", "section", "para_idx", "sent_idx", "text").iter_rows(named=True)
    return n_docs, documents_from_rows(rows)


# ---------------------------------------------------------------------------- known labels

def read_translations(path: Path = TRANSLATIONS) -> list[dict[str, list[str]]]:
    """Rows of the translation table: {"label": [...], "en": [...], "ro": [...], ...};
    a cell may hold several spellings separated by ``|``; ``#`` lines are comments."""
    if not Path(path).exists():
        return []
    rows = []
    with open(path, encoding="utf-8") as fh:
        lines = [ln for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]
    for rec in csv.DictReader(lines, delimiter="\t"):
        rows.append({k.strip(): [v.strip() for v in (val or "").split("|") if v.strip()]
                     for k, val in rec.items() if k})
    return rows


def _loose(text: str) -> str:
    """Comparison key across lexicons: case-folded, cedillas folded, diacritics ignored."""
    return " ".join(normalize_for_matching(unicodedata.normalize("NFC", text), True, True).split())


def known_labels(lang: str, lexicons: dict, translations: list[dict]) -> dict[str, tuple[str, str]]:
    """Loose key -> (canonical label, why) for phrases of ``lang`` with a known label:
    first the language's own lexicon (``lexicons[lang]``, phrase sets included), then the
    translation table, whose label is taken from the first existing lexicon that lists one
    of the row's phrases in another language (else the table's own label)."""
    out: dict[str, tuple[str, str]] = {}
    own = lexicons.get(lang)
    if own is not None:
        for own_label, phrases in own.phrases.items():
            for ph in phrases:
                out.setdefault(_loose(ph), (own_label, f"{lang}.yaml lists '{ph}'"))
    index: dict[str, dict[str, str]] = {}
    for other, lex in lexicons.items():
        index[other] = {_loose(ph): label for label, phrases in lex.phrases.items() for ph in phrases}
    for row in translations:
        mine = row.get(lang) or []
        if not mine:
            continue
        label: str | None = None
        why = ""
        for other in sorted(index):
            if other == lang:
                continue
            for ph in row.get(other) or []:
                if _loose(ph) in index[other]:
                    label = index[other][_loose(ph)]
                    why = f"translates {other} '{ph}' ({other}.yaml: {label})"
                    break
            if label:
                break
        if label is None and row.get("label"):
            label = row["label"][0]
            others = ", ".join(f"{o} '{row[o][0]}'" for o in sorted(row) if o not in ("label", lang) and row[o])
            why = f"translation table: {others}"
        if label is not None and label in MARKED_LABELS:
            for ph in mine:
                out.setdefault(_loose(ph), (label, why))
    return out


def prefill(rows: list[dict], known: dict[str, tuple[str, str]]) -> list[dict]:
    for r in rows:
        hit = known.get(_loose(r["phrase"]))
        r["label"], r["label_source"] = (hit if hit else (None, None))
    return rows


# ---------------------------------------------------------------------------- draft YAML

def draft_lexicon(lang: str, rows: list[dict], base: dict, source: str) -> dict:
    """The draft lexicon as a plain dict (written as YAML by the command)."""
    return {
        "lang": lang,
        "source": source,
        "baseline": base,
        "how_to": ("Set `label` of each candidate to contrasting, entailment or reasoning, or null to "
                   "leave it out; then `python -m extractor.lexicon.discover --promote THIS_FILE` prints the "
                   "`phrases:` block for phrase_lexicons/<lang>.yaml. Read the examples: a phrase belongs "
                   "in a lexicon only when its sentence stands in that relation to the previous one."),
        "candidates": [{
            "phrase": r["phrase"], "label": r.get("label"),
            **({"label_source": r["label_source"]} if r.get("label_source") else {}),
            "count": r["count"], "pairs": r["pairs"], "docs": r["docs"], "spread": r["spread"],
            "lift": r["lift"], "score": r["score"],
            "examples": [{"previous": p, "sentence": h} for p, h in r["examples"]],
        } for r in rows],
    }


def promote(draft: dict) -> dict[str, list[str]]:
    """label -> phrases of the candidates a person labelled (canonical labels only)."""
    out: dict[str, list[str]] = {}
    for i, c in enumerate(draft.get("candidates") or []):
        label = c.get("label")
        if label in (None, "", "null"):
            continue
        if label not in MARKED_LABELS:
            raise DiscoveryError(f"candidate {i} ({c.get('phrase')!r}): label '{label}' is not one of "
                             f"{', '.join(MARKED_LABELS)} (or null)")
        out.setdefault(label, []).append(str(c["phrase"]))
    return {label: out[label] for label in MARKED_LABELS if label in out}
