"""POS completeness filter (ESNLIR §2.2): a sentence is kept when spaCy finds a
subject-like token and a predicate in it. Pure rule + a per-process model cache.

Rule (docs/pairs.md): over the coarse Universal POS tags (`token.pos_`) of the sentence,
it is complete when at least one tag is in the lexicon's `pos_filter.subject_pos`
(default NOUN, PRON, PROPN) and at least one tag is in `pos_filter.predicate_pos`
(default VERB, AUX). Otherwise the reason is `pos_no_subject`, `pos_no_predicate` or
`pos_no_subject_no_predicate`. A text with no token at all is `pos_empty`.
"""
from __future__ import annotations

import importlib.util
from typing import Iterable, Sequence

REASONS = ("pos_empty", "pos_no_subject", "pos_no_predicate", "pos_no_subject_no_predicate")
POS_FILTER_MODES = ("auto", "on", "off")
# Components POS tags need (tagger + attribute_ruler in English-style pipelines, the
# morphologizer elsewhere, plus the embedding layer they listen to); the rest is excluded.
_KEEP = {"tok2vec", "transformer", "tagger", "morphologizer", "attribute_ruler"}
_SKIP = ("parser", "ner", "lemmatizer", "trainable_lemmatizer", "senter", "sentencizer", "entity_ruler",
         "entity_linker", "span_ruler", "spancat", "textcat", "textcat_multilabel", "coref", "span_resolver")


class ModelMissingError(ValueError):
    """--pos-filter on with a spaCy model that is not installed."""


def is_complete(tokens_pos: Sequence[str], lexicon) -> tuple[bool, str | None]:
    """(True, None) when the POS tags hold a subject-like tag and a predicate tag, else
    (False, reason). `lexicon` gives `subject_pos` and `predicate_pos`."""
    if not tokens_pos:
        return False, "pos_empty"
    tags = set(tokens_pos)
    subject = not tags.isdisjoint(lexicon.subject_pos)
    predicate = not tags.isdisjoint(lexicon.predicate_pos)
    if subject and predicate:
        return True, None
    if not subject and not predicate:
        return False, "pos_no_subject_no_predicate"
    return False, "pos_no_subject" if not subject else "pos_no_predicate"


def model_installed(name: str | None) -> bool:
    """Whether a spaCy model package is importable (without loading it)."""
    if not name:
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def install_hint(model: str, lexicon) -> str:
    if lexicon is not None and getattr(lexicon, "spacy_model", None) == model and lexicon.spacy_install:
        return lexicon.spacy_install
    return f"python -m spacy download {model}"


def resolve(mode: str, model: str | None, lexicon) -> tuple[bool, str, str | None]:
    """Decide whether the filter runs: (enabled, status, warning).

    status is 'on', 'off (--pos-filter off)' or 'off (model <m> not installed)'; the
    warning (auto mode with no model) names the install command. With mode 'on' a
    missing model raises ModelMissingError (one line, with the install command)."""
    if mode not in POS_FILTER_MODES:
        raise ValueError(f"--pos-filter must be one of {', '.join(POS_FILTER_MODES)}, not '{mode}'")
    if mode == "off":
        return False, "off (--pos-filter off)", None
    if not model:
        msg = f"no spaCy model is named for '{getattr(lexicon, 'lang', '?')}' (lexicon spacy_model or --spacy-model)"
        if mode == "on":
            raise ModelMissingError(f"--pos-filter on: {msg}")
        return False, "off (no spaCy model named)", f"POS completeness filter skipped: {msg}"
    if model_installed(model):
        return True, "on", None
    hint = install_hint(model, lexicon)
    if mode == "on":
        raise ModelMissingError(f"--pos-filter on: spaCy model '{model}' is not installed; install it with: {hint}")
    return (False, f"off (model {model} not installed)",
            f"POS completeness filter skipped: spaCy model '{model}' is not installed; "
            f"install it with `{hint}` and rerun for ESNLIR-style filtering")


_MODELS: dict[str, object] = {}


def load_model(name: str):
    """The spaCy pipeline `name` with only the components POS tags need, loaded once per
    process (each Spark Python worker keeps its own copy; it is never pickled)."""
    nlp = _MODELS.get(name)
    if nlp is None:
        import spacy

        nlp = spacy.load(name, exclude=list(_SKIP))
        # a component of another name that we do not need: disabled, not run
        nlp.select_pipes(enable=[p for p in nlp.pipe_names if p in _KEEP])
        _MODELS[name] = nlp
    return nlp


def pos_tags(texts: Iterable[str], model: str, batch_size: int = 256) -> list[list[str]]:
    """Coarse POS tags of each text (nlp.pipe over the batch)."""
    nlp = load_model(model)
    return [[tok.pos_ for tok in doc if not tok.is_space] for doc in nlp.pipe(texts, batch_size=batch_size)]


def check_texts(texts: Sequence[str], model: str, lexicon) -> list[tuple[bool, str | None]]:
    """is_complete for each text."""
    return [is_complete(tags, lexicon) for tags in pos_tags(texts, model)]


def pip_requirement(lexicon) -> str | None:
    """The pip requirement of the lexicon's model when `spacy_install` is a plain
    `pip install X` (so first-use setup can install it); None otherwise."""
    cmd = (getattr(lexicon, "spacy_install", None) or "").split()
    if len(cmd) == 3 and cmd[:2] == ["pip", "install"]:
        return cmd[2]
    return None


def main(argv=None) -> int:
    """`python -m extractor.pairs.pos_filter LANG`: prints the pip requirement of LANG's spaCy
    model when it is pip-installable and not installed yet (nothing otherwise), for the
    first-use setup of spark-submit.sh: `req=$(python -m extractor.pairs.pos_filter ro) && [ -n "$req" ] && pip install "$req"`."""
    import sys

    from extractor.lexicon import load_lexicon

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m extractor.pairs.pos_filter LANG", file=sys.stderr)
        return 2
    lexicon = load_lexicon(args[0])
    req = pip_requirement(lexicon)
    if req and not model_installed(lexicon.spacy_model):
        print(req)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
