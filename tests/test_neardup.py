"""Near-duplicate detection (extractor/neardup/): planted near-duplicates in real novels,
determinism, exact Jaccard, components, and the leakage report of `trainer stats`.

The planted corpus: the 20 ELTeC Romanian novels of ../shared/data cut into documents of
consecutive paragraphs (sentences of 50 characters or more, as stage 1 keeps); 400 paragraphs are copied into 3 other documents of their group of 6
consecutive documents, with one word of every sentence replaced by another word of the novels (seeded). A planted pair is
(original sentence, altered copy)."""
from __future__ import annotations

import json
import random
import re

import numpy as np
import pyarrow as pa
import pytest
from scipy.sparse import csr_matrix

from conftest import shared_file
from extractor import statistics as st
from extractor.core.hashing import stable_hash
from extractor.neardup import distributed, leakage, minhash
from extractor.neardup.settings import NearDupSettingsError, Settings

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[—„\"A-ZĂÂÎȘȚŞŢ])")
PARAS_PER_DOC = 20
MIN_CHARS = 50  # stage 1's default --min-chars: shorter sentences never reach the pairs
PLANTED_PARAS = 400
COPIES = 3
# copies go to documents of the same group of 6 (a story syndicated by a few outlets):
# copies into any document would join ~1,200 random links over ~960 documents, one
# connected component holding most of the corpus (a random graph past its threshold)
GROUP = 6


def novel_documents() -> list[list[list[str]]]:
    """Documents (lists of paragraphs, each a list of sentences) of the ELTeC novels."""
    folder = shared_file("text/eltec-rom-20")
    docs = []
    for path in sorted(folder.glob("*.txt")):
        paras = [" ".join(p.split()) for p in re.split(r"\n\s*\n", path.read_text(encoding="utf-8"))]
        paras = [[s for s in _SENTENCE_END.split(p) if len(s) >= MIN_CHARS] for p in paras]
        paras = [p for p in paras if p]
        docs += [paras[i:i + PARAS_PER_DOC] for i in range(0, len(paras), PARAS_PER_DOC)]
    return docs


def alter(sentence: str, rng: random.Random, vocabulary: list[str]) -> str:
    """The sentence with one whitespace token (one holding a letter) replaced by a word of
    the vocabulary that the sentence does not hold."""
    tokens = sentence.split()
    slots = [i for i, t in enumerate(tokens) if any(c.isalpha() for c in t)]
    if not slots:
        return sentence
    i = rng.choice(slots)
    have = set(st.norm_words(sentence))
    while True:
        word = rng.choice(vocabulary)
        if word not in have:
            break
    tokens[i] = word
    return " ".join(tokens)


def planted_corpus(seed: int = 7):
    """(sentences, doc of each sentence, planted pairs as (original index, copy index))."""
    rng = random.Random(seed)
    docs = novel_documents()
    vocabulary = sorted({w for d in docs for p in d for s in p for w in st.norm_words(s) if w.isalpha()})
    sources = [(d, p) for d in range(len(docs)) for p in range(len(docs[d])) if len(docs[d][p]) >= 2]
    planted_src = rng.sample(sources, PLANTED_PARAS)
    extra: dict[int, list[tuple[int, int, list[str]]]] = {}
    for d, p in planted_src:
        group = range(d - d % GROUP, min(len(docs), d - d % GROUP + GROUP))
        targets = rng.sample([t for t in group if t != d], min(COPIES, len(group) - 1))
        for t in targets:
            extra.setdefault(t, []).append((d, p, [alter(s, rng, vocabulary) for s in docs[d][p]]))
    sentences, doc_of, where = [], [], {}
    for d, paras in enumerate(docs):
        for p, para in enumerate(paras):
            for k, s in enumerate(para):
                where[(d, p, k)] = len(sentences)
                sentences.append(s)
                doc_of.append(d)
    planted = []
    for t in sorted(extra):
        for d, p, copy in extra[t]:
            for k, s in enumerate(copy):
                planted.append((where[(d, p, k)], len(sentences)))
                sentences.append(s)
                doc_of.append(t)
    return sentences, np.array(doc_of), np.array(planted)


def word_set_jaccard(a: str, b: str) -> float:
    x, y = set(st.norm_words(a)), set(st.norm_words(b))
    return len(x & y) / len(x | y) if x | y else 0.0


@pytest.fixture(scope="module")
def corpus():
    return planted_corpus()


@pytest.fixture(scope="module")
def detected(corpus):
    sentences, _, _ = corpus
    settings = Settings()
    pairs, jac = minhash.near_duplicates(sentences, settings)
    return settings, pairs, jac


def test_planted_near_duplicates_recall(corpus, detected):
    sentences, _, planted = corpus
    settings, pairs, _ = detected
    exact = np.array([word_set_jaccard(sentences[a], sentences[b]) for a, b in planted])
    eligible = planted[exact >= settings.threshold]
    found_keys = set(map(tuple, pairs.tolist()))
    found = sum((min(a, b), max(a, b)) in found_keys for a, b in eligible.tolist())
    recall = found / len(eligible)
    print(f"\nplanted pairs {len(planted)}, at Jaccard >= {settings.threshold}: {len(eligible)} "
          f"({100 * len(eligible) / len(planted):.1f} %; the others: sentences of < 10 distinct words), "
          f"found {found}, recall {100 * recall:.2f} %; verified near-duplicate pairs in the corpus {len(pairs)}")
    assert len(eligible) > 0.8 * len(planted)
    assert recall >= 0.99
    # every reported pair is a near-duplicate by the exact definition
    sample = pairs[:: max(1, len(pairs) // 500)]
    assert all(word_set_jaccard(sentences[a], sentences[b]) >= settings.threshold for a, b in sample.tolist())


def _other_split_max_jaccard(sentences, split_of, which: str, matches: list | None = None) -> np.ndarray:
    """Brute force, independent of the LSH: per sentence of split `which`, the largest
    word-set Jaccard with a sentence of another split (sparse products, in blocks); with
    `matches` (a list) also appends, per such sentence, the indexes of the other splits'
    sentences at Jaccard >= 0.8."""
    vocab: dict[str, int] = {}
    rows, cols = [], []
    for i, s in enumerate(sentences):
        for w in set(st.norm_words(s)):
            rows.append(i)
            cols.append(vocab.setdefault(w, len(vocab)))
    m = csr_matrix((np.ones(len(rows), dtype=np.int32), (rows, cols)), shape=(len(sentences), len(vocab)))
    sizes = np.asarray(m.sum(axis=1)).ravel()
    mine = np.nonzero(split_of == which)[0]
    others = np.nonzero(split_of != which)[0]
    mt = m[others].T.tocsc()
    best = np.zeros(len(mine))
    for start in range(0, len(mine), 300):
        block = mine[start:start + 300]
        inter = (m[block] @ mt).toarray()
        union = sizes[block][:, None] + sizes[others][None, :] - inter
        jac = np.divide(inter, union, out=np.zeros(inter.shape), where=union > 0)
        best[start:start + 300] = jac.max(axis=1)
        if matches is not None:
            matches += [others[np.nonzero(row >= 0.8)[0]] for row in jac]
    return best


def test_documents_joined_by_near_duplicates_share_a_split(corpus, detected):
    """Documents joined by a near-duplicate sentence (components over document ids) are
    assigned together; an exhaustive check finds no test sentence with a near-duplicate
    in another split."""
    sentences, doc_of, planted = corpus
    settings, pairs, _ = detected
    n_docs = int(doc_of.max()) + 1
    # exact duplicates too (as the stages join identical texts): same folded text, same node
    folded: dict[str, int] = {}
    first = np.array([folded.setdefault(st.fold_text(s), i) for i, s in enumerate(sentences)])
    links = np.concatenate([pairs, np.stack([first, np.arange(len(sentences))], axis=1)])
    doc_pairs = doc_of[links]
    doc_pairs = doc_pairs[doc_pairs[:, 0] != doc_pairs[:, 1]]
    comp = minhash.components(n_docs, doc_pairs)
    split_names = np.array(["train", "dev", "test"])
    unit = np.array([stable_hash(int(c), seed=3) % 10 for c in comp])
    doc_split = split_names[np.where(unit < 8, 0, np.where(unit < 9, 1, 2))]
    split_of = doc_split[doc_of]
    sizes = {s: int((split_of == s).sum()) for s in split_names}
    eligible = planted[[word_set_jaccard(sentences[a], sentences[b]) >= settings.threshold for a, b in planted]]
    crossing_planted = int((split_of[eligible[:, 0]] != split_of[eligible[:, 1]]).sum())
    best = _other_split_max_jaccard(sentences, split_of, "test")
    crossing = int((best >= settings.threshold).sum())
    print(f"\ndocuments {n_docs}, components {len(set(comp.tolist()))}, sentences per split {sizes}; "
          f"planted pairs at Jaccard >= {settings.threshold} across splits {crossing_planted} of {len(eligible)}; test sentences with a sentence of "
          f"another split at Jaccard >= {settings.threshold} (exhaustive): {crossing}")
    assert sizes["test"] > 0.04 * len(sentences) and sizes["train"] > 0.6 * len(sentences)
    assert crossing_planted == 0
    assert crossing == 0


def test_signature_depends_only_on_the_text(corpus):
    sentences, _, _ = corpus
    settings = Settings()
    texts = sentences[:3000]
    sig = minhash.signatures(minhash.shingle_sets(texts, settings), settings)
    rng = random.Random(1)
    order = list(range(len(texts)))
    rng.shuffle(order)
    shuffled = [texts[i] for i in order]
    # another batch: shuffled, cut in two, with other texts around
    a = minhash.signatures(minhash.shingle_sets(shuffled[:1000] + sentences[-50:], settings), settings)[:1000]
    b = minhash.signatures(minhash.shingle_sets(sentences[5000:5100] + shuffled[1000:], settings), settings)[100:]
    assert (np.concatenate([a, b]) == sig[order]).all()
    keys = minhash.band_keys(sig, settings)
    k, i = minhash.band_rows(np.arange(len(texts)), keys)
    perm = np.random.default_rng(0).permutation(len(k))
    assert (minhash.bucket_pairs(k[perm], i[perm], 4) == minhash.bucket_pairs(k, i, 4)).all()
    # another seed gives other hash functions
    other = minhash.signatures(minhash.shingle_sets(texts[:100], Settings(seed=2)), Settings(seed=2))
    assert (other != sig[:100]).mean() > 0.9


def test_signatures_and_buckets_are_their_definitions(corpus):
    """Signatures are, per text, the minimum over its shingles of each hash function
    (short texts, texts of ~512 words around the switch between the two ways of taking
    minima, and 3,000-word ones, with empty texts among them); `bucket_pairs` is every
    pair of ids sharing a key, each id against at most `max_bucket` earlier ids."""
    sentences, _, _ = corpus
    rng = random.Random(5)
    words = " ".join(sentences[:3000]).split()
    texts = [" ".join(rng.choice(words) for _ in range(n)) for n in (1, 2, 40, 511, 512, 513, 700, 3000)]
    texts += sentences[:300] + ["", None, "— !"]
    rng.shuffle(texts)
    for settings in (Settings(), Settings(shingle=3, num_perm=24, bands=4)):
        sh = minhash.shingle_sets(texts, settings)
        a, b = minhash._coefficients(settings)
        sig = minhash.signatures(sh, settings)
        for t in range(sh.n):
            values = sh.values[sh.offsets[t]:sh.offsets[t + 1]]
            if not len(values):
                assert (sig[t] == minhash.EMPTY).all()
                continue
            with np.errstate(over="ignore"):
                want = ((values[:, None] * a[None, :] + b[None, :]) >> np.uint64(32)).min(axis=0)
            assert (sig[t] == want.astype(np.uint32)).all(), t
    # buckets: keys shared by 1 to 70 ids, rows repeated, any order
    keys, ids = [], []
    for key in range(1, 200):
        members = rng.sample(range(500), rng.choice([1, 2, 3, 10, 70]))
        keys += [key * 7919] * len(members) + [key * 7919]
        ids += members + [members[0]]
    order = list(range(len(keys)))
    rng.shuffle(order)
    keys = np.array(keys, dtype=np.uint64)[order]
    ids = np.array(ids, dtype=np.int64)[order]
    for cap in (64, 3):
        want = set()
        for key in np.unique(keys):
            members = sorted(set(ids[keys == key].tolist()))
            want |= {(members[i], members[j]) for j in range(len(members)) for i in range(min(j, cap))}
        assert minhash.bucket_pairs(keys, ids, cap).tolist() == sorted(map(list, want))


def test_shingles_and_exact_jaccard():
    settings = Settings()
    texts = ["Ion a mers acasă, la mama lui.", "ion a mers ACASĂ la mama lui!", "Mama lui Ion.", "", None, "— !"]
    sh = minhash.shingle_sets(texts, settings)
    assert sh.sizes.tolist() == [7, 7, 3, 0, 0, 0]
    jac = minhash.pair_jaccard(sh, np.array([0, 0, 3]), np.array([1, 2, 4]))
    assert jac.tolist() == [1.0, pytest.approx(st.overlap_jaccard(texts[0], texts[2])), 0.0]
    sig = minhash.signatures(sh, settings)
    assert (sig[0] == sig[1]).all() and (sig[3] == minhash.EMPTY).all()
    keys = minhash.band_keys(sig, settings)
    assert (keys[3:] == 0).all() and (keys[:3] != 0).all()
    # 2-word shingles: a 6-word text has 5, a 1-word text one
    sh2 = minhash.shingle_sets(["a b c d e f", "solo", "a b c d e g"], Settings(shingle=2))
    assert sh2.sizes.tolist() == [5, 1, 5]
    assert minhash.pair_jaccard(sh2, np.array([0]), np.array([2]))[0] == pytest.approx(4 / 6)


def test_components_and_buckets():
    pairs = np.array([[5, 3], [3, 1], [7, 8]])
    comp = minhash.components(10, pairs)
    assert comp.tolist() == [0, 1, 2, 1, 4, 1, 6, 7, 7, 9]
    assert (minhash.components(10, pairs[::-1, ::-1]) == comp).all()
    keys = np.array([9, 9, 9, 9, 4, 4], dtype=np.uint64)
    ids = np.array([40, 10, 30, 20, 1, 2])
    assert minhash.bucket_pairs(keys, ids, 10).tolist() == [[1, 2], [10, 20], [10, 30], [10, 40], [20, 30], [20, 40], [30, 40]]
    # a capped bucket: each id against the first 2 of its bucket
    assert minhash.bucket_pairs(keys, ids, 2).tolist() == [[1, 2], [10, 20], [10, 30], [10, 40], [20, 30], [20, 40]]


def test_settings_are_checked():
    with pytest.raises(NearDupSettingsError, match="multiple"):
        Settings(num_perm=100, bands=16)
    with pytest.raises(NearDupSettingsError, match="threshold"):
        Settings(threshold=1.5)


def test_leakage_report_counts_planted_pairs():
    """Two splits of SciNLI's human-labelled training file, the second with altered copies
    of 100 rows of the first (one word of premise and hypothesis changed): the report finds
    them, and nothing between SciNLI's train and dev files."""
    rows = [json.loads(line) for line in shared_file("nli/scinli-train-2k-human.jsonl").open()]
    rng = random.Random(5)
    vocab = sorted({w for r in rows for w in st.norm_words(r["sentence2"]) if w.isalpha()})
    a = rows[:1000]
    b = rows[1000:1900] + [{"sentence1": alter(r["sentence1"], rng, vocab),
                            "sentence2": alter(r["sentence2"], rng, vocab)} for r in a[:100]]
    settings = Settings()
    expected = sum(word_set_jaccard(x["sentence1"], y["sentence1"]) >= settings.threshold
                   and word_set_jaccard(x["sentence2"], y["sentence2"]) >= settings.threshold
                   for x, y in zip(a[:100], b[900:]))
    out = leakage.near_duplicate_leakage({"a": ([r["sentence1"] for r in a], [r["sentence2"] for r in a]),
                                     "b": ([r["sentence1"] for r in b], [r["sentence2"] for r in b])}, settings)
    assert expected >= 80
    assert out["a|b"]["pairs"]["b"] == expected
    assert out["a|b"]["pairs"]["a"] == expected
    assert out["a|b"]["hypotheses"]["b"] >= expected


def test_normalisation_is_norm_words():
    """The shingles' words are `statistics.norm_words`, token for token: every distinct
    token of the novels and tokens whose case folding or edges are special."""

    docs = novel_documents()
    tokens = sorted({t for d in docs for p in d for s in p for t in s.split()})
    tokens += ["Straße", "ΣΊΣΥΦΟΣ", "ﬁnal", "İstanbul", "_x_", "—", "„Da”", "x²", "Ⅻ", "ŉ", "a_b", "(§4.3)",
               "ǅemal", "ẞ", "ﬀ", "ꭰ", "Ꭰ", "'", "…"]
    got = minhash._normalised_vocabulary(pa.array(tokens, pa.large_string())).to_pylist()
    assert got == [(st.norm_words(t) or [""])[0] for t in tokens]


def test_normalisation_of_every_character_is_norm_words():
    """Every code point Arrow's path may take (and a few past it), alone, at either end and
    inside a word, next to capitals and repeated: the same words as `statistics.norm_words`
    (the path Arrow takes, lower-casing and trimming, is checked against Python's case folding
    and stripping character by character, including Σ, ß, İ, ǅ, combining marks, ²)."""

    tokens = []
    for cp in range(0x21, 0x3100):
        c = chr(cp)
        if c.isspace():
            continue
        tokens += [c, "a" + c, c + "a", c + "Ab" + c, "Ab" + c + "x", c + c, "-" + c + "É" + c + ","]
    tokens += ["ΣΊΣΥΦΟΣ,", "(ΟΔΟΣ)", "İİ", "Straße.", "«ǅemal»", "x\u0301", "\u0301x\u0301", "中文,", "Ꭰꭰ"]
    got = minhash._normalised_vocabulary(pa.array(tokens, pa.large_string())).to_pylist()
    expected = [(st.norm_words(t) or [""])[0] for t in tokens]
    wrong = [(t, g, e) for t, g, e in zip(tokens, got, expected) if g != e]
    assert not wrong, wrong[:10]


def test_trainer_stats_reports_near_duplicate_leakage(tmp_path, capsys):
    """`python -m trainer stats` on SciNLI's train and dev files, and on train against a
    copy of 200 of its rows with one word changed on each side."""
    from trainer import cli

    train = shared_file("nli/scinli-train-2k-human.jsonl")
    dev = shared_file("nli/scinli-dev.jsonl")
    args = ["stats", "--data", str(train), str(dev), "--premise", "sentence1", "--hypothesis", "sentence2", "--json"]
    assert cli.main(args) == 0
    near = json.loads(capsys.readouterr().out)["near_duplicate_leakage"]
    assert near["settings"]["threshold"] == 0.8
    assert near["scinli-train-2k-human|scinli-dev"]["pairs"] == {"scinli-train-2k-human": 0, "scinli-dev": 0}
    rows = [json.loads(line) for line in train.open()]
    rng = random.Random(11)
    vocab = sorted({w for r in rows for w in st.norm_words(r["sentence1"]) if w.isalpha()})
    copy = tmp_path / "altered.jsonl"
    copy.write_text("".join(json.dumps({"sentence1": alter(r["sentence1"], rng, vocab),
                                        "sentence2": alter(r["sentence2"], rng, vocab), "label": r["label"]}) + "\n"
                            for r in rows[:200]), encoding="utf-8")
    assert cli.main(["stats", "--data", str(train), str(copy), "--premise", "sentence1",
                     "--hypothesis", "sentence2"]) == 0
    out = capsys.readouterr().out
    assert "Near-duplicate leakage (Jaccard >= 0.8" in out
    line = next(x for x in out.splitlines() if x.startswith("| scinli-train-2k-human / altered | altered |"))
    found = int(line.split("|")[4].split()[0].replace(",", ""))
    assert 150 <= found <= 200
    assert cli.main(args[:-1] + ["--near-duplicates", "off"]) == 0
    assert "Near-duplicate leakage" not in capsys.readouterr().out


def test_verification_in_chunks_equals_one_chunk(corpus, monkeypatch):
    """`pair_jaccard` and `verify_bucket` verify candidates a chunk at a time (their memory
    must not grow with a bucket's candidates): on the planted novels' sentences, chunks of
    7 candidates give the same Jaccard indices, verified pairs and owned candidates as one
    chunk holding them all."""
    sentences, _, _ = corpus
    settings = Settings()
    texts = sentences
    sh = minhash.shingle_sets(texts, settings)
    k, i = minhash.band_rows(np.arange(sh.n), minhash.band_keys(minhash.signatures(sh, settings), settings))
    cand = minhash.bucket_pairs(k, i, settings.max_bucket)
    rng = np.random.default_rng(3)
    left, right = rng.integers(0, len(texts), 5000), rng.integers(0, len(texts), 5000)
    left[:len(cand)], right[:len(cand)] = cand[:5000, 0], cand[:5000, 1]
    gids = (np.int64(1) << np.int64(32)) + np.arange(len(texts), dtype=np.int64)
    rows = pa.table({"gid": gids, "text": texts, "other": texts, "corpus": ["c"] * len(texts),
                     "doc_id": [str(g) for g in range(len(texts))]})
    rows = rows.select(distributed.TEXT_SCHEMA.names).cast(distributed.TEXT_SCHEMA)
    bands = pa.table({"key": pa.array(k, pa.uint64()), "gid": pa.array(gids[i], pa.int64())})

    def fetch(ids):
        return rows.take(pa.array(np.searchsorted(gids, ids)))

    def run():
        return (minhash.pair_jaccard(sh, left, right),
                [distributed.verify_bucket(bands, fetch, settings, b, 3) for b in range(3)])

    jac, verified = run()
    assert minhash._CHUNK_CANDIDATES >= 5000 and distributed._CHUNK_CANDIDATES >= 5000
    assert len(cand) > 1000 and (jac >= settings.threshold).sum() > 10
    monkeypatch.setattr(minhash, "_CHUNK_CANDIDATES", 7)
    monkeypatch.setattr(distributed, "_CHUNK_CANDIDATES", 7)
    jac7, verified7 = run()
    assert (jac7 == jac).all()
    for (n, table, j), (n7, table7, j7) in zip(verified, verified7):
        assert n == n7 and table.equals(table7) and (j == j7).all()
    assert sum(n for n, _, _ in verified) == len(cand)


def test_verification_with_stored_shingles_and_keys(corpus):
    """Stage 3 keeps each unit's shingles and band keys beside its texts
    (`unit_bands_with`, `shingles_column`, `keys_column`); `verify_bucket` on rows that hold
    them gives what it gives when it cuts and hashes the texts itself: the same candidates,
    verified pairs (with `both`, from the premises of the verified pairs only) and Jaccard
    indices, whatever the bucket; and `unit_bands_with` gives `unit_bands`' rows."""
    sentences, _, _ = corpus
    settings = Settings()
    rng = random.Random(5)
    premises = list(sentences)
    for i in range(0, len(premises) - 1, 2):  # half the premises near-duplicates of another's
        premises[i] = premises[i + 1] if rng.random() < 0.5 else premises[i]
    units, bands = [], []
    for u, start in enumerate(range(0, len(sentences), 700)):
        texts = sentences[start:start + 700]
        gids = distributed.gids(u, np.arange(len(texts)))
        rows = pa.table({"gid": gids, "corpus": ["c"] * len(texts), "doc_id": [f"d{start + j}" for j in range(len(texts))],
                         "text": texts, "other": premises[start:start + 700]}, schema=distributed.TEXT_SCHEMA)
        b, sh, keys = distributed.unit_bands_with(rows.column("text"), gids, settings)
        assert b.equals(distributed.unit_bands(rows.column("text"), gids, settings))
        units.append(rows.append_column("shingles", distributed.shingles_column(sh)).append_column("bands", distributed.keys_column(keys)))
        bands.append(b)
    bands = pa.concat_tables(bands)
    stored = distributed.fetch_from(lambda u: units[u], lambda t: t)
    plain = distributed.fetch_from(lambda u: units[u].select(distributed.TEXT_SCHEMA.names), lambda t: t)
    total = 0
    for b in range(3):
        part = bands.filter(pa.array(distributed.band_buckets(bands.column("key"), 3) == b))
        n, table, jac = distributed.verify_bucket(part, stored, settings, b, 3)
        n0, table0, jac0 = distributed.verify_bucket(part, plain, settings, b, 3)
        assert n == n0 and table.equals(table0) and (jac == jac0).all()
        total += table.num_rows
        assert 0 < sum(table.column("both").to_pylist()) < table.num_rows
    assert total > 10


def test_components_equal_scipy_on_random_graphs_and_long_chains():
    """The numpy components against scipy's csgraph: random sparse graphs (many small
    components, self-loops, repeated edges) and a chain of 3,000 nodes in random order
    (the most rounds of hooking), each node labelled with the smallest node of its
    component."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    def smallest_by_scipy(n, pairs):
        graph = coo_matrix((np.ones(len(pairs), dtype=np.int8), (pairs[:, 0], pairs[:, 1])), shape=(n, n))
        _, labels = connected_components(graph, directed=False)
        first = np.full(labels.max() + 1, n, dtype=np.int64)
        np.minimum.at(first, labels, np.arange(n))
        return first[labels]

    rng = np.random.default_rng(5)
    for n, m in [(50, 0), (50, 30), (2000, 1500), (2000, 2500), (300, 2000)]:
        pairs = rng.integers(0, n, (m, 2))
        assert (minhash.components(n, pairs) == smallest_by_scipy(n, pairs)).all(), (n, m)
    order = rng.permutation(3000)
    chain = np.stack([order[:-1], order[1:]], axis=1)
    assert (minhash.components(3000, chain) == 0).all()
    assert (minhash.components(3000, chain[::-1]) == 0).all()
