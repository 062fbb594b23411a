"""The dataset card of `splits/` (README.md with a Hugging Face YAML header), the class
distribution chart, `stats.json` and `leakage.json`.

Pure functions of plain dicts (the statistics are computed by `extractor.statistics`
and aggregated by the Spark stage), so the card can be tested without Spark.
"""
from __future__ import annotations

import json
import platform
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import yaml

from extractor import statistics
from extractor.core.names import SPLITS
from extractor.io import fs
from extractor.lexicon.lexicon import CANONICAL_LABELS
from extractor.neardup.settings import settings_line
from extractor.statistics import precision

LICENSE_NOTE = ("Wikipedia text is licensed CC BY-SA (attribution and share-alike apply to this derived "
                "dataset); other sources carry their own terms: set --license to match them ('unknown': "
                "none was given, and the input did not say).")


# ---------------------------------------------------------------------------- build info

def _package_version(name: str | None) -> str | None:
    """The installed version of a distribution, from its metadata: the package is not
    imported (importing spaCy alone costs seconds of CPU); None when not installed."""
    if not name:
        return None
    from importlib.metadata import PackageNotFoundError, version

    for candidate in dict.fromkeys((name, name.replace("_", "-"))):
        try:
            return version(candidate)
        except PackageNotFoundError:
            continue
    return None


def _display_path(path) -> str | None:
    """A lexicon path relative to the repository when it lies inside it (cards are shared)."""
    if path is None:
        return None
    path = Path(path)
    try:
        return path.resolve().relative_to(Path(__file__).resolve().parents[2]).as_posix()
    except ValueError:
        return str(path)


def build_info(ctx) -> dict:
    """How the data was built: command line, lexicon and hash, seed, versions, filters."""
    lex = ctx.lexicon
    args = ctx.args
    pairs_stats = (ctx.stats or {}).get("pairs") or {}
    model = getattr(args, "spacy_model", None) or getattr(lex, "spacy_model", None)
    pos = pairs_stats.get("pos_filter")
    info = lex.model_info(model) if hasattr(lex, "model_info") else None
    return {
        "command_line": ctx.command_line or "",
        "lexicon": _display_path(getattr(lex, "path", None)) or f"phrase_lexicons/{lex.lang}.yaml",
        "lexicon_sha256": getattr(lex, "sha256", None),
        "phrase_set": list(getattr(lex, "phrase_set", ()) or ()),
        "lang": lex.lang,
        "seed": int(getattr(args, "seed", 0) or 0),
        "min_chars": getattr(args, "min_chars", None),
        "corpora": [{"name": c.name, "genre": c.genre, "format": c.format, "role": c.role,
                     "license": corpus_licenses([c], getattr(args, "license", None)),
                     "site": " ".join(str(x) for x in ((c.options or {}).get("site"),
                                                       (c.options or {}).get("url_of_site")) if x) or None}
                    for c in (ctx.corpora or [])],
        "label_precision_measured": bool(getattr(lex, "measured_precision", None)),
        "versions": {"python": platform.python_version(), "pyspark": _package_version("pyspark"),
                     "spacy": _package_version("spacy"), "spacy_model": model,
                     "spacy_model_version": ("rule-based" if model and model.startswith("rules:")
                                             else _package_version(model)),
                     "spacy_model_license": getattr(info, "license", None), "nltk": _package_version("nltk"),
                     "mwparserfromhell": _package_version("mwparserfromhell")},
        "pos_filter": pos if pos is not None else getattr(args, "pos_filter", None),
        "spark_master": ctx.spark.sparkContext.master if ctx.spark is not None else None,
        **citation_fields(ctx),
    }


def citation_fields(ctx) -> dict:
    """Who made the dataset and where it lives, for the citation: `--author` / `--url` or a
    corpus's own `author` / `url` (a manifest entry's keys), the year the run started, and the
    output's path when no URL is given."""
    def given(key: str) -> str | None:
        found = [str(c.options[key]) for c in ctx.corpora or [] if (getattr(c, "options", None) or {}).get(key)]
        return getattr(ctx.args, key, None) or ("; ".join(dict.fromkeys(found)) or None)
    run = getattr(ctx, "run", None)
    started = getattr(run, "started", None) or time.strftime("%Y", time.gmtime())
    return {"author": given("author"), "url": given("url"), "year": int(started[:4]),
            "output": str(getattr(run, "root", None) or ctx.output_uri or ctx.output)}


# ---------------------------------------------------------------------------- YAML header

_SPARK_DTYPES = {"string": "string", "bigint": "int64", "int": "int32", "smallint": "int16", "tinyint": "int8",
                 "double": "float64", "float": "float32", "boolean": "bool", "date": "date32",
                 "timestamp": "timestamp[us]", "binary": "binary"}


# Arrow types as the Hugging Face dtypes of the Spark types Arrow maps them to.
_ARROW_DTYPES = {"string": "string", "large_string": "string", "int64": "int64", "int32": "int32",
                 "int16": "int16", "int8": "int8", "double": "float64", "float": "float32", "bool": "bool",
                 "date32[day]": "date32", "binary": "binary"}


def _arrow_feature(name: str, dtype: pa.DataType, label_names: list[str]) -> dict:
    if name == "label":
        return {"name": name, "dtype": {"class_label": {"names": {str(i): n for i, n in enumerate(label_names)}}}}
    if pa.types.is_struct(dtype):
        return {"name": name, "struct": [_arrow_feature(f.name, f.type, label_names) for f in dtype]}
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        inner = _arrow_feature("item", dtype.value_type, label_names)
        return {"name": name, "sequence": inner.get("dtype", inner)}
    if pa.types.is_timestamp(dtype):
        return {"name": name, "dtype": "timestamp[us]"}
    return {"name": name, "dtype": _ARROW_DTYPES.get(str(dtype), "string")}


def _feature(name: str, dtype, label_names: list[str]) -> dict:
    if isinstance(dtype, pa.DataType):
        return _arrow_feature(name, dtype, label_names)
    kind = dtype.typeName() if hasattr(dtype, "typeName") else str(dtype)
    if name == "label":
        return {"name": name, "dtype": {"class_label": {"names": {str(i): n for i, n in enumerate(label_names)}}}}
    if kind == "struct":
        return {"name": name, "struct": [_feature(f.name, f.dataType, label_names) for f in dtype.fields]}
    if kind == "array":
        inner = _feature("item", dtype.elementType, label_names)
        return {"name": name, "sequence": inner.get("dtype", inner)}
    simple = dtype.simpleString() if hasattr(dtype, "simpleString") else str(dtype)
    return {"name": name, "dtype": _SPARK_DTYPES.get(simple, "string")}


def label_names(labels) -> list[str]:
    """ClassLabel order: the canonical labels first (stable ids across languages), then others."""
    labels = set(labels)
    return [l for l in CANONICAL_LABELS] + sorted(labels - set(CANONICAL_LABELS))


def yaml_header(*, lang: str, license: str | list[str], sizes: dict[str, int], schema=None, labels=(),
                num_bytes: dict[str, int] | None = None, pretty_name: str | None = None) -> dict:
    """The Hugging Face card metadata; empty splits are left out (`datasets` cannot read an
    empty Parquet split)."""
    present = [s for s in SPLITS if sizes.get(s)]
    total = sum(sizes.values())
    size_cat = ("n<1K" if total < 1_000 else "1K<n<10K" if total < 10_000 else "10K<n<100K" if total < 100_000
                else "100K<n<1M" if total < 1_000_000 else "1M<n<10M" if total < 10_000_000 else "10M<n<100M")
    header: dict[str, Any] = {
        "language": [lang],
        "license": license,
        "pretty_name": pretty_name or f"{lang} NLI (distant supervision from linking phrases)",
        "size_categories": [size_cat],
        "task_categories": ["text-classification"],
        "task_ids": ["natural-language-inference"],
        "configs": [{"config_name": "default",
                     "data_files": [{"split": s, "path": f"{s}/*.parquet"} for s in present]}],
    }
    info: dict = {}
    if schema is not None:
        names = label_names(labels)
        fields = [(f.name, f.type) for f in schema] if isinstance(schema, pa.Schema) else \
            [(f.name, f.dataType) for f in schema.fields]
        info["features"] = [_feature(name, dtype, names) for name, dtype in fields]
    info["splits"] = [{"name": s, "num_bytes": int((num_bytes or {}).get(s, 0)), "num_examples": int(sizes[s])}
                      for s in present]
    header["dataset_info"] = info
    return header


# ---------------------------------------------------------------------------- license

UNKNOWN_LICENSE = "unknown"  # no license given or found: the card says so, never a guess


def corpus_licenses(corpora, default: str | None) -> str | list[str]:
    """The dataset's license: its inputs' licenses, in corpus order (a corpus's own `license`
    option: a manifest entry's key, or the bundled sample's; else `default`, the --license
    flag; else the license a dump's siteinfo names, `site_license`: a Wikimedia project's;
    else `unknown`). One license as a string, several as a list (the card's YAML takes either)."""
    def of(c) -> str:
        options = getattr(c, "options", None) or {}
        return str(options.get("license") or default or options.get("site_license") or UNKNOWN_LICENSE)
    found = list(dict.fromkeys(of(c) for c in (corpora or [])))
    if not found:
        return default or UNKNOWN_LICENSE
    return found[0] if len(found) == 1 else found


def license_text(license) -> str:
    return ", ".join(license) if isinstance(license, (list, tuple)) else str(license)


# ---------------------------------------------------------------------------- examples

EXAMPLES_PER_LABEL = 3
EXAMPLE_CHARS = 300  # a longer sentence is cut in the card (the data has it whole)


def merge_examples(examples: list[dict], k: int = EXAMPLES_PER_LABEL) -> list[dict]:
    """The `k` examples of each label with the lowest hash order (ties: `pair_id`) among
    per-unit picks (`pair_tables.pick_examples`), in label order: the same whatever the units."""
    names = label_names(e["label"] for e in examples)
    ordered = sorted(examples, key=lambda e: (names.index(e["label"]), e["h"], e["pair_id"] or ""))
    out: list[dict] = []
    seen: dict = {}
    for e in ordered:
        if seen.get(e["label"], 0) < k:
            seen[e["label"]] = seen.get(e["label"], 0) + 1
            out.append(e)
    return out


def _cell(text, limit: int = EXAMPLE_CHARS) -> str:
    text = " ".join(str(text or "").split())
    if len(text) > limit:
        text = text[:limit - 1].rstrip() + "…"
    return text.replace("|", "\\|")


def examples_section(examples: list[dict]) -> str:
    """Example pairs per label with the linking phrase that was stripped from the hypothesis
    (the lowest hashes of `pair_id` with the seed: a fixed, unbiased pick)."""
    if not examples:
        return "(no pairs)"
    lines = ["A few pairs of each label, picked by the lowest hash of `pair_id` with the seed (not by hand). "
             "*phrase* is the linking phrase that opened the hypothesis in the text and was stripped from it; "
             "neutral pairs have none.", "",
             "| label | split | premise | hypothesis | phrase |", "|---|---|---|---|---|"]
    lines += [f"| {e['label']} | {e['split']} | {_cell(e['premise'])} | {_cell(e['hypothesis'])} | "
              f"{_cell(e['marker'], 80) or '-'} |" for e in examples]
    return "\n".join(lines)


# ---------------------------------------------------------------------------- intended use, citation

def intended_use_section(build: dict, dataset: dict | None = None) -> str:
    """Intended use and limitations: what the data is for and what a user must know
    (distant supervision, label noise, genres, sizes, leaks)."""
    genres = sorted({c.get("genre") or "unknown" for c in build.get("corpora") or []})
    sizes = {s: (dataset or {}).get("splits", {}).get(s, {}).get("all", {}).get("count", 0) for s in SPLITS}
    measured = build.get("label_precision_measured")
    lines = [
        "**Intended use.** Training and evaluating natural language inference and discourse-relation "
        "classifiers where no hand-labelled NLI data of this language exists or as extra training data "
        "beside it; studying linking phrases and the artefacts of distantly supervised labels. The "
        "validation and test splits are built the same way as the training split: they measure how well a "
        "model recovers the linking phrase's relation, not agreement with human NLI judgements.",
        "",
        "**Limitations.**",
        "",
        "- *Distant supervision.* Labels come from the linking phrase that opened the second sentence "
        "(`contrasting`, `entailment`, `reasoning`) and from sampling (`neutral`), not from annotators. "
        "A phrase does not always mean its relation, and a neutral pair can be related by chance.",
        "- *Label noise.* " + ("The lexicon carries precision figures measured on hand-checked gold sets "
                               "(\"Estimated label precision\" below, docs/label-quality.md): about that share "
                               "of each label is right, the rest is noise." if measured else
                               "No precision of this lexicon's phrases has been measured on hand-checked "
                               "pairs: treat the labels as noisy, and have a sample checked by people "
                               "(`python -m trainer annotate`) before relying on the test split's scores."),
        "- *Genres.* The text comes from " + (", ".join(genres) if genres else "unrecorded sources")
        + "; a model trained here may not transfer to other genres, registers or dialogues.",
        "- *Artefacts.* The phrase is stripped, but the hypothesis is still a sentence that followed "
        "its premise in running text: hypothesis-only cues (see the artefact indicators and their "
        "warnings below) can let a model score without reading the premise.",
        "- *Not for* judging individuals or making decisions about people; the sentences keep whatever "
        "views and errors their sources hold.",
    ]
    if 0 < sum(sizes.values()) < 1_000:
        lines.append(f"- *Size.* {sum(sizes.values()):,} pairs in all: enough to test the pipeline, not to "
                     "train or compare models.")
    return "\n".join(lines)


NO_AUTHOR = "{unknown: set --author, or an author key in the manifest}"


def citation_section(build: dict, license) -> str:
    """A BibTeX entry for the dataset and one for the engine: author or organisation, title,
    year, where to find it, the engine's version; a field the user did not give says how to
    give it."""
    lang = build.get("lang") or "xx"
    year = f"_{build['year']}" if build.get("year") else ""
    key = "".join(ch for ch in f"{lang}_nli_distant{year}" if ch.isalnum() or ch == "_")
    corpora = ", ".join(c["name"] for c in build.get("corpora") or []) or "unrecorded corpora"
    version = _package_version("nli-corpus-engine") or "unknown"
    where = (f"  url          = {{{build['url']}}}," if build.get("url") else
             f"  howpublished = {{{build.get('output') or 'the splits folder'} (set --url to cite a public copy)}},")
    return "\n".join([
        "If you use this dataset, cite it and the sources of its text (their licenses apply: "
        f"{license_text(license)}), and the engine that built it:", "",
        "```bibtex",
        f"@misc{{{key},",
        f"  author       = {{{build.get('author') or NO_AUTHOR}}},",
        f"  title        = {{{{{lang}}} NLI corpus built by distant supervision from linking phrases}},",
        f"  year         = {{{build.get('year') or 'unknown'}}},",
        where,
        f"  note         = {{Built from {corpora} with lexicon {build.get('lexicon')} "
        f"(sha256 {str(build.get('lexicon_sha256') or '')[:12]}), seed {build.get('seed')}, "
        f"NLI corpus engine {version}}},",
        "}",
        "@software{nli_corpus_engine,",
        "  title   = {{NLI corpus engine}: NLI corpora for low-resource languages by distant supervision},",
        f"  version = {{{version}}},",
        "  license = {Apache-2.0},",
        "}",
        "```"])


# ---------------------------------------------------------------------------- artefact warnings

# indicator key -> (its name in the artefact table, the difference between two labels'
# values that warns, absolute; for the words, relative to the larger value)
ARTEFACT_LIMITS = {
    "hypothesis_inner_capital_share": ("hypothesis inner-capital share", 0.15, "abs"),
    "overlap_jaccard_mean": ("Jaccard mean", 0.10, "abs"),
    "lcs_ratio_median": ("LCS ratio median", 0.10, "abs"),
    "new_token_rate_median": ("new-token rate median", 0.15, "abs"),
    "hypothesis_words_mean": ("hypothesis words mean", 0.25, "rel"),
}
WARN_MIN_PAIRS = 20  # labels with fewer pairs in a split are too few to compare


def artefact_warnings(dataset: dict, markdown: bool = True) -> list[str]:
    """One warning line per split and artefact indicator that differs strongly between
    labels (`ARTEFACT_LIMITS`), comparing the labels with at least `WARN_MIN_PAIRS` pairs
    in the split; the lowest and highest label are named. ``markdown``: the card's bold
    "Warning (split):" lead, else "split:" (the job's warnings)."""
    out = []
    for split, block in dataset.get("splits", {}).items():
        labels = {l: b for l, b in block.get("labels", {}).items() if (b.get("count") or 0) >= WARN_MIN_PAIRS}
        if len(labels) < 2:
            continue
        for key, (name, limit, how) in ARTEFACT_LIMITS.items():
            values = {l: b[key] for l, b in labels.items() if b.get(key) is not None}
            if len(values) < 2:
                continue
            hi = max(values, key=lambda l: (values[l], l))
            lo = min(values, key=lambda l: (values[l], l))
            diff = values[hi] - values[lo]
            size = diff / values[hi] if how == "rel" and values[hi] else diff
            if size >= limit:
                found = f"{size:.0%} of the larger value" if how == "rel" else f"{diff:.2f}"
                bound = f"{limit:.0%}" if how == "rel" else f"{limit:.2f}"
                lead = f"**Warning ({split}):**" if markdown else f"{split}:"
                out.append(f"{lead} {name} differs strongly between labels: {hi} {values[hi]:.2f} "
                           f"against {lo} {values[lo]:.2f} (a difference of {found}; the limit is {bound}). "
                           "A hypothesis-only model can exploit it.")
    return out


def artefact_warnings_text(dataset: dict) -> str:
    found = artefact_warnings(dataset)
    return "\n\n".join(found) if found else ("No indicator differs strongly between labels (limits: "
                                             + ", ".join(f"{n} {l:.0%}" if h == "rel" else f"{n} {l:.2f}"
                                                         for n, l, h in ARTEFACT_LIMITS.values())
                                             + f"; labels with at least {WARN_MIN_PAIRS} pairs in a split).")


# ---------------------------------------------------------------------------- chart data

CHART_FILES = {"lengths": "lengths_per_label.png", "phrases": "top_phrases_per_label.png",
               "funnel": "drop_funnel.png"}
PHRASES_PER_LABEL = 8


def merge_histograms(rows: list[list]) -> list[list]:
    """Sums of ``[label, side, counts]`` histograms (`pair_tables.length_histograms`) per
    (label, side), sorted."""
    summed: dict = {}
    for label, side, counts in rows:
        have = summed.get((label, side))
        summed[(label, side)] = list(counts) if have is None else [a + b for a, b in zip(have, counts)]
    return [[l, s, c] for (l, s), c in sorted(summed.items())]


def earlier_stats(stats: dict | None) -> dict:
    """The few counts of stages 1 and 2 the drop funnel needs (absent where the stage did
    not run in this job)."""
    stats = stats or {}
    sent, pairs = stats.get("sentences") or {}, stats.get("pairs") or {}
    docs = sent.get("documents") or {}
    sentences = found if isinstance(found := sent.get("sentences"), dict) else {}
    marked = ((pairs.get("candidates") or {}).get("marked_sentences") or {})
    out = {"documents_read": docs.get("read"), "documents_kept": docs.get("kept"),
           "sentences": sentences.get("total"),
           "sentences_long": (sentences["total"] - sentences.get("short", 0)) if sentences.get("total") is not None
           else None,
           "marked_sentences": sum(marked.values()) if marked else None}
    return {k: int(v) for k, v in out.items() if v is not None}


def funnel_steps(earlier: dict | None, n_input: int, drops: dict, sizes: dict) -> list[list]:
    """Read -> kept at each step, ``[step, count]``: documents, sentences, marked sentences,
    pairs of stage 2, pairs after stage 3's removals (duplicates, leakage, filtered rows),
    pairs in the splits after the balance."""
    earlier = earlier or {}
    flat: dict = {}
    _flatten("", {k: v for k, v in (drops or {}).items() if k != "balance"}, flat)
    removed = int(sum(flat.values()))
    steps = [("documents read", earlier.get("documents_read")), ("documents kept", earlier.get("documents_kept")),
             ("sentences", earlier.get("sentences")), ("sentences long enough", earlier.get("sentences_long")),
             ("sentences opening with a phrase", earlier.get("marked_sentences")),
             ("pairs (marked + neutral)", n_input), ("pairs after duplicates, leakage, filters", n_input - removed),
             ("pairs in the splits (after balance)", int(sum((sizes or {}).values())))]
    return [[name, int(n)] for name, n in steps if n is not None]


def chart_data(kept_results: list[dict], earlier: dict | None, n_input: int, drops: dict, sizes: dict) -> dict:
    """What the card's charts draw, from round 5's per-range results (length histograms,
    markers) and the counts of every stage: small, handed to the chart task."""
    markers: dict = {}
    for r in kept_results:
        for label, marker, count in r.get("markers", []):
            markers.setdefault(label, {})[marker] = markers.get(label, {}).get(marker, 0) + count
    phrases = {l: sorted(m.items(), key=lambda kv: (-kv[1], kv[0]))[:PHRASES_PER_LABEL]
               for l, m in sorted(markers.items()) if l is not None}
    return {"lengths": merge_histograms([h for r in kept_results for h in r.get("lengths", [])]),
            "phrases": {l: [list(x) for x in v] for l, v in phrases.items() if v},
            "funnel": funnel_steps(earlier, n_input, drops, sizes)}


def available_charts(charts: dict | None) -> list[str]:
    """The extra charts drawn for this data (a chart with nothing to draw is left out)."""
    return [k for k in CHART_FILES if (charts or {}).get(k)]


# ---------------------------------------------------------------------------- the semantic check

def check_info(check_stats: dict | None) -> dict:
    """The card's build entry of the semantic check (stage `check`'s stats block), or nothing
    when it did not run (the card then stays as it was)."""
    if not check_stats:
        return {}
    settings = check_stats["settings"]
    return {"semantic_check": {**settings, "input_pairs": check_stats["input_pairs"], "kept": check_stats["kept"],
                               "dropped": check_stats["dropped"]}}


def _check_lines(check: dict | None) -> list[str]:
    if not check:
        return []
    dropped = ", ".join(f"{n:,} {why.replace('_', ' ')}" for why, n in check["dropped"].items())
    return [f"- semantic check: encoder {check['encoder']}, head sha256 `{check['head_sha256']}`; marked pairs "
            f"kept at p(label right) >= {check['threshold']}, neutral ones at p(related) < "
            f"{check['neutral_threshold']}; {check['kept']:,} of {check['input_pairs']:,} pairs kept ({dropped} "
            "dropped; docs/label-quality.md \"The semantic check\")"]


# ---------------------------------------------------------------------------- body

def _kv_table(d: dict, head=("what", "count")) -> str:
    lines = [f"| {head[0]} | {head[1]} |", "|---|---:|"]
    for k, v in d.items():
        lines.append(f"| {k} | {v:,} |" if isinstance(v, int) else f"| {k} | {v} |")
    return "\n".join(lines)


def _flatten(prefix: str, value, out: dict) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        out[prefix] = value


def card_body(*, dataset: dict, stage_stats: dict, build: dict, leakage: dict, pairs_stats: dict | None = None,
              sentences_stats: dict | None = None, license="", chart: str | None = "class_distribution.png",
              examples: list | None = None, charts: dict | None = None) -> str:
    sizes = {s: dataset["splits"][s]["all"]["count"] for s in dataset["splits"]}
    v = build.get("versions", {})
    lines = [f"# {build.get('lang', '')} NLI corpus built by distant supervision", "",
             "Sentence pairs from running text whose second sentence opens with a linking phrase "
             "(the phrase is stripped and names the label), plus sampled neutral pairs, split by "
             "whole documents without leakage. Built with the NLI corpus engine.", "",
             "| split | pairs |", "|---|---:|"]
    lines += [f"| {s} | {n:,} |" for s, n in sizes.items()]
    lines += ["", "## Intended use and limitations", "", intended_use_section(build, dataset), "",
              "## Example pairs", "", examples_section(examples or []), ""]
    drawn = available_charts(charts) if chart else []
    settings = stage_stats["settings"]
    lines += ["## How it was built", "",
              f"- command: `{build.get('command_line', '')}`",
              f"- lexicon: `{build.get('lexicon')}` (sha256 `{build.get('lexicon_sha256')}`)"
              + (f", phrase set(s) {', '.join(build['phrase_set'])} added" if build.get("phrase_set") else ""),
              f"- seed: {build.get('seed')}; minimum sentence length: {build.get('min_chars')} characters",
              f"- splits: ratios {settings['split_ratios']}, balance `{settings['balance']}`, "
              f"at most {settings['max_eval_per_corpus'] or 'unlimited'} validation/test pairs per corpus; "
              "documents assigned whole to one split, stratified by label, "
              "visited in the order of a hash of doc_id and seed",
              *_unit_lines(stage_stats),
              f"- POS completeness filter: {_pos_text(build.get('pos_filter'))}",
              *_language_lines((sentences_stats or {}).get("language"), build.get("lang")),
              *_check_lines(build.get("semantic_check")),
              f"- versions: python {v.get('python')}, pyspark {v.get('pyspark')}, "
              f"spaCy {v.get('spacy') or 'not installed'}, "
              f"model {v.get('spacy_model') or '-'} {v.get('spacy_model_version') or '(not installed)'}"
              + (f" (license {v['spacy_model_license']})" if v.get("spacy_model_license") else "") + ", "
              f"nltk {v.get('nltk')}, mwparserfromhell {v.get('mwparserfromhell')}",
              f"- license: {license_text(license)} (the inputs' licenses). {LICENSE_NOTE}", ""]
    if build.get("corpora"):
        lines += ["| corpus | genre | format | role | license | site (the dump's siteinfo) |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| {c['name']} | {c['genre']} | {c['format']} | {c['role']} | {c.get('license', '-')} | "
                  f"{c.get('site') or '-'} |" for c in build["corpora"]]
        lines.append("")
    lines += ["## Class distribution", "", statistics.class_distribution_table(dataset), ""]
    if chart:
        lines += [f"![class distribution per split]({chart})", ""]
    genres = [c.get("genre") for c in build.get("corpora") or []]
    lines += ["## Estimated label precision", "", precision.markdown(stage_stats.get("label_precision"), genres), ""]
    lines += ["## Lengths and overlap (layout of RoNLI Table 2)", "",
              "Premise and hypothesis length in whitespace words and word overlap, per label and split. "
              + statistics.RONLI_NOTE, "",
              statistics.ronli_table(dataset), "",
              *_chart_lines(drawn, "lengths", "premise and hypothesis lengths per label"),
              "## Annotation-artefact indicators", "",
              "A hypothesis-only model exploits differences between labels in these numbers; "
              "`hypothesis inner-capital share` is the casing leak (a capital letter after the first character).", "",
              statistics.artefact_table(dataset), "", artefact_warnings_text(dataset), "",
              "## Most frequent markers", "", _markers_table(stage_stats.get("markers", {})), "",
              *_chart_lines(drawn, "phrases", "most frequent linking phrases per label"),
              "## Top PMI words of hypotheses per label (IndoNLI Table 9)", "", statistics.pmi_markdown(dataset), "",
              "## Top PMI words of premises per label", "",
              "The same PMI over the premises: a premise whose words announce the label is an artefact too.", "",
              statistics.pmi_markdown(dataset, side="premise"), "",
              "## Corpora per split", "", _corpora_table(stage_stats.get("corpora", {})), "",
              "## Leakage report", "", _leakage_text(leakage), "",
              "## Drop counts", "", *_chart_lines(drawn, "funnel", "what each step kept"),
              "Stage 3 (splits):", "", _drops_table(stage_stats.get("dropped", {})), ""]
    if pairs_stats:
        flat: dict = {}
        _flatten("", {k: v for k, v in pairs_stats.items() if k in ("rejected", "dropped", "drops")}, flat)
        if flat:
            lines += ["Stage 2 (pairs):", "", _kv_table(flat, ("reason", "pairs")), ""]
    if sentences_stats:
        flat = {}
        _flatten("", {k: v for k, v in sentences_stats.items()
                      if k in ("documents_dropped", "paragraphs_dropped", "cleaning", "dropped", "skipped")}, flat)
        if isinstance(sentences_stats.get("sentences"), dict) and "short" in sentences_stats["sentences"]:
            flat["sentences.short (kept, flagged)"] = sentences_stats["sentences"]["short"]
        if flat:
            lines += ["Stage 1 (sentences):", "", _kv_table(flat, ("reason", "count")), ""]
    written = [s for s, n in sizes.items() if n]  # an empty split is not written
    lines += ["## Files", "",
              ("- " + ", ".join(f"`{s}/`" for s in written) + ": Parquet (`datasets.load_dataset(\"path/to/splits\")`)"
               + (f"; not written, being empty: {', '.join(f'`{s}/`' for s in sizes if s not in written)}"
                  if len(written) < len(sizes) else "")) if written
              else "- no split: every split is empty (the run's warnings say why and what would fill them)",
              "- `stats.json`: every number of this card; `leakage.json`: the leakage checks",
              "- `class_distribution.png`" + "".join(f", `{CHART_FILES[k]}`" for k in drawn) + ": the charts above",
              "", "## Citation", "", citation_section(build, license), ""]
    return "\n".join(lines)


def _unit_lines(stage_stats: dict) -> list[str]:
    """Build-settings lines on blocks (docs/splits.md "Blocks") and splits lacking a label;
    none when every corpus was assigned by whole documents and every split holds every label."""
    blocked = {c: u for c, u in (stage_stats.get("unit") or {}).items() if u.get("unit") == "block"}
    lines = [f"- unit of assignment in corpus {c}: blocks of consecutive paragraphs of about {u['pairs_per_block']} "
             f"pair{'s' if u['pairs_per_block'] != 1 else ''} ({u['blocks']} blocks of {u['documents']} documents) "
             "instead of whole documents"
             for c, u in sorted(blocked.items())]
    lines += [f"- warning: the {s} split holds no {', '.join(m)} pairs"
              for s, m in (stage_stats.get("missing_labels") or {}).items()]
    return lines


def _chart_lines(drawn: list[str], key: str, alt: str) -> list[str]:
    return [f"![{alt}]({CHART_FILES[key]})", ""] if key in drawn else []


def _language_lines(checked: dict | None, lang: str | None) -> list[str]:
    """The card's line on the language check (stats.json sentences.language), or none when
    the run did not record it."""
    if not checked:
        return []
    if checked.get("check") != "on":
        return [f"- language check: {checked.get('check')}: sentences in another language than {lang} were kept"]
    foreign = checked.get("foreign_sentences") or {}
    n = sum(foreign.values())
    which = ", ".join(f"{k} {v:,}" for k, v in list(foreign.items())[:6])
    return [f"- language check: every corpus's sample is {lang}; "
            + (f"{n:,} sentences in another language dropped ({checked.get('foreign_share', 0):.1%} of those "
               f"segmented: {which})" if n else "no sentence in another language found")]


def _pos_text(pos) -> str:
    if isinstance(pos, dict):
        parts = [str(pos.get("status", "unknown"))]
        if pos.get("model"):
            parts.append(f"model {pos['model']}")
        if pos.get("sentences_checked"):
            parts.append(f"{pos['sentences_checked']:,} sentences checked")
        rejected = pos.get("sentences_rejected") or {}
        if rejected:
            parts.append("rejected: " + ", ".join(f"{k} {v:,}" for k, v in rejected.items()))
        return "; ".join(parts)
    return str(pos) if pos is not None else "unknown (not recorded by the pairs stage)"


def _markers_table(markers: dict) -> str:
    lines = ["| label | marker | pairs |", "|---|---|---:|"]
    for label, m in markers.items():
        for marker, n in list(m.items())[:10]:
            lines.append(f"| {label} | {marker} | {n:,} |")
    return "\n".join(lines) if len(lines) > 2 else "(no marker column)"


def _corpora_table(corpora: dict) -> str:
    lines = ["| split | corpus | documents | pairs |", "|---|---|---:|---:|"]
    for key in sorted(corpora, key=lambda k: (SPLITS.index(k.split("|")[0]) if k.split("|")[0] in SPLITS else 9, k)):
        split, corpus = key.split("|", 1)
        lines.append(f"| {split} | {corpus} | {corpora[key]['documents']:,} | {corpora[key]['pairs']:,} |")
    return "\n".join(lines)


def _leakage_text(leakage: dict) -> str:
    checks = leakage.get("checks", {})
    ok = all(checks.get(k, 0) == 0 for k in ("documents_in_two_splits", "pairs_in_two_splits",
                                              "sentence_pairs_in_two_splits"))
    lines = [("PASSED: no document, pair or sentence pair (in either order, ignoring case and spacing) "
              "occurs in two splits." if ok else "FAILED: see the counts below."), "",
             "| check | count |", "|---|---:|"]
    lines += [f"| {k.replace('_', ' ')} | {v:,} |" for k, v in checks.items()]
    between = leakage.get("between_splits", {})
    if between:
        kinds = list(next(iter(between.values())))
        lines += ["", "| splits | " + " | ".join(kinds) + " |", "|---|" + "---:|" * len(kinds)]
        lines += [f"| {k.replace('|', ' / ')} | " + " | ".join(f"{v[x]:,}" for x in kinds) + " |"
                  for k, v in between.items()]
    lines += ["", "Shared hypotheses are reported, not removed: the same sentence can occur in two "
              "documents (boilerplate); the pairs around it differ."]
    near = leakage.get("near_duplicates")
    if near:  # docs/neardup.md; absent with --near-duplicates off
        lines += ["", "### Near-duplicates", "",
                  f"Near-duplicates: {settings_line(near['settings'])}. Documents joined by a near-duplicate "
                  "hypothesis (identical ones included) are assigned to one split; counted over the pairs "
                  "before the balance cut.", "",
                  "| check | count |", "|---|---:|",
                  f"| near-duplicate hypotheses in two splits | {near['hypotheses_in_two_splits']:,} |",
                  f"| near-duplicate pairs (premise and hypothesis) in two splits | {near['pairs_in_two_splits']:,} |"]
    return "\n".join(lines)


def _drops_table(drops: dict) -> str:
    flat: dict = {}
    _flatten("", drops, flat)
    return _kv_table(flat, ("reason", "pairs")) if flat else "(none)"


# ---------------------------------------------------------------------------- chart

def plot_class_distribution(dataset: dict, path: Path) -> Path:
    """Grouped bars: pairs per label in each split (matplotlib, Agg backend)."""
    plt = _pyplot()
    splits = list(dataset["splits"])
    labels = [l for l in label_names(l for s in splits for l in dataset["splits"][s]["labels"])
              if any(l in dataset["splits"][s]["labels"] for s in splits)]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    width = 0.8 / max(len(splits), 1)
    for i, split in enumerate(splits):
        counts = [dataset["splits"][split]["labels"].get(l, {"count": 0})["count"] for l in labels]
        xs = [j + (i - (len(splits) - 1) / 2) * width for j in range(len(labels))]
        bars = ax.bar(xs, counts, width, label=f"{split} ({sum(counts):,})")
        ax.bar_label(bars, fmt="%d", fontsize=7)
    ax.set_xticks(range(len(labels)), labels)
    ax.yaxis.set_major_locator(plt.MaxNLocator(integer=True))  # counts: no 1.25 pairs
    ax.set_ylabel("pairs")
    ax.set_title("Class distribution per split")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=len(splits), frameon=False)
    ax.margins(y=0.12)
    return _save(fig, path)


def write_chart(counts: Mapping, folder: str) -> str:
    """`plot_class_distribution` of ``{split: {label: pairs}}`` (every split, labels with
    pairs) as ``<folder>/class_distribution.png`` through `extractor.io.fs` (a bucket too):
    the stage draws it in a task while the rows are written."""
    import tempfile

    dataset = {"splits": {s: {"labels": {l: {"count": n} for l, n in sorted(labels.items())}}
                          for s, labels in counts.items()}}
    target = fs.join(folder, "class_distribution.png")
    with tempfile.TemporaryDirectory() as tmp:
        fs.write_bytes(target, plot_class_distribution(dataset, Path(tmp) / "chart.png").read_bytes())
    return target


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})  # no version stamp: identical bytes on reruns
    _pyplot().close(fig)
    return path


def plot_lengths(histograms: list[list], path: Path) -> Path:
    """Premise and hypothesis lengths (whitespace words) per label, all splits together: one
    panel per side, one line per label (share of the label's pairs per length)."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), dpi=100, sharey=True)
    names = label_names(l for l, _, _ in histograms)
    for ax, side in zip(axes, ("premise", "hypothesis")):
        for label in names:
            counts = next((c for l, s, c in histograms if l == label and s == side), None)
            if not counts or not sum(counts):
                continue
            total = sum(counts)
            mean = sum(i * n for i, n in enumerate(counts)) / total
            ax.step(range(len(counts)), [n / total for n in counts], where="mid",
                    label=f"{label} (mean {'≥ ' if counts[-1] else ''}{mean:.1f})")
        ax.set_title(f"{side} length")
        ax.legend(fontsize=7, frameon=False)
    used = [i for _, _, c in histograms for i, n in enumerate(c) if n]
    last = len(histograms[0][2]) - 1 if histograms else None
    for ax in axes:
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
        if used:  # up to the longest sentence, not the empty bins after it
            ax.set_xlim(-0.5, max(used) + 1.5)
        # the last bin's note only where the axis shows that bin
        ax.set_xlabel(f"whitespace words (last bin: {last} and more)" if used and max(used) == last
                      else "whitespace words")
    axes[0].set_ylabel("share of the label's pairs")
    return _save(fig, path)


def plot_phrases(phrases: dict, path: Path) -> Path:
    """The most frequent linking phrases of each marked label in the splits (horizontal bars)."""
    plt = _pyplot()
    labels = [l for l in label_names(phrases) if phrases.get(l)]
    rows = max(len(phrases[l]) for l in labels)
    fig, axes = plt.subplots(1, len(labels), figsize=(3.4 * len(labels), 0.35 * rows + 1.4), dpi=100, squeeze=False)
    for ax, label in zip(axes[0], labels):
        items = phrases[label][::-1]
        bars = ax.barh([p for p, _ in items], [n for _, n in items], color="tab:blue")
        ax.bar_label(bars, fmt="%d", fontsize=7)
        ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))  # pairs: whole numbers
        ax.set_title(label)
        ax.tick_params(axis="y", labelsize=7)
        ax.margins(x=0.15)
    fig.suptitle("Most frequent linking phrases per label (pairs in the splits)", fontsize=10)
    return _save(fig, path)


def plot_funnel(steps: list[list], path: Path) -> Path:
    """Read -> kept at each step of the three stages (horizontal bars, log scale: documents,
    sentences and pairs differ by orders of magnitude)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.42 * len(steps) + 1.2), dpi=100)
    names, counts = [n for n, _ in steps][::-1], [max(c, 1) for _, c in steps][::-1]
    colors = ["tab:green" if n.startswith("pairs") else "tab:orange" if n.startswith("sentences") else "tab:gray"
              for n in names]
    bars = ax.barh(names, counts, color=colors)
    ax.bar_label(bars, labels=[f"{c:,}" for _, c in steps][::-1], fontsize=8, padding=2)
    ax.set_xscale("log")
    ax.margins(x=0.15)
    ax.set_xlabel("count (log scale)")
    ax.set_title("From the input to the splits: what each step kept")
    return _save(fig, path)


_PLOTS: dict[str, Callable[[Any, Path], Path]] = {"lengths": plot_lengths, "phrases": plot_phrases,
                                                  "funnel": plot_funnel}


def write_charts(charts: dict | None, folder: str | Path) -> list[str]:
    """The card's other charts (`CHART_FILES`: lengths per label, top phrases per label, the
    drop funnel) of `chart_data` into ``folder`` through `extractor.io.fs` (a bucket too); a
    chart with nothing to draw is left out. Returns the paths written."""
    import tempfile

    written: list[str] = []
    if charts is None:
        return written
    with tempfile.TemporaryDirectory() as tmp:
        for key in available_charts(charts):
            target = fs.join(str(folder), CHART_FILES[key])
            fs.write_bytes(target, _PLOTS[key](charts[key], Path(tmp) / CHART_FILES[key]).read_bytes())
            written.append(target)
    return written


# ---------------------------------------------------------------------------- files

def write_card_files(folder: Path, *, dataset: dict, stage_stats: dict, build: dict, schema, lang: str,
                     license: str | list[str], leakage: dict, pairs_stats: dict | None = None,
                     sentences_stats: dict | None = None, num_bytes: dict | None = None,
                     chart: bool = True, examples: list | None = None, charts: dict | None = None) -> list[Path]:
    """README.md, class_distribution.png and the other charts of ``charts`` (`chart_data`;
    unless ``chart`` is false: the stage drew them already, `write_chart`, `write_charts`),
    stats.json and leakage.json into ``folder``. ``examples``: `merge_examples`' pairs."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    sizes = {s: int(dataset["splits"][s]["all"]["count"]) for s in dataset["splits"]}
    labels = {l for s in dataset["splits"].values() for l in s["labels"]}
    header = yaml_header(lang=lang, license=license, sizes=sizes, schema=schema, labels=labels, num_bytes=num_bytes)
    body = card_body(dataset=dataset, stage_stats=stage_stats, build=build, leakage=leakage,
                     pairs_stats=pairs_stats, sentences_stats=sentences_stats, license=license,
                     examples=examples, charts=charts)
    readme = folder / "README.md"
    readme.write_text("---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True) + "---\n\n" + body,
                      encoding="utf-8")
    png = plot_class_distribution(dataset, folder / "class_distribution.png") if chart else None
    others = [Path(p) for p in write_charts(charts, folder)] if chart else []
    stats_path = folder / "stats.json"
    stats_path.write_text(json.dumps({**dataset, "build": build, "stage": stage_stats}, indent=2, sort_keys=True,
                                     ensure_ascii=False) + "\n", encoding="utf-8")
    leak_path = folder / "leakage.json"
    leak_path.write_text(json.dumps({**leakage, "removed": {k: v for k, v in stage_stats.get("dropped", {}).items()
                                                            if k != "balance"}},
                                    indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return [p for p in (readme, png, *others, stats_path, leak_path) if p is not None]
