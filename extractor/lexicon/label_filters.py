"""Label filters: the lexicon's data about when a linking phrase does not give its label
(docs/label-quality.md). Pure Python, per pair.

A lexicon's `label_filters` block holds three parts, each turned off by
`--no-label-filter NAME` (repeatable; `all` for every part):

* `phrases` (`dropped_phrases`, `added_phrases`): phrases whose measured precision stays too
  low are still matched (so a sentence opening with one is never a neutral hypothesis and
  never a premise), but their pairs are dropped with the reason `label_phrase_dropped`;
  phrases measured precise (typically from a phrase set) join the default list
  (`extractor.lexicon.lexicon.load_lexicon` adds them);
* `context` (`context_rules`): per-phrase or per-label conditions on the premise and the
  hypothesis (regular expressions over the lexicon's matching key of the text: lower case,
  cedillas folded, diacritics removed where the lexicon says so); a pair that meets a rule's
  conditions is dropped with the reason `label_context_<rule name>`;
* `neutral` (`neutral_mix`): the neutral strategies the language's default draws from (a
  `--neutral-mix` given on the command line wins).

A pair a filter drops is counted with its reason (stats.json `pairs.rejected`), its
sentences stay in the neutral pools like those of the POS filter's rejects (so the
neutral candidates do not depend on the filters), and the decision depends on the pair's own
texts and phrase only: the same bytes whatever the partitioning.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from extractor.core.errors import UserError
from extractor.core.names import LABELS
from extractor.lexicon.keys import phrase_key

FILTERS = ("context", "phrases", "neutral")
REASON_PREFIX = "label_"
PHRASE_DROPPED = "label_phrase_dropped"
_RULE_KEYS = {"name", "why", "labels", "phrases", "premise_matches", "premise_lacks", "hypothesis_matches",
              "hypothesis_lacks"}
_BLOCK_KEYS = {"added_phrases", "dropped_phrases", "context_rules", "neutral_mix"}


class LabelFilterError(UserError, ValueError):
    """A malformed `label_filters` block of a lexicon, or an unknown --no-label-filter name."""


def flag_names(values) -> list[str]:
    """The names of a repeatable flag whose values may be comma lists (`--no-label-filter
    a,b --no-label-filter c`), blanks left out, in order."""
    return [name.strip() for value in values or () for name in str(value).split(",") if name.strip()]


def parse_disabled(values) -> frozenset[str]:
    """--no-label-filter values (repeatable, comma lists allowed) -> the parts turned off."""
    out: set[str] = set()
    for name in flag_names(values):
        if name == "all":
            out.update(FILTERS)
        elif name in FILTERS:
            out.add(name)
        else:
            raise LabelFilterError(f"--no-label-filter: unknown filter '{name}'; known: {', '.join(FILTERS)}, all")
    return frozenset(out)


@dataclass(frozen=True)
class ContextRule:
    name: str
    labels: frozenset          # labels it applies to (empty: any)
    phrases: frozenset         # matching keys of the phrases it applies to (empty: any)
    premise_matches: re.Pattern | None = None
    premise_lacks: re.Pattern | None = None
    hypothesis_matches: re.Pattern | None = None
    hypothesis_lacks: re.Pattern | None = None

    def applies(self, label: str, phrase_key: str) -> bool:
        return (not self.labels or label in self.labels) and (not self.phrases or phrase_key in self.phrases)

    def fires(self, premise_key: str, hypothesis_key: str) -> bool:
        """True when every condition it has holds (a rule with no condition never fires)."""
        checks = ((self.premise_matches, premise_key, True), (self.premise_lacks, premise_key, False),
                  (self.hypothesis_matches, hypothesis_key, True), (self.hypothesis_lacks, hypothesis_key, False))
        present = [(p, t, want) for p, t, want in checks if p is not None]
        return bool(present) and all((p.search(t) is not None) == want for p, t, want in present)

    @property
    def reason(self) -> str:
        return f"{REASON_PREFIX}context_{self.name}"


@dataclass(frozen=True)
class LabelFilters:
    """The compiled `label_filters` of a lexicon, with the parts the run turned off removed."""
    dropped: frozenset = frozenset()        # matching keys of dropped phrases
    added: int = 0                          # phrases of added_phrases (load_lexicon merged them)
    rules: tuple = ()
    neutral_mix: str | None = None
    disabled: frozenset = frozenset()
    normalize: Callable[[str], str] = field(default=str.lower, compare=False, repr=False)

    def reject(self, label: str, phrase: str, premise: str, hypothesis: str) -> str | None:
        """The reason a marked pair is dropped, or None."""
        key = phrase_key(self.normalize, phrase)
        if key in self.dropped:
            return PHRASE_DROPPED
        if self.rules:
            premise_key = hypothesis_key = None
            for rule in self.rules:
                if rule.applies(label, key):
                    if premise_key is None:
                        premise_key, hypothesis_key = self.normalize(premise), self.normalize(hypothesis)
                    if rule.fires(premise_key, hypothesis_key):
                        return rule.reason
        return None

    @property
    def active(self) -> bool:
        return bool(self.dropped or self.rules)

    def describe(self) -> dict:
        """What stats.json and the card record of the filters."""
        return {"disabled": sorted(self.disabled), "added_phrases": self.added, "dropped_phrases": len(self.dropped),
                "context_rules": [r.name for r in self.rules], "neutral_mix": self.neutral_mix}


def added_phrases(raw, path) -> dict[str, tuple[str, ...]]:
    """`added_phrases` of a lexicon's `label_filters` block, checked: {label: phrases}
    (the lexicon adds them to its phrases unless --no-label-filter phrases)."""
    added = raw.get("added_phrases") if isinstance(raw, dict) else None
    if not added:
        return {}
    if not isinstance(added, dict):
        raise LabelFilterError(f"{path}: label_filters.added_phrases must map labels to lists of phrases")
    out = {}
    for label, items in added.items():
        if items is not None and (not isinstance(items, list)
                                  or not all(isinstance(v, str) and v.strip() for v in items)):
            raise LabelFilterError(f"{path}: 'label_filters.added_phrases.{label}' must be a list of non-empty strings")
        out[label] = tuple(v.strip() for v in items or ())
    return out


def _pattern(value, where: str, path) -> re.Pattern | None:
    if value is None:
        return None
    try:
        return re.compile(str(value))
    except re.error as exc:
        raise LabelFilterError(f"{path}: label_filters.{where}: bad regular expression {value!r}: {exc}") from None


def compile_filters(raw, normalize, phrases: dict, path, disabled: frozenset = frozenset()) -> LabelFilters:
    """The `label_filters` block of a lexicon file, checked: every phrase it names must be a
    phrase of the lexicon (as loaded, phrase sets included: a dropped phrase of a set not
    loaded is ignored), every label a canonical one."""
    if not raw:
        return LabelFilters(disabled=disabled, normalize=normalize)
    if not isinstance(raw, dict) or set(raw) - _BLOCK_KEYS:
        raise LabelFilterError(f"{path}: label_filters must be a mapping with keys {sorted(_BLOCK_KEYS)}")
    known = {phrase_key(normalize, p) for items in phrases.values() for p in items}
    dropped = set()
    if "phrases" not in disabled:
        for i, entry in enumerate(raw.get("dropped_phrases") or []):
            phrase = entry.get("phrase") if isinstance(entry, dict) else entry
            if not isinstance(phrase, str) or not phrase.strip():
                raise LabelFilterError(f"{path}: label_filters.dropped_phrases[{i}]: expected a phrase")
            key = phrase_key(normalize, phrase)
            if key in known:
                dropped.add(key)
    rules = []
    if "context" not in disabled:
        for i, entry in enumerate(raw.get("context_rules") or []):
            where = f"context_rules[{i}]"
            if not isinstance(entry, dict) or not entry.get("name") or set(entry) - _RULE_KEYS:
                raise LabelFilterError(f"{path}: label_filters.{where}: a mapping with a name and keys among "
                                       f"{sorted(_RULE_KEYS)}")
            labels = frozenset(entry.get("labels") or ())
            if labels - set(LABELS):
                raise LabelFilterError(f"{path}: label_filters.{where}: "
                                       f"unknown label(s) {sorted(labels - set(LABELS))}")
            keys = frozenset(phrase_key(normalize, p) for p in entry.get("phrases") or ())
            unknown = sorted(keys - known)
            if unknown and not (keys & known):
                continue  # every phrase it names is in a phrase set not loaded
            if not re.fullmatch(r"[a-z0-9_]+", str(entry["name"])):
                raise LabelFilterError(f"{path}: label_filters.{where}: name must be lower-case letters, digits, _")
            rules.append(ContextRule(
                name=str(entry["name"]), labels=labels, phrases=keys & known if keys else keys,
                **{k: _pattern(entry.get(k), f"{where}.{k}", path)
                   for k in ("premise_matches", "premise_lacks", "hypothesis_matches", "hypothesis_lacks")}))
    mix = None if "neutral" in disabled else raw.get("neutral_mix")
    added = 0 if "phrases" in disabled else sum(map(len, added_phrases(raw, path).values()))
    return LabelFilters(dropped=frozenset(dropped), added=added, rules=tuple(rules), neutral_mix=mix,
                        disabled=disabled, normalize=normalize)
