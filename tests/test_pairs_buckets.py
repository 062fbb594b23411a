"""Stage 2's per-bucket global steps (`extractor.pairs.buckets`) without Spark: identical
pairs, tallies, neutral candidates against marked pairs, and the exact draw over any
number of buckets against one global sort."""
from __future__ import annotations

import random
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pytest

from extractor.engine import scratch
from extractor.pairs import sentence_passes as bt
from extractor.pairs import buckets as pb
from extractor.pairs import neutral as nt
from extractor.pairs import stage as ps
from extractor.pairs.plan import PairsScratch
from extractor.engine.scratch import split_by
from tests.pairs_reference import needed_documents, needs_document, pack_lowest_bins


def _rows(rows: list[dict]) -> pa.Table:
    base = {"corpus": "wiki", "doc_id": "d", "label": "neutral", "source": "both_random", "kind": "pair",
            "reject": None, "n": 0, "copies": 1, "bin": 0, "select": 0, "phrase": None, "premise_stripped": False}
    return pa.Table.from_pylist([{**base, **r} for r in rows], schema=bt.WORK)


def test_identical_texts_rank_by_pair_id_and_tally_with_their_copies():
    rows = _rows([{"pair_id": "b", "premise": "P one.", "hypothesis": "H one.", "label": "reasoning", "copies": 3},
                  {"pair_id": "a", "premise": "P one.", "hypothesis": "H one.", "label": "reasoning"},
                  {"pair_id": "c", "premise": "P two.", "hypothesis": "H one.", "label": "reasoning"}])
    ranked = pb.rank_identical(rows)
    assert list(zip(ranked.column("pair_id").to_pylist(), ranked.column("bin").to_pylist())) == \
        [("a", 1), ("b", 2), ("c", 1)]
    tallies = sorted(pb.marked_tallies(ranked), key=repr)
    # (corpus, label, phrase, stripped, reject, n, duplicate, rows, copies)
    assert tallies == [("wiki", "reasoning", None, False, None, 0, False, 2, 2),
                       ("wiki", "reasoning", None, False, None, 0, True, 1, 3)]


def test_pass_counts_sum_per_kind_and_name_the_document_of_an_edge():
    rows = _rows([{"pair_id": "x", "premise": "a", "hypothesis": "b"},
                  {"kind": "marked", "label": "reasoning", "n": 4}, {"kind": "marked", "label": "reasoning", "n": 1},
                  {"kind": "edge", "doc_id": "wiki:7", "n": 1}, {"kind": "doc", "doc_id": "wiki:7", "n": 9}])
    counts = sorted(pb.pass_counts(rows), key=repr)
    assert counts == [("edge", "wiki", "neutral", None, 0, "wiki:7", 1), ("marked", "wiki", "reasoning", None, 0, None, 5)]


def test_neutral_candidates_identical_to_a_marked_pair_or_to_each_other_are_left_out():
    marked = _rows([{"pair_id": "m", "premise": "Same.", "hypothesis": "Pair.", "source": "marker"}])
    cands = _rows([{"pair_id": "n1", "premise": "Same.", "hypothesis": "Pair.", "select": 5},
                   {"pair_id": "n3", "premise": "Other.", "hypothesis": "Pair.", "select": 7},
                   {"pair_id": "n2", "premise": "Other.", "hypothesis": "Pair.", "select": 9}])
    tallies, pool = pb.neutral_round(cands, marked, model=None, lexicon=None)
    assert pool.column("pair_id").to_pylist() == ["n2"]
    # (corpus, source, reject, rank when it counts, selection bin, rows, verdicts asked)
    assert sorted(tallies, key=repr) == [("wiki", "both_random", None, 1, 0, 1, 0), ("wiki", "both_random", None, 2, 0, 1, 0),
                                         ("wiki", "both_random", None, None, 0, 1, 0)]


def test_identical_candidates_rank_over_the_whole_cut_before_the_limits():
    """A candidate whose twin (the same texts, a lower pair_id) lies above the limit stays a
    duplicate: ranks are those of the whole cut, so the draw under a limit is the draw under
    the cut (`corpus.limits_hold`)."""
    cands = _rows([{"pair_id": "n2", "premise": "Other.", "hypothesis": "Pair.", "select": 7},
                   {"pair_id": "n1", "premise": "Other.", "hypothesis": "Pair.", "select": 90},
                   {"pair_id": "n3", "premise": "Third.", "hypothesis": "Pair.", "select": 8}])
    empty = _rows([]).slice(0, 0)
    tallies, pool = pb.neutral_round(cands, empty, model=None, lexicon=None, limits={("wiki", "both_random"): 50})
    assert pool.column("pair_id").to_pylist() == ["n3"]
    assert sorted(tallies, key=repr) == [("wiki", "both_random", None, 1, 0, 1, 0), ("wiki", "both_random", None, 2, 0, 1, 0)]


@pytest.mark.parametrize("buckets", [1, 4, 9])
def test_the_draw_takes_the_lowest_selection_hashes_of_each_group_over_any_buckets(buckets):
    rng = random.Random(buckets)
    rows = []
    for i in range(5000):
        select = rng.randrange(1 << 63) if i % 10 else (123 << (63 - nt.BIN_BITS))  # a crowded bin, ties on select
        rows.append({"pair_id": f"p{i:05d}", "premise": f"P {i}.", "hypothesis": f"H {i}.", "select": select,
                     "corpus": rng.choice(["wiki", "news"]), "source": rng.choice(["both_random", "first_random"])})
    pool = _rows(rows)
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["corpus"], r["source"]), []).append((r["select"], r["pair_id"]))
    wanted = {key: rng.choice([0, 1, len(v) // 3, len(v), len(v) + 10]) for key, v in groups.items()}
    bins: dict = {}
    for key, values in groups.items():
        for select, _ in values:
            b = select >> (63 - nt.BIN_BITS)
            bins.setdefault(key, {})[b] = bins.get(key, {}).get(b, 0) + 1
    cuts = pb.cut_points(bins, wanted)
    parts = split_by(pool, pb.text_buckets(pool, buckets)).values()
    last = pb.last_taken([r for p in parts for r in pb.boundary_rows(p, cuts)], cuts)
    got = sorted(x for p in parts for x in pb.drawn(p, cuts, last).column("pair_id").to_pylist())
    want = sorted(pid for key, values in groups.items() for _, pid in sorted(values)[:wanted[key]])
    assert got == want


def test_dense_histograms_sum_to_the_rows_they_replace():
    """A task returns one dense list per (corpus, strategy) instead of a row per histogram
    key; summed over tasks they give the per-key counts the rows summed to."""

    rng = np.random.default_rng(3)
    per_task, expected = [], defaultdict(Counter)
    for _ in range(6):
        rows = []
        for corpus in ("ro", "ro-news"):
            for strategy in nt.STRATEGIES[:3]:
                bins = rng.integers(0, 1 << nt.BIN_BITS, size=int(rng.integers(1, 3000)))
                for key, n in nt.hist_keys(np.bincount(bins, minlength=1 << nt.BIN_BITS)):
                    rows.append((corpus, strategy, key, n))
                    expected[corpus, strategy][key] += n
        per_task.append(pb.dense_histograms(rows))
        assert all(len(counts) == nt.HIST_SIZE for _, _, counts in per_task[-1])
    total = pb.sum_histograms(per_task)
    assert total == {k: dict(v) for k, v in expected.items()}
    assert list(total) == sorted(expected, key=repr)
    assert [nt.hist_key(nt.hist_index(k)) for k in range(1 << nt.BIN_BITS) if k < nt.HIST_FINE
            or (k - nt.HIST_FINE) % nt.HIST_BLOCK == 0] == sorted({k for v in expected.values() for k in v} |
                                                                   set(range(nt.HIST_FINE)) |
                                                                   set(range(nt.HIST_FINE, 1 << nt.BIN_BITS,
                                                                             nt.HIST_BLOCK)))


def test_the_needed_documents_are_those_a_cut_reaches(tmp_path):
    """The driver's list of documents for pass 2 (`stage._needed`, vectorised per unit
    file) is `needed_documents` (tests/pairs_reference.py) over the same rows, and None
    above the limit."""

    rng = np.random.default_rng(5)
    rows = []
    for unit in range(4):
        n = 500
        packed = [pack_lowest_bins({s: int(b) for s, b in zip(nt.STRATEGIES, rng.integers(0, 4096, size=5))
                                       if rng.random() < 0.8}) for _ in range(n)]
        corpus = ["ro" if i % 3 else "es" for i in range(n)]
        docs = pa.table({"corpus": corpus, "doc_id": [f"{c}:{unit}:{i}" for i, c in enumerate(corpus)],
                         "n": pa.array(packed, pa.int64()), "bin": pa.array([unit] * n, pa.int32())})
        scratch.write_arrow(docs, PairsScratch(str(tmp_path)).documents(unit))
        rows += list(zip(corpus, docs.column("doc_id").to_pylist(), packed, [unit] * n))
    cuts = {("ro", "both_random"): 40, ("ro", "adjacent_unmarked"): 200, ("es", "first_random"): 100,
            ("es", "second_random"): -1}
    by_file, keys = needed_documents(rows, cuts)
    got = ps._needed(PairsScratch(str(tmp_path)), cuts)
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in by_file.items()}
    assert 0 < sum(map(len, got.values())) < len(rows)
    assert ps._needed(PairsScratch(str(tmp_path)), cuts, limit=len(keys) - 1) is None
    assert ps._needed(PairsScratch(str(tmp_path)), cuts, limit=len(keys)) is not None
    # a cut that takes every candidate of a strategy: the documents that have one, not all
    every = {("ro", "both_random"): 4095}
    got = ps._needed(PairsScratch(str(tmp_path)), every)
    top = (1 << nt.BIN_BITS) - 1
    k = nt.STRATEGIES.index("both_random")
    having = {d for c, d, n, _ in rows if c == "ro" and (n >> (nt.BIN_BITS * k)) & top != top}
    assert {d for v in got.values() for d in v} == having == {d for _, d in needed_documents(rows, every)[1]} and \
        0 < len(having) < len(rows)


def test_a_lowest_bin_of_4095_is_not_taken_for_no_candidate():
    """4095 in a "doc" row means no candidate of that strategy; a document whose lowest bin is
    4095 is packed as 4094, so the cut that takes every candidate still reads it."""
    top = (1 << nt.BIN_BITS) - 1
    only_last = pack_lowest_bins({"both_random": top})
    none = pack_lowest_bins({})
    assert needs_document(only_last, {"both_random": top}) and not needs_document(none, {"both_random": top})
    assert not needs_document(only_last, {"both_random": top - 2})
    assert needs_document(pack_lowest_bins({"first_random": 7}), {"first_random": 7, "both_random": top})
    # pass 1 packs its documents' rows the same way (numpy; 4095: no candidate, else at most 4094)
    lowest = {"both_random": top - 1, "first_random": 0, "second_random": 7}
    row = [lowest.get(s, top) for s in nt.STRATEGIES]
    assert bt._packed(np.array([[top] * len(row), row], dtype=np.int64)) == [pack_lowest_bins({}),
                                                                               pack_lowest_bins(lowest)]


def test_the_plan_sums_dense_histograms_and_rows_recorded_before_them_alike():
    """`stage.reduce_pass_one` gives the same histograms from the tasks' dense lists as from
    the per-key count rows a run recorded for --resume before them."""

    rows = [("hist", "ro", "both_random", None, 3, None, 5), ("hist", "ro", "both_random", None, 512, None, 7),
            ("hist", "ro", "adjacent_unmarked", None, 0, None, 1), ("marked", "ro", "reasoning", None, 0, None, 4)]
    dense = [pb.dense_histograms((c, s, b, n) for kind, c, s, _, b, _, n in rows if kind == "hist")]
    plain = [r for r in rows if r[0] != "hist"]
    assert ps.reduce_pass_one(plain, [], dense) == ps.reduce_pass_one(rows, [])
    marked, hist, _, _ = ps.reduce_pass_one(plain, [], dense)
    assert hist == {("ro", "adjacent_unmarked"): {0: 1}, ("ro", "both_random"): {3: 5, 512: 7}}
    assert marked == {("ro", "reasoning", None): 4}


UK_SENTENCES = ["Київ є столицею України і найбільшим містом країни.", "Дуже гарний і тихий вечір над річкою.",
                "Мій брат пише листи своїй бабусі щотижня.", "Старе місто біля річки з мостами і садами.",
                "Вона знає відповідь на це складне питання.", "Ми живемо в маленькому будинку біля лісу.",
                "Зелені поля та широкі дороги аж до обрію.", "Учні читають книжки в шкільній бібліотеці."]


def test_the_marked_rounds_verdicts_spare_the_neutral_round_tagging_with_the_same_rows(monkeypatch):
    """`judged` reads back the verdicts of a POS-checked table; given to the next POS step
    (`known_verdicts`), its texts are not tagged again and every row, reason and `n` is
    the same as when they are (the verdict counts go by rows, not by tagging)."""
    from extractor.lexicon.lexicon import load_lexicon
    from extractor.pairs import pos_filter as pf

    lexicon = load_lexicon("uk")
    rng = random.Random(3)
    marked = _rows([{"pair_id": f"m{i}", "premise": rng.choice(UK_SENTENCES), "hypothesis": rng.choice(UK_SENTENCES),
                     "label": "reasoning", "n": 1} for i in range(30)])
    ranked = pb.pos_checked(pb.rank_identical(marked), "rules:uk", lexicon)
    verdicts = pb.judged(ranked)
    assert verdicts.num_rows == len(set(verdicts.column("text").to_pylist())) >= 6
    assert set(verdicts.column("reason").to_pylist()) >= {None, "pos_no_predicate"}
    expected = dict(zip(UK_SENTENCES, pf.pos_verdicts(UK_SENTENCES, "rules:uk", lexicon)))
    for text, reason in zip(verdicts.column("text").to_pylist(), verdicts.column("reason").to_pylist()):
        assert expected[text] == (reason is None, reason)

    cands = _rows([{"pair_id": f"n{i}", "premise": rng.choice(UK_SENTENCES), "hypothesis": rng.choice(UK_SENTENCES)}
                   for i in range(40)])
    tagged: list = []
    real = pf.pos_tags
    monkeypatch.setattr(pf, "pos_tags", lambda texts, model, **k: tagged.extend(texts) or real(texts, model, **k))
    out = []
    for known in (None, pb.known_verdicts([verdicts], cands.column("premise").combine_chunks())):
        bt._CACHE.clear()
        tagged.clear()
        out.append((pb.neutral_round(cands, marked.slice(0, 0), "rules:uk", lexicon, known), list(tagged)))
    (plain, tagged_plain), (spared, tagged_spared) = out
    assert plain[0] == spared[0] and plain[1].equals(spared[1])
    assert len(tagged_spared) < len(tagged_plain)
    assert not set(tagged_spared) & set(verdicts.column("text").to_pylist())


def test_verdict_cache_keeps_a_tasks_texts_and_a_bounded_tail_of_earlier_ones(monkeypatch):
    """A worker's verdict cache holds every text of the running task (learned or tagged),
    however many, and when the next task starts only the MAX_CACHE most recent of them:
    its size does not grow with the input. Texts still cached are not tagged again."""
    from extractor.lexicon.lexicon import load_lexicon
    from extractor.pairs import pos_filter as pf

    lexicon = load_lexicon("uk")
    monkeypatch.setattr(bt.Verdicts, "MAX_CACHE", 4)
    tagged: list = []
    real = pf.pos_verdicts
    monkeypatch.setattr(pf, "pos_verdicts", lambda texts, *a, **k: tagged.extend(texts) or real(texts, *a, **k))
    bt._CACHE.clear()
    first = bt.Verdicts("rules:uk", lexicon)
    first.learn({"Знайдене раніше речення.": (True, None)})
    first.prepare(UK_SENTENCES[:5])
    first.prepare(UK_SENTENCES[5:])
    cache = bt._CACHE["rules:uk"]
    assert len(cache) == 1 + len(UK_SENTENCES) > 4  # the running task's texts all stay
    expected = pf.pos_verdicts(UK_SENTENCES, "rules:uk", lexicon)
    assert [first(t) for t in UK_SENTENCES] == expected and first("Знайдене раніше речення.") == (True, None)
    second = bt.Verdicts("rules:uk", lexicon)  # the next task: the 4 last texts of the first
    assert list(cache) == UK_SENTENCES[-4:]
    tagged.clear()
    second.prepare(UK_SENTENCES)
    assert sorted(tagged) == sorted(UK_SENTENCES[:4])
    assert [second(t) for t in UK_SENTENCES] == expected


def test_verdict_files_are_shared_only_within_the_read_budget(tmp_path, monkeypatch):
    work = PairsScratch(str(tmp_path / "work"))
    assert ps._shared_verdicts(work, 4) is None  # no marked round with a model: nothing to share
    verdicts = pa.table({"text": pa.array(["Un text.", "Altul."], pa.large_string()),
                         "reason": pa.array([None, "pos_no_predicate"], pa.string())})
    for b in range(2):
        scratch.write_arrow(verdicts, work.verdicts(b))
    shared = ps._shared_verdicts(work, 4)
    assert [p.rsplit("/", 1)[-1] for p in shared] == ["bucket-00000.arrow", "bucket-00001.arrow"]
    known = pb.known_verdicts([scratch.read_one(p) for p in shared], pa.array(["Altul.", "Nou."]))
    assert known == {"Altul.": (False, "pos_no_predicate")}
    size = sum((tmp_path / "work" / "verdicts" / f"bucket-{b:05d}.arrow").stat().st_size for b in range(2))
    monkeypatch.setattr(ps, "VERDICTS_READ_BUDGET", size * 4 - 1)  # four tasks would read one byte too many
    assert ps._shared_verdicts(work, 4) is None and ps._shared_verdicts(work, 3) is not None
