"""The rules that drop a marked pair, in the order they apply: one list, `FILTERS`, that
pairing applies (`pairing.marked_pairs`), the stats count (`MARKED_REASONS`: the reasons
`stats.json` → `pairs.rejected` lists even at 0), the job's `--pair-filter` flag turns on
(the optional ones) and docs/pairs.md's table of reasons shows (`docs_table`;
tests/test_pair_filters.py checks the table against this list).

A new rule is a function of a `Candidate` and one `PairFilter(...)` line in `FILTERS`
(with `optional=True` it is off unless `--pair-filter NAME`: the output does not change
for those who do not ask for it). Pure Python, no numpy: the job's `--help` imports it.
"""
from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from extractor.core.errors import UserError
from extractor.lexicon.label_filters import flag_names
from extractor.pairs.matching import Match, Matcher
from extractor.pairs.pos_filter import REASONS as POS_REASONS

FLAG = "--pair-filter"


class PairFilterError(UserError, ValueError):
    """An unknown --pair-filter name."""


def premise_text(sentence: str, matcher: Matcher) -> tuple[str | None, bool]:
    """The one premise rule, the same for every label: a premise never opens with a
    lexicon phrase. A phrase followed by its separator ("Prin urmare, ...") is removed and
    the first letter re-cased, as for hypotheses (RoNLI: phrases are removed from all
    examples); a sentence that still opens with a phrase after that, or opens with one
    without a separator ("However hard ..."), is no premise. Returns (text, stripped);
    text is None when the sentence cannot be a premise."""
    m, opens = matcher.annotate(sentence)
    if not opens:
        return sentence, False
    if m is None or matcher.starts_with_phrase(m.hypothesis):
        return None, False
    return m.hypothesis, True


@dataclass
class Candidate:
    """A marked candidate as the rules see it: sentence `h` of `doc` (a
    `pairing.Document`) opens with the phrase of `match`; `p` is the previous sentence of
    its paragraph (-1: none). `premise_rule`: `premise_text` of sentence `p`, once a rule
    asked for the `premise` (None before)."""
    doc: Any
    p: int
    h: int
    match: Match
    matcher: Matcher
    premise_rule: tuple[str | None, bool] | None = None

    @property
    def hypothesis(self) -> str:
        return self.match.hypothesis

    @property
    def premise(self) -> str | None:
        """The premise the premise rule makes of sentence `p` (None: it is no premise)."""
        if self.premise_rule is None:
            self.premise_rule = premise_text(self.doc.text[self.p], self.matcher)
        return self.premise_rule[0]


Verdict = Callable[[Candidate], "bool | str | None"]


@dataclass(frozen=True)
class PairFilter:
    """One rule. `drops(candidate)` is true to drop the pair with the reason `name` (or
    the reason itself, a string, for a rule with several); None where the rule is applied
    elsewhere (the POS filter, duplicates across documents). `reasons`: the reasons it
    gives, as docs/pairs.md names them (default: `name`). `optional`: off unless
    `--pair-filter NAME`. `pooled`: the sentences of a pair it drops stay in the marked
    pools, so that the neutral candidates do not depend on it. `sentence(text)`: for an
    optional rule, whether a sentence may be a neutral pair's sentence (its rule for the
    "unused" pool, so that what it drops from marked pairs is no label cue)."""
    name: str
    doc: str
    drops: Verdict | None = None
    reasons: tuple[str, ...] = ()
    optional: bool = False
    pooled: bool = False
    sentence: Callable[[str], bool] | None = None

    @property
    def shown(self) -> tuple[str, ...]:
        return self.reasons or (self.name,)


def _label_filters(c: Candidate) -> str | None:
    filters = c.matcher.lexicon.label_filters
    if not filters.active:
        return None
    premise = c.premise
    assert premise is not None  # premise_starts_with_phrase comes first
    return filters.reject(c.match.label, c.match.phrase, premise, c.hypothesis)


# A sentence ends a sentence: its last character (closing quotes and brackets after it
# allowed) is a full stop, an exclamation or question mark or an ellipsis.
_TERMINATED = re.compile(r"[.!?…][\"'”’»)\]]*\s*$")


def terminated(text: str) -> bool:
    return _TERMINATED.search(text) is not None


def _unterminated(c: Candidate) -> bool:
    premise = c.premise
    return premise is not None and not (terminated(premise) and terminated(c.hypothesis))


FILTERS: tuple[PairFilter, ...] = (
    PairFilter("hypothesis_short", "the marked sentence is flagged short (< `--min-chars`)",
               lambda c: c.doc.short[c.h]),
    PairFilter("no_premise", "the marked sentence opens its paragraph", lambda c: c.p < 0),
    PairFilter("premise_short", "the previous sentence is flagged short", lambda c: c.doc.short[c.p]),
    PairFilter("hypothesis_starts_with_phrase", "chained phrases (\"Thus, however, …\")",
               lambda c: c.matcher.starts_with_phrase(c.hypothesis)),
    PairFilter("premise_starts_with_phrase", "the premise still opens with a lexicon phrase after the premise rule "
               "below (\"However hard they tried, ...\"; \"Thus, however, ...\")", lambda c: c.premise is None),
    PairFilter("premise_equals_hypothesis", "same text on both sides (after stripping)",
               lambda c: c.premise == c.hypothesis),
    PairFilter("label_filters", "the lexicon's label filters: a phrase whose precision is too low, a context rule "
               "(docs/label-quality.md)", _label_filters, reasons=("label_phrase_dropped", "label_context_<rule>"),
               pooled=True),
    PairFilter("unterminated", "off unless `--pair-filter unterminated`: the premise or the hypothesis does not end "
               "a sentence (no `.`, `!`, `?` or `…` at its end: a line cut in the middle of a sentence, a list item, "
               "a line that introduces a quotation with `:`); such sentences are no neutral pair's either",
               _unterminated, optional=True, sentence=terminated),
    PairFilter("pos", "POS filter (the hypothesis's reason when both sentences fail)", reasons=POS_REASONS,
               pooled=True),
    PairFilter("duplicate_pair", "the same (premise, hypothesis) text already kept (the lowest `pair_id` stays): "
               "repeated pages, mirrored articles"),
)
BY_NAME = {f.name: f for f in FILTERS}
OPTIONAL = tuple(f.name for f in FILTERS if f.optional)
# The reasons stats.json lists even at 0 (the POS reasons follow when the filter runs; the
# label filters' and the optional rules' reasons appear where they drop a pair).
MARKED_REASONS = tuple(f.name for f in FILTERS if not f.optional and not f.reasons)
# The reasons (the common start of a rule's reasons) whose sentences stay in the marked pools.
POOLED_PREFIXES = tuple(os.path.commonprefix(f.shown) for f in FILTERS if f.pooled)


def active(enabled: Iterable[str] = ()) -> tuple[PairFilter, ...]:
    """The rules `marked_pairs` applies, in order: every one that is not optional, and the
    optional ones `enabled` names."""
    on = set(enabled)
    return tuple(f for f in FILTERS if f.drops is not None and (not f.optional or f.name in on))


def sentence_rules(enabled: Iterable[str] = ()) -> tuple[Callable[[str], bool], ...]:
    """The enabled optional rules' tests of a sentence the "unused" pool may take."""
    on = set(enabled)
    return tuple(f.sentence for f in FILTERS if f.optional and f.name in on and f.sentence is not None)


def parse_enabled(values) -> frozenset[str]:
    """--pair-filter values (repeatable, comma lists allowed) -> the optional rules turned on."""
    names = flag_names(values)
    for name in names:
        if name not in OPTIONAL:
            raise PairFilterError(f"{FLAG}: unknown filter '{name}'; optional filters: {', '.join(OPTIONAL)}")
    return frozenset(names)


def add_arguments(group: argparse._ArgumentGroup) -> None:
    group.add_argument(FLAG, action="append", default=None, metavar="NAME",
                       help="turn on an optional rule that drops marked pairs: " + ", ".join(OPTIONAL)
                            + "; repeatable (docs/pairs.md \"Marked pairs\")")


def docs_table() -> list[str]:
    """The rows of docs/pairs.md's table of reasons, in order."""
    return [f"| {', '.join(f'`{r}`' for r in f.shown)} | {f.doc} |" for f in FILTERS]
