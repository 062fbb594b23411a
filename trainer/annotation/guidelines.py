"""The label set, the per-language label guidelines and the Label Studio labeling config.

Guidelines come from the ``annotation`` key of ``phrase_lexicons/<lang>.yaml``::

    annotation:
      title: ...            # one line
      instructions: ...     # a short paragraph
      premise: Sentence A   # how the two sentences are called
      hypothesis: Sentence B
      labels:
        contrasting: {name: Contrasting, guideline: ...}   # canonical label (or a label_map name)
        ...

A language without that key falls back to English (``en.yaml``), said in the manifest.
"""
from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import quoteattr

import yaml

from extractor.core.errors import UserError, yaml_problem
from extractor.core.names import LABELS as CANONICAL_LABELS
from extractor.lexicon.lexicon import LEXICON_DIR, available_languages

FALLBACK_LANG = "en"


@dataclass(frozen=True)
class Guidelines:
    lang: str                     # the language asked for
    source: str                   # the lexicon file the text comes from
    title: str
    instructions: str
    premise: str
    hypothesis: str
    labels: tuple[str, ...]       # the label set, in display order
    names: dict[str, str] = field(default_factory=dict)       # label -> name shown to annotators
    guidelines: dict[str, str] = field(default_factory=dict)  # label -> definition
    aliases: dict[str, str] = field(default_factory=dict)     # other spellings (label_map) -> label
    fallback: bool = False        # True when the language had no `annotation` key

    def name(self, label: str) -> str:
        return self.names.get(label) or label


def label_set(auto_labels, given: list[str] | None = None) -> tuple[str, ...]:
    """The labels annotators choose from: ``given``, else the canonical four when the data's
    labels are among them, else the data's labels sorted."""
    if given:
        labels = tuple(dict.fromkeys(x.strip() for x in given if x.strip()))
        if len(labels) < 2:
            raise UserError(f"--labels needs at least two labels, got {list(labels)}")
        return labels
    present = {str(x) for x in auto_labels if x is not None}
    if present <= set(CANONICAL_LABELS):
        return CANONICAL_LABELS
    return tuple(sorted(present))


def _read_lexicon(lang: str) -> tuple[dict, Path]:
    path = LEXICON_DIR / f"{lang}.yaml"
    if not path.exists():
        langs = ", ".join(available_languages()) or "none"
        raise UserError(f"unknown language {lang!r}: no {path}; available lexicons: {langs} (--lang)")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML: {yaml_problem(exc)}") from None
    return raw, path


def load_guidelines(lang: str, labels: tuple[str, ...]) -> Guidelines:
    """Guidelines for ``labels`` in ``lang`` (falls back to English text where the lexicon has none)."""
    raw, path = _read_lexicon(lang)
    block = raw.get("annotation")
    fallback = False
    label_map = {str(k): str(v) for k, v in (raw.get("label_map") or {}).items()}
    if block is None:
        fallback = True
        raw_en, path = _read_lexicon(FALLBACK_LANG)
        block = raw_en.get("annotation") or {}
        label_map = {str(k): str(v) for k, v in (raw_en.get("label_map") or {}).items()}
    if not isinstance(block, dict):
        raise UserError(f"{path}: 'annotation' must be a mapping (see docs/annotation.md)")
    texts = {}
    for key, default in (("title", "NLI"), ("instructions", ""), ("premise", "Sentence A"),
                         ("hypothesis", "Sentence B")):
        value = block.get(key, default)
        if not isinstance(value, str):
            raise UserError(f"{path}: annotation.{key} must be a string")
        texts[key] = " ".join(value.split())
    per_label = block.get("labels") or {}
    if not isinstance(per_label, dict):
        raise UserError(f"{path}: annotation.labels must map labels to {{name, guideline}}")
    names, guides = {}, {}
    for key, spec in per_label.items():
        label = label_map.get(str(key), str(key))
        if not isinstance(spec, dict) or not isinstance(spec.get("name", ""), str) \
                or not isinstance(spec.get("guideline", ""), str):
            raise UserError(f"{path}: annotation.labels.{key} must be a mapping with string 'name' and 'guideline'")
        names[label] = " ".join(spec.get("name", label).split()) or label
        guides[label] = " ".join(spec.get("guideline", "").split())
    aliases = {k: v for k, v in label_map.items() if v in labels}
    source = str(path.relative_to(LEXICON_DIR.parent)) if path.is_relative_to(LEXICON_DIR.parent) else str(path)
    g = Guidelines(lang=lang, source=source, title=texts["title"], instructions=texts["instructions"],
                   premise=texts["premise"], hypothesis=texts["hypothesis"], labels=tuple(labels),
                   names={l: names.get(l, l) for l in labels}, guidelines={l: guides.get(l, "") for l in labels},
                   aliases=aliases, fallback=fallback)
    label_lookup(g)  # fails early when two names fold to the same key
    return g


# --------------------------------------------------------------------------- label spellings


def fold(text: str) -> str:
    """Case, diacritics, cedillas and spacing folded: 'Implicație', 'implicatie ' -> 'implicatie'."""
    decomposed = unicodedata.normalize("NFKD", str(text))
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return re.sub(r"\s+", " ", bare).strip().casefold()


def label_lookup(g: Guidelines) -> dict[str, str]:
    """Folded spelling -> label: the label itself, its shown name, and the lexicon's label_map names."""
    table: dict[str, str] = {}
    for spelling, label in [*((l, l) for l in g.labels), *((g.names[l], l) for l in g.labels),
                            *g.aliases.items()]:
        key = fold(spelling)
        if not key:
            continue
        if table.get(key, label) != label:
            raise UserError(f"{g.source}: the label names {spelling!r} of {label!r} and of {table[key]!r} "
                            "are the same once case and diacritics are ignored; rename one")
        table[key] = label
    return table


# --------------------------------------------------------------------------- renderings


def labeling_config(g: Guidelines) -> str:
    """Label Studio labeling config: the two sentences and one single-choice question.

    Each choice shows the name in the dataset's language and stores the canonical label
    (``alias``); its guideline is the choice's hint. Nothing but the pair is shown.
    """
    lines = ["<View>", f"  <Header value={quoteattr(g.title)}/>"]
    if g.instructions:
        lines.append(f"  <Header value={quoteattr(g.instructions)} size=\"6\"/>")
    lines += [
        f"  <Header value={quoteattr(g.premise)} size=\"5\"/>",
        '  <Text name="premise" value="$premise"/>',
        f"  <Header value={quoteattr(g.hypothesis)} size=\"5\"/>",
        '  <Text name="hypothesis" value="$hypothesis"/>',
        '  <Choices name="label" toName="hypothesis" choice="single-radio" required="true">',
    ]
    for label in g.labels:
        hint = f" hint={quoteattr(g.guidelines[label])}" if g.guidelines.get(label) else ""
        lines.append(f"    <Choice value={quoteattr(g.name(label))} alias={quoteattr(label)}{hint}/>")
    lines += ["  </Choices>"]
    for label in g.labels:  # the guidelines stay visible under the question
        if g.guidelines.get(label):
            lines.append(f"  <Header value={quoteattr(g.name(label) + ': ' + g.guidelines[label])} size=\"6\"/>")
    lines.append("</View>")
    return "\n".join(lines) + "\n"


def instructions_html(g: Guidelines) -> str:
    """The project's instructions (Label Studio ``expert_instruction``)."""
    items = "".join(f"<li><b>{html.escape(g.name(l))}</b>: {html.escape(g.guidelines.get(l, ''))}</li>"
                    for l in g.labels)
    return f"<h3>{html.escape(g.title)}</h3><p>{html.escape(g.instructions)}</p><ul>{items}</ul>"


def instructions_markdown(g: Guidelines, csv_names: list[str]) -> str:
    """instructions.md for annotators who fill a CSV."""
    lines = [f"# {g.title}", "", g.instructions, ""]
    for label in g.labels:
        lines.append(f"- **{g.name(label)}** (`{label}`): {g.guidelines.get(label, '')}".rstrip())
    values = ", ".join(f"`{label}`" for label in g.labels)
    names = ", ".join(f"`{g.name(label)}`" for label in g.labels if g.name(label) != label)
    lines += [
        "",
        "---",
        "",
        f"CSV: `{g.premise}` is the column `premise`, `{g.hypothesis}` the column `hypothesis`.",
        f"Write one of {values}" + (f" (or {names})" if names else "")
        + " in the `label` column of every row; leave it empty to skip a pair. "
        "Do not change `item_id`, do not add or remove rows, keep the file name.",
        "",
        "Files: " + ", ".join(f"`{n}`" for n in csv_names),
        "",
    ]
    return "\n".join(lines)
