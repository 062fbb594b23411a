"""Stage 3 glue: `pairs/` -> `splits/{train,validation,test}` + dataset card, stats, leakage.

Thin Spark code around `extractor.splits.assign` (assignment, quotas) and `extractor.statistics`
(every number of the card). Text work runs in ``mapInPandas`` batches, joins and windows
in Spark SQL; only aggregates (counts per document, per split/corpus/label, top words)
reach the driver. The whole `splits/` folder is written under a temporary name and moved
into place at the end, so a failed run never leaves a half-built dataset.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from extractor.splits import card as card_mod
from extractor import output as _out
from extractor.splits import assign as sp
from extractor import statistics as st

STAGE = "splits"
PAIRS_PER_PARTITION = 100_000
_INTERNAL = ("_h", "_pkey", "_skey", "_hkey", "_pdoc", "_hdoc", "_test_only", "_split", "_prio", "_cross")


def _ratios(text: str) -> str:
    """argparse type of --split-ratios: checked when the command line is parsed."""
    import argparse

    try:
        sp.parse_ratios(text)
    except sp.SplitsError as exc:
        raise argparse.ArgumentTypeError(str(exc).split(": ", 1)[-1]) from None
    return text


def _non_negative(text: str) -> int:
    import argparse

    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0 (0 = no limit), not {text!r}")
    return value


def check(ctx) -> None:
    """Before any stage runs (jobs/extract.py): the split settings, so that a bad
    --balance fails in a second, not after stages 1 and 2."""
    args = ctx.args
    sp.parse_ratios(getattr(args, "split_ratios", "0.8,0.1,0.1"))
    sp.parse_balance(getattr(args, "balance", ["downsample"]))


def add_arguments(parser) -> None:
    g = parser.add_argument_group("splits (stage 3)")
    g.add_argument("--split-ratios", default="0.8,0.1,0.1", type=_ratios,
                   help="train,validation,test shares of each corpus's pairs, assigned by whole documents")
    g.add_argument("--balance", nargs="+", default=["downsample"], metavar="MODE",
                   help="downsample (each split and corpus cut to its smallest class, ESNLIR), "
                        "none (natural distribution, stratified, RoNLI) or 'cap N' (at most N pairs per label and split)")
    g.add_argument("--max-eval-per-corpus", type=_non_negative, default=sp.DEFAULT_MAX_EVAL_PER_CORPUS,
                   help="at most this many validation and test pairs per corpus (ESNLIR: 15000; 0 = no limit)")
    g.add_argument("--license", default="cc-by-sa-4.0",
                   help="license field of the dataset card (Wikipedia text is CC BY-SA; set the one of your sources)")


# ---------------------------------------------------------------------------- batch functions

KEY_FIELDS = ("_h", "_pkey", "_skey", "_hkey")


def _keys_batches(seed: int):
    """mapInArrow: append the hash order and the comparison keys to each batch
    (`assign.pair_keys`), passing every input column through untouched (no join back,
    struct columns stay Arrow)."""
    import pyarrow as pa

    types = {"_h": pa.int64(), "_pkey": pa.string(), "_skey": pa.string(), "_hkey": pa.string()}

    def fn(batches):
        for batch in batches:
            col = batch.schema.get_field_index
            keys = sp.pair_keys(batch.column(col("pair_id")).to_pylist(), batch.column(col("premise")).to_pylist(),
                                batch.column(col("hypothesis")).to_pylist(), seed)
            yield pa.RecordBatch.from_arrays(list(batch.columns) + [pa.array(keys[k], types[k]) for k in KEY_FIELDS],
                                             names=list(batch.schema.names) + list(KEY_FIELDS))
    return fn


def _split_statistics_group(pdf: pd.DataFrame) -> pd.DataFrame:
    """applyInPandas per split: the card's statistics of the split, exactly as `trainer
    stats` computes them (`st.split_statistics`), as one JSON row."""
    split = str(pdf["split"].iloc[0])
    pdf = pdf.sort_values("pair_id", kind="mergesort").reset_index(drop=True)
    block = st.split_statistics(pdf[["premise", "hypothesis", "label"]])
    return pd.DataFrame({"split": [split], "stats": [json.dumps(block, default=_plain)]})


def _plain(value):
    """numpy scalars in the statistics -> JSON numbers."""
    return value.item() if hasattr(value, "item") else str(value)


def _assign_group(ratios, seed):
    def fn(pdf: pd.DataFrame) -> pd.DataFrame:
        return sp.assign_documents(pdf, ratios, seed)
    return fn


# ---------------------------------------------------------------------------- stage

def _test_only_corpora(ctx) -> set[str]:
    return {c.name for c in (ctx.corpora or []) if getattr(c, "role", "train") == "test-only"}


def _ref_doc_expr(F, df, ref: str):
    """doc_id of a *_ref column: a struct's doc_id, the 'doc_id:para_idx:sent_idx' string's
    head, or the pair's own doc_id when there is no such column or value."""
    if ref not in df.columns:
        return F.col("doc_id")
    field = df.schema[ref].dataType
    if field.typeName() == "struct":
        if "doc_id" not in field.fieldNames():
            return F.col("doc_id")
        value = F.col(f"{ref}.doc_id").cast("string")
    else:
        value = F.regexp_extract(F.col(ref).cast("string"), r"^(.*):[^:]*:[^:]*$", 1)
    return F.when(value.isNull() | (value == F.lit("")), F.col("doc_id")).otherwise(value)


def run(ctx) -> None:
    """Stage entry point. The pairs table is small next to the dumps: shuffles use about one
    partition per 100,000 pairs (never more than the session's setting, never fewer than
    the cores), not Spark's default 200 near-empty tasks; results do not depend on it."""
    spark = ctx.spark
    key = "spark.sql.shuffle.partitions"
    old = spark.conf.get(key)
    try:
        n = ctx.read_table("pairs").count()
        wanted = max(spark.sparkContext.defaultParallelism, n // PAIRS_PER_PARTITION + 1)
        spark.conf.set(key, str(min(int(old), wanted)))
        _run(ctx, n)
    finally:
        spark.conf.set(key, old)


def _run(ctx, n_input: int) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    args = ctx.args
    ratios = sp.parse_ratios(getattr(args, "split_ratios", "0.8,0.1,0.1"))
    balance = sp.parse_balance(getattr(args, "balance", ["downsample"]))
    max_eval = int(getattr(args, "max_eval_per_corpus", sp.DEFAULT_MAX_EVAL_PER_CORPUS) or 0) or None
    seed = int(getattr(args, "seed", 0) or 0)
    spark = ctx.spark
    target = ctx.table_path("splits")
    if _out.exists(spark, target) and not getattr(args, "overwrite", False):  # fail before the work
        raise _out.OutputExistsError(f"{target} already exists; pass --overwrite to replace it")
    stats: dict = {"settings": {"split_ratios": list(ratios), "balance": str(balance),
                                "max_eval_per_corpus": max_eval, "seed": seed}}
    drops: dict = {}

    pairs = ctx.read_table("pairs")
    columns = pairs.columns
    for needed in ("pair_id", "doc_id", "corpus", "premise", "hypothesis", "label"):
        if needed not in columns:
            raise ValueError(f"{ctx.table_path('pairs')}: the pairs table has no column '{needed}'")
    stats["input_pairs"] = n_input
    # Rows the pairs stage kept only for inspection (rejected by a filter) are not data.
    for flag in ("pos_ok", "keep"):
        if flag in columns and dict(pairs.dtypes)[flag] == "boolean":
            rejected = pairs.filter(~F.coalesce(F.col(flag), F.lit(False))).count()
            if rejected:
                drops[f"not_{flag}"] = rejected
            pairs = pairs.filter(F.coalesce(F.col(flag), F.lit(False)))

    test_only = sorted(_test_only_corpora(ctx))
    flag = F.col("corpus").isin(test_only) if test_only else F.lit(False)
    if "role" in columns:
        flag = flag | (F.col("role") == F.lit("test-only"))
    pairs = pairs.withColumn("_test_only", flag)

    # 1. documents of the two sentences (SQL), hash order and keys (Python, batched).
    pairs = pairs.withColumn("_pdoc", _ref_doc_expr(F, pairs, "premise_ref")) \
                 .withColumn("_hdoc", _ref_doc_expr(F, pairs, "hypothesis_ref"))
    key_schema = T.StructType(list(pairs.schema.fields) + [
        T.StructField("_h", T.LongType()), T.StructField("_pkey", T.StringType()),
        T.StructField("_skey", T.StringType()), T.StructField("_hkey", T.StringType())])
    pairs = pairs.mapInArrow(_keys_batches(seed), key_schema).cache()

    # 2. documents -> splits, whole, per corpus (pairs weigh on their own doc_id; docs
    #    that only lend a sentence to a pair weigh 0 but still get a split).
    all_labels = sorted(r["label"] for r in pairs.select("label").distinct().collect())
    weights = pairs.select("corpus", "doc_id", "label", F.lit(1).alias("w"), "_test_only") \
        .unionByName(pairs.select("corpus", F.col("_pdoc").alias("doc_id"), "label", F.lit(0).alias("w"), "_test_only")) \
        .unionByName(pairs.select("corpus", F.col("_hdoc").alias("doc_id"), "label", F.lit(0).alias("w"), "_test_only"))
    docs = weights.groupBy("corpus", "doc_id").agg(
        *[F.sum(F.when(F.col("label") == F.lit(l), F.col("w")).otherwise(F.lit(0))).cast("long").alias(f"n_{i:03d}")
          for i, l in enumerate(all_labels)],
        F.max(F.col("_test_only").cast("int")).cast("boolean").alias("test_only"))
    doc_split = docs.groupBy("corpus").applyInPandas(_assign_group(ratios, seed), "corpus string, doc_id string, split string")
    doc_split = doc_split.select("doc_id", "split").cache()
    stats["documents"] = {r["split"]: int(r["count"]) for r in doc_split.groupBy("split").count().collect()}

    # The document -> split table is one row per document: broadcast, the pairs are not shuffled.
    ds = F.broadcast(doc_split)
    pairs = (pairs.join(ds.withColumnRenamed("split", "_split"), "doc_id", "left")
             .join(ds.select(F.col("doc_id").alias("_pdoc"), F.col("split").alias("_ps")), "_pdoc", "left")
             .join(ds.select(F.col("doc_id").alias("_hdoc"), F.col("split").alias("_hs")), "_hdoc", "left"))
    # A pair whose sentences come from documents of two splits would carry a document into both.
    crosses = ~(F.col("_ps").eqNullSafe(F.col("_split")) & F.col("_hs").eqNullSafe(F.col("_split")))
    prio = F.create_map(*[x for k, v in sp.KEEP_PRIORITY.items() for x in (F.lit(k), F.lit(v))])
    pairs = pairs.withColumn("_cross", crosses).withColumn("_prio", prio[F.col("_split")]).drop("_ps", "_hs")

    # 3. one copy of each sentence pair (either order, case/space-insensitive) in the whole
    #    dataset: the copy in test, else validation, else train; then the lowest hash. Pairs
    #    spanning two splits sort last and are dropped. One aggregate job gives the drops
    #    and the counts per (split, corpus, label) the quotas come from.
    w_key = Window.partitionBy("_skey").orderBy("_cross", "_prio", "_h", "pair_id")
    ranked = (pairs.withColumn("_rank", F.row_number().over(w_key))
              .withColumn("_best", F.min(F.when(~F.col("_cross"), F.col("_prio"))).over(Window.partitionBy("_skey")))
              .withColumn("_why", F.when(F.col("_cross"), F.lit("pair_spans_documents_of_two_splits"))
                          .when((F.col("_rank") > 1) & (F.col("_prio") > F.col("_best")),
                                F.lit("identical_pair_in_other_split"))
                          .when(F.col("_rank") > 1, F.lit("identical_pair_in_same_split"))).cache())
    counts = {}
    drops["pair_spans_documents_of_two_splits"] = 0
    for why, split, corpus, label, n in [tuple(r) for r in ranked.groupBy("_why", "_split", "corpus", "label")
                                         .count().collect()]:
        if why is None:
            counts[(split, corpus, label)] = int(n)
        else:
            drops[why] = drops.get(why, 0) + int(n)
    pairs = ranked.filter(F.col("_why").isNull()).drop("_rank", "_best", "_why", "_cross")

    # 4. balance: quotas per (split, corpus, label) from counts, then the first pairs by hash.
    labels = sorted({k[2] for k in counts})
    quotas = sp.compute_quotas(counts, balance, labels, max_eval)
    drops["balance"] = sp.quota_drops(counts, quotas)
    qdf = spark.createDataFrame([(s, c, l, int(n)) for (s, c, l), n in sorted(quotas.items())] or [("", "", "", 0)],
                                "_split string, corpus string, label string, _quota long")
    w_q = Window.partitionBy("_split", "corpus", "label").orderBy("_h", "pair_id")
    pairs = (pairs.join(F.broadcast(qdf), ["_split", "corpus", "label"])
             .withColumn("_n", F.row_number().over(w_q))
             .filter(F.col("_n") <= F.col("_quota")).drop("_n", "_quota"))
    final = pairs.cache()

    for label in ("contrasting", "entailment", "reasoning", "neutral"):
        if label not in labels:
            ctx.warn(f"splits: no '{label}' pairs in pairs/ after leakage removal")
    for (split, corpus), _ in sorted({(s, c): 0 for (s, c, _) in counts}.items()):
        kept = sum(quotas.get((split, corpus, l), 0) for l in labels)
        if kept == 0 and sum(counts.get((split, corpus, l), 0) for l in labels):
            missing = [l for l in labels if not counts.get((split, corpus, l))]
            ctx.warn(f"splits: {split} of corpus {corpus} is empty after --balance {balance}"
                     + (f" (no {', '.join(missing)} pairs there)" if missing else ""))

    # 5. statistics: `st.split_statistics`, the function behind `trainer stats`, once per
    #    split in applyInPandas; only the small result comes back to the driver.
    result = {"splits": {}}
    blocks = dict(final.select(F.col("_split").alias("split"), "pair_id", "premise", "hypothesis", "label")
                  .groupBy("split").applyInPandas(_split_statistics_group, "split string, stats string")
                  .collect())
    for split in sp.SPLITS:
        block = json.loads(blocks[split]) if split in blocks else {
            "labels": {}, "all": {"count": 0, **{k: None for k in st.AGGREGATES}}}
        result["splits"][split] = block
    leakage = _leakage(F, final)
    result["leakage"] = leakage["between_splits"]

    stats["splits"] = {s: int(result["splits"][s]["all"]["count"]) for s in sp.SPLITS}
    stats["labels"] = {s: {l: b["count"] for l, b in result["splits"][s]["labels"].items()} for s in sp.SPLITS}
    stats["corpora"] = {f"{r['_split']}|{r['corpus']}": {"pairs": int(r["pairs"]), "documents": int(r["documents"])}
                        for r in final.groupBy("_split", "corpus").agg(F.count(F.lit(1)).alias("pairs"),
                                                                      F.countDistinct("doc_id").alias("documents")).collect()}
    stats["dropped"] = drops
    stats["leakage"] = leakage["checks"]
    markers, sources = {}, {}
    if "marker" in columns or "source" in columns:  # one job for both
        marker = F.col("marker") if "marker" in columns else F.lit(None).cast("string")
        source = F.col("source") if "source" in columns else F.lit(None).cast("string")
        for split, label, m, src, n in [tuple(r) for r in final.groupBy(
                "_split", "label", marker.alias("m"), source.alias("s")).count().collect()]:
            if m is not None:
                markers.setdefault(label, {})[m] = markers.get(label, {}).get(m, 0) + int(n)
            if src is not None:
                sources[f"{split}|{src}"] = sources.get(f"{split}|{src}", 0) + int(n)
    stats["markers"] = {l: dict(sorted(m.items(), key=lambda kv: (-kv[1], kv[0]))[:15]) for l, m in sorted(markers.items())}
    if "source" in columns:
        stats["sources"] = dict(sorted(sources.items()))

    # 6. write everything under a temporary folder, then move it into place.
    out_cols = [c for c in final.columns if c not in _INTERNAL]
    tmp_name = "_tmp-splits"
    _out.delete(spark, ctx.table_path(tmp_name))
    schema = final.select(*out_cols).schema
    num_bytes = {}
    for split in sp.SPLITS:
        n = result["splits"][split]["all"]["count"]
        if not n:  # `datasets` cannot read an empty Parquet split: leave it out, say so
            ctx.warn(f"splits: the {split} split is empty and is not written")
            continue
        part = final.filter(F.col("_split") == split).select(*out_cols)
        n_files = max(1, min(int(getattr(args, "files_per_table", 4) or 4), n // 100_000 + 1))
        path = ctx.write_table(part, f"{tmp_name}/{split}", sort_by=["pair_id"], num_files=n_files)
        fs, hpath = _out._fs(spark, path)
        num_bytes[split] = int(fs.getContentSummary(hpath).getLength())
    dataset = {"splits": result["splits"], "leakage": result["leakage"]}
    build = card_mod.build_info(ctx)
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(tmp)
        card_mod.write_card_files(local, dataset=dataset, stage_stats=stats, build=build, schema=schema,
                                  lang=ctx.lexicon.lang, license=getattr(args, "license", "cc-by-sa-4.0"),
                                  leakage=leakage, pairs_stats=ctx.stats.get("pairs"),
                                  sentences_stats=ctx.stats.get("sentences"), num_bytes=num_bytes)
        for f in sorted(local.iterdir()):
            _put_file(spark, f, ctx.table_path(f"{tmp_name}/{f.name}"))
    if _out.exists(spark, target):
        if not getattr(args, "overwrite", False):
            raise _out.OutputExistsError(f"{target} already exists; pass --overwrite to replace it")
        _out.delete(spark, target)
    _out.rename(spark, ctx.table_path(tmp_name), target)
    for df in (final, doc_split, ranked):
        df.unpersist()
    ctx.stats[STAGE] = stats


def _put_file(spark, local: Path, dest: str) -> None:
    if not _out.is_uri(dest):
        shutil.copyfile(local, dest)
        return
    jvm = spark.sparkContext._jvm
    fs, hdest = _out._fs(spark, dest)
    fs.copyFromLocalFile(False, True, jvm.org.apache.hadoop.fs.Path(str(local)), hdest)


def _leakage(F, final) -> dict:
    """Checks on the written splits: documents, pairs, sentence pairs and hypotheses that
    occur in two splits (the first three must be 0; shared hypotheses are reported).
    One Spark job: (kind, key) -> set of splits, then counts per set."""
    kinds = {"documents": "doc_id", "pairs": "_pkey", "sentence_pairs": "_skey", "hypotheses": "_hkey"}
    items = F.array(*[F.struct(F.lit(kind).alias("kind"), F.col(col).cast("string").alias("k"))
                      for kind, col in kinds.items()])
    sets = (final.select(F.explode(items).alias("i"), F.col("_split").alias("s"))
            .groupBy("i.kind", "i.k").agg(F.array_sort(F.collect_set("s")).alias("splits"))
            .filter(F.size("splits") > 1)
            .groupBy("kind", "splits").count().collect())
    checks = {f"{kind}_in_two_splits": 0 for kind in kinds}
    between = {f"{a}|{b}": {kind: 0 for kind in kinds}
               for i, a in enumerate(sp.SPLITS) for b in sp.SPLITS[i + 1:]}
    for r in sets:
        checks[f"{r['kind']}_in_two_splits"] += int(r["count"])
        names = sorted(r["splits"], key=sp.SPLITS.index)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                between[f"{a}|{b}"][r["kind"]] += int(r["count"])
    return {"checks": checks, "between_splits": between}
