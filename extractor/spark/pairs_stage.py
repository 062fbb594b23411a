"""Stage 2 of the job: `sentences/` -> `pairs/` (Spark glue; the text logic lives in
extractor.pairs.matching, extractor.pairs.neutral and extractor.pairs.pos_filter). See docs/pairs.md.

Plan, every step in Spark SQL or Arrow batches, nothing collected but aggregate counts:
1. annotate each sentence (mapInPandas): the marker that opens it, the stripped
   hypothesis, whether it opens with a lexicon phrase at all, its neutral form;
2. marked pairs: a marked sentence and the previous sentence of its paragraph, both
   meeting --min-chars; rejections counted by reason;
3. POS filter (spaCy in mapInPandas over the distinct texts of candidate pairs only);
4. identical (premise, hypothesis) pairs dropped (lowest pair_id kept);
5. neutral candidates per strategy inside each document, hash-ranked by window
   functions; the lowest hashes up to the allocation are kept (exact counts via a hash
   histogram, see neutral.bin_cutoff), POS-filtered, deduplicated;
6. `pairs/` written partitioned by label; counts into stats["pairs"].
"""
from __future__ import annotations

import argparse
from collections import defaultdict

import pandas as pd  # module level: pandas_udf resolves the 'pd.Series' hints here

from extractor.pairs import neutral as nt
from extractor.pairs import pos_filter as pf
from extractor.hashing import stable_hash, stable_hex
from extractor.lexicon import MARKED_LABELS

STAGE = "pairs"
SEP = "\x1f"
REF_FIELDS = ("doc_id", "section", "para_idx", "sent_idx")
OUTPUT_COLUMNS = ("pair_id", "corpus", "genre", "lang", "doc_id", "premise", "hypothesis", "label", "marker",
                  "source", "premise_ref", "hypothesis_ref")
# Why a marked candidate is dropped (POS reasons come from pos_filter.REASONS).
MARKED_REASONS = ("hypothesis_short", "no_premise", "premise_short", "hypothesis_starts_with_phrase",
                  "premise_equals_hypothesis", "duplicate_pair")
NEIGHBOURS = 3  # hash-rank offsets tried when pairing two pools inside a document


def add_arguments(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("pairs stage (sentences/ -> pairs/)")
    g.add_argument("--spacy-model", default=None,
                   help="spaCy model for the POS completeness filter (default: the lexicon's spacy_model)")
    g.add_argument("--pos-filter", choices=pf.POS_FILTER_MODES, default="auto",
                   help="auto: filter when the model is installed, else skip with a warning; "
                        "on: a missing model is an error; off: no filter (default auto)")
    g.add_argument("--neutral-ratio", type=float, default=1.0,
                   help="neutral pairs per corpus, relative to its largest marked class (default 1.0)")
    g.add_argument("--neutral-mix", default=nt.DEFAULT_MIX,
                   help="weights of the neutral strategies, e.g. both_random=1,first_random=1,second_random=1,"
                        "marked_different_paragraphs=1,adjacent_unmarked=1 (default: all 1)")


# --------------------------------------------------------------------------- options

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


# --------------------------------------------------------------------------- Arrow-batch functions

def _annotate_batches(lexicon, min_chars: int):
    """mapInPandas function: adds the marker match and neutral eligibility to sentences."""
    def run(batches):
        from extractor.pairs.matching import matcher_for, recase_first_letter

        matcher = matcher_for(lexicon)
        for pdf in batches:
            n = len(pdf)
            label, marker, phrase, hyp, chained, opens, neutral_text = ([None] * n for _ in range(7))
            short = pdf["short"].tolist() if "short" in pdf else [len(t or "") < min_chars for t in pdf["text"]]
            for i, text in enumerate(pdf["text"].tolist()):
                text = text or ""
                m = matcher.match(text)
                opens[i] = matcher.starts_with_phrase(text)
                if m is not None:
                    label[i], marker[i], phrase[i], hyp[i] = m.label, m.marker, m.phrase, m.hypothesis
                    chained[i] = matcher.starts_with_phrase(m.hypothesis)
                elif not opens[i] and not short[i]:
                    neutral_text[i] = recase_first_letter(text)
            out = pdf.assign(short=[bool(s) for s in short], label=label, marker=marker, phrase=phrase,
                             hyp_text=hyp, chained=chained, opens_with_phrase=[bool(o) for o in opens],
                             neutral_text=neutral_text)
            yield out
    return run


def _pos_batches(model: str, subject_pos, predicate_pos):
    """mapInPandas function: text -> pos_ok, pos_reason (spaCy loaded once per worker)."""
    class _Lex:  # is_complete only needs the two tag sets
        pass
    lex = _Lex()
    lex.subject_pos, lex.predicate_pos = tuple(subject_pos), tuple(predicate_pos)

    def run(batches):
        import pandas as pd

        from extractor.pairs.pos_filter import check_texts

        for pdf in batches:
            texts = pdf["text"].tolist()
            results = check_texts(texts, model, lex) if texts else []
            yield pd.DataFrame({"text": texts, "pos_ok": [ok for ok, _ in results],
                                "pos_reason": [reason for _, reason in results]})
    return run


def _hash_udf(seed: int):
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("long")
    def h(keys: pd.Series) -> pd.Series:
        return pd.Series([stable_hash(k, seed=seed) for k in keys], dtype="int64")
    return h


def _hex_udf():
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("string")
    def h(keys: pd.Series) -> pd.Series:
        return pd.Series([stable_hex(k) for k in keys], dtype="object")
    return h


# --------------------------------------------------------------------------- SQL helpers

def _ref_key(F, prefix: str = ""):
    """A string key of a sentence location (unambiguous: fields joined by \\x1e)."""
    return F.concat_ws("\x1e", *(F.coalesce(F.col(prefix + c).cast("string"), F.lit("")) for c in REF_FIELDS))


def _rows(df, *cols) -> list:
    """(values..., count) for each group of an aggregate: the only thing ever collected."""
    return [(*(row[c] for c in cols), int(row["count"])) for row in df.groupBy(*cols).count().collect()]


def _nest(rows, depth: int, skip_none: bool = True) -> dict:
    """{a: {b: n}} from (a, b, n) rows (summing rows that share a key)."""
    out: dict = {}
    for row in rows:
        keys, n = row[:depth], row[-1]
        if skip_none and any(k is None for k in keys):
            continue
        node = out
        for k in keys[:-1]:
            node = node.setdefault(str(k), {})
        node[str(keys[-1])] = node.get(str(keys[-1]), 0) + n
    return out


def _bin(F, hash_col: str):
    return F.shiftright(F.col(hash_col), 63 - nt.BIN_BITS)


def histogram(df, group_cols, hash_col: str, extra_cols=()) -> list:
    """Counts per group and 4096-bin slice of the hash (an aggregate, small)."""
    from pyspark.sql import functions as F

    return _rows(df.withColumn("_bin", _bin(F, hash_col)), *extra_cols, *group_cols, "_bin")


def take_lowest(df, group_cols, hash_col: str, tie_col: str, wanted: dict, hist: list):
    """The rows with the lowest `hash_col` per group, exactly wanted[group tuple] of
    them (ties by `tie_col`), without a global sort: the histogram `hist` (rows of
    (*group, bin, count), see `histogram`) tells which bin each group's cut falls in; only
    rows of that bin are ranked, by a window function per (group, bin)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    k = len(group_cols)
    counts: dict = defaultdict(dict)
    for row in hist:
        counts[tuple(row[:k])][int(row[k])] = counts[tuple(row[:k])].get(int(row[k]), 0) + row[-1]
    cuts = [(*key, *nt.bin_cutoff(bins, int(wanted.get(key, 0)))) for key, bins in sorted(counts.items())]
    if not cuts:
        return df.limit(0)
    types = dict(df.dtypes)
    schema = ", ".join(f"{c} {types[c]}" for c in group_cols) + ", _cut int, _extra int"
    cut_df = df.sparkSession.createDataFrame(cuts, schema)
    binned = df.withColumn("_bin", _bin(F, hash_col)).join(F.broadcast(cut_df), list(group_cols))
    binned = binned.filter(F.col("_bin") <= F.col("_cut"))
    w = Window.partitionBy(*group_cols, "_bin").orderBy(hash_col, tie_col)
    ranked = binned.withColumn("_rn", F.when(F.col("_bin") == F.col("_cut"), F.row_number().over(w)))
    kept = ranked.filter((F.col("_bin") < F.col("_cut")) | (F.col("_rn") <= F.col("_extra")))
    return kept.drop("_bin", "_cut", "_extra", "_rn")


# --------------------------------------------------------------------------- the stage

class Materializer:
    """Cuts the lineage of intermediate tables: without it every later step re-plans the
    whole stage and Catalyst's plans grow to megabytes. With a work directory (the job
    uses <output>/_work-pairs) tables are written as Parquet and read back, which also
    survives lost executors; without one, Spark's local checkpoints are used."""

    def __init__(self, spark, work_dir: str | None = None):
        self.spark, self.work_dir, self.frames = spark, work_dir, []

    def __call__(self, df, name: str):
        if self.work_dir:
            path = f"{self.work_dir.rstrip('/')}/{name}"
            df.write.mode("overwrite").parquet(path)
            return self.spark.read.parquet(path)
        out = df.localCheckpoint(eager=True)
        self.frames.append(out)
        return out

    def cleanup(self) -> None:
        for df in self.frames:
            try:
                df.unpersist()
            except Exception:  # a session already stopped: nothing to release
                pass
        if self.work_dir:
            from extractor import output as _out
            _out.delete(self.spark, self.work_dir)


def build_pairs(spark, sentences, lexicon, options: PairsOptions, warn=None, work_dir: str | None = None):
    """sentences DataFrame -> (pairs DataFrame, stats dict, Materializer).

    Runs a handful of aggregate jobs for the counts; the returned DataFrame reads
    materialized intermediates: call `.cleanup()` on the third value after writing it."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    stats: dict = {"rejected": dict.fromkeys(MARKED_REASONS, 0), "candidates": {}}
    store = Materializer(spark, work_dir)
    names = iter(range(1000))

    def keep(df):
        return store(df, f"t{next(names):02d}")

    def reject(rows):
        for reason, n in rows:
            if reason is not None:
                stats["rejected"][reason] = stats["rejected"].get(reason, 0) + n

    model = options.spacy_model or lexicon.spacy_model
    enabled, status, warning = pf.resolve(options.pos_filter, model, lexicon)
    if warning and warn:
        warn(warning)
    if enabled:
        stats["rejected"].update(dict.fromkeys(pf.REASONS, 0))
    stats["pos_filter"] = {"status": status, "mode": options.pos_filter, "model": model if enabled else None,
                           "model_requested": model, "sentences_checked": 0, "sentences_rejected": {}}
    stats["neutral"] = {"ratio": options.neutral_ratio, "mix": options.neutral_mix}

    # 1. annotate ---------------------------------------------------------------------
    base_cols = ["corpus", "genre", "lang", "doc_id", "section", "para_idx", "sent_idx", "text"]
    have = set(sentences.columns)
    cols = [F.col(c) if c in have else F.lit(None).cast("string").alias(c) for c in base_cols]
    if "short" in have:
        cols.append(F.col("short"))
    else:
        cols.append((F.length(F.coalesce("text", F.lit(""))) < options.min_chars).alias("short"))
    src = sentences.select(*cols)
    schema = T.StructType(list(src.schema.fields) + [
        T.StructField("label", T.StringType()), T.StructField("marker", T.StringType()),
        T.StructField("phrase", T.StringType()), T.StructField("hyp_text", T.StringType()),
        T.StructField("chained", T.BooleanType()), T.StructField("opens_with_phrase", T.BooleanType()),
        T.StructField("neutral_text", T.StringType())])
    sent = keep(src.mapInPandas(_annotate_batches(lexicon, options.min_chars), schema))

    # 2. marked candidates: the previous sentence of the same paragraph -----------------
    hyp = sent.filter(F.col("label").isNotNull())
    prev = sent.select(F.col("doc_id").alias("p_doc_id"), F.col("section").alias("p_section"),
                       F.col("para_idx").alias("p_para_idx"), (F.col("sent_idx") + 1).alias("p_next"),
                       F.col("sent_idx").alias("p_sent_idx"), F.col("text").alias("premise"),
                       F.col("short").alias("p_short"))
    cand = hyp.join(prev, (F.col("doc_id") == F.col("p_doc_id")) & F.col("section").eqNullSafe(F.col("p_section"))
                    & (F.col("para_idx") == F.col("p_para_idx")) & (F.col("sent_idx") == F.col("p_next")), "left")
    cand = cand.drop("p_doc_id", "p_section", "p_para_idx", "p_next")
    reason = (F.when(F.col("short"), "hypothesis_short")
              .when(F.col("premise").isNull(), "no_premise")
              .when(F.col("p_short"), "premise_short")
              .when(F.col("chained"), "hypothesis_starts_with_phrase")
              .when(F.col("premise") == F.col("hyp_text"), "premise_equals_hypothesis"))
    cand = cand.withColumn("_reject", reason)
    hex_udf = _hex_udf()
    marked = (cand.select("corpus", "genre", "lang", "doc_id",
                          F.col("premise"), F.col("hyp_text").alias("hypothesis"), "label", "marker", "phrase",
                          F.lit("marker").alias("source"),
                          F.struct(F.col("doc_id"), F.col("section"), F.col("para_idx"),
                                   F.col("p_sent_idx").alias("sent_idx")).alias("premise_ref"),
                          F.struct(*(F.col(c) for c in REF_FIELDS)).alias("hypothesis_ref"), "_reject"))
    marked = keep(_with_pair_id(F, marked, hex_udf))
    counts = _rows(marked, "label", "_reject")
    stats["candidates"]["marked_sentences"] = _nest([(lab, n) for lab, _, n in counts], 1)
    reject([(r, n) for _, r, n in counts])
    marked = marked.filter(F.col("_reject").isNull()).drop("_reject")

    # 3. POS filter on the distinct texts of marked candidates ----------------------------
    pos_table, pass_rate, pos_counts = None, None, []
    if enabled:
        texts = marked.select(F.col("premise").alias("text")).union(marked.select(F.col("hypothesis").alias("text"))).distinct()
        pos_table = keep(texts.mapInPandas(_pos_batches(model, lexicon.subject_pos, lexicon.predicate_pos),
                                           "text string, pos_ok boolean, pos_reason string"))
        pos_counts = _rows(pos_table, "pos_ok", "pos_reason")
        checked = sum(n for _, _, n in pos_counts)
        pass_rate = sum(n for ok, _, n in pos_counts if ok) / checked if checked else None
        marked = _apply_pos(F, marked, pos_table)

    # 4. identical pairs: the lowest pair_id stays ---------------------------------------
    marked = keep(_rank_duplicates(F, Window, marked))
    counts = _rows(marked, "corpus", "label", "_reject")
    reject([(r, n) for _, _, r, n in counts])
    marked = marked.filter(F.col("_reject").isNull()).drop("_reject")
    marked_counts = _nest([(c, lab, n) for c, lab, r, n in counts if r is None], 2)  # {corpus: {label: n}}

    # 5. neutral ------------------------------------------------------------------------
    neutral, nstats = _neutral(F, Window, sent, marked, marked_counts, options, hex_udf, keep,
                               pos_table, model if enabled else None, lexicon, pass_rate, stats)
    stats["neutral"].update(nstats)

    out_cols = list(OUTPUT_COLUMNS) + ["phrase"]
    pairs = marked.select(*out_cols).unionByName(neutral.select(*out_cols))
    if enabled:
        stats["pos_filter"]["sentences_checked"] = sum(n for _, _, n in pos_counts)
        stats["pos_filter"]["sentences_rejected"] = _nest([(r, n) for ok, r, n in pos_counts if not ok], 1)
    return pairs, stats, store


def _with_pair_id(F, df, hex_udf):
    key = F.concat_ws(SEP, _ref_key_struct(F, "premise_ref"), _ref_key_struct(F, "hypothesis_ref"),
                      F.col("premise"), F.col("hypothesis"), F.col("label"))
    return df.withColumn("pair_id", hex_udf(key))


def _ref_key_struct(F, col):
    return F.concat_ws("\x1e", *(F.coalesce(F.col(f"{col}.{c}").cast("string"), F.lit("")) for c in REF_FIELDS))


def _apply_pos(F, pairs, pos_table):
    """Sets `_reject` to the POS reason of a failing hypothesis, else of a failing premise."""
    p = pos_table.select(F.col("text").alias("_pt"), F.col("pos_ok").alias("_pok"), F.col("pos_reason").alias("_pr"))
    h = pos_table.select(F.col("text").alias("_ht"), F.col("pos_ok").alias("_hok"), F.col("pos_reason").alias("_hr"))
    j = pairs.join(p, F.col("premise") == F.col("_pt"), "left").join(h, F.col("hypothesis") == F.col("_ht"), "left")
    reason = F.when(F.col("_hok") == F.lit(False), F.col("_hr")).when(F.col("_pok") == F.lit(False), F.col("_pr"))
    return j.withColumn("_reject", reason).drop("_pt", "_pok", "_pr", "_ht", "_hok", "_hr")


def _rank_duplicates(F, Window, pairs, against=None):
    """Marks (`_reject` = duplicate_pair) every repeat of a (premise, hypothesis) pair but
    the one with the lowest pair_id, and with `against`, pairs already there. Rows that
    carry a `_reject` already keep it and take no part."""
    if "_reject" not in pairs.columns:
        pairs = pairs.withColumn("_reject", F.lit(None).cast("string"))
    w = Window.partitionBy("premise", "hypothesis", F.col("_reject").isNull()).orderBy("pair_id")
    ranked = pairs.withColumn("_rn", F.row_number().over(w))
    if against is not None:
        seen = against.select(F.col("premise").alias("_sp"), F.col("hypothesis").alias("_sh"),
                              F.lit(True).alias("_seen")).distinct()
        ranked = ranked.join(seen, (F.col("premise") == F.col("_sp")) & (F.col("hypothesis") == F.col("_sh")), "left")
        dup = (F.col("_rn") > 1) | F.col("_seen").isNotNull()
    else:
        dup = F.col("_rn") > 1
    ranked = ranked.withColumn("_reject", F.when(F.col("_reject").isNull() & dup, F.lit("duplicate_pair"))
                               .otherwise(F.col("_reject")))
    return ranked.drop(*[c for c in ("_rn", "_sp", "_sh", "_seen") if c in ranked.columns])


def _neutral(F, Window, sent, marked, marked_counts, options, hex_udf, keep, pos_table, model, lexicon,
             pass_rate, stats):
    """Neutral pairs: candidates per strategy inside each document, then exact hash-based
    selection per (corpus, strategy). Returns (DataFrame, stats)."""
    hash_udf = _hash_udf(options.seed)
    nstats: dict = {"target": {}, "allocated": {}, "candidates": {}, "shortfall": {}}
    targets = {c: nt.neutral_target({k: v for k, v in labels.items() if k in MARKED_LABELS}, options.neutral_ratio)
               for c, labels in marked_counts.items()}
    nstats["target"] = targets

    # pools ------------------------------------------------------------------------
    used = (marked.select(F.col("premise_ref.*")).union(marked.select(F.col("hypothesis_ref.*"))).distinct()
            .select(*(F.col(c).alias("u_" + c) for c in REF_FIELDS)))
    unused = (sent.filter(F.col("neutral_text").isNotNull())
              .join(used, [F.col(c).eqNullSafe(F.col("u_" + c)) for c in REF_FIELDS], "left_anti")
              .select("corpus", "genre", "lang", *REF_FIELDS, "text", F.col("neutral_text").alias("htext")))
    # premises stay as written (as for marked pairs), hypotheses get recase_first_letter (htext)
    # by text too: a repeated sentence (a page copied into another) is used once it is used anywhere
    used_text = marked.select(F.col("premise").alias("text")).union(marked.select(F.col("hypothesis").alias("text")))
    unused = keep(unused.join(used_text.distinct(), "text", "left_anti"))
    m_prem = marked.select("corpus", "genre", "lang", F.col("premise_ref.*"), F.col("premise").alias("text"),
                           F.col("premise").alias("htext"))
    m_hyp = marked.select("corpus", "genre", "lang", F.col("hypothesis_ref.*"), F.col("hypothesis").alias("text"),
                          F.col("hypothesis").alias("htext"))
    pools = {"unused": unused, "marked_premise": m_prem, "marked_hypothesis": m_hyp}

    cands = [_pair_pools(F, Window, pools[pa], pools[pb], strategy, hash_udf)
             for strategy, (pa, pb) in nt.POOLS.items() if options.neutral_mix.get(strategy, 0) > 0]
    if options.neutral_mix.get("adjacent_unmarked", 0) > 0:
        cands.append(_adjacent(F, unused, hash_udf))
    cand = cands[0]
    for c in cands[1:]:
        cand = cand.unionByName(c)
    cand = cand.withColumn("label", F.lit("neutral")).withColumn("marker", F.lit(None).cast("string")) \
        .withColumn("phrase", F.lit(None).cast("string"))
    cand = _with_pair_id(F, cand, hex_udf).filter(F.col("premise") != F.col("hypothesis"))
    # the same pair from two strategies, or a pair that is already marked: out before counting
    cand = keep(_rank_duplicates(F, Window, cand, against=marked))
    cand = cand.filter(F.col("_reject").isNull()).drop("_reject")
    hist = histogram(cand, ["corpus", "source"], "_h")
    avail = _nest([(c, s, n) for c, s, _, n in hist], 2)
    nstats["candidates"] = avail

    def allocation(available):
        return {c: nt.allocate(targets.get(c, 0), options.neutral_mix,
                               {s: available.get(c, {}).get(s, 0) for s in nt.STRATEGIES})
                for c in sorted(set(targets) | set(available))}

    if pos_table is not None:
        first = allocation(avail)
        wanted = {(c, s): nt.oversample(n, pass_rate, avail.get(c, {}).get(s, 0))
                  for c, per in first.items() for s, n in per.items()}
        pre = take_lowest(cand, ["corpus", "source"], "_h", "pair_id", wanted, hist)
        new_texts = (pre.select(F.col("premise").alias("text")).union(pre.select(F.col("hypothesis").alias("text")))
                     .distinct().join(pos_table.select("text"), "text", "left_anti"))
        extra = keep(new_texts.mapInPandas(_pos_batches(model, lexicon.subject_pos, lexicon.predicate_pos),
                                           "text string, pos_ok boolean, pos_reason string"))
        checked = keep(_apply_pos(F, pre, pos_table.unionByName(extra)))
        hist = histogram(checked, ["corpus", "source"], "_h", extra_cols=("_reject",))
        nstats["pos_rejected_candidates"] = _nest([(r, n) for r, *_, n in hist], 1)
        extra_counts = _rows(extra, "pos_ok", "pos_reason")
        stats["pos_filter"]["neutral_sentences_checked"] = sum(n for *_, n in extra_counts)
        stats["pos_filter"]["neutral_sentences_rejected"] = _nest([(r, n) for ok, r, n in extra_counts if not ok], 1)
        cand = checked.filter(F.col("_reject").isNull()).drop("_reject")
        hist = [row[1:] for row in hist if row[0] is None]
        avail = _nest([(c, s, n) for c, s, _, n in hist], 2)
    final = allocation(avail)
    nstats["allocated"] = final
    nstats["shortfall"] = {c: max(0, targets.get(c, 0) - sum(per.values())) for c, per in final.items()}
    chosen = take_lowest(cand, ["corpus", "source"], "_h", "pair_id",
                         {(c, s): n for c, per in final.items() for s, n in per.items()}, hist)
    return chosen.drop("_h"), nstats


def _ranked(F, Window, pool, salt: str, hash_udf, role: str):
    """A pool with a per-document rank by the hash of (salt, role, location) and its size."""
    h = hash_udf(F.concat_ws(SEP, F.lit(salt), F.lit(role), _ref_key(F)))
    w = Window.partitionBy("doc_id").orderBy("_k", *REF_FIELDS[1:])
    return (pool.withColumn("_k", h).withColumn("_rank", F.row_number().over(w) - 1)
            .withColumn("_n", F.count(F.lit(1)).over(Window.partitionBy("doc_id"))).drop("_k"))


def _pair_pools(F, Window, pool_a, pool_b, strategy: str, hash_udf):
    """Candidates of one strategy: premise i of the document's hash order is paired with
    hypothesis (i + d) mod n_b for d < NEIGHBOURS, the first d landing in another
    paragraph; each hypothesis is kept once (smallest d, then rank)."""
    a = _ranked(F, Window, pool_a, strategy, hash_udf, "premise")
    b = _ranked(F, Window, pool_b, strategy, hash_udf, "hypothesis")
    a = a.select(*(F.col(c).alias("a_" + c) for c in a.columns))
    b = b.select(*(F.col(c).alias("b_" + c) for c in b.columns))
    a = a.withColumn("_d", F.explode(F.array(*[F.lit(d) for d in range(NEIGHBOURS)])))
    joined = a.join(b, (F.col("a_doc_id") == F.col("b_doc_id")) &
                    (F.col("b__rank") == F.pmod(F.col("a__rank") + F.col("_d"), F.col("b__n"))))
    joined = joined.filter(~(F.col("a_section").eqNullSafe(F.col("b_section")) & (F.col("a_para_idx") == F.col("b_para_idx"))))
    joined = joined.filter(F.col("a_text") != F.col("b_text"))
    w_a = Window.partitionBy("a_doc_id", "a__rank").orderBy("_d")
    joined = joined.withColumn("_ra", F.row_number().over(w_a)).filter("_ra = 1")
    w_b = Window.partitionBy("b_doc_id", "b__rank").orderBy("_d", "a__rank")
    joined = joined.withColumn("_rb", F.row_number().over(w_b)).filter("_rb = 1")
    out = joined.select(
        F.col("a_corpus").alias("corpus"), F.col("a_genre").alias("genre"), F.col("a_lang").alias("lang"),
        F.col("a_doc_id").alias("doc_id"), F.col("a_text").alias("premise"), F.col("b_htext").alias("hypothesis"),
        F.lit(strategy).alias("source"),
        F.struct(*(F.col("a_" + c).alias(c) for c in REF_FIELDS)).alias("premise_ref"),
        F.struct(*(F.col("b_" + c).alias(c) for c in REF_FIELDS)).alias("hypothesis_ref"))
    return _selection_hash(F, out, strategy, hash_udf)


def _adjacent(F, unused, hash_udf):
    """RoNLI's neutral: two consecutive unused sentences of one paragraph."""
    p = unused.select(F.col("doc_id").alias("p_doc_id"), F.col("section").alias("p_section"),
                      F.col("para_idx").alias("p_para_idx"), (F.col("sent_idx") + 1).alias("p_next"),
                      F.col("sent_idx").alias("p_sent_idx"), F.col("text").alias("p_text"))
    j = unused.join(p, (F.col("doc_id") == F.col("p_doc_id")) & F.col("section").eqNullSafe(F.col("p_section"))
                    & (F.col("para_idx") == F.col("p_para_idx")) & (F.col("sent_idx") == F.col("p_next")))
    out = j.select("corpus", "genre", "lang", "doc_id", F.col("p_text").alias("premise"),
                   F.col("htext").alias("hypothesis"), F.lit("adjacent_unmarked").alias("source"),
                   F.struct(F.col("doc_id"), F.col("section"), F.col("para_idx"),
                            F.col("p_sent_idx").alias("sent_idx")).alias("premise_ref"),
                   F.struct(*(F.col(c) for c in REF_FIELDS)).alias("hypothesis_ref"))
    return _selection_hash(F, out, "adjacent_unmarked", hash_udf)


def _selection_hash(F, df, strategy, hash_udf):
    key = F.concat_ws(SEP, F.lit(strategy), _ref_key_struct(F, "premise_ref"), _ref_key_struct(F, "hypothesis_ref"))
    return df.withColumn("_h", hash_udf(key))


def summarize(pairs_df, stats: dict) -> dict:
    """Counts per label, marker (lexicon phrase), source and corpus of the pairs table
    (one aggregate)."""
    rows = _rows(pairs_df, "corpus", "label", "source", "phrase")
    stats["labels"] = _nest([(lab, n) for _, lab, _, _, n in rows], 1)
    stats["markers"] = _nest([(lab, ph, n) for _, lab, _, ph, n in rows], 2)
    stats["sources"] = _nest([(src, n) for _, _, src, _, n in rows], 1)
    stats["corpora"] = _nest([(c, lab, n) for c, lab, _, _, n in rows], 2)
    stats["total"] = int(sum(stats["labels"].values()))
    return stats


def check(ctx) -> None:
    """Before any stage runs: flag values, and `--pos-filter on` with a missing model
    (a one-line error now rather than after stage 1)."""
    options = PairsOptions.from_args(ctx.args)
    pf.resolve(options.pos_filter, options.spacy_model or ctx.lexicon.spacy_model, ctx.lexicon)


def run(ctx) -> None:
    options = PairsOptions.from_args(ctx.args)
    sentences = ctx.read_table("sentences")
    work = ctx.table_path("_work-pairs")
    pairs, stats, store = build_pairs(ctx.spark, sentences, ctx.lexicon, options, warn=ctx.warn, work_dir=work)
    try:
        pairs = store(pairs, "pairs")
        summarize(pairs, stats)
        ctx.write_table(pairs.select(*OUTPUT_COLUMNS), "pairs", partition_by="label", sort_by=["pair_id"])
    finally:
        store.cleanup()
    ctx.stats[STAGE] = stats
