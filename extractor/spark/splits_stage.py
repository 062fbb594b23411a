"""Stage 3 glue: `pairs/` -> `splits/{train,validation,test}` + dataset card, stats, leakage.

Thin Spark code around the pure functions of `extractor.splits.batches` (per work unit of
the pairs table), `extractor.splits.assign` (assignment, quotas) and `extractor.statistics`
(every number of the card), in three passes (docs/splits.md):

1. one task per few units reads its row groups with pyarrow and yields one slim summary
   row per pair (ids, documents, label, hash order, 16-byte comparison keys); the global
   decisions (documents -> splits per corpus, pairs spanning two splits, one copy of each
   sentence pair, quotas) are Spark SQL over these slim rows only: no text crosses a
   shuffle;
2. the kept (unit, row, split) go back to the tasks of their units, which read the rows
   again, compute their card statistics and write them into one Arrow file per (split,
   output file);
3. one task per output file merges its Arrow files, sorted by `pair_id`, into the Parquet
   file.

Only aggregates reach the driver. The whole `splits/` folder is written under a temporary
name and moved into place at the end, so a failed run never leaves a half-built dataset.
"""
from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path

import pandas as pd

from extractor import fs
from extractor import output as _out
from extractor import statistics as st
from extractor.splits import assign as sp
from extractor.splits import batches as bt
from extractor.splits import card as card_mod
from extractor.spark.session import over_ids

STAGE = "splits"
PAIRS_PER_PARTITION = 100_000
TMP_NAME = "_tmp-splits"
WORK_NAME = "_tmp-splits-work"


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


# ---------------------------------------------------------------------------- task functions

def _write_parquet(table, path: str) -> None:
    """A scratch file of the stage (read back by Spark's own Parquet reader)."""
    import pyarrow.parquet as pq

    with fs.open_output(path) as out:
        pq.write_table(table, out)


def _done(values: dict):
    """One result row of a task, typed (a null must not make a column of Arrow type null)."""
    import pyarrow as pa

    types = {str: pa.string(), int: pa.int64(), type(None): pa.string()}
    return pa.RecordBatch.from_arrays([pa.array([v], types[type(v)]) for v in values.values()], names=list(values))


def _summaries_fn(units: list, schema, seed: int, test_only: frozenset, folder: str):
    """Pass 1 (mapInArrow over unit ids): each unit's slim summary rows, written as one
    scratch Parquet file per unit; yields the unit's rows per (label, reject reason)."""
    def fn(batches):
        for batch in batches:
            for u in batch.column(0).to_pylist():
                table = bt.summaries(bt.read_unit(units[u], schema), seed, test_only, unit=u)
                _write_parquet(table, fs.join(folder, f"unit-{u:06d}.parquet"))
                for (label, why), n in _tally(table).items():
                    yield _done({"label": label, "reject": why, "n": n})
    return fn


def _tally(table) -> Counter:
    """Rows of a summary table per (label, reject reason)."""
    return Counter(zip(table.column("label").to_pylist(), table.column("_reject").to_pylist()))


def _kept_fn(units: list, schema, rows_folder: str, stats_folder: str, n_files: dict):
    """Pass 2 (mapInArrow over kept (_unit, _row, _split)): each unit's kept rows go to the
    Arrow files of their output files, their card statistics (`bt.STATS_SCHEMA`) to a
    scratch Parquet file; yields the rows per unit."""
    def fn(batches):
        kept: dict[int, tuple[list, list]] = {}
        for batch in batches:
            for u, r, s in zip(*(batch.column(i).to_pylist() for i in range(3))):
                rows, splits = kept.setdefault(u, ([], []))
                rows.append(r)
                splits.append(s)
        for u in sorted(kept):
            table = bt.kept_rows(bt.read_unit(units[u], schema), *kept[u])
            bt.shuffle_files(table, rows_folder, u, n_files)
            _write_parquet(bt.unit_statistics(table), fs.join(stats_folder, f"unit-{u:06d}.parquet"))
            yield _done({"unit": u, "n": table.num_rows})
    return fn


def _merge_fn(files: list, shuffle: str, target: str, schema):
    """Pass 3 (mapInArrow over output file ids): merge one output file's Arrow files into
    its Parquet file; yields (path, rows, bytes)."""
    def fn(batches):
        from pyspark import TaskContext

        attempt = TaskContext.get().attemptNumber()
        for batch in batches:
            for i in batch.column(0).to_pylist():
                split, bucket = files[i]
                table = bt.merge_bucket(fs.join(shuffle, split, f"{bucket:05d}"), schema)
                if not table.num_rows:
                    continue
                sink = _out._FileSink(fs.join(target, split, f"part-{bucket:05d}.parquet"), schema, attempt)
                for b in table.to_batches():
                    sink.add(b)
                path, rows, size = sink.close()
                yield _done({"path": path, "rows": rows, "bytes": size})
    return fn


def _assign_group(ratios, seed):
    def fn(pdf: pd.DataFrame) -> pd.DataFrame:
        return sp.assign_documents(pdf, ratios, seed)
    return fn


# ---------------------------------------------------------------------------- stage

def _test_only_corpora(ctx) -> set[str]:
    return {c.name for c in (ctx.corpora or []) if getattr(c, "role", "train") == "test-only"}


def run(ctx) -> None:
    """Stage entry point. Shuffles of the slim rows use about one partition per 100,000
    pairs (never more than the session's setting, never fewer than the cores), not Spark's
    default 200 near-empty tasks; results do not depend on it."""
    spark = ctx.spark
    path = ctx.table_path("pairs")
    if not fs.exists(path):
        ctx.read_table("pairs")  # the job's one-line "no such table" error
    schema, units = bt.list_units(path)
    n = sum(u["rows"] for u in units)
    key = "spark.sql.shuffle.partitions"
    old = spark.conf.get(key)
    try:
        wanted = max(spark.sparkContext.defaultParallelism, n // PAIRS_PER_PARTITION + 1)
        spark.conf.set(key, str(min(int(old), wanted)))
        _run(ctx, schema, units, n)
    finally:
        spark.conf.set(key, old)


def _run(ctx, schema, units: list, n_input: int) -> None:
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

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
    stats["input_pairs"] = n_input
    drops: dict = {}
    # Scratch files of the stage: the tasks write them with pyarrow, Spark reads them back
    # with its own Parquet reader (cheaper than caching rows in the JVM).
    tmp, work = ctx.table_path(TMP_NAME), ctx.table_path(WORK_NAME)
    scratch = {k: fs.join(work, k) for k in ("summaries", "documents", "ranked", "statistics", "rows")}
    for folder in (tmp, work):
        _out.delete(spark, folder)

    def read(name, arrow_schema):
        if fs.exists(scratch[name]) and fs.list_files(scratch[name]):
            return spark.read.parquet(scratch[name])
        return spark.createDataFrame([], from_arrow_schema(arrow_schema))

    try:
        # 1. slim summaries; rows the pairs stage kept only for inspection (rejected by a
        #    filter) are not data: counted, then left out.
        test_only = frozenset(_test_only_corpora(ctx))
        found = over_ids(spark, len(units)).mapInArrow(
            _summaries_fn(units, schema, seed, test_only, scratch["summaries"]),
            "label string, reject string, n long").collect() if units else []
        all_labels = sorted({r["label"] for r in found if r["reject"] is None})
        for r in found:
            if r["reject"] is not None:
                drops[r["reject"]] = drops.get(r["reject"], 0) + int(r["n"])
        pairs = read("summaries", bt.SUMMARY_SCHEMA).filter(F.col("_reject").isNull())

        # 2. documents -> splits, whole, per corpus (pairs weigh on their own doc_id; docs
        #    that only lend a sentence to a pair weigh 0 but still get a split).
        weights = pairs.select("corpus", "label", "_test_only", F.inline(F.array(
            *[F.struct(F.col(c).alias("doc_id"), F.lit(w).alias("w")) for c, w in (("doc_id", 1), ("_pdoc", 0), ("_hdoc", 0))])))
        docs = weights.groupBy("corpus", "doc_id").agg(
            *[F.sum(F.when(F.col("label") == F.lit(l), F.col("w")).otherwise(F.lit(0))).cast("long").alias(f"n_{i:03d}")
              for i, l in enumerate(all_labels)],
            F.max(F.col("_test_only").cast("int")).cast("boolean").alias("test_only"))
        docs.groupBy("corpus").applyInPandas(_assign_group(ratios, seed), "corpus string, doc_id string, split string") \
            .select("doc_id", "split").write.parquet(scratch["documents"])
        doc_split = spark.read.parquet(scratch["documents"])
        stats["documents"] = {r["split"]: int(r["count"]) for r in doc_split.groupBy("split").count().collect()}

        # The document -> split table is one row per document: broadcast.
        ds = F.broadcast(doc_split)
        pairs = (pairs.join(ds.withColumnRenamed("split", "_split"), "doc_id", "left")
                 .join(ds.select(F.col("doc_id").alias("_pdoc"), F.col("split").alias("_ps")), "_pdoc", "left")
                 .join(ds.select(F.col("doc_id").alias("_hdoc"), F.col("split").alias("_hs")), "_hdoc", "left"))
        # A pair whose sentences come from documents of two splits would carry a document into both.
        crosses = ~(F.col("_ps").eqNullSafe(F.col("_split")) & F.col("_hs").eqNullSafe(F.col("_split")))
        prio = F.create_map(*[x for k, v in sp.KEEP_PRIORITY.items() for x in (F.lit(k), F.lit(v))])
        pairs = pairs.withColumn("_cross", crosses).withColumn("_prio", prio[F.col("_split")]).drop("_ps", "_hs")

        # 3. one copy of each sentence pair (either order, case/space-insensitive) in the
        #    whole dataset: the copy in test, else validation, else train; then the lowest
        #    hash. Pairs spanning two splits sort last and are dropped. The same job ranks
        #    the pairs kept so far within their (split, corpus, label) by hash, the order in
        #    which the quotas take them. One aggregate job gives the drops and the counts per
        #    (split, corpus, label) the quotas come from.
        w_key = Window.partitionBy("_skey").orderBy("_cross", "_prio", "_h", "pair_id")
        w_q = Window.partitionBy("_split", "corpus", "label", "_why").orderBy("_h", "pair_id")
        (pairs.withColumn("_rank", F.row_number().over(w_key))
                  # the first row's priority: the best of the key's rows that do not cross
                  # (those sort first); only read for rows that do not cross either
                  .withColumn("_best", F.first("_prio").over(w_key))
                  .withColumn("_why", F.when(F.col("_cross"), F.lit("pair_spans_documents_of_two_splits"))
                              .when((F.col("_rank") > 1) & (F.col("_prio") > F.col("_best")),
                                    F.lit("identical_pair_in_other_split"))
                              .when(F.col("_rank") > 1, F.lit("identical_pair_in_same_split")))
                  .withColumn("_n", F.row_number().over(w_q))
         .select("_unit", "_row", "_split", "corpus", "doc_id", "label", "marker", "source",
                 "_pkey", "_skey", "_hkey", "_why", "_n").write.parquet(scratch["ranked"]))
        ranked = spark.read.parquet(scratch["ranked"])
        counts = {}
        drops["pair_spans_documents_of_two_splits"] = 0
        for why, split, corpus, label, n in [tuple(r) for r in ranked.groupBy("_why", "_split", "corpus", "label")
                                             .count().collect()]:
            if why is None:
                counts[(split, corpus, label)] = int(n)
            else:
                drops[why] = drops.get(why, 0) + int(n)

        # 4. balance: quotas per (split, corpus, label) from counts; the kept rows are the
        #    first of each by hash (a filter on the rank of step 3).
        labels = sorted({k[2] for k in counts})
        quotas = sp.compute_quotas(counts, balance, labels, max_eval)
        drops["balance"] = sp.quota_drops(counts, quotas)
        quota = F.create_map(*[x for (s, c, l), n in sorted(quotas.items())
                               for x in (F.lit(f"{s}\x1f{c}\x1f{l}"), F.lit(int(n)))] or [F.lit(""), F.lit(0)])
        final = ranked.filter(F.col("_why").isNull()
                              & (F.col("_n") <= quota[F.concat_ws("\x1f", "_split", "corpus", "label")])) \
            .drop("_why", "_n")

        _warn_missing(ctx, labels, counts, quotas, balance)

        # 5. three independent groups of Spark jobs on the kept rows: figures of the slim
        #    rows; leakage and duplicates; pass 2 (the kept rows to Arrow files per output
        #    file, their statistics aggregated) and pass 3 (one task per output file).
        #    (Run side by side from driver threads they gave no gain at local[2].)
        sizes = {s: 0 for s in sp.SPLITS}  # the quota window keeps min(quota, count) rows
        for (split, corpus, label), quota in quotas.items():
            sizes[split] += min(quota, counts.get((split, corpus, label), 0))
        n_files = {s: bt.files_per_split(sizes[s], getattr(args, "files_per_table", 4)) for s in sp.SPLITS}
        columns = schema.names
        out_schema = schema  # list_units gives the plain types already

        def figures():
            """Pairs and documents per (split, corpus), pairs per marker and source: one job
            (two grouping sets, told apart by grouping_id)."""
            corpora, markers, sources = {}, {}, {}
            by = ["_split", "corpus", "label", "marker", "source"]
            for r in final.groupingSets([["_split", "corpus"], ["_split", "label", "marker", "source"]], *by).agg(
                    F.count(F.lit(1)).alias("pairs"), F.countDistinct("doc_id").alias("documents"),
                    F.grouping_id().alias("_g")).collect():
                split, n = r["_split"], int(r["pairs"])
                if r["_g"] == 0b00111:  # the (split, corpus) set: label, marker, source aggregated
                    corpora[f"{split}|{r['corpus']}"] = {"pairs": n, "documents": int(r["documents"])}
                    continue
                if r["marker"] is not None and "marker" in columns:
                    markers.setdefault(r["label"], {})[r["marker"]] = markers.get(r["label"], {}).get(r["marker"], 0) + n
                if r["source"] is not None and "source" in columns:
                    sources[f"{split}|{r['source']}"] = sources.get(f"{split}|{r['source']}", 0) + n
            return corpora, markers, sources

        def rows_and_files():
            if not sum(sizes.values()):
                return [], [], []
            # ranges of units: balanced tasks (a hash of 4 unit ids into 4 partitions put
            # two units in one task and none in another: 1.2x instead of 1.4x on two cores)
            final.select("_unit", "_row", "_split").repartitionByRange(
                max(1, min(len(units), 2 * spark.sparkContext.defaultParallelism)), "_unit").mapInArrow(
                _kept_fn(units, schema, scratch["rows"], scratch["statistics"], n_files), "unit long, n long").collect()
            files = [(s, b) for s in sp.SPLITS if sizes[s] for b in range(n_files[s])]
            written = [r.asDict() for r in over_ids(spark, len(files)).mapInArrow(
                _merge_fn(files, scratch["rows"], tmp, out_schema), _out.FILE_SCHEMA).collect()]
            rows = read("statistics", bt.STATS_SCHEMA)
            # per split, the aggregates of `trainer stats` (exact medians) in one pandas task
            aggregates = [r.asDict() for r in rows.filter(F.col("kind") == "row")
                          .select("split", "label", *st.ROW_COLUMNS).groupBy("split")
                          .applyInPandas(bt.split_aggregates, bt.AGGREGATE_DDL).collect()]
            # PMI counts: one row per (split, side, word) with its texts per label; words
            # seen fewer than PMI_MIN_COUNT times never reach the driver.
            per_label = [F.sum(F.when(F.col("label") == l, F.col("n"))).alias(f"n_{i:03d}")
                         for i, l in enumerate(labels)]
            words = [(r["split"], r["side"], l, r["word"], r[f"n_{i:03d}"])
                     for r in rows.filter(F.col("kind") == "word").groupBy("split", "side", "word")
                     .agg(F.sum("n").alias("_t"), *per_label).filter(F.col("_t") >= st.PMI_MIN_COUNT).collect()
                     for i, l in enumerate(labels) if r[f"n_{i:03d}"]]
            return aggregates, words, written

        corpora, markers, sources = figures()
        leakage, duplicates = _leakage(F, final)
        aggregates, words, written = rows_and_files()
        kept = {s: sum(v["pairs"] for k, v in corpora.items() if k.split("|", 1)[0] == s) for s in sp.SPLITS}
        if kept != sizes:
            raise RuntimeError(f"splits: kept rows {kept} differ from the quotas {sizes} (a bug; please report it)")
        blocks = bt.card_statistics(aggregates, words, duplicates)

        num_bytes: dict = {}
        for w in written:
            split = fs.basename(fs.parent(w["path"]))
            num_bytes[split] = num_bytes.get(split, 0) + int(w["bytes"])
        for split in sp.SPLITS:
            if not sizes[split]:  # `datasets` cannot read an empty Parquet split: leave it out, say so
                ctx.warn(f"splits: the {split} split is empty and is not written")

        result = {"splits": {s: blocks.get(s) or {"labels": {}, "all": {"count": 0, **{k: None for k in st.AGGREGATES}}}
                             for s in sp.SPLITS}}
        stats["splits"] = {s: int(result["splits"][s]["all"]["count"]) for s in sp.SPLITS}
        stats["labels"] = {s: {l: b["count"] for l, b in result["splits"][s]["labels"].items()} for s in sp.SPLITS}
        stats["corpora"] = corpora
        stats["dropped"] = drops
        stats["leakage"] = leakage["checks"]
        stats["markers"] = {l: dict(sorted(m.items(), key=lambda kv: (-kv[1], kv[0]))[:15])
                            for l, m in sorted(markers.items())}
        if "source" in columns:
            stats["sources"] = dict(sorted(sources.items()))
        dataset = {"splits": result["splits"], "leakage": leakage["between_splits"]}
        build = card_mod.build_info(ctx)
        with tempfile.TemporaryDirectory() as local_tmp:
            local = Path(local_tmp)
            card_mod.write_card_files(local, dataset=dataset, stage_stats=stats, build=build,
                                      schema=from_arrow_schema(out_schema), lang=ctx.lexicon.lang,
                                      license=getattr(args, "license", "cc-by-sa-4.0"), leakage=leakage,
                                      pairs_stats=ctx.stats.get("pairs"), sentences_stats=ctx.stats.get("sentences"),
                                      num_bytes=num_bytes)
            for f in sorted(local.iterdir()):
                fs.write_bytes(fs.join(tmp, f.name), f.read_bytes())
        if _out.exists(spark, target):
            if not getattr(args, "overwrite", False):
                raise _out.OutputExistsError(f"{target} already exists; pass --overwrite to replace it")
            _out.delete(spark, target)
        _out.rename(spark, tmp, target)
    finally:
        _out.delete(spark, work)
    ctx.stats[STAGE] = stats


def _warn_missing(ctx, labels, counts, quotas, balance) -> None:
    for label in ("contrasting", "entailment", "reasoning", "neutral"):
        if label not in labels:
            ctx.warn(f"splits: no '{label}' pairs in pairs/ after leakage removal")
    for split, corpus in sorted({(s, c) for (s, c, _) in counts}):
        kept = sum(quotas.get((split, corpus, l), 0) for l in labels)
        if kept == 0 and sum(counts.get((split, corpus, l), 0) for l in labels):
            missing = [l for l in labels if not counts.get((split, corpus, l))]
            ctx.warn(f"splits: {split} of corpus {corpus} is empty after --balance {balance}"
                     + (f" (no {', '.join(missing)} pairs there)" if missing else ""))


def _leakage(F, final) -> tuple[dict, dict]:
    """Checks on the kept rows: documents, pairs, sentence pairs and hypotheses that occur
    in two splits (the first three must be 0; shared hypotheses are reported), and the
    repeated pairs and sentence pairs within each split (`statistics.duplicate_counts`).
    One Spark job: per key of each kind its rows per split, then keys and repeats per
    (kind, set of splits as a bit mask)."""
    # the key of each kind, as bytes (document ids encoded like the other keys are hashed)
    kinds = {"documents": "encode(doc_id, 'UTF-8')", "pairs": "_pkey", "sentence_pairs": "_skey",
             "hypotheses": "_hkey"}
    n_splits = len(sp.SPLITS)
    per_split = [F.sum(F.when(F.col("_split") == s, 1).otherwise(0)).alias(f"c{i}") for i, s in enumerate(sp.SPLITS)]
    mask = sum((F.when(F.col(f"c{i}") > 0, 1 << i).otherwise(0) for i in range(n_splits)), F.lit(0))
    # every row's keys as (kind, key) rows: one aggregation for the four kinds
    keyed = final.select("_split", F.expr(f"stack({len(kinds)}, "
                                          + ", ".join(f"'{kind}', {key}" for kind, key in kinds.items())
                                          + ") as (kind, k)"))
    result = (keyed.groupBy("kind", "k").agg(*per_split)
              .groupBy("kind", mask.alias("mask"))
              .agg(F.count(F.lit(1)).alias("keys"),
                   *[F.sum(F.greatest(F.col(f"c{i}") - 1, F.lit(0))).alias(f"r{i}") for i in range(n_splits)]))
    rows = result.collect()
    checks = {f"{kind}_in_two_splits": 0 for kind in kinds}
    between = {f"{a}|{b}": {kind: 0 for kind in kinds}
               for i, a in enumerate(sp.SPLITS) for b in sp.SPLITS[i + 1:]}
    duplicates = {s: {"pairs": 0, "sentence_pairs": 0} for s in sp.SPLITS}
    for r in rows:
        names = [s for i, s in enumerate(sp.SPLITS) if int(r["mask"]) >> i & 1]
        if len(names) > 1:
            checks[f"{r['kind']}_in_two_splits"] += int(r["keys"])
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    between[f"{a}|{b}"][r["kind"]] += int(r["keys"])
        if r["kind"] in ("pairs", "sentence_pairs"):
            for i, s in enumerate(sp.SPLITS):
                duplicates[s][r["kind"]] += int(r[f"r{i}"])
    return {"checks": checks, "between_splits": between}, duplicates
