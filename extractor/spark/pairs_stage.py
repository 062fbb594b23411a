"""Stage 2 of the job: `sentences/` -> `pairs/` (Spark glue; the logic is per document in
extractor.pairs.pairing, run over Arrow batches by extractor.pairs.batches; what is
global is in extractor.pairs.corpus). See docs/pairs.md.

Plan (no shuffle before the pairing; nothing collected but aggregate counts):
1. pass 1, `mapInArrow` over the sentences as stage 1 wrote them (whole files per task,
   a document's sentences contiguous): kept marked pairs with the POS filter in the same
   batches, counts by rejection reason, histograms of the neutral selection hashes;
2. Spark SQL: identical marked pairs across documents (the lowest pair_id stays), marked
   counts per corpus -> neutral targets and, per (corpus, strategy), the hash bin up to
   which candidates are kept (`corpus.plan_cuts`);
3. pass 2, `mapInArrow` again: the neutral candidates under those cuts, POS-checked;
4. Spark SQL: identical pairs dropped, the exact draw (lowest selection hashes per
   corpus and strategy), the write (`ctx.write_table`, partitioned by label).
"""
from __future__ import annotations

import argparse
from collections import Counter, defaultdict

from extractor.pairs import neutral as nt
from extractor.pairs import pos_filter as pf
from extractor.pairs.corpus import build_stats, final_allocation, plan_cuts, tally_marked, tally_neutral
from extractor.pairs.pairing import MARKED_REASONS  # noqa: F401  (re-exported for callers)
from extractor.schemas import PAIRS, spark_ddl
from extractor.spark.session import over_ids

STAGE = "pairs"
OUTPUT_COLUMNS = tuple(f.name for f in PAIRS)


# --------------------------------------------------------------------------- flags

def _neutral_ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, not {text!r}") from None
    try:
        nt.neutral_target({}, value)
    except nt.NeutralMixError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _neutral_mix(text: str) -> str:
    try:
        nt.parse_neutral_mix(text)
    except nt.NeutralMixError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--neutral-mix: ")) from None
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("pairs stage (sentences/ -> pairs/)")
    g.add_argument("--spacy-model", default=None,
                   help="spaCy model for the POS completeness filter (default: the lexicon's spacy_model)")
    g.add_argument("--pos-filter", choices=pf.POS_FILTER_MODES, default="auto",
                   help="auto: filter when the model is installed, else skip with a warning; "
                        "on: a missing model is an error; off: no filter (default auto)")
    g.add_argument("--neutral-ratio", type=_neutral_ratio, default=1.0,
                   help="neutral pairs per corpus, relative to its largest marked class (default 1.0)")
    g.add_argument("--neutral-mix", type=_neutral_mix, default=nt.DEFAULT_MIX,
                   help="weights of the neutral strategies, e.g. both_random=1,first_random=1,second_random=1,"
                        "marked_different_paragraphs=1,adjacent_unmarked=1 (default: all 1)")


class PairsOptions:
    """The flags the stage reads, with their defaults (tests build one directly)."""

    def __init__(self, min_chars: int = 50, seed: int = 0, spacy_model: str | None = None,
                 pos_filter: str = "auto", neutral_ratio: float = 1.0, neutral_mix: str = nt.DEFAULT_MIX):
        self.min_chars = int(min_chars)
        self.seed = int(seed)
        self.spacy_model = spacy_model
        self.pos_filter = pos_filter
        self.neutral_ratio = float(neutral_ratio)
        self.neutral_mix = nt.parse_neutral_mix(neutral_mix)
        nt.neutral_target({}, self.neutral_ratio)  # validates the ratio

    @classmethod
    def from_args(cls, args) -> "PairsOptions":
        return cls(min_chars=getattr(args, "min_chars", 50), seed=getattr(args, "seed", 0),
                   spacy_model=getattr(args, "spacy_model", None), pos_filter=getattr(args, "pos_filter", "auto"),
                   neutral_ratio=getattr(args, "neutral_ratio", 1.0),
                   neutral_mix=getattr(args, "neutral_mix", nt.DEFAULT_MIX))

    @property
    def strategies(self) -> list[str]:
        return [s for s in nt.STRATEGIES if self.neutral_mix.get(s, 0) > 0]


def pos_status(options: PairsOptions, lexicon, warn=None) -> tuple[str | None, dict]:
    """(model to run or None, stats block) for the POS filter."""
    model = options.spacy_model or lexicon.spacy_model
    enabled, status, warning = pf.resolve(options.pos_filter, model, lexicon)
    if warning and warn:
        warn(warning)
    return (model if enabled else None), {"status": status, "mode": options.pos_filter,
                                          "model": model if enabled else None, "model_requested": model}


# --------------------------------------------------------------------------- Spark

def _pos_tasks(spark, units: int) -> int:
    """Tasks of a POS step: one per core, and one per 16 units of pass 1 on a large table.
    Both steps then run on every Python worker, each loading spaCy once, at the same time
    (not one worker in the first step and another, loading it again, in the second)."""
    return max(1, spark.sparkContext.defaultParallelism, units // 16)


def _pos_filtered(df, lexicon, model):
    """`batches.pos_rows` over the rows of `df` (same schema out); `df` as it is without a
    model."""
    if not model:
        return df

    def run(batches):
        from extractor.pairs import batches as bt

        yield from bt.pos_rows(batches, model, lexicon, without_torch=True)
    return df.mapInArrow(run, df.schema)


def _pass(fn_name: str, lexicon, options: PairsOptions, units: list, needed=None, **extra):
    """The mapInArrow function of one pass over `spark.range(len(units))`: each id is one
    sentence file `(key, path, corpus)`, read whole with pyarrow in the task (the JVM never
    scans the sentences); the matcher is built once per Python worker. `needed`: a
    broadcast {file key: doc_ids} (pass 2)."""
    strategies, seed, min_chars = options.strategies, options.seed, options.min_chars

    def run(batches):
        from extractor.pairs import batches as bt
        from extractor.pairs.matching import matcher_for

        ids = [k for b in batches for k in b.column(0).to_pylist()]
        by_file = needed.value if needed is not None else None
        streams = bt.file_streams([units[k] for k in ids], by_file)
        fn = getattr(bt, fn_name)
        yield from fn(streams, matcher_for(lexicon), seed, strategies, model=None, lexicon=lexicon,
                      min_chars=min_chars, **extra)
    return run


def build_pairs(spark, table: str, lexicon, options: PairsOptions, warn=None):
    """`sentences/` table (a path, as stage 1 wrote it: a document's sentences contiguous in
    one file) -> (pairs DataFrame, stats dict, cleanup callable). Call the cleanup after
    writing the DataFrame."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from extractor.pairs.batches import EARLY_BINS, WORK, file_units, sentence_files

    model, status = pos_status(options, lexicon, warn)
    slots = max(1, spark.sparkContext.defaultParallelism)
    units = file_units(sentence_files(table), 2 * slots)
    work_ddl = spark_ddl(WORK)
    kept_frames = []

    def keep(df):
        out = df.localCheckpoint(eager=True)
        kept_frames.append(out)
        return out

    def cleanup():
        for df in kept_frames:
            try:
                df.unpersist()
            except Exception:  # a stopped session: nothing to release
                pass

    # 1. pass 1 (pairing only: the POS filter runs once identical pairs are together) -----
    one = keep(over_ids(spark, len(units)).mapInArrow(_pass("pass_one_streams", lexicon, options, units),
                                                          work_ddl))
    # 2. identical marked pairs together (rank in `bin`), the POS filter; then one job
    # collects pass 1's counts and the marked pairs' counts -----------------------------------
    w = Window.partitionBy("premise", "hypothesis").orderBy("pair_id")
    marked = (one.filter((F.col("kind") == "pair") & (F.col("source") == "marker"))
              .repartition(_pos_tasks(spark, len(units)), "premise", "hypothesis")
              .withColumn("bin", F.row_number().over(w).cast("int")))
    marked = keep(_pos_filtered(marked, lexicon, model))
    null_s, null_i = F.lit(None).cast("string"), F.lit(None).cast("bigint")
    counts = (one.filter((F.col("kind") != "pair") & (F.col("kind") != "doc"))
              .groupBy("kind", "corpus", "label", "reject", "bin",
                       F.when(F.col("kind") == "edge", F.col("doc_id")).alias("edge"))
              .agg(F.sum("n").alias("a"))
              .select("kind", "corpus", "label", null_s.alias("phrase"), F.lit(None).cast("boolean").alias("ps"),
                      "reject", F.col("bin").cast("bigint").alias("b"), "edge", "a", null_i.alias("c")))
    tallies = (marked.groupBy("corpus", "label", "phrase", "premise_stripped", "reject", "n",
                              (F.col("bin") > 1).alias("dup"))
               .agg(F.count(F.lit(1)).alias("a"), F.sum("copies").alias("c"))
               .select(F.lit("tally").alias("kind"), "corpus", "label", "phrase",
                       F.col("premise_stripped").alias("ps"), "reject", F.col("n").alias("b"),
                       F.col("dup").cast("string").alias("edge"), "a", "c"))
    marked_counts, hist = Counter(), defaultdict(Counter)
    groups, split = [], None
    for kind, corpus, label, phrase, ps, reject, b, edge_doc, a, c in sorted(
            [tuple(r) for r in counts.unionByName(tallies).collect()], key=repr):
        if kind == "marked":
            marked_counts[corpus, label, reject] += a
        elif kind == "hist":
            hist[corpus, label][b] += a
        elif kind == "edge" and a > 1:
            split = split or (corpus, edge_doc)
        elif kind == "tally":
            groups.append((corpus, label, phrase, ps, reject, b, edge_doc == "true", a, c))
    if split:
        from extractor.pairs.batches import split_document_error
        raise ValueError(split_document_error(*split))
    duplicates, kept, pos, per_corpus = tally_marked(groups, marked_counts, model)
    marked = marked.filter(F.col("reject").isNull() & (F.col("bin") == 1))
    checked = sum(pos.values())
    pass_rate = pos.get(None, 0) / checked if model and checked else None
    targets, available, cuts = plan_cuts(per_corpus, hist, options.neutral_ratio, options.neutral_mix, pass_rate)

    # 3. pass 2 -------------------------------------------------------------------------
    neutral_rejected, pos_neutral, dropped_identical = Counter(), Counter(), 0
    allocated = final_allocation(targets, options.neutral_mix, {})
    chosen = None
    if any(b >= 0 for b in cuts.values()):
        if max(cuts.values()) < EARLY_BINS:  # pass 1 gave every candidate under the cuts
            two = one.filter((F.col("kind") == "pair") & (F.col("source") != "marker")
                             & (F.col("bin") <= _by_group(cuts)))
        else:
            found = _needed(one, cuts)
            needed = by_file = None
            two_units = units
            if found is not None:
                by_file, _ = found
                two_units = [u for u in units if u[0] in by_file]
                needed = spark.sparkContext.broadcast(by_file)
                kept_frames.append(_Broadcast(needed))
            two = keep(over_ids(spark, len(two_units)).mapInArrow(
                _pass("pass_two_streams", lexicon, options, two_units, needed=needed, cuts=cuts), work_ddl))
        # 4. identical pairs together, the POS filter, identical pairs dropped (with marked
        # ones, then among themselves), the exact draw ---------------------------------------
        seen = marked.select("premise", "hypothesis", F.lit(True).alias("_seen"))
        wn = Window.partitionBy("premise", "hypothesis").orderBy("pair_id")
        cands = (two.filter(F.col("kind") == "pair").join(seen, ["premise", "hypothesis"], "left")
                 .repartition(_pos_tasks(spark, len(units)), "premise", "hypothesis")
                 .withColumn("bin", F.row_number().over(wn).cast("int")))
        cands = _pos_filtered(cands, lexicon, model)
        cands = keep(cands.withColumn("_rn", F.when(F.col("reject").isNull() & F.col("_seen").isNull(),
                                                    F.col("bin"))))
        pos_neutral, neutral_rejected, dropped_identical, avail2, bins = tally_neutral(
            [tuple(r) for r in cands.groupBy("corpus", "source", "reject", F.col("_rn"),
                                             F.shiftright("select", 63 - nt.BIN_BITS).alias("b"))
             .agg(F.count(F.lit(1)), F.sum("n")).collect()])
        allocated = final_allocation(targets, options.neutral_mix, avail2)
        pool = cands.filter(F.col("_rn") == 1)
        chosen = _take_lowest(spark, pool, bins, {(c, s): n for c, per in allocated.items() for s, n in per.items()})

    stats = build_stats(status=status, options=options, marked_counts=marked_counts, duplicates=duplicates,
                        kept=kept, pos=pos, pos_neutral=pos_neutral if model else None, targets=targets,
                        available=available, allocated=allocated, neutral_rejected=neutral_rejected,
                        neutral_duplicates=dropped_identical)
    pairs = marked.select(*OUTPUT_COLUMNS)
    if chosen is not None:
        pairs = pairs.unionByName(chosen.select(*OUTPUT_COLUMNS))
    return pairs, stats, cleanup


class _Broadcast:
    """A broadcast variable released by the stage's cleanup (like the checkpoints)."""

    def __init__(self, value):
        self.value = value

    def unpersist(self):
        self.value.destroy()


MAX_NEEDED_DOCUMENTS = 2_000_000


def _needed(one, cuts: dict):
    """The documents pass 2 pairs again: those with a neutral candidate under a cut, from
    pass 1's "doc" rows ({unit key: doc_ids}, {(corpus, doc_id)}); None (every document)
    when a cut takes (nearly) every candidate or there are too many documents to list."""
    from pyspark.sql import functions as F

    from extractor.pairs.batches import needed_documents

    if max(cuts.values(), default=-1) >= (1 << nt.BIN_BITS) - 1:
        return None
    docs = one.filter(F.col("kind") == "doc").select("corpus", "doc_id", "n", "bin")
    rows = docs.limit(MAX_NEEDED_DOCUMENTS + 1).collect()
    if len(rows) > MAX_NEEDED_DOCUMENTS:
        return None
    return needed_documents([tuple(r) for r in rows], cuts)


def _by_group(values: dict):
    """A column: `values[(corpus, source)]` of each row (null where absent), as a map
    literal (no createDataFrame: it checks rows in extra Python workers)."""
    from pyspark.sql import functions as F

    if not values:
        return F.lit(None).cast("int")
    key = F.concat_ws("\x1f", "corpus", "source")
    return F.create_map(*[F.lit(v) for (c, s), n in sorted(values.items(), key=repr)
                          for v in (f"{c}\x1f{s}", int(n))])[key]


def _take_lowest(spark, df, bins: dict, wanted: dict):
    """The `wanted[(corpus, source)]` rows with the lowest selection hash (ties: pair_id)
    per group, with no global sort: the histogram `bins` says in which bin each cut falls,
    and only that bin is ranked by a window function."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    cuts = []
    for key in sorted(set(bins) | set(wanted)):
        cut, extra = nt.bin_cutoff(bins.get(key, {}), int(wanted.get(key, 0)))
        cuts.append((*key, int(cut), int(extra)))
    binned = (df.withColumn("_bin", F.shiftright("select", 63 - nt.BIN_BITS).cast("int"))
              .withColumn("_cut", _by_group({(c[0], c[1]): c[2] for c in cuts}))
              .withColumn("_extra", _by_group({(c[0], c[1]): c[3] for c in cuts}))
              .filter(F.col("corpus").isNotNull() & (F.col("_bin") <= F.col("_cut"))))
    w = Window.partitionBy("corpus", "source", "_bin").orderBy("select", "pair_id")
    ranked = binned.withColumn("_r", F.when(F.col("_bin") == F.col("_cut"), F.row_number().over(w)))
    return ranked.filter((F.col("_bin") < F.col("_cut")) | (F.col("_r") <= F.col("_extra")))


def check(ctx) -> None:
    """Before any stage runs: flag values, and `--pos-filter on` with a missing model
    (a one-line error now rather than after stage 1)."""
    options = PairsOptions.from_args(ctx.args)
    pf.resolve(options.pos_filter, options.spacy_model or ctx.lexicon.spacy_model, ctx.lexicon)


class _SmallShuffles:
    """After pass 1 the stage shuffles only pairs and aggregate rows (a few percent of the
    sentences): two shuffle partitions per core instead of the session's default (200
    files per map task for a few thousand rows). Restored afterwards; the rows do not depend
    on it (ties are broken by pair_id, the write arranges its own files)."""

    KEY = "spark.sql.shuffle.partitions"

    def __init__(self, spark):
        self.spark = spark

    def __enter__(self):
        self.old = self.spark.conf.get(self.KEY, None)
        slots = max(1, self.spark.sparkContext.defaultParallelism)
        self.spark.conf.set(self.KEY, str(2 * slots))
        return self

    def __exit__(self, *exc):
        if self.old is None:
            self.spark.conf.unset(self.KEY)
        else:
            self.spark.conf.set(self.KEY, self.old)


def run(ctx) -> None:
    from extractor import fs

    options = PairsOptions.from_args(ctx.args)
    table = ctx.table_path("sentences")
    if not fs.exists(table):
        ctx.read_table("sentences")  # its one-line error
    with _SmallShuffles(ctx.spark):
        pairs, stats, cleanup = build_pairs(ctx.spark, table, ctx.lexicon, options, warn=ctx.warn)
        try:
            ctx.write_table(pairs, "pairs", partition_by="label", sort_by=["pair_id"])
        finally:
            cleanup()
    ctx.stats[STAGE] = stats
