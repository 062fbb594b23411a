"""The dataset card of `splits/` (README.md with a Hugging Face YAML header), the class
distribution chart, `stats.json` and `leakage.json`.

Pure functions of plain dicts (the statistics are computed by `extractor.statistics`
and aggregated by the Spark stage), so the card can be tested without Spark.
"""
from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pyarrow as pa
import yaml

from extractor import fs
from extractor import neardup
from extractor import statistics as st
from extractor.statistics import precision
from extractor.lexicon import CANONICAL_LABELS
from extractor.names import SPLITS

LICENSE_NOTE = ("Wikipedia text is licensed CC BY-SA (attribution and share-alike apply to this derived "
                "dataset); other sources carry their own terms: set --license to match them.")


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
        "corpora": [{"name": c.name, "genre": c.genre, "format": c.format, "role": c.role} for c in (ctx.corpora or [])],
        "versions": {"python": platform.python_version(), "pyspark": _package_version("pyspark"),
                     "spacy": _package_version("spacy"), "spacy_model": model,
                     "spacy_model_version": ("rule-based" if model and model.startswith("rules:")
                                             else _package_version(model)),
                     "spacy_model_license": getattr(info, "license", None), "nltk": _package_version("nltk"),
                     "mwparserfromhell": _package_version("mwparserfromhell")},
        "pos_filter": pos if pos is not None else getattr(args, "pos_filter", None),
        "spark_master": ctx.spark.sparkContext.master if ctx.spark is not None else None,
    }


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


def yaml_header(*, lang: str, license: str, sizes: dict[str, int], schema=None, labels=(),
                num_bytes: dict[str, int] | None = None, pretty_name: str | None = None) -> dict:
    """The Hugging Face card metadata; empty splits are left out (`datasets` cannot read an
    empty Parquet split)."""
    present = [s for s in SPLITS if sizes.get(s)]
    total = sum(sizes.values())
    size_cat = ("n<1K" if total < 1_000 else "1K<n<10K" if total < 10_000 else "10K<n<100K" if total < 100_000
                else "100K<n<1M" if total < 1_000_000 else "1M<n<10M" if total < 10_000_000 else "10M<n<100M")
    header = {
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
              sentences_stats: dict | None = None, license: str = "", chart: str | None = "class_distribution.png") -> str:
    sizes = {s: dataset["splits"][s]["all"]["count"] for s in dataset["splits"]}
    v = build.get("versions", {})
    lines = [f"# {build.get('lang', '')} NLI corpus built by distant supervision", "",
             "Sentence pairs from running text whose second sentence opens with a linking phrase "
             "(the phrase is stripped and names the label), plus sampled neutral pairs, split by "
             "whole documents without leakage. Built with the NLI corpus engine.", "",
             "| split | pairs |", "|---|---:|"]
    lines += [f"| {s} | {n:,} |" for s, n in sizes.items()]
    lines += ["", "## How it was built", "",
              f"- command: `{build.get('command_line', '')}`",
              f"- lexicon: `{build.get('lexicon')}` (sha256 `{build.get('lexicon_sha256')}`)"
              + (f", phrase set(s) {', '.join(build['phrase_set'])} added" if build.get("phrase_set") else ""),
              f"- seed: {build.get('seed')}; minimum sentence length: {build.get('min_chars')} characters",
              f"- splits: ratios {stage_stats['settings']['split_ratios']}, balance `{stage_stats['settings']['balance']}`, "
              f"at most {stage_stats['settings']['max_eval_per_corpus'] or 'unlimited'} validation/test pairs per corpus; "
              "documents assigned whole to one split, stratified by label, visited in the order of a hash of doc_id and seed",
              *_unit_lines(stage_stats),
              f"- POS completeness filter: {_pos_text(build.get('pos_filter'))}",
              f"- versions: python {v.get('python')}, pyspark {v.get('pyspark')}, spaCy {v.get('spacy') or 'not installed'}, "
              f"model {v.get('spacy_model') or '-'} {v.get('spacy_model_version') or '(not installed)'}"
              + (f" (license {v['spacy_model_license']})" if v.get("spacy_model_license") else "") + ", "
              f"nltk {v.get('nltk')}, mwparserfromhell {v.get('mwparserfromhell')}",
              f"- license: {license}. {LICENSE_NOTE}", ""]
    if build.get("corpora"):
        lines += ["| corpus | genre | format | role |", "|---|---|---|---|"]
        lines += [f"| {c['name']} | {c['genre']} | {c['format']} | {c['role']} |" for c in build["corpora"]]
        lines.append("")
    lines += ["## Class distribution", "", st.class_distribution_table(dataset), ""]
    if chart:
        lines += [f"![class distribution per split]({chart})", ""]
    lines += ["## Estimated label precision", "", precision.markdown(stage_stats.get("label_precision")), ""]
    lines += ["## Lengths and overlap (layout of RoNLI Table 2)", "",
              "Premise and hypothesis length in whitespace words and word overlap, per label and split. "
              + st.RONLI_NOTE, "",
              st.ronli_table(dataset), "",
              "## Annotation-artefact indicators", "",
              "A hypothesis-only model exploits differences between labels in these numbers; "
              "`hypothesis inner-capital share` is the casing leak (a capital letter after the first character).", "",
              st.artefact_table(dataset), "",
              "## Most frequent markers", "", _markers_table(stage_stats.get("markers", {})), "",
              "## Top PMI words of hypotheses per label (IndoNLI Table 9)", "", st.pmi_markdown(dataset), "",
              "## Top PMI words of premises per label", "",
              "The same PMI over the premises: a premise whose words announce the label is an artefact too.", "",
              st.pmi_markdown(dataset, side="premise"), "",
              "## Corpora per split", "", _corpora_table(stage_stats.get("corpora", {})), "",
              "## Leakage report", "", _leakage_text(leakage), "",
              "## Drop counts", "", "Stage 3 (splits):", "", _drops_table(stage_stats.get("dropped", {})), ""]
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
    lines += ["## Files", "",
              "- `train/`, `validation/`, `test/`: Parquet (`datasets.load_dataset(\"path/to/splits\")`)",
              "- `stats.json`: every number of this card; `leakage.json`: the leakage checks",
              "- `class_distribution.png`: the chart above", ""]
    return "\n".join(lines)


def _unit_lines(stage_stats: dict) -> list[str]:
    """Build-settings lines on blocks (docs/splits.md "Blocks") and splits lacking a label;
    none when every corpus was assigned by whole documents and every split holds every label."""
    blocked = {c: u for c, u in (stage_stats.get("unit") or {}).items() if u.get("unit") == "block"}
    lines = [f"- unit of assignment in corpus {c}: blocks of consecutive paragraphs of about {u['pairs_per_block']} "
             f"pair{'s' if u['pairs_per_block'] != 1 else ''} ({u['blocks']} blocks of {u['documents']} documents) instead of whole documents"
             for c, u in sorted(blocked.items())]
    lines += [f"- warning: the {s} split holds no {', '.join(m)} pairs"
              for s, m in (stage_stats.get("missing_labels") or {}).items()]
    return lines


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
                  f"Near-duplicates: {neardup.settings_line(near['settings'])}. Documents joined by a near-duplicate "
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
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    ax.set_ylabel("pairs")
    ax.set_title("Class distribution per split")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=len(splits), frameon=False)
    ax.margins(y=0.12)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})  # no version stamp: identical bytes on reruns
    plt.close(fig)
    return path


def write_chart(counts: dict, folder: str) -> str:
    """`plot_class_distribution` of ``{split: {label: pairs}}`` (every split, labels with
    pairs) as ``<folder>/class_distribution.png`` through `extractor.fs` (a bucket too):
    the stage draws it in a task while the rows are written."""
    import tempfile

    dataset = {"splits": {s: {"labels": {l: {"count": n} for l, n in sorted(labels.items())}}
                          for s, labels in counts.items()}}
    target = fs.join(folder, "class_distribution.png")
    with tempfile.TemporaryDirectory() as tmp:
        fs.write_bytes(target, plot_class_distribution(dataset, Path(tmp) / "chart.png").read_bytes())
    return target


# ---------------------------------------------------------------------------- files

def write_card_files(folder: Path, *, dataset: dict, stage_stats: dict, build: dict, schema, lang: str,
                     license: str, leakage: dict, pairs_stats: dict | None = None,
                     sentences_stats: dict | None = None, num_bytes: dict | None = None,
                     chart: bool = True) -> list[Path]:
    """README.md, class_distribution.png (unless ``chart`` is false: the stage drew it
    already, `write_chart`), stats.json and leakage.json into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    sizes = {s: int(dataset["splits"][s]["all"]["count"]) for s in dataset["splits"]}
    labels = {l for s in dataset["splits"].values() for l in s["labels"]}
    header = yaml_header(lang=lang, license=license, sizes=sizes, schema=schema, labels=labels, num_bytes=num_bytes)
    body = card_body(dataset=dataset, stage_stats=stage_stats, build=build, leakage=leakage,
                     pairs_stats=pairs_stats, sentences_stats=sentences_stats, license=license)
    readme = folder / "README.md"
    readme.write_text("---\n" + yaml.safe_dump(header, sort_keys=False, allow_unicode=True) + "---\n\n" + body,
                      encoding="utf-8")
    png = plot_class_distribution(dataset, folder / "class_distribution.png") if chart else None
    stats_path = folder / "stats.json"
    stats_path.write_text(json.dumps({**dataset, "build": build, "stage": stage_stats}, indent=2, sort_keys=True,
                                     ensure_ascii=False) + "\n", encoding="utf-8")
    leak_path = folder / "leakage.json"
    leak_path.write_text(json.dumps({**leakage, "removed": {k: v for k, v in stage_stats.get("dropped", {}).items()
                                                            if k != "balance"}},
                                    indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return [p for p in (readme, png, stats_path, leak_path) if p is not None]
