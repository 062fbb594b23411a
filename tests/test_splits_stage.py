"""Stage 3 on a hand-made pairs table (Spark): whole documents, no leakage, balance,
test-only corpora, the dataset card, `datasets.load_dataset` and `trainer stats` on it."""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest

from extractor.engine import stage as engine_stage
from extractor.spark.runner import SparkRunner
from extractor.splits import stage as splits_stage
from extractor.core.hashing import stable_hex, stable_unit
from extractor.job.context import JobContext
from extractor.job.inputs import CorpusSpec
from extractor.lexicon.lexicon import load_lexicon
from tests.one_process import splits_in_one_process

pytestmark = pytest.mark.spark

LABELS = ["contrasting", "entailment", "reasoning", "neutral"]
MARKERS = {"contrasting": "However", "entailment": "In other words", "reasoning": "Therefore", "neutral": None}
WORDS = ("river city council museum winter harvest engine railway castle treaty language village bridge "
         "school market festival mountain island temple library").split()


def sentence(doc: str, i: int) -> str:
    w = [WORDS[int(stable_unit(doc, i, k) * len(WORDS))] for k in range(5)]
    return (f"The {w[0]} of {doc.replace(':', ' ')} near the {w[1]} was built after the {w[2]} "
            f"in year {1800 + i} by the {w[3]} {w[4]}.")


def ref(doc, sent, para=0):
    return {"doc_id": doc, "section": "", "para_idx": para, "sent_idx": sent}


def make_pairs() -> tuple[pd.DataFrame, dict]:
    """Two train corpora and a test-only one, plus planted leaks."""
    rows = []
    for corpus, genre, n_docs in (("wiki", "wikipedia", 60), ("news", "news", 40), ("talks", "talks", 10)):
        for d in range(n_docs):
            doc = f"{corpus}:{d}"
            for i in range(4 + int(stable_unit(doc, "n") * 12)):
                label = LABELS[int(stable_unit(doc, i, "label") * 4)]
                rows.append(dict(pair_id=stable_hex(doc, i), corpus=corpus, genre=genre, lang="en", doc_id=doc,
                                 premise=sentence(doc, 2 * i), hypothesis=sentence(doc, 2 * i + 1), label=label,
                                 marker=MARKERS[label], source="marker" if MARKERS[label] else "both_random",
                                 premise_ref=ref(doc, 2 * i), hypothesis_ref=ref(doc, 2 * i + 1)))
    df = pd.DataFrame(rows)
    planted = []
    # the same sentence pair again in other documents: as is, reversed + re-cased + re-spaced
    for k, src in enumerate((3, 10, 50, 200, 333)):
        row = df.iloc[src].to_dict()
        doc = f"wiki:{59 - k}"
        row.update(pair_id=f"copy{k}", doc_id=doc, premise_ref=ref(doc, 90), hypothesis_ref=ref(doc, 91))
        if k % 2:
            row["premise"], row["hypothesis"] = row["hypothesis"].upper(), "  " + row["premise"]
        planted.append(row)
    # neutral pairs drawing their hypothesis from another document of the corpus
    for k in range(12):
        a, b = f"news:{k}", f"news:{20 + k}"
        planted.append(dict(pair_id=f"cross{k}", corpus="news", genre="news", lang="en", doc_id=a,
                            premise=sentence(a, 300), hypothesis=sentence(b, 301), label="neutral", marker=None,
                            source="both_random", premise_ref=ref(a, 300), hypothesis_ref=ref(b, 301)))
    return pd.concat([df, pd.DataFrame(planted)], ignore_index=True), {"copies": 5}


def run_stage(spark, out: Path, pdf: pd.DataFrame, *flags: str, seed: int = 0, overwrite=False):
    if not (out / "pairs").exists():
        spark.createDataFrame(pdf).write.partitionBy("label").parquet(str(out / "pairs"))
    parser = argparse.ArgumentParser()
    splits_stage.add_arguments(parser)
    args = parser.parse_args(list(flags))
    args.seed, args.overwrite, args.files_per_table, args.min_chars = seed, overwrite, 2, 50
    corpora = [CorpusSpec("wiki", "wikipedia", "mediawiki", []), CorpusSpec("news", "news", "jsonl", []),
               CorpusSpec("talks", "talks", "text", [], role="test-only")]
    ctx = JobContext(spark=spark, args=args, lexicon=load_lexicon("en"), output=out, corpora=corpora,
                     command_line="jobs/extract.py --lang en " + " ".join(flags))
    engine_stage.run_stage(splits_stage.STAGE, ctx, SparkRunner(spark))
    return ctx


def read_splits(folder: Path) -> dict[str, pd.DataFrame]:
    return {s: pd.read_parquet(folder / s) for s in ("train", "validation", "test") if (folder / s).exists()}


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("splits_downsample")
    pdf, planted = make_pairs()
    # the pandas reference knows exact duplicates only (near-duplicates: tests/test_neardup_splits.py)
    ctx = run_stage(spark, out, pdf, "--max-eval-per-corpus", "200", "--near-duplicates", "off")
    return out, pdf, ctx


def test_no_document_and_no_pair_in_two_splits(built):
    out, pdf, ctx = built
    splits = read_splits(out / "splits")
    assert set(splits) == {"train", "validation", "test"}
    seen_docs, seen_pairs = {}, {}
    for name, df in splits.items():
        docs = set(df["doc_id"]) | {r["doc_id"] for r in df["premise_ref"]} | {r["doc_id"] for r in df["hypothesis_ref"]}
        for d in docs:
            assert seen_docs.setdefault(d, name) == name, f"document {d} in {seen_docs[d]} and {name}"
        for p, h in zip(df["premise"], df["hypothesis"]):
            key = frozenset((" ".join(p.lower().split()), " ".join(h.lower().split())))
            assert key not in seen_pairs, f"sentence pair in {seen_pairs[key]} and {name}"
            seen_pairs[key] = name
    stats = ctx.stats["splits"]
    assert stats["leakage"] == {"documents_in_two_splits": 0, "pairs_in_two_splits": 0,
                                "sentence_pairs_in_two_splits": 0, "hypotheses_in_two_splits": 0}
    # pairs and documents per (split, corpus) as the written splits hold them
    assert stats["corpora"] == {f"{name}|{corpus}": {"pairs": len(g), "documents": g["doc_id"].nunique()}
                                for name, df in splits.items() for corpus, g in df.groupby("corpus")}


def test_removals_are_counted(built):
    out, pdf, ctx = built
    dropped = ctx.stats["splits"]["dropped"]
    # each planted copy is removed exactly once, whichever split its document went to
    assert dropped.get("identical_pair_in_other_split", 0) + dropped.get("identical_pair_in_same_split", 0) == 5
    # cross-document neutral pairs whose two documents landed in different splits
    assert dropped["pair_spans_documents_of_two_splits"] >= 1
    balance = sum(n for per in dropped["balance"].values() for n in per.values())
    kept = sum(ctx.stats["splits"]["splits"].values())
    assert kept + balance + dropped["pair_spans_documents_of_two_splits"] + 5 == len(pdf)


def test_downsample_balances_every_split_and_test_only_corpus_is_test_only(built):
    out, pdf, ctx = built
    splits = read_splits(out / "splits")
    for name, df in splits.items():
        per_corpus = df.groupby(["corpus", "label"]).size().unstack(fill_value=0)
        assert (per_corpus.nunique(axis=1) == 1).all(), f"{name} not balanced per corpus:\n{per_corpus}"
        assert set(df["label"]) == set(LABELS)
    assert set(splits["test"]["corpus"]) >= {"talks"}
    assert "talks" not in set(splits["train"]["corpus"]) | set(splits["validation"]["corpus"])
    # evaluation cap per corpus: 200 // 4 labels
    assert splits["test"].groupby("corpus").size().max() <= 200
    assert len(splits["train"]) > 4 * len(splits["validation"])


def test_datasets_loads_the_folder_with_the_card_sizes_and_features(built):
    datasets = pytest.importorskip("datasets")
    out, pdf, ctx = built
    ds = datasets.load_dataset(str(out / "splits"))
    sizes = ctx.stats["splits"]["splits"]
    assert {s: ds[s].num_rows for s in ds} == sizes
    feats = ds["train"].features
    assert feats["label"].names == LABELS
    assert {"pair_id", "premise", "hypothesis", "marker", "source", "doc_id", "corpus"} <= set(feats)
    assert feats["premise_ref"]["para_idx"].dtype == "int64"
    row = ds["test"][0]
    assert feats["label"].int2str(row["label"]) in LABELS


def test_card_stats_and_chart(built):
    out, pdf, ctx = built
    folder = out / "splits"
    card = (folder / "README.md").read_text()
    lex = load_lexicon("en")
    assert card.startswith("---\nlanguage:\n- en\nlicense: unknown\n")  # no license given: none guessed
    assert "task_ids:\n- natural-language-inference" in card
    assert lex.sha256 in card and "jobs/extract.py --lang en --max-eval-per-corpus 200" in card
    assert "seed: 0" in card and "PASSED" in card and "| However |" in card
    assert "Lengths and overlap (layout of RoNLI Table 2)" in card and "Top PMI words" in card
    assert (folder / "class_distribution.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for name in ("lengths_per_label.png", "top_phrases_per_label.png", "drop_funnel.png"):  # drawn in a task
        assert (folder / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f"]({name})" in card
    examples = card.split("## Example pairs")[1].split("\n## ")[0]
    for label in ("contrasting", "entailment", "reasoning", "neutral"):
        assert examples.count(f"\n| {label} | ") == 3, examples
    assert "## Intended use and limitations" in card and "## Citation" in card
    stats = json.loads((folder / "stats.json").read_text())
    assert stats["splits"]["train"]["all"]["count"] == ctx.stats["splits"]["splits"]["train"]
    leak = json.loads((folder / "leakage.json").read_text())
    assert leak["checks"]["documents_in_two_splits"] == 0
    assert sum(leak["removed"].values()) == sum(v for k, v in ctx.stats["splits"]["dropped"].items() if k != "balance")


def test_trainer_stats_agrees_with_the_card_on_our_splits(built):
    from trainer.data.loading import load_nli
    from extractor.statistics import dataset_statistics

    out, pdf, ctx = built
    ours = dataset_statistics(load_nli(out / "splits"))
    card = json.loads((out / "splits" / "stats.json").read_text())
    for split in ("train", "validation", "test"):
        for label, block in card["splits"][split]["labels"].items():
            mine = ours["splits"][split]["labels"][label]
            for key, value in block.items():
                if key == "top_pmi_words":
                    assert [t["word"] for t in value] == [t["word"] for t in mine[key]]
                else:
                    assert mine[key] == pytest.approx(value), (split, label, key)
    assert all(v["pairs"] == 0 and v["sentence_pairs"] == 0 for v in ours["leakage"].values())


def test_deterministic_across_partitions_and_input_order(built, spark, tmp_path, monkeypatch):
    out, pdf, ctx = built
    again = tmp_path / "again"
    old = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    monkeypatch.setattr(splits_stage, "PAIRS_PER_PARTITION", 50)  # 7 shuffle partitions, not 2
    try:
        run_stage(spark, again, pdf.sample(frac=1, random_state=1), "--max-eval-per-corpus", "200",
                  "--near-duplicates", "off")
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", old)
    def digest(folder):
        return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(folder.rglob("*.parquet"))}
    assert digest(out / "splits") == digest(again / "splits")
    a = json.loads((out / "splits" / "stats.json").read_text())
    b = json.loads((again / "splits" / "stats.json").read_text())
    assert a["splits"] == b["splits"]
    def examples(folder):  # picked per unit range, merged in the driver: the same pairs
        return (folder / "README.md").read_text().split("## Example pairs")[1].split("\n## ")[0]
    assert examples(out / "splits") == examples(again / "splits")


def test_natural_distribution_and_existing_output(spark, tmp_path):
    pdf, _ = make_pairs()
    ctx = run_stage(spark, tmp_path, pdf, "--balance", "none", "--split-ratios", "0.6,0.2,0.2",
                    "--max-eval-per-corpus", "40", "--license", "cc-by-4.0")
    splits = read_splits(tmp_path / "splits")
    train = splits["train"]["label"].value_counts()
    assert train.nunique() > 1  # natural distribution kept in train
    assert splits["validation"].groupby("corpus").size().max() <= 40
    assert "license: cc-by-4.0" in (tmp_path / "splits" / "README.md").read_text()
    assert ctx.stats["splits"]["settings"]["balance"] == "none"
    with pytest.raises(FileExistsError, match="splits already exists"):
        run_stage(spark, tmp_path, pdf, "--balance", "cap", "30")


def test_string_and_struct_refs_name_their_document():
    import pyarrow as pa

    from extractor.splits import pair_tables

    strings = pa.table({"doc_id": ["wiki:12", "news:1"], "premise_ref": ["wiki:12:3:4", None],
                        "hypothesis_ref": ["wiki:7:0:1", ""]})
    assert pair_tables._ref_docs(strings, "premise_ref").to_pylist() == ["wiki:12", "news:1"]
    assert pair_tables._ref_docs(strings, "hypothesis_ref").to_pylist() == ["wiki:7", "news:1"]
    assert pair_tables._ref_docs(strings, "no_such_ref").to_pylist() == ["wiki:12", "news:1"]
    structs = pa.table({"doc_id": ["a:1", "b:2"], "premise_ref": [{"doc_id": "a:9", "sent_idx": 1}, None]})
    assert pair_tables._ref_docs(structs, "premise_ref").to_pylist() == ["a:9", "b:2"]


def test_an_independent_pandas_reference_gives_the_splits_of_the_spark_stage(built):
    """tests/splits_reference.py (pandas, one table, no buckets) = the Spark stage."""
    import pyarrow as pa

    from tests.splits_reference import run_reference

    out, pdf, ctx = built
    splits, stats = run_reference(pa.Table.from_pandas(pdf, preserve_index=False), seed=0, max_eval_per_corpus=200,
                                  test_only={"talks"})
    spark_splits = read_splits(out / "splits")
    assert {k: sorted(v["pair_id"]) for k, v in spark_splits.items()} == \
        {k: sorted(v.column("pair_id").to_pylist()) for k, v in splits.items()}
    assert stats["dropped"] == ctx.stats["splits"]["dropped"]


@pytest.mark.parametrize("case", ["no rows", "every row rejected by the POS filter"])
def test_nothing_to_split_gives_a_card_and_warnings_not_a_crash(spark, tmp_path, case):
    pdf, _ = make_pairs()
    if case == "no rows":
        spark.createDataFrame(pdf.head(1)).limit(0).write.parquet(str(tmp_path / "pairs"))
    else:
        spark.createDataFrame(pdf.assign(pos_ok=False)).write.parquet(str(tmp_path / "pairs"))
    ctx = run_stage(spark, tmp_path, pdf)
    folder = tmp_path / "splits"
    # the drop funnel shows where every pair went; no lengths or phrases to draw
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "class_distribution.png", "drop_funnel.png",
                                                        "leakage.json", "stats.json"]
    assert ctx.stats["splits"]["splits"] == {"train": 0, "validation": 0, "test": 0}
    assert ctx.stats["splits"]["dropped"].get("not_pos_ok", 0) == (0 if case == "no rows" else len(pdf))
    assert "splits: the train split is empty and is not written" in ctx.warnings
    assert not (tmp_path / "_tmp-splits").exists() and not (tmp_path / "_tmp-splits-work").exists()


@pytest.mark.parametrize("buckets", [1, 5])
def test_plain_process_writes_the_bytes_of_the_spark_stage(built, tmp_path, buckets):
    """`splits_in_one_process` (tests/one_process.py: the stage's rounds run in one process, no Spark; the
    benchmark's engine-overhead reference) writes the stage's split files byte for byte,
    whatever its number of buckets, with the same drops and figures."""
    out, pdf, ctx = built
    result = splits_in_one_process(str(out / "pairs"), str(tmp_path), seed=0, max_eval_per_corpus=200,
                                   test_only={"talks"}, files_per_table=2, buckets=buckets)
    ours = {p.relative_to(tmp_path).as_posix(): p.read_bytes() for p in sorted(tmp_path.glob("*/*.parquet"))}
    stage = {p.relative_to(out / "splits").as_posix(): p.read_bytes()
             for p in sorted((out / "splits").glob("*/*.parquet"))}
    assert ours and ours == stage
    assert result["drops"] == ctx.stats["splits"]["dropped"]
    assert result["corpora"] == ctx.stats["splits"]["corpora"]
    assert result["splits"] == ctx.stats["splits"]["splits"]
