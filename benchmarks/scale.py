"""The whole job at scale, on MediaWiki dumps of unique pages: cost and memory against size.

    .venv/bin/python benchmarks/scale.py --sizes 250,1000,4000
    .venv/bin/python benchmarks/scale.py --sizes 250 --build-only      # only the dumps
    .venv/bin/python benchmarks/scale.py --sizes 1000 --compare-flags "--no-label-filter all"
    .venv/bin/python benchmarks/scale.py --sizes 250 --pool novels     # the pool before (fewer phrases)

The dumps (`benchmarks/_work/scale/<pool>-unique-<N>mb.xml.bz2`, git-ignored, cached; about N
MB of uncompressed XML: the size of a cycle is estimated from the first, so a dump comes out
up to 2 % short) are built from the real text in ../shared/data. The default pool, `dense`
(`dense-unique-<N>mb`), is the 20 Romanian ELTeC novels, the prose of the real rowiki pages
(Berlin), the speeches of two Romanian presidents (text/ro-speeches, a paragraph a line)
and 1,931 Romanian news articles (text/ro-news, blank-line paragraphs; the titles are not
used): argumentative prose, with the density of linking phrases a real corpus has (about
2.5x the novels'). `--pool novels` (`ro-unique-<N>mb`, the pool of every run before
2026-11-28's dense one) is the novels and the rowiki prose alone: poor in linking phrases,
so stages 2 and 3 look cheaper than on real text. `--pool novels,es` adds the 20 Spanish
novels (foreign text for a `--lang ro` job: it finds almost no markers there). `ro` and
`ro,es` are the old names of the two. Each pool has its own cache, Punkt parameters and
cycle folder. Each page is a run of a few consecutive real paragraphs of one source (a
novel, a speeches file, a news article, the rowiki prose), under section headings
(`== Istorie ==`), with wiki links (`[[cuvânt]]`, `[[Cuvânt (dezambiguizare)|cuvânt]]`),
templates (an infobox on some pages, `{{Necesită citare}}`), `<ref>{{Citat web ...}}</ref>`
references, a notes section, external links and categories as Romanian Wikipedia writes
them, and a redirect page after every fourth article. The pool's sentences are cut with
Punkt parameters trained once on the pool (`punkt_params-pool.json` for novels,
`punkt_params-dense-v1.json` for dense, trained on a shuffled sample of all its sources),
which the job is given (`--punkt-params`), so the builder's sentences are the job's sentences.

Uniqueness: the builder walks the pool once per "cycle" (about 8 MB of XML); in cycle c the
sentence's variant is v = c * k + r (k: its copies in the pool, r: the rank of this copy).
Variant v replaces n = w // 9 + 1 of the sentence's w words (words of three letters or more
past its first four, so the linking phrases that open sentences survive; fewer where it has
fewer such words), spread over the sentence, word j by vocabulary word (crc32(sentence) + v +
7919 j) mod V (skipping the word it replaces; a second word once v >= V). Two variants of a
sentence then share at most w - n of its words: a Jaccard index of their word sets of at
most (w - n) / (w + n) < 0.8, below the job's near-duplicate threshold (docs/neardup.md),
so the cycles' pairs are not near-duplicates of each other either. (The issue asked for one
word per sentence; with near-duplicates on, the default, that made every marked pair of a
cycle a near-duplicate of the same pair in every other cycle: 789 pairs were left of 1 GB.)
A sentence of four words or fewer ("— Ei!") has its last word replaced by two or more
vocabulary words, the base-V digits of (v, sentence). So no sentence, adjacent pair or page
repeats, except where two different pool sentences differ in just the replaced words. The
builder checks it on every sentence it writes (8-byte blake2b digests of the sentences and
of each adjacent pair, np.unique) and prints the counts; after each job the script prints
the job's own distinct sentence texts and its `duplicate_pair` rejections.

The cycles are built in parallel (one process per core, each writes its own bzip2 stream;
the dump is their concatenation: a multistream bzip2 file, as Wikipedia publishes) and are
cached one by one, so a larger dump reuses the cycles of a smaller one.

Then, on each size: `jobs/extract.py --lang ro --input DUMP --master local[2] --pos-filter on
--punkt-params P` (the three stages; P is the pool's Punkt parameters, so every size does
the same work per MB; the job's own Punkt training would be a fixed 4 MB cost). The CPU of
the whole process tree (driver, JVM, Python workers) is sampled with psutil every 0.1 s and
split into stages at the job's `[extract] stage ...` lines; per stage it prints CPU-s per
MB of XML, wall, peak RSS of the driver JVM and of the Python workers (each, and all of
them together), scratch bytes (the largest size of the run's `_work-*` folders seen while the
stage ran) and output bytes (its table on disk). On the 1 GB dump (or the size nearest to
it), WikiExtractor 3 (`--json --processes 1 --no-templates`) runs in the same invocation.
`--compare-flags FLAGS` (one string, e.g. "--no-label-filter all": the job before the label
filters) runs a second configuration of the job right after the default one on every
size, in the same invocation (repeatable: a third, a fourth); all are recorded (`config`:
default / compare, or compare-1, compare-2, ... when there are several), all get
their ratios to the same WikiExtractor run, and the pairs kept per MB (all, and marked) of
every run are printed. It fits log(cost) = a + b log(size) over the sizes (default runs) (b: the slope; 1 is linear) for each stage
and the whole job, and writes `benchmarks/results/scale.json` and `benchmarks/results/scale.png`
(CPU-s per MB and peak memory against dump size).

The machine this runs on may be shared: the ratios (stage 2 / stage 1, ours / WikiExtractor)
come from runs of the same invocation; absolute seconds are that machine's.

The POS filter's tagger spends most of stage 2 in numpy's BLAS (float32 matrix products),
whose kernels depend on the CPU and on OPENBLAS_CORETYPE: it prints which library and kernels
the job's processes load (threadpoolctl, in a child process with this environment, as the
Python workers get it) and the OPENBLAS_* variables, and records them in the JSON. Some
machines set OPENBLAS_CORETYPE=Haswell (and OPENBLAS_L2_SIZE) for older OpenBLAS builds;
a current numpy then runs AVX2 kernels on an AVX-512 CPU, and stage 2 costs more (on the
2026-11-28 machine, 67.4 against 53.5 CPU-s of stage 2 at 1 GB, docs/scale.md). To measure with
OpenBLAS's own choice, unset both for this command alone:
`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python benchmarks/scale.py ...`.
"""
from __future__ import annotations

import argparse
import bz2
import hashlib
import html
import json
import os
import pickle
import random
import re
import shutil
import subprocess
import sys
import threading
import time
import zlib
from multiprocessing import get_context
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from extract_throughput import TreeMonitor  # noqa: E402 (benchmarks/extract_throughput.py)

WORK = REPO / "benchmarks" / "_work" / "scale"
RESULTS = REPO / "benchmarks" / "results"
SHARED = Path(os.environ.get("NLI_SHARED_DATA", REPO.parent / "shared" / "data"))
ROWIKI = SHARED / "dumps" / "rowiki-real-3pages.xml"
NOVELS = {"ro": SHARED / "text" / "eltec-rom-20", "es": SHARED / "text" / "eltec-spa-20"}
SPEECHES = SHARED / "text" / "ro-speeches"
NEWS = SHARED / "text" / "ro-news" / "ro-news-realitatea-aleph.jsonl"
PY = sys.executable
POOL_VERSION = 7   # bump when the pool or the page layout changes (invalidates the caches)
DENSE_VERSION = 1  # the same for the dense pool (its own caches)
# --pool: the sources of the pages. `dense` (the default): the Romanian novels, the rowiki
# prose, the presidential speeches and the news articles; `novels`: the pool before it
# (novels and rowiki prose), `novels,es` with the Spanish novels too. `ro` and `ro,es` are
# the old names of the last two.
POOLS = {"dense": ("dense", ("ro",)), "novels": ("novels", ("ro",)), "novels,es": ("novels", ("ro", "es")),
         "ro": ("novels", ("ro",)), "ro,es": ("novels", ("ro", "es"))}

# --------------------------------------------------------------------------- the pool

_WS = re.compile(r"\S+")
_WORD = re.compile(r"[^\W\d_]{3,}")
_ANY_WORD = re.compile(r"[^\W\d_]+")


def _rowiki_paragraphs() -> list[str]:
    """Prose paragraphs of the real rowiki pages, their markup removed (links to their
    text, refs, templates and bold/italics out)."""
    text = html.unescape(ROWIKI.read_text(encoding="utf-8"))
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    out = []
    for line in text.splitlines():
        line = line.strip()
        if len(line) < 200 or line[0] in "{|!*#:=<[" or line.startswith("'''{{"):
            continue
        line = re.sub(r"<ref[^>]*/>|<ref[^>]*>.*?</ref>", "", line)
        line = re.sub(r"\{\{[^{}]*\}\}", "", line)
        line = re.sub(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]", r"\1", line)
        line = re.sub(r"\[https?://\S+ ([^\]]*)\]", r"\1", line)
        line = re.sub(r"'{2,}", "", line)
        line = re.sub(r"&[a-z]+;|<[^>]+>", " ", line)
        line = re.sub(r"\s+", " ", line).strip()
        if len(line) >= 200 and "{" not in line and "[" not in line and "|" not in line:
            out.append(line)
    return out


def _novel_paragraphs(folder: Path) -> list[tuple[str, list[str]]]:
    """(name, paragraphs) of each novel: blank-line separated, joined lines, front matter
    (lines under 40 characters: titles, imprint) left out."""
    docs = []
    for path in sorted(folder.glob("*.txt")):
        paras = [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))]
        paras = [p for p in paras if len(p) >= 40]
        if paras:
            docs.append((path.stem, paras))
    return docs


def _speech_paragraphs() -> list[tuple[str, list[str]]]:
    """(name, paragraphs) of each speeches file: one paragraph a line (under 40 characters
    left out)."""
    docs = []
    for path in sorted(SPEECHES.glob("*.txt")):
        paras = [re.sub(r"\s+", " ", line).strip() for line in path.read_text(encoding="utf-8").splitlines()]
        paras = [p for p in paras if len(p) >= 40]
        if paras:
            docs.append((path.stem, paras))
    return docs


def _news_paragraphs() -> list[tuple[str, list[str]]]:
    """(id, paragraphs) of each news article: its text's blank-line separated paragraphs
    (under 40 characters left out; the title is not used)."""
    docs = []
    with open(NEWS, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            art = json.loads(line)
            paras = [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", art.get("text") or "")]
            paras = [p for p in paras if len(p) >= 40]
            if paras:
                docs.append((str(art["id"]), paras))
    return docs


def punkt_params_path(pool: str = "novels") -> Path:
    """The Punkt parameters trained on the pool (the job is given them)."""
    return WORK / ("punkt_params-pool.json" if pool == "novels" else f"punkt_params-{pool}-v{DENSE_VERSION}.json")


def build_pool(kind: str = "novels") -> dict:
    """Sentences of the pool `kind` (novels: the Romanian and Spanish novels and the rowiki
    prose; dense: the Romanian novels, the rowiki prose, the speeches and the news), cut with
    Punkt parameters trained on its Romanian text (cached)."""
    cache = WORK / (f"pool-v{POOL_VERSION}.pickle" if kind == "novels" else f"pool-{kind}-v{DENSE_VERSION}.pickle")
    if cache.exists() and punkt_params_path(kind).exists():
        return pickle.loads(cache.read_bytes())
    from extractor.sentences.segment import Segmenter, save_params, train_punkt
    from extractor.lexicon.lexicon import load_lexicon

    WORK.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    docs = [("rowiki", "ro", _rowiki_paragraphs())]
    docs += [(name, "ro", paras) for name, paras in _novel_paragraphs(NOVELS["ro"])]
    if kind == "novels":
        docs += [(name, "es", paras) for name, paras in _novel_paragraphs(NOVELS["es"])]
    else:
        docs += [(name, "ro", paras) for name, paras in _speech_paragraphs()]
        docs += [(name, "ro", paras) for name, paras in _news_paragraphs()]
    ro_text = [p for _, lang, paras in docs if lang == "ro" for p in paras]
    if kind != "novels":
        # Punkt learns from the first 4 M characters: a sample of every source, not the novels
        random.Random(7).shuffle(ro_text)
    params = train_punkt(ro_text, load_lexicon("ro").abbreviations, max_chars=4_000_000)
    save_params(params, punkt_params_path(kind))
    seg = Segmenter(params)
    sentences: list[str] = []
    spans: list[tuple] = []
    shorts: list[bool] = []
    lang_of: list[str] = []
    documents = []   # (name, lang, [[sentence index, ...] per paragraph])
    counts: dict[str, int] = {}
    ranks: list[int] = []
    n_words: list[int] = []
    for name, lang, paras in docs:
        out_paras = []
        for para in paras:
            idx = []
            for s in seg.split(para):
                starts = [m.start() for m in _WS.finditer(s)]
                if len(starts) > 4:
                    cand = [(m.start(), m.end()) for m in _WORD.finditer(s, starts[4])]
                else:
                    cand = []
                short = not cand
                if short:
                    last = [(m.start(), m.end()) for m in _ANY_WORD.finditer(s)]
                    cand = last[-1:]
                if not cand:
                    continue   # no word at all ("— ...!"): left out
                r = counts.get(s, 0)
                counts[s] = r + 1
                n_words.append(len(starts))
                idx.append(len(sentences))
                sentences.append(s)
                spans.append(tuple(cand))
                shorts.append(short)
                lang_of.append(lang)
                ranks.append(r)
            if idx:
                out_paras.append(idx)
        if out_paras:
            documents.append((name, lang, out_paras))
    vocab = {}
    for lang in ("ro", "es"):
        freq: dict[str, int] = {}
        for s, lg in zip(sentences, lang_of):
            if lg == lang:
                for w in _WORD.findall(s):
                    if w.islower():
                        freq[w] = freq.get(w, 0) + 1
        words = sorted(w for w, n in freq.items() if n >= 3)
        random.Random(7).shuffle(words)
        vocab[lang] = words
    copies = [counts[s] for s in sentences]
    pool = {"sentences": sentences, "spans": spans, "short": shorts, "lang": lang_of, "rank": ranks, "copies": copies,
            "words": n_words,
            "hash": [zlib.crc32(s.encode()) for s in sentences], "documents": documents, "vocab": vocab,
            "kind": kind, "seconds": round(time.time() - t0, 1)}
    cache.write_bytes(pickle.dumps(pool, protocol=5))
    return pool


# --------------------------------------------------------------------------- the pages

SECTIONS = ["Istorie", "Biografie", "Descriere", "Context", "Activitate", "Opera", "Receptare", "Viața timpurie",
            "Moștenire", "Geografie", "Cultură", "Economie", "Evenimente", "Personaje", "Subiect", "Analiză"]
CATEGORIES = ["Romane românești", "Literatură română", "Romane din secolul al XIX-lea", "Personaje fictive",
              "Istoria României", "Cultura Spaniei", "Romane spaniole", "Literatură spaniolă", "Eponime",
              "Nuvele", "Scriitori români", "Articole despre literatură"]
HEADER_CUT = "</siteinfo>\n"
FOOTER = "</mediawiki>\n"

_POOL: dict | None = None   # the forked workers' copy


def _variant(i: int, v: int, link: bool) -> str:
    """Sentence i with the replacements of variant v (and a wiki link on another word)."""
    pool = _POOL
    s = pool["sentences"][i]
    cand = pool["spans"][i]
    m = len(cand)
    vocab = pool["vocab"][pool["lang"][i]]
    n = len(vocab)
    if pool["short"][i]:
        # "— Ei!": sentences of four words or fewer share their frame; their last word is
        # replaced by the base-n digits of (variant, sentence) as words (two or more)
        a, b = cand[0]
        q = v * len(pool["sentences"]) + i
        digits = [q % n]
        q //= n
        while q or len(digits) < 2:
            digits.append(q % n)
            q //= n
        edits = [(a, b, " ".join(vocab[d] for d in digits))]
    else:
        # r = words // 9 + 1 candidates, spread over the sentence, each replaced by a word
        # that depends on v: two variants of a sentence of w words share at most w - r of
        # their words, a Jaccard index of (w - r) / (w + r) < 0.8 (the near-duplicate bar)
        r = min(m, pool["words"][i] // 9 + 1)
        q = v // n
        edits = []
        for j in range(r):
            a, b = cand[j * m // r]
            old = s[a:b]
            k = (pool["hash"][i] + v + j * 7919) % n
            w = vocab[k]
            if w == old.lower():
                w = vocab[(k + 1) % n]
            if q:   # more variants than words (a sentence with many copies): two words
                w += " " + vocab[(q + j) % n]
            edits.append((a, b, w[0].upper() + w[1:] if old[0].isupper() else w))
        if link and r < m:
            free = [c for j, c in enumerate(cand) if all(c[0] != e[0] for e in edits)]
            la, lb = free[v % len(free)]
            word = s[la:lb]
            edits.append((la, lb, f"[[{word}]]" if (v & 1) else f"[[{word.capitalize()} (dezambiguizare)|{word}]]"))
            edits.sort()
    out, at = [], 0
    for a, b, w in edits:
        out += [s[at:a], w]
        at = b
    out.append(s[at:])
    return "".join(out)


def _plain(i: int, v: int) -> str:
    """The sentence as the job reads it back (no link markup)."""
    return _variant(i, v, False)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _page_xml(title: str, page_id: int, body: str, redirect: str | None = None) -> str:
    red = f'    <redirect title="{_escape(redirect)}" />\n' if redirect else ""
    return (f"  <page>\n    <title>{_escape(title)}</title>\n    <ns>0</ns>\n    <id>{page_id}</id>\n{red}"
            f"    <revision>\n      <id>{page_id + 50_000_000}</id>\n      <timestamp>2024-03-01T12:00:00Z</timestamp>\n"
            f"      <contributor>\n        <username>Bench</username>\n        <id>1</id>\n      </contributor>\n"
            f"      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
            f"      <text bytes=\"{len(body.encode())}\" xml:space=\"preserve\">{_escape(body)}</text>\n"
            f"      <sha1>{hashlib.sha1(body.encode()).hexdigest()[:31]}</sha1>\n    </revision>\n  </page>\n")


def _chunk(args: tuple) -> dict:
    """Cycle `c` of the pool as one bzip2 stream of pages (stops after `limit` bytes of
    XML when given); returns its sizes and the digests of its sentences and pairs."""
    c, limit, path = args
    pool = _POOL
    rng = random.Random(1_000_003 * (c + 1))
    ranks, copies = pool["rank"], pool["copies"]
    parts: list[str] = []
    size = 0
    pages = 0
    sent_digests: list[bytes] = []
    pair_digests: list[bytes] = []
    page_no = 0
    done = False
    for name, lang, paras in pool["documents"]:
        p = 0
        while p < len(paras) and not done:
            page_no += 1
            page_id = c * 1_000_000 + page_no
            words = pool["vocab"][lang]
            title = f"{words[rng.randrange(len(words))].capitalize()} {words[rng.randrange(len(words))]} ({c}.{page_no})"
            target = rng.randint(1500, 7000)
            lines = []
            if rng.random() < 0.3:
                lines.append("{{Infocaseta Carte\n| nume = " + title + "\n| autor = " + name +
                             "\n| limba = " + ("română" if lang == "ro" else "spaniolă") +
                             "\n| gen = roman\n| imagine = " + title.split(" (")[0] + ".jpg\n}}")
            chars, n_par = 0, 0
            while p < len(paras) and chars < target:
                if n_par and n_par % rng.randint(2, 3) == 0:
                    lines.append(f"\n== {SECTIONS[rng.randrange(len(SECTIONS))]} ==")
                out = []
                prev = None
                for i in paras[p]:
                    v = c * copies[i] + ranks[i]
                    link = rng.random() < 0.3
                    s = _variant(i, v, link)
                    if rng.random() < 0.08:
                        s += (f"<ref>{{{{Citat web |url=https://www.example.ro/articol/{page_id}-{len(out)} "
                              f"|titlu={title} |accesat=12 martie 2024}}}}</ref>")
                    elif rng.random() < 0.02:
                        s += "{{Necesită citare}}"
                    out.append(s)
                    d = hashlib.blake2b(_plain(i, v).encode(), digest_size=8).digest()
                    sent_digests.append(d)
                    if prev is not None:
                        pair_digests.append(hashlib.blake2b(prev + d, digest_size=8).digest())
                    prev = d
                text = " ".join(out)
                if n_par == 0:
                    text = f"'''{title.split(' (')[0]}''' — " + text
                lines.append(text)
                chars += len(text)
                n_par += 1
                p += 1
            lines.append("\n== Note ==\n{{Listănote}}\n\n== Legături externe ==\n"
                         f"* [https://www.example.ro/pagina/{page_id} Pagina oficială]\n")
            cats = rng.sample(CATEGORIES, rng.randint(1, 3))
            lines.append("\n".join(f"[[Categorie:{cat}]]" for cat in cats))
            xml = _page_xml(title, page_id, "\n\n".join(lines))
            if page_no % 4 == 0:
                page_no += 1
                xml += _page_xml(f"{title} (redirecționare)", c * 1_000_000 + page_no, f"#REDIRECTEAZA [[{title}]]",
                                 redirect=title)
            parts.append(xml)
            size += len(xml.encode())
            pages += 1
            if limit is not None and size >= limit:
                done = True
        if done:
            break
    data = "".join(parts).encode()
    Path(path).write_bytes(bz2.compress(data, 9))
    digests = np.frombuffer(b"".join(sent_digests), dtype=np.uint64)
    pairs = np.frombuffer(b"".join(pair_digests), dtype=np.uint64)
    np.save(str(path) + ".sent.npy", digests)
    np.save(str(path) + ".pair.npy", pairs)
    return {"cycle": c, "xml_bytes": len(data), "bz2_bytes": Path(path).stat().st_size, "pages": pages,
            "sentences": len(digests), "pairs": len(pairs)}


def _init(pool: dict, langs: tuple = ("ro",)) -> None:
    """The pool the page builders use, with only the sources in `langs`."""
    global _POOL
    _POOL = dict(pool, documents=[d for d in pool["documents"] if d[1] in langs])


def build_dump(size_mb: int, workers: int, langs: tuple = ("ro",), kind: str = "novels") -> tuple[Path, dict]:
    """A dump of `size_mb` MB of XML of unique pages from the sources in `langs` of the pool
    `kind` (cached with its meta; each pool's dumps and cycles under names of their own)."""
    name = "".join(langs) if kind == "novels" else kind
    version = POOL_VERSION if kind == "novels" else DENSE_VERSION
    path = WORK / f"{name}-unique-{size_mb}mb.xml.bz2"
    meta_path = WORK / f"{name}-unique-{size_mb}mb.json"
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("version") == version:
            return path, meta
    t0 = time.time()
    pool = build_pool(kind)
    _init(pool, langs)
    parts = WORK / (f"cycles-v{POOL_VERSION}-{name}" if kind == "novels" else f"cycles-{kind}-v{DENSE_VERSION}")
    parts.mkdir(parents=True, exist_ok=True)

    def part(c: int, limit=None) -> Path:
        return parts / (f"cycle-{c:04d}.bz2" if limit is None else f"cycle-{c:04d}-{limit}.bz2")

    def cycle(c: int, limit=None) -> dict:
        p = part(c, limit)
        m = Path(str(p) + ".json")
        if m.exists() and p.exists():
            return json.loads(m.read_text())
        info = _chunk((c, limit, str(p)))
        m.write_text(json.dumps(info))
        return info

    raw = ROWIKI.read_text(encoding="utf-8")
    header = raw[: raw.index(HEADER_CUT) + len(HEADER_CUT)]
    target = size_mb * 1_000_000
    first = cycle(0)
    per = first["xml_bytes"]
    n_full = max(0, (target - len(header.encode())) // per)
    rest = target - len(header.encode()) - n_full * per
    jobs = [(c, None) for c in range(1, n_full) if not (part(c).exists() and Path(str(part(c)) + ".json").exists())]
    if rest > 0:
        jobs.append((n_full, rest))
    todo = [(c, lim, str(part(c, lim))) for c, lim in jobs]
    if todo:
        from tqdm import tqdm

        with get_context("fork").Pool(workers) as mp:
            for info in tqdm(mp.imap_unordered(_chunk, todo), total=len(todo), desc=f"dump {size_mb} MB: cycles",
                             unit="cycle", file=sys.stderr):
                lim = None if info["cycle"] < n_full else rest
                Path(str(part(info["cycle"], lim)) + ".json").write_text(json.dumps(info))
    infos = [cycle(c) for c in range(n_full)] + ([cycle(n_full, rest)] if rest > 0 else [])
    files = [part(c) for c in range(n_full)] + ([part(n_full, rest)] if rest > 0 else [])
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        fh.write(bz2.compress(header.encode(), 9))
        for f in files:
            with open(f, "rb") as src:
                shutil.copyfileobj(src, fh, 1 << 24)
        fh.write(bz2.compress(FOOTER.encode(), 9))
    tmp.replace(path)
    # uniqueness over every sentence and adjacent pair the dump holds (their digests)
    sent = np.concatenate([np.load(str(f) + ".sent.npy") for f in files])
    pair = np.concatenate([np.load(str(f) + ".pair.npy") for f in files])
    meta = {"version": version, "pool": kind, "xml_bytes": len(header.encode()) + sum(i["xml_bytes"] for i in infos)
            + len(FOOTER), "bz2_bytes": path.stat().st_size, "pages": sum(i["pages"] for i in infos),
            "cycles": len(infos), "sentences": int(len(sent)), "distinct_sentences": int(len(np.unique(sent))),
            "pairs": int(len(pair)), "distinct_pairs": int(len(np.unique(pair))),
            "pool_sentences": len(pool["sentences"]), "build_seconds": round(time.time() - t0, 1)}
    meta_path.write_text(json.dumps(meta))
    return path, meta


# --------------------------------------------------------------------------- the runs

STAGES = ("sentences", "pairs", "splits")
_STAGE_LINE = re.compile(r"\[extract\] (?:stage (\w+) \.\.\.|(done))")


class TimelineMonitor(TreeMonitor):
    """TreeMonitor that also keeps a timeline: per sample the tree's CPU seconds so far,
    the JVM's RSS, the largest Python worker's RSS and all Python workers' RSS together."""

    def __init__(self, root_pid: int, interval: float = 0.1):
        super().__init__(root_pid, interval)
        self.timeline: list[tuple] = []   # (t, cpu, jvm_rss, worker_rss_max, workers_rss_sum, n_workers)

    def _sample(self) -> list | None:
        seen = super()._sample()
        if seen is not None:
            workers = [rss for kind, rss in seen if kind == "python_worker"]
            jvm = max((rss for kind, rss in seen if kind == "jvm"), default=0)
            self.timeline.append((time.time(), sum(self.cpu.values()), jvm, max(workers, default=0), sum(workers),
                                  len(workers)))
        return seen


def _dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def _scratch_bytes(out: Path, local_dir: Path) -> int:
    """Bytes of the run's scratch: `_`/`.`-prefixed entries of its run folder (the stages'
    `_tmp-*` work folders, tables being written) and Spark's local dir (shuffle, spills)."""
    total = _dir_bytes(local_dir) if local_dir.exists() else 0
    for run in (out / "_runs").glob("*"):
        try:
            entries = list(run.iterdir())
        except OSError:
            continue
        for e in entries:
            if e.name.startswith(("_", ".")):
                total += _dir_bytes(e) if e.is_dir() else e.stat().st_size
            elif e.is_dir():   # a table being written: its temporary files
                for root, dirs, files in os.walk(e):
                    for name in dirs + files:
                        if name.startswith(("_tmp", ".")) and ".tmp" in name or name.startswith("_tmp"):
                            p = os.path.join(root, name)
                            total += _dir_bytes(Path(p)) if os.path.isdir(p) else os.lstat(p).st_size
    return total


def run_job(dump: Path, tag: str, extra: list[str] = (), code: Path | None = None,
            punkt: Path | None = None) -> dict:
    """The whole job on `dump` (local[2], POS filter on, `extra` flags after the others), its
    CPU and memory per stage; `code`: a checkout of the engine to run instead of this one;
    `punkt`: the Punkt parameters it is given (the novels pool's by default)."""
    out = WORK / f"out-{tag}"
    local_dir = WORK / f"spark-local-{tag}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(local_dir, ignore_errors=True)
    local_dir.mkdir(parents=True)
    cmd = [PY, str((code or REPO) / "jobs" / "extract.py"), "--lang", "ro", "--input", str(dump), "--output", str(out),
           "--overwrite", "--master", "local[2]", "--pos-filter", "on", "--punkt-params", str(punkt or punkt_params_path()),
           *extra]
    env = dict(os.environ, SPARK_LOCAL_DIRS=str(local_dir), PYSPARK_PYTHON=os.environ.get("PYSPARK_PYTHON", PY),
               SPARK_LOCAL_IP=os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"))
    if code:
        env["PYTHONPATH"] = str(code)
    log = WORK / f"log-{tag}.txt"
    marks: list[tuple[str, float]] = []
    scratch: list[tuple[float, int]] = []
    stop = threading.Event()

    def watch_scratch():
        while not stop.is_set():
            scratch.append((time.time(), _scratch_bytes(out, local_dir)))
            stop.wait(1.0)

    t0 = time.time()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=code or REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        mon = TimelineMonitor(proc.pid).start()
        watcher = threading.Thread(target=watch_scratch, daemon=True)
        watcher.start()
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace")
            fh.write(line)
            m = _STAGE_LINE.search(line)
            if m:
                marks.append((m.group(1) or "done", time.time()))
        rc = proc.wait()
        wall = time.time() - t0
        mon.stop()
        stop.set()
        watcher.join()
    text = log.read_text()
    if rc != 0:
        raise SystemExit(f"the job failed (rc {rc}); see {log}")
    tracebacks = text.count("Traceback (most recent call last)")
    # local mode: the Python workers' stderr is the JVM's, on this console too
    after_done = text.split("[extract] done", 1)[1] if "[extract] done" in text else ""
    worker_tb = after_done.count("Traceback") + after_done.count("BrokenPipeError")
    stats = json.loads((out / "stats.json").read_text())
    bounds = [(name, t) for name, t in marks]
    tl = mon.timeline
    result = {"tag": tag, "flags": list(extra), "wall_s": wall, "cpu_s": mon.cpu_seconds, "cpu_by_kind": mon.cpu_by_kind,
              "peak_rss": mon.peak_rss, "stage_wall_s": stats["job"]["seconds"], "stages": {},
              "console_tracebacks": tracebacks, "tracebacks_after_done": worker_tb, "log": str(log)}

    def window(t_a: float, t_b: float) -> dict:
        pts = [s for s in tl if t_a <= s[0] <= t_b]
        before = [s for s in tl if s[0] < t_a]
        cpu_a = before[-1][1] if before else 0.0
        cpu_b = pts[-1][1] if pts else cpu_a
        sc = [b for t, b in scratch if t_a <= t <= t_b]
        return {"wall_s": t_b - t_a, "cpu_s": cpu_b - cpu_a,
                "jvm_peak_rss": max((s[2] for s in pts), default=0),
                "worker_peak_rss": max((s[3] for s in pts), default=0),
                "workers_peak_rss_sum": max((s[4] for s in pts), default=0),
                "workers_max": max((s[5] for s in pts), default=0),
                "scratch_peak_bytes": max(sc, default=0)}

    edges = [("startup", t0)] + bounds + [("exit", time.time())]
    for (name, ta), (_, tb) in zip(edges, edges[1:]):
        result["stages"][name if name != "done" else "shutdown"] = window(ta, tb)
    for stage, table in (("sentences", "sentences"), ("pairs", "pairs"), ("check", "checked"), ("splits", "splits")):
        if stage in result["stages"]:
            result["stages"][stage]["output_bytes"] = _dir_bytes(out / table)
    result["sentences"] = stats["sentences"]["sentences"]["total"]
    result["documents"] = stats["sentences"]["documents"]["read"]
    result["pairs"] = stats["pairs"]["total"]
    result["pairs_by_label"] = stats["pairs"]["labels"]
    result["pairs_by_source"] = stats["pairs"]["sources"]
    result["rejected"] = stats["pairs"]["rejected"]
    result["duplicate_pairs"] = stats["pairs"]["rejected"].get("duplicate_pair", 0)
    result["pos_checked"] = (stats["pairs"]["pos_filter"].get("sentences_checked", 0)
                             + stats["pairs"]["pos_filter"].get("neutral_sentences_checked", 0))
    result["split_pairs"] = sum(stats["splits"]["splits"].values())
    result["distinct_sentence_texts"] = _distinct_texts(out / "sentences")
    shutil.rmtree(local_dir, ignore_errors=True)
    return result


def _distinct_texts(table: Path) -> dict:
    """Sentences and distinct sentence texts of the job's own table (8-byte digests)."""
    import pyarrow.dataset as ds

    d = ds.dataset(table, format="parquet", partitioning="hive")
    col = "text" if "text" in d.schema.names else [n for n in d.schema.names if n in ("sentence", "text")][0]
    digs = []
    for batch in d.to_batches(columns=[col], batch_size=200_000):
        digs.append(np.frombuffer(b"".join(hashlib.blake2b(s.encode(), digest_size=8).digest()
                                           for s in batch.column(0).to_pylist()), dtype=np.uint64))
    allv = np.concatenate(digs) if digs else np.zeros(0, dtype=np.uint64)
    return {"sentences": int(len(allv)), "distinct": int(len(np.unique(allv)))}


def run_wikiextractor(dump: Path) -> dict:
    out = WORK / "out-wikiextractor"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [PY, "-m", "wikiextractor.WikiExtractor", "--json", "--processes", "1", "--no-templates", "-q",
           "-o", str(out), str(dump)]
    log = WORK / "log-wikiextractor.txt"
    with open(log, "w") as fh:
        t0 = time.time()
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT)
        mon = TreeMonitor(proc.pid).start()
        rc = proc.wait()
        wall = time.time() - t0
        mon.stop()
    if rc != 0:
        raise SystemExit(f"WikiExtractor failed (rc {rc}); see {log}")
    res = {"wall_s": wall, "cpu_s": mon.cpu_seconds, "peak_rss": max(mon.peak_rss.values()),
           "output_bytes": _dir_bytes(out)}
    shutil.rmtree(out, ignore_errors=True)
    return res


def slope(xs: list[float], ys: list[float]) -> float | None:
    """b of log y = a + b log x (least squares); None with fewer than two points."""
    if len(xs) < 2 or any(y <= 0 for y in ys):
        return None
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    every = sorted(results["runs"], key=lambda r: r["mb"])
    runs = [r for r in every if r.get("config", "default") == "default"]
    other = [r for r in every if r.get("config", "default") != "default"]
    mbs = [r["mb"] for r in runs]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for stage, mark, color in (("sentences", "o", "tab:blue"), ("pairs", "s", "tab:orange"),
                               ("splits", "^", "tab:green")):
        a.plot(mbs, [r["stages"][stage]["cpu_s"] / r["mb"] for r in runs], marker=mark, color=color,
               label=f"stage {stage}")
    a.plot(mbs, [r["cpu_s"] / r["mb"] for r in runs], marker="D", color="k", label="whole job")
    for ls, config in zip(("--", ":", "-."), sorted({r["config"] for r in other})):  # the --compare-flags runs
        these = [r for r in other if r["config"] == config]
        flags = " ".join(these[0]["flags"])
        xo = [r["mb"] for r in these]
        a.plot(xo, [r["stages"]["pairs"]["cpu_s"] / r["mb"] for r in these], marker="s", ls=ls,
               color="tab:orange", label=f"stage pairs, {flags}")
        a.plot(xo, [r["cpu_s"] / r["mb"] for r in these], marker="D", ls=ls, color="k",
               label=f"whole job, {flags}")
    for i, w in enumerate(results.get("wikiextractor", [])):  # one legend entry for all its rounds
        a.scatter([w["mb"]], [w["cpu_s"] / w["mb"]], marker="*", s=120, color="tab:red",
                  label="WikiExtractor" if i == 0 else None, zorder=5)
    a.set_xscale("log")
    a.set_xlabel("dump size (MB of XML)")
    a.set_ylabel("CPU-seconds per MB")
    a.set_title(f"cost per MB (local[2], --lang ro, POS filter on; pool {results.get('pool', 'novels')})",
                fontsize=9)
    a.grid(alpha=0.3)
    b.plot(mbs, [r["peak_rss"].get("jvm", 0) / 2**20 for r in runs], marker="o", label="driver JVM")
    b.plot(mbs, [max(s["worker_peak_rss"] for s in r["stages"].values()) / 2**20 for r in runs], marker="s",
           label="largest Python worker")
    b.plot(mbs, [max(s["workers_peak_rss_sum"] for s in r["stages"].values()) / 2**20 for r in runs], marker="^",
           label="all Python workers")
    b.plot(mbs, [r["peak_rss"].get("driver", 0) / 2**20 for r in runs], marker="D", label="driver Python")
    b.set_xscale("log")
    b.set_xlabel("dump size (MB of XML)")
    b.set_ylabel("peak RSS (MiB)")
    b.set_title("peak memory")
    b.legend(fontsize=8)
    b.grid(alpha=0.3)
    sizes = sorted({r["size"] for r in runs})
    for ax in (a, b):   # one labelled tick per dump size, no log-scale minor labels
        ax.set_xticks([min(r["mb"] for r in runs if r["size"] == size) for size in sizes],
                      [f"{size:,} MB" for size in sizes])
        ax.minorticks_off()
    a.legend(fontsize=8, loc="center right", bbox_to_anchor=(1.0, 0.6))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def blas_info() -> dict:
    """The BLAS the job's Python processes load with this environment (a child process
    imports numpy, as a worker does): threadpoolctl's report of it, and the OPENBLAS_*
    variables set."""
    probe = ("import json, numpy, threadpoolctl; print(json.dumps([{k: i.get(k) for k in "
             "('internal_api', 'version', 'architecture')} for i in threadpoolctl.threadpool_info() "
             "if i.get('user_api') == 'blas']))")
    out = subprocess.run([PY, "-c", probe], capture_output=True, text=True, check=True).stdout
    return {"libraries": json.loads(out),
            "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("OPENBLAS_")}}


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f}"


def show(r: dict) -> None:
    mb = r["mb"]
    print(f"-- job on the {r['size']} MB dump ({mb:.0f} MB XML, {r['documents']:,} pages, {r['sentences']:,} sentences, "
          f"{r['pairs']:,} pairs, {r['split_pairs']:,} in the splits; {r['duplicate_pairs']} duplicate pairs dropped; "
          f"{r['pos_checked']:,} sentences POS-tagged): {r['wall_s']:.0f} s wall, {r['cpu_s']:.0f} CPU-s = "
          f"{r['cpu_s'] / mb:.3f} CPU-s/MB", flush=True)
    print(f"   {'stage':<10} {'CPU-s':>8} {'CPU-s/MB':>9} {'wall s':>7} {'JVM MiB':>8} {'worker MiB':>10} "
          f"{'workers MiB':>11} {'scratch MB':>10} {'output MB':>9}")
    for name, s in r["stages"].items():
        print(f"   {name:<10} {s['cpu_s']:>8.1f} {s['cpu_s'] / mb:>9.3f} {s['wall_s']:>7.1f} {_mib(s['jvm_peak_rss']):>8} "
              f"{_mib(s['worker_peak_rss']):>10} {_mib(s['workers_peak_rss_sum']):>11} "
              f"{s['scratch_peak_bytes'] / 1e6:>10.1f} {s.get('output_bytes', 0) / 1e6:>9.1f}", flush=True)
    d = r["distinct_sentence_texts"]
    print(f"   the job's sentences: {d['sentences']:,}, distinct texts {d['distinct']:,} "
          f"({d['sentences'] - d['distinct']:,} repeats); tracebacks on the console: {r['console_tracebacks']}, "
          f"after the done line: {r['tracebacks_after_done']}; CPU-s by process: {r['cpu_by_kind']}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="250,1000", help="dump sizes in MB of XML, comma-separated")
    ap.add_argument("--wikiextractor-size", type=int, default=1000,
                    help="WikiExtractor runs on the dump of this size (or the nearest one); 0: not at all")
    ap.add_argument("--rounds", type=int, default=1,
                    help="rounds of (our job, WikiExtractor) on that dump; the others run once")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2, help="processes building a dump")
    ap.add_argument("--pool", default="dense", choices=tuple(POOLS),
                    help="sources of the pages: dense (the Romanian novels, rowiki prose, the presidential "
                         "speeches and the news articles: the phrase density of argumentative prose), novels (the "
                         "Romanian novels and rowiki prose: the pool before, poor in linking phrases) or novels,es "
                         "(also the Spanish novels: foreign text in a --lang ro job, where it finds almost no "
                         "markers); ro and ro,es are the old names of the last two")
    ap.add_argument("--compare-flags", action="append", default=[], metavar="FLAGS",
                    help="also run the job with these extra flags (one string, e.g. \"--no-label-filter all\") "
                         "on every size, in the same invocation, right after the default one (WikiExtractor's "
                         "ratios are given for each); repeatable: one more configuration each")
    ap.add_argument("--build-only", action="store_true", help="build (or find) the dumps and stop")
    ap.add_argument("--code", type=Path, default=None, metavar="DIR",
                    help="run the job of this checkout of the engine (e.g. `git archive HEAD jobs extractor "
                         "phrase_lexicons samples | tar -x -C DIR`: a fixed commit while the working tree changes)")
    ap.add_argument("--reuse", type=Path, default=None, metavar="JSON",
                    help="take the runs of the sizes it holds from an earlier results file (same code, same "
                         "dumps) instead of running them again")
    ap.add_argument("--json", type=Path, default=RESULTS / "scale.json")
    ap.add_argument("--plot", type=Path, default=RESULTS / "scale.png")
    args = ap.parse_args()
    kind, langs = POOLS[args.pool]
    for p in [ROWIKI, *NOVELS.values(), *((SPEECHES, NEWS) if kind == "dense" else ())]:
        if not p.exists():
            raise SystemExit(f"{p} not found (set NLI_SHARED_DATA)")
    sizes = sorted(int(s) for s in args.sizes.split(","))
    WORK.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    pool = build_pool(kind)
    punkt = punkt_params_path(kind)
    print(f"pool {kind}: {len(pool['sentences']):,} sentences of {len(pool['documents'])} sources (ro {pool['lang'].count('ro'):,}, "
          f"es {pool['lang'].count('es'):,}), vocabulary ro {len(pool['vocab']['ro']):,} / es {len(pool['vocab']['es']):,} "
          f"words; Punkt parameters {punkt} (pool built/cached in {time.time() - t0:.0f} s)", flush=True)
    dumps = {}
    for size in sizes:
        t0 = time.time()
        dumps[size] = build_dump(size, args.workers, langs, kind)
        m = dumps[size][1]
        print(f"dump {size} MB: {m['xml_bytes'] / 1e6:.1f} MB XML, {m['bz2_bytes'] / 1e6:.1f} MB bz2, {m['pages']:,} "
              f"article pages (+1 redirect per 4), {m['cycles']} cycles of the pool; built in {m['build_seconds']:.0f} s "
              f"(this call {time.time() - t0:.0f} s) | uniqueness over every sentence written: {m['sentences']:,} "
              f"sentences, {m['distinct_sentences']:,} distinct; {m['pairs']:,} adjacent pairs, {m['distinct_pairs']:,} "
              f"distinct", flush=True)
    if args.build_only:
        return
    from extractor.spark.jvm import create_archive

    create_archive(REPO)
    we_size = min(sizes, key=lambda s: abs(s - args.wikiextractor_size)) if args.wikiextractor_size else None
    blas = blas_info()
    print("BLAS of the job's processes: " + "; ".join(
        f"{b['internal_api']} {b['version']}, {b['architecture']} kernels" for b in blas["libraries"])
        + " (environment: " + (", ".join(f"{k}={v}" for k, v in blas["env"].items()) or "no OPENBLAS_* variable")
        + ")", flush=True)
    compares = [flags.split() for flags in args.compare_flags]
    configs = [("default", [])] + [("compare" if len(compares) == 1 else f"compare-{i + 1}", flags)
                                   for i, flags in enumerate(compares)]
    results = {"pool": kind, "langs": list(langs), "runs": [], "wikiextractor": [],
               "compare_flags": compares[0] if len(compares) == 1 else compares,
               "rounds": [], "machine": {"cpus": os.cpu_count(), "load_avg_at_start": os.getloadavg(), "blas": blas}}
    earlier = json.loads(args.reuse.read_text()) if args.reuse else {"runs": []}
    for size in sizes:
        dump, meta = dumps[size]
        mb = meta["xml_bytes"] / 1e6
        old = [r for r in earlier["runs"] if r["size"] == size]
        if old:
            print(f"(the {size} MB runs from {args.reuse}, as printed there)")
            for r in old:
                results["runs"].append(r)
                show(r)
            results["wikiextractor"] += [w for w in earlier.get("wikiextractor", []) if w["size"] == size]
            if size == we_size:
                results["rounds"] += earlier.get("rounds", [])
            continue
        n = args.rounds if size == we_size else 1
        for rnd in range(n):
            runs = {}
            for config, flags in configs:
                if config != "default":
                    print(f"   (the same dump, with {' '.join(flags)})", flush=True)
                r = run_job(dump, f"{size}mb-{config}", extra=flags, code=args.code.resolve() if args.code else None,
                            punkt=punkt)
                r.update(size=size, mb=mb, round=rnd + 1, dump=meta, config=config)
                results["runs"].append(r)
                runs[config] = r
                show(r)
            if size == we_size:
                w = run_wikiextractor(dump)
                w.update(size=size, mb=mb)
                results["wikiextractor"].append(w)
                print(f"   WikiExtractor --json --processes 1 --no-templates, same dump: {w['wall_s']:.0f} s wall, "
                      f"{w['cpu_s']:.0f} CPU-s = {w['cpu_s'] / mb:.3f} CPU-s/MB, peak RSS {_mib(w['peak_rss'])} MiB, "
                      f"output {w['output_bytes'] / 1e6:.0f} MB", flush=True)
                for config, r in runs.items():
                    s1, s2, s3 = (r["stages"][k]["cpu_s"] for k in STAGES)
                    rd = {"stage2_over_stage1": s2 / s1, "job_over_wikiextractor": r["cpu_s"] / w["cpu_s"],
                          "stage1_speed_over_wikiextractor": w["cpu_s"] / s1,
                          "stage3_pairs_per_cpu_s": r["pairs"] / s3 if s3 else None}
                    results["rounds"].append(dict(rd, config=config, round=rnd + 1))
                    print(f"   round {rnd + 1}, {config}{' (' + ' '.join(r['flags']) + ')' if r['flags'] else ''}: "
                          f"stage 2 / stage 1 CPU {rd['stage2_over_stage1']:.2f}x (target <= 0.5x); "
                          f"whole job / WikiExtractor CPU {rd['job_over_wikiextractor']:.2f}x (target <= 1.0x at the "
                          f"dense pool's density); stage 1 MB per CPU-s / WikiExtractor's "
                          f"{rd['stage1_speed_over_wikiextractor']:.2f}x (target >= 1.5x); stage 3 "
                          f"{rd['stage3_pairs_per_cpu_s'] or 0:,.0f} pairs per CPU-s (target >= 20,000; stage 3 CPU "
                          f"includes its session work)", flush=True)
    if results["runs"]:
        print("== pairs kept per MB of XML: " + "; ".join(
            f"{r['size']} MB {r.get('config', 'default')} (round {r.get('round', 1)}): {r['pairs'] / r['mb']:.2f} "
            f"({r['pairs']:,}), marked {(r.get('pairs_by_source') or {}).get('marker', 0) / r['mb']:.2f} "
            f"({(r.get('pairs_by_source') or {}).get('marker', 0):,})" for r in results["runs"]))
    per_size = {}
    for r in results["runs"]:
        if r.get("config", "default") == "default":
            per_size.setdefault(r["size"], []).append(r)
    med = {s: sorted(v, key=lambda r: r["cpu_s"])[len(v) // 2] for s, v in per_size.items()}
    xs = [med[s]["mb"] for s in sorted(med)]
    print("== slopes of log(CPU-s) against log(MB) over " + ", ".join(f"{s} MB" for s in sorted(med))
          + " (1 = linear; target <= 1.05):")
    results["slopes"] = {}
    for name in (*STAGES, "job"):
        ys = [med[s]["cpu_s"] if name == "job" else med[s]["stages"][name]["cpu_s"] for s in sorted(med)]
        b = slope(xs, ys)
        results["slopes"][name] = b
        print(f"   {name:<10} " + ("n/a (one size)" if b is None else f"{b:.3f}") + "   CPU-s/MB by size: "
              + ", ".join(f"{y / x:.3f}" for x, y in zip(xs, ys)))
    print("== peak memory by size (MiB): " + "; ".join(
        f"{s} MB: JVM {_mib(med[s]['peak_rss'].get('jvm', 0))}, largest worker "
        f"{_mib(max(v['worker_peak_rss'] for v in med[s]['stages'].values()))}, all workers "
        f"{_mib(max(v['workers_peak_rss_sum'] for v in med[s]['stages'].values()))}, driver Python "
        f"{_mib(med[s]['peak_rss'].get('driver', 0))}" for s in sorted(med)))
    if results["rounds"]:
        import statistics

        keys = ("stage2_over_stage1", "job_over_wikiextractor", "stage1_speed_over_wikiextractor",
                "stage3_pairs_per_cpu_s")
        results["medians_by_config"] = {}
        for config, _ in configs:
            rds = [rd for rd in results["rounds"] if rd.get("config", "default") == config]
            if not rds:
                continue
            med_c = {k: statistics.median(rd[k] for rd in rds if rd[k] is not None) for k in keys}
            results["medians_by_config"][config] = med_c
            print(f"== medians over {len(rds)} round(s) on the {we_size} MB dump, {config}: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in med_c.items()))
        results["medians"] = results["medians_by_config"].get("default")
    results["machine"]["load_avg_at_end"] = os.getloadavg()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2, default=str))
    plot(results, args.plot)
    print(f"wrote {args.json} and {args.plot}; machine: {os.cpu_count()} CPUs, load average at start "
          f"{results['machine']['load_avg_at_start'][0]:.1f}, at end {results['machine']['load_avg_at_end'][0]:.1f} "
          f"(other work on a shared machine skews the seconds; the ratios come from the same invocation)")


if __name__ == "__main__":
    main()
