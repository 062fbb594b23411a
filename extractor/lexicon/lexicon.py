"""Load and validate `phrase_lexicons/<lang>.yaml` (format: phrase_lexicons/README.md)."""
from __future__ import annotations

import hashlib
import importlib.util
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from extractor.core.errors import UserError, yaml_problem
from extractor.core.names import LABELS, MARKED_LABELS  # noqa: F401  (MARKED_LABELS re-exported)
from extractor.pairs.label_filters import LabelFilters, added_phrases, compile_filters
from extractor.pairs.rule_pos import PREFIX, is_rule_model

CANONICAL_LABELS = LABELS  # extractor.core.names


def _lexicon_resources():
    """The bundled lexicons: package data of `phrase_lexicons` (importlib.resources), so that
    a wheel-installed engine, a --py-files zip and a checkout all find them."""
    import importlib.resources

    try:
        return importlib.resources.files("phrase_lexicons")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / "phrase_lexicons"


LEXICON_RESOURCES = _lexicon_resources()  # a Traversable (a directory, or a folder inside a zip)
# The same as a filesystem path where it is one (a checkout, an installed wheel).
LEXICON_DIR = Path(str(LEXICON_RESOURCES)) if isinstance(LEXICON_RESOURCES, Path) else \
    Path(__file__).resolve().parents[2] / "phrase_lexicons"
_KNOWN_KEYS = {"lang", "name", "spacy_model", "spacy_install", "sample_input", "label_map",
               "matching", "phrases", "wiki", "segmentation", "pos_filter", "stress_tests",
               "annotation", "spacy_models", "phrase_sets", "label_filters", "measured_precision"}
_MODEL_KEYS = {"name", "pip", "pip_options", "install", "license", "about"}


class LexiconError(UserError, ValueError):
    """A lexicon file that does not follow the format; the message names the file."""


@dataclass(frozen=True)
class SpacyModel:
    """One entry of a lexicon's `spacy_models` (in order of preference)."""
    name: str                       # importable package name (spacy.load(name))
    pip: str | None = None          # pip requirement when the model is on the package index
    pip_options: tuple[str, ...] = ()  # e.g. ("--no-deps",) for a model that pins an older spaCy
    install: str | None = None      # the command a person runs when pip cannot (spacy download)
    license: str | None = None
    about: str | None = None

    @property
    def install_command(self) -> str:
        if self.name.startswith("rules:"):
            return "nothing to install (rule-based tagger, extractor/pairs/rule_pos.py)"
        if self.pip:
            return " ".join(["pip install", *self.pip_options, self.pip])
        return self.install or f"python -m spacy download {self.name}"


# A word as the POS word lists see one: letters, a hyphen only inside (`CompleteWords`).
WORD = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*", re.U)


@dataclass(frozen=True)
class CompleteWords:
    """`pos_filter.complete_words`: word forms the language's tagger tags subject-like
    (NOUN, PRON, PROPN) or as a predicate (VERB, AUX) wherever they stand, derived from its
    own tags by benchmarks/pos_word_lists.py. A sentence holding a word of each list is
    complete (the POS filter's verdict) without tagging; the others are tagged."""
    subject: frozenset[str] = frozenset()
    predicate: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.subject and self.predicate)

    def complete(self, text: str) -> bool:
        words = set(WORD.findall(text.lower()))
        return not words.isdisjoint(self.predicate) and not words.isdisjoint(self.subject)


@dataclass(frozen=True)
class Lexicon:
    lang: str
    name: str
    path: Path
    sha256: str
    spacy_model: str | None
    spacy_install: str | None
    sample_input: Path | None
    phrases: dict[str, tuple[str, ...]]          # canonical label -> phrases
    fold_cedilla: bool = False
    match_without_diacritics: bool = False
    # Last words after which a phrase needs no separator ("Astfel că ...", "It follows that ...").
    open_endings: tuple[str, ...] = ()
    file_namespaces: tuple[str, ...] = ()
    category_namespaces: tuple[str, ...] = ()
    disambiguation_templates: tuple[str, ...] = ()
    list_page_title_patterns: tuple[str, ...] = ()
    drop_sections: tuple[str, ...] = ()
    abbreviations: tuple[str, ...] = ()
    subject_pos: tuple[str, ...] = ("NOUN", "PRON", "PROPN")
    predicate_pos: tuple[str, ...] = ("VERB", "AUX")
    complete_words: CompleteWords = field(default_factory=CompleteWords)
    stress_tests: dict = field(default_factory=dict)
    # Every model of `spacy_models`, in order of preference; `spacy_model` above is the
    # first of them that is installed (else the first listed), `spacy_install` its command.
    spacy_models: tuple[SpacyModel, ...] = ()
    # Named phrase sets of `phrase_sets` that were added to `phrases` (--phrase-set), and all
    # the file offers.
    phrase_set: tuple[str, ...] = ()
    phrase_sets_available: tuple[str, ...] = ()
    # `label_filters` compiled, less the parts --no-label-filter turned off
    # (extractor/pairs/label_filters.py); `measured_precision` as benchmarks/label_precision.py
    # wrote it (docs/label-quality.md).
    label_filters: LabelFilters = field(default_factory=LabelFilters)
    measured_precision: dict = field(default_factory=dict)

    def model_info(self, name: str | None) -> SpacyModel | None:
        return next((m for m in self.spacy_models if m.name == name), None)

    def normalize(self, text: str) -> str:
        """The matching key of a text: case-folded, cedillas folded, diacritics removed
        where the lexicon says so. Keeps one character per input character, so offsets
        into the key are offsets into the text."""
        return normalize_for_matching(text, self.fold_cedilla, self.match_without_diacritics)


_CEDILLA = str.maketrans({"ş": "ș", "Ş": "Ș", "ţ": "ț", "Ţ": "Ț"})


def normalize_for_matching(text: str, fold_cedilla: bool, strip_diacritics: bool) -> str:
    if fold_cedilla:
        text = text.translate(_CEDILLA)
    out = []
    for ch in text:
        low = ch.lower()
        if len(low) != 1:  # e.g. "İ".lower() has two code points: keep offsets aligned
            low = ch
        if strip_diacritics:
            base = unicodedata.normalize("NFD", low)[0]
            low = base if base.isalpha() else low
        out.append(low)
    return "".join(out)


def available_languages(directory=LEXICON_RESOURCES) -> list[str]:
    try:
        return sorted(p.name[:-len(".yaml")] for p in directory.iterdir() if p.name.endswith(".yaml"))
    except (FileNotFoundError, NotADirectoryError):
        return []


def lexicon_path(lang: str, directory=LEXICON_RESOURCES):
    """The bundled lexicon of a language (a Path, or a Traversable inside a zip)."""
    path = directory / f"{lang}.yaml"
    if not path.is_file():
        langs = ", ".join(available_languages(directory)) or "none"
        raise LexiconError(f"unknown language '{lang}': no {path}; available lexicons: {langs}")
    return path


def _strings(value, where: str, path: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise LexiconError(f"{path}: '{where}' must be a list of non-empty strings")
    return tuple(v.strip() for v in value)


def _spacy_models(raw, path: Path) -> tuple[SpacyModel, ...]:
    models = []
    for i, entry in enumerate(raw.get("spacy_models") or []):
        if isinstance(entry, str):
            entry = {"name": entry}
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise LexiconError(f"{path}: spacy_models[{i}] must be a model name or a mapping with a 'name'")
        unknown = set(entry) - _MODEL_KEYS
        if unknown:
            raise LexiconError(f"{path}: spacy_models[{i}]: unknown key(s) {sorted(unknown)}; "
                               f"known: {sorted(_MODEL_KEYS)}")
        models.append(SpacyModel(name=entry["name"], pip=entry.get("pip"),
                                 pip_options=_strings(entry.get("pip_options"), f"spacy_models[{i}].pip_options", path),
                                 install=entry.get("install"), license=entry.get("license"), about=entry.get("about")))
    if raw.get("spacy_model") and not any(m.name == raw["spacy_model"] for m in models):
        models.insert(0, SpacyModel(name=raw["spacy_model"], install=raw.get("spacy_install")))
    return tuple(models)


def model_installed(name: str | None) -> bool:
    """Whether a spaCy model package is importable (without loading it); a rule-based
    tagger ``rules:<lang>`` (extractor/pairs/rule_pos.py) is there when it is one we have."""
    if not name:
        return False
    if name.startswith(PREFIX):
        return is_rule_model(name)
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def preferred_model(models: tuple[SpacyModel, ...], installed=model_installed) -> SpacyModel | None:
    """The first model of the list that is installed, else the first listed (None if none)."""
    for m in models:
        if installed(m.name):
            return m
    return models[0] if models else None


def load_lexicon(lang_or_path: str | Path, directory=LEXICON_RESOURCES,
                 phrase_set: str | tuple[str, ...] | list[str] | None = None,
                 disabled_filters: frozenset = frozenset()) -> Lexicon:
    """Read and validate a lexicon by language code or by file path; ``phrase_set`` names
    phrase sets of its `phrase_sets` to add to `phrases` (--phrase-set, repeatable);
    ``disabled_filters`` the parts of its `label_filters` to leave out (--no-label-filter)."""
    path = Path(lang_or_path)
    if path.suffix not in (".yaml", ".yml"):
        path = lexicon_path(str(lang_or_path), directory)
    elif not path.is_file():
        raise LexiconError(f"{path}: no such lexicon file; give --lang a language code "
                           f"({', '.join(available_languages(directory)) or 'none bundled'}) or a YAML file")
    raw_bytes = path.read_bytes()
    path = Path(str(path))
    try:
        raw = yaml.safe_load(raw_bytes)
    except yaml.YAMLError as exc:
        raise LexiconError(f"{path}: not valid YAML: {yaml_problem(exc)}") from None
    if not isinstance(raw, dict):
        raise LexiconError(f"{path}: expected a mapping at the top level")
    unknown = set(raw) - _KNOWN_KEYS
    if unknown:
        raise LexiconError(f"{path}: unknown key(s) {sorted(unknown)}; known: {sorted(_KNOWN_KEYS)}")
    for key in ("lang", "phrases"):
        if key not in raw:
            raise LexiconError(f"{path}: missing required key '{key}'")
    matching = raw.get("matching") or {}
    fold_cedilla = bool(matching.get("fold_cedilla", False))
    no_diacritics = bool(matching.get("match_without_diacritics", False))
    sets = raw.get("phrase_sets") or {}
    if not isinstance(sets, dict):
        raise LexiconError(f"{path}: 'phrase_sets' must map set names to {{label: [phrases]}}")
    chosen = (phrase_set,) if isinstance(phrase_set, str) else tuple(phrase_set or ())
    raw_phrases = raw["phrases"]
    merged = {k: list(v or []) for k, v in raw_phrases.items()} if isinstance(raw_phrases, dict) else raw_phrases
    for name in chosen:
        if name not in sets:
            raise LexiconError(f"{path}: no phrase set '{name}'; available: {', '.join(sorted(sets)) or 'none'}")
        extra = sets[name] or {}
        extra = {k: v for k, v in extra.items() if k != "description"} if isinstance(extra, dict) else extra
        if not isinstance(extra, dict):
            raise LexiconError(f"{path}: phrase set '{name}' must map labels to lists of phrases")
        for label, items in extra.items():
            merged.setdefault(label, []).extend(_strings(items, f"phrase_sets.{name}.{label}", path))
    if "phrases" not in disabled_filters:  # measured phrases the language's default adds
        for label, items in added_phrases(raw.get("label_filters"), path).items():
            merged.setdefault(label, []).extend(items)
    phrases = _validate_phrases(merged, raw.get("label_map") or {}, path, fold_cedilla, no_diacritics)
    models = _spacy_models(raw, path)
    preferred = preferred_model(models)
    wiki = raw.get("wiki") or {}
    seg = raw.get("segmentation") or {}
    pos = raw.get("pos_filter") or {}
    for pattern in wiki.get("list_page_title_patterns") or []:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise LexiconError(f"{path}: bad list_page_title_patterns entry {pattern!r}: {exc}") from None
    sample = raw.get("sample_input")

    def normalize(text: str) -> str:
        return normalize_for_matching(text, fold_cedilla, no_diacritics)

    filters = compile_filters(raw.get("label_filters"), normalize, phrases, path, frozenset(disabled_filters))
    measured = raw.get("measured_precision") or {}
    if not isinstance(measured, dict):
        raise LexiconError(f"{path}: measured_precision must be a mapping (benchmarks/label_precision.py writes it)")
    identity = ("\0phrase_set=" + ",".join(chosen)).encode() if chosen else b""
    if filters.disabled:  # the filters a run turns off change what it emits
        identity += ("\0no_label_filter=" + ",".join(sorted(filters.disabled))).encode()
    return Lexicon(
        lang=str(raw["lang"]), name=str(raw.get("name", raw["lang"])), path=path,
        # a phrase set changes what the lexicon matches: it is part of the identity
        sha256=hashlib.sha256(raw_bytes + identity).hexdigest(),
        spacy_model=preferred.name if preferred else None,
        spacy_install=preferred.install_command if preferred else None,
        sample_input=_sample_input(path, sample),
        phrases=phrases, fold_cedilla=fold_cedilla, match_without_diacritics=no_diacritics,
        open_endings=_strings(matching.get("open_endings"), "matching.open_endings", path),
        file_namespaces=_strings(wiki.get("file_namespaces"), "wiki.file_namespaces", path),
        category_namespaces=_strings(wiki.get("category_namespaces"), "wiki.category_namespaces", path),
        disambiguation_templates=_strings(wiki.get("disambiguation_templates"), "wiki.disambiguation_templates", path),
        list_page_title_patterns=_strings(wiki.get("list_page_title_patterns"), "wiki.list_page_title_patterns", path),
        drop_sections=_strings(wiki.get("drop_sections"), "wiki.drop_sections", path),
        abbreviations=_strings(seg.get("abbreviations"), "segmentation.abbreviations", path),
        subject_pos=_strings(pos.get("subject_pos"), "pos_filter.subject_pos", path) or ("NOUN", "PRON", "PROPN"),
        predicate_pos=_strings(pos.get("predicate_pos"), "pos_filter.predicate_pos", path) or ("VERB", "AUX"),
        complete_words=_complete_words(pos.get("complete_words"), path),
        stress_tests=raw.get("stress_tests") or {},
        spacy_models=models, phrase_set=chosen, phrase_sets_available=tuple(sorted(sets)),
        label_filters=filters, measured_precision=measured,
    )


def _complete_words(raw, path: Path) -> CompleteWords:
    if raw is None:
        return CompleteWords()
    if not isinstance(raw, dict) or set(raw) - {"subject", "predicate"}:
        raise LexiconError(f"{path}: pos_filter.complete_words must map 'subject' and 'predicate' to word lists")
    subject = _strings(raw.get("subject"), "pos_filter.complete_words.subject", path)
    predicate = _strings(raw.get("predicate"), "pos_filter.complete_words.predicate", path)
    return CompleteWords(subject=frozenset(w.lower() for w in subject),
                         predicate=frozenset(w.lower() for w in predicate))


def _sample_input(path: Path, sample: str | None) -> Path | None:
    """The lexicon's bundled sample corpus (relative to the repository: phrase_lexicons/..),
    or None where it is not there (an installed wheel ships no samples)."""
    if not sample:
        return None
    found = path.resolve().parents[1] / sample
    return found if found.exists() else None


def _validate_phrases(raw_phrases, label_map, path: Path, fold_cedilla: bool, no_diacritics: bool):
    if not isinstance(raw_phrases, dict) or not raw_phrases:
        raise LexiconError(f"{path}: 'phrases' must map labels to lists of phrases")
    phrases: dict[str, list[str]] = {}
    seen: dict[str, str] = {}  # matching key -> canonical label
    for paper_label, items in raw_phrases.items():
        label = label_map.get(paper_label, paper_label)
        if label not in MARKED_LABELS:
            raise LexiconError(
                f"{path}: unknown label '{paper_label}' (maps to '{label}'); labels with phrases must map "
                f"to one of {', '.join(MARKED_LABELS)} through label_map")
        if not items:
            raise LexiconError(f"{path}: the phrase list of '{paper_label}' is empty")
        for phrase in _strings(items, f"phrases.{paper_label}", path):
            key = normalize_for_matching(phrase, fold_cedilla, no_diacritics)
            if key in seen and seen[key] != label:
                raise LexiconError(f"{path}: phrase '{phrase}' is listed under two labels ({seen[key]} and {label})")
            if key in seen:
                continue  # the same phrase twice under one label (e.g. two spellings): keep one
            seen[key] = label
            phrases.setdefault(label, []).append(phrase)
    return {label: tuple(items) for label, items in phrases.items()}
