"""The registry of the rules that drop a marked pair (`extractor/pairs/filters.py`): the
order pairing applies, docs/pairs.md's table, the --pair-filter flag, a rule added with one
line, and the optional `unterminated` rule on real Romanian speeches (../shared/data)."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from extractor.lexicon.lexicon import load_lexicon
from extractor.pairs import filters
from extractor.pairs.matching import matcher_for
from extractor.pairs.pairing import Document, marked_pairs, neutral_pools, pair_batch
from tests.conftest import REPO, shared_file

RO = load_lexicon("ro")
RO_UNTERMINATED = load_lexicon("ro", pair_filters=filters.parse_enabled(["unterminated"]))
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=[A-ZĂÂÎȘȚŞŢ„«\"—-])")


def speech_documents() -> list[Document]:
    """The two presidents' speeches, one paragraph per line, sentences cut after a full
    stop followed by a capital; a document per 40 lines. The lines are as the source gives
    them: some stop in the middle of a sentence, some introduce a quotation with `:`."""
    docs = []
    for path in sorted(shared_file("text/ro-speeches").iterdir()):
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        for start in range(0, len(lines), 40):
            rows = [dict(corpus="speeches", genre="speech", lang="ro", doc_id=f"{path.stem}:{start}", section="",
                         para_idx=p, sent_idx=s, text=sentence)
                    for p, line in enumerate(lines[start:start + 40])
                    for s, sentence in enumerate(_SENTENCE_END.split(line))]
            docs.append(Document.from_rows(rows))
    return docs


@pytest.fixture(scope="module")
def speeches():
    return speech_documents()


def test_docs_table_is_the_registry():
    text = (REPO / "docs" / "pairs.md").read_text(encoding="utf-8")
    start = text.index("| reason | meaning |\n|---|---|\n") + len("| reason | meaning |\n|---|---|\n")
    assert text[start:text.index("\n\n", start)].splitlines() == filters.docs_table()


def test_the_counted_reasons_and_the_flag_come_from_the_list():
    assert filters.MARKED_REASONS == (
        "hypothesis_short", "no_premise", "premise_short", "hypothesis_starts_with_phrase",
        "premise_starts_with_phrase", "premise_equals_hypothesis", "duplicate_pair")
    assert filters.OPTIONAL == ("unterminated",)
    assert [f.name for f in filters.active()][-1] == "label_filters"  # the optional rule is off by default
    assert [f.name for f in filters.active({"unterminated"})][-1] == "unterminated"
    assert filters.parse_enabled(["unterminated", "unterminated,"]) == {"unterminated"}
    with pytest.raises(filters.PairFilterError, match=r"^--pair-filter: unknown filter 'short'; optional filters: "
                                                      r"unterminated$"):
        filters.parse_enabled(["short"])
    from jobs.extract import build_parser

    assert build_parser().parse_args(["--lang", "ro", "--pair-filter", "unterminated"]).pair_filter == ["unterminated"]
    assert RO_UNTERMINATED.sha256 != RO.sha256  # a resume with another set is another lexicon


def test_a_rule_added_with_one_line_is_applied_in_its_place(monkeypatch, speeches):
    rule = filters.PairFilter("hypothesis_asks", "the hypothesis is a question", lambda c: c.hypothesis.endswith("?"))
    at = [f.name for f in filters.FILTERS].index("premise_equals_hypothesis") + 1
    matcher = matcher_for(RO)
    before = [p.reject for d in speeches for p in marked_pairs(d, matcher)]
    monkeypatch.setattr(filters, "FILTERS", filters.FILTERS[:at] + (rule,) + filters.FILTERS[at:])
    after = [p.reject for d in speeches for p in marked_pairs(d, matcher)]
    changed = [(b, a) for b, a in zip(before, after) if a != b]
    assert changed and all(a == "hypothesis_asks" for _, a in changed)
    assert {b for b, _ in changed} <= {None} | {b for b in before if b and b.startswith("label_")}


def test_unterminated_drops_cut_lines_and_keeps_them_out_of_the_neutral_pools(speeches):
    off, on = matcher_for(RO), matcher_for(RO_UNTERMINATED)
    default = [p for d in speeches for p in marked_pairs(d, off)]
    strict = [p for d in speeches for p in marked_pairs(d, on)]
    def texts(pairs):
        return [(p.p, p.h, p.premise, p.hypothesis) for p in pairs]

    assert texts(default) == texts(strict)
    dropped = [(a, b) for a, b in zip(default, strict) if a.reject != b.reject]
    assert len(dropped) >= 10 and all(a.reject is None and b.reject == "unterminated" for a, b in dropped)
    assert not any(p.reject == "unterminated" for p in default)
    kept = [p for p in strict if p.reject is None]
    assert kept and all(filters.terminated(p.premise) and filters.terminated(p.hypothesis) for p in kept)
    assert any(not filters.terminated(a.hypothesis) for a, _ in dropped)  # a speech line cut mid-sentence
    # the sentences it keeps out of marked pairs are no neutral pair's either (no label cue)
    for doc in speeches:
        pools = neutral_pools(doc, on, marked_pairs(doc, on))
        assert all(filters.terminated(pools.premise_text[i]) for i in pools.unused)
        assert all(filters.terminated(pools.premise_text[i]) for i in pools.marked_premise)
    assert sum(not filters.terminated(t) for d in speeches for t in d.text) > 100


def test_batch_pairs_equal_the_per_document_functions_with_the_rule_on(speeches):
    matcher = matcher_for(RO_UNTERMINATED)
    batch = pair_batch(speeches, matcher, 3)
    assert [[(p.reject, p.premise) for p in m] for m in batch.marked] == \
        [[(p.reject, p.premise) for p in marked_pairs(d, matcher)] for d in speeches]
    unused = {(int(d), int(p)) for d, p, k in zip(batch.candidates.doc, batch.candidates.p, batch.candidates.strategy)
              if batch.candidates.strategies[k] == "both_random"}
    expected = {(d, i) for d, doc in enumerate(speeches)
                for i in neutral_pools(doc, matcher, marked_pairs(doc, matcher)).unused}
    assert unused and unused <= expected


def test_default_lexicon_is_the_one_without_the_rule():
    assert replace(RO, pair_filters=frozenset()) == RO and RO.pair_filters == frozenset()
