"""Label filters (extractor/lexicon/label_filters.py), the lexicons' measured precision and the
card's estimate (extractor/statistics/precision.py). docs/label-quality.md."""
from __future__ import annotations

import pytest
import yaml
from statsmodels.stats.proportion import proportion_confint

from extractor.lexicon.lexicon import load_lexicon
from extractor.lexicon.label_filters import PHRASE_DROPPED, LabelFilterError, parse_disabled
from extractor.pairs.matching import matcher_for
from extractor.pairs.pairing import Document, marked_members, marked_pairs
from extractor.statistics import precision

# Real sentences of the Romanian speeches and news the gold set was drawn from (paraphrased
# lengths kept: every sentence is over 50 characters, as the job's default asks).
PREMISE = "Există mari diferenţe de nivel al dezvoltării culturale, economice şi sociale între regiunile ţării."
DOC = [
    PREMISE,
    "Astfel, se poate înţelege dificultatea acestui proces de descentralizare a raporturilor dintre puteri.",
    "Statul trebuie să devină apărătorul interesului general şi organizatorul coeziunii sociale în ţară.",
    "Astfel, au fost adoptate legi noi şi s-au reorganizat de asemenea instituţiile administraţiei locale.",
    "Pensiile au crescut în ultimii doi ani mai repede decât preţurile produselor de bază din magazine.",
    "Pe de altă parte, am promis o lege privind privatizarea băncilor, iar această lege a fost votată.",
    "Guvernul a aprobat ieri bugetul pentru anul viitor, după o lungă dezbatere în Parlamentul României.",
    "Prin urmare, din motivele amintite mai sus, partidul nu mai poate susţine acest guvern de tranziţie.",
    "Privatizarea marilor întreprinderi de stat a fost amânată din nou de guvernul aflat la putere.",
    "Totuşi, câteva companii mici au fost vândute investitorilor străini în primele luni ale anului.",
]


def _doc(texts) -> Document:
    rows = [{"doc_id": "d", "para_idx": 0, "sent_idx": i, "text": t, "section": None} for i, t in enumerate(texts)]
    return Document.from_rows(rows)


def _reasons(lexicon):
    return {(p.phrase, p.reject) for p in marked_pairs(_doc(DOC), matcher_for(lexicon))}


def test_the_romanian_filters_drop_what_the_lexicon_says_and_count_why():
    got = _reasons(load_lexicon("ro"))
    assert ("Astfel", None) in got                                     # no enumeration: kept
    assert ("Astfel", "label_context_astfel_enumeration") in got       # "şi ... de asemenea": dropped
    assert ("Pe de altă parte", PHRASE_DROPPED) in got
    assert ("Prin urmare", "label_context_refers_beyond_premise") in got  # "amintite mai sus": rule 1
    assert ("Totuși", None) in got                                     # an added phrase (cedilla folded)


def test_each_part_turns_off_on_its_own():
    assert {r for _, r in _reasons(load_lexicon("ro", disabled_filters=parse_disabled(["all"])))} == {None}
    no_context = _reasons(load_lexicon("ro", disabled_filters=parse_disabled(["context"])))
    assert ("Pe de altă parte", PHRASE_DROPPED) in no_context and ("Astfel", None) in no_context
    no_phrases = load_lexicon("ro", disabled_filters=parse_disabled(["phrases"]))
    got = _reasons(no_phrases)
    assert ("Pe de altă parte", None) in got
    assert not any(phrase == "Totuși" for phrase, _ in got)  # RoNLI's own list: "Totuşi" is no phrase
    assert load_lexicon("ro").sha256 != no_phrases.sha256  # what a run emits changes: so does its identity
    assert load_lexicon("ro", disabled_filters=parse_disabled(["neutral"])).label_filters.neutral_mix is None
    assert load_lexicon("ro").label_filters.neutral_mix == "second_random=1"


def test_dropped_pairs_keep_their_sentences_in_the_marked_pools():
    """The neutral candidates do not depend on the label filters: a dropped pair's sentences
    are marked sentences either way, like those of the POS filter's rejects."""
    on = marked_pairs(_doc(DOC), matcher_for(load_lexicon("ro")))
    off = marked_pairs(_doc(DOC), matcher_for(load_lexicon("ro", disabled_filters=parse_disabled(["context"]))))
    assert sum(p.reject is not None for p in on) == 3 and sum(p.reject is not None for p in off) == 1
    assert marked_members(_doc(DOC), on) == marked_members(_doc(DOC), off)
    premises, hypotheses, _ = marked_members(_doc(DOC), on)
    assert {2, 4, 6} <= set(premises) and {3, 5, 7} <= set(hypotheses)


@pytest.mark.parametrize("value, message", [
    (["sideways"], "unknown filter 'sideways'"),
    (["context,nope"], "unknown filter 'nope'"),
])
def test_no_label_filter_names_are_checked(value, message):
    with pytest.raises(LabelFilterError, match=message):
        parse_disabled(value)


def test_parse_disabled_accumulates_repeats_and_lists():
    assert parse_disabled(["context", "phrases"]) == parse_disabled(["context,phrases"]) == {"context", "phrases"}
    assert parse_disabled(["all"]) == {"context", "phrases", "neutral"}
    assert parse_disabled(None) == frozenset()


@pytest.mark.parametrize("block, message", [
    ({"context_rules": [{"name": "x", "hypothesis_matches": "("}]}, "bad regular expression"),
    ({"context_rules": [{"name": "x", "labels": ["contrastive"], "premise_matches": "a"}]}, "unknown label"),
    ({"context_rules": [{"name": "Bad Name", "premise_matches": "a"}]}, "name must be"),
    ({"context_rules": [{"name": "x", "premise_has": "a"}]}, "keys among"),
    ({"sideways": []}, "label_filters must be a mapping"),
])
def test_a_malformed_block_is_a_one_line_error_naming_the_file(tmp_path, block, message):
    raw = yaml.safe_load(open(load_lexicon("en").path, encoding="utf-8"))
    raw["label_filters"] = block
    path = tmp_path / "xx.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    with pytest.raises(LabelFilterError, match=message) as exc:
        load_lexicon(path)
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("correct, n", [(0, 1), (1, 1), (17, 40), (53, 54), (3, 14), (400, 1000)])
def test_wilson_is_statsmodels_wilson(correct, n):
    low, high = precision.wilson(correct, n)
    want = proportion_confint(correct, n, alpha=0.05, method="wilson")
    assert low == pytest.approx(want[0], abs=1e-9) and high == pytest.approx(want[1], abs=1e-9)


def test_the_estimate_weighs_each_phrase_by_the_corpus_mix():
    measured = {"gold_set": "g", "labels": {"reasoning": {"correct": 7, "n": 10}},
                "phrases": {"Prin urmare": {"label": "reasoning", "correct": 9, "n": 10},
                            "Astfel": {"label": "reasoning", "correct": 5, "n": 10}},
                "neutral": {"second_random": {"correct": 19, "n": 20}}}
    rich_in_good = precision.estimate({"reasoning": {"Prin urmare": 90, "Astfel": 10}}, measured)["reasoning"]
    rich_in_poor = precision.estimate({"reasoning": {"Prin urmare": 10, "Astfel": 90}}, measured)["reasoning"]
    assert rich_in_good["precision"] == pytest.approx(0.86) and rich_in_poor["precision"] == pytest.approx(0.54)
    unmeasured = precision.estimate({"reasoning": {"Deci": 4}}, measured)["reasoning"]
    assert unmeasured["precision"] == pytest.approx(0.7) and unmeasured["pairs_measured_by_own_phrase"] == 0
    assert precision.estimate({"contrasting": {"X": 3}}, measured)["contrasting"]["precision"] is None
    neutral = precision.estimate({"neutral": {"second_random": 5}}, measured)["neutral"]
    assert neutral["precision"] == pytest.approx(0.95) and neutral["low"] < 0.95 < neutral["high"]


def test_every_bundled_measurement_names_its_gold_set_and_counts():
    from extractor.check import head as check_head

    shipped = check_head.load()
    for lang in ("ro", "es", "en"):
        measured = load_lexicon(lang).measured_precision
        assert measured["gold_set"] == f"benchmarks/gold/{lang}.jsonl"
        # the measurement with the semantic check is of the shipped head at its default thresholds
        checked = measured["semantic_check"]
        assert (checked["head_sha256"], checked["threshold"], checked["neutral_threshold"]) == (
            shipped.sha256, shipped.threshold, shipped.neutral_threshold), lang
        for block in (measured, checked):
            for group in ("phrases", "neutral"):
                for key, m in block[group].items():
                    assert 0 <= m["correct"] <= m["n"], (lang, key)


def test_the_card_section_says_when_nothing_was_measured():
    assert "unknown" in precision.markdown(None)
    block = {"gold_set": "benchmarks/gold/ro.jsonl", "about": "a", "labels": precision.estimate(
        {"reasoning": {"Prin urmare": 3}}, {"phrases": {"Prin urmare": {"correct": 9, "n": 10}}})}
    text = precision.markdown(block)
    assert "| reasoning | 3 | 90.0% |" in text and "benchmarks/gold/ro.jsonl" in text


def test_a_checked_run_takes_the_measurement_made_with_its_own_check():
    import dataclasses

    from extractor.splits.stage import label_precision

    before = {"labels": {"reasoning": {"correct": 6, "n": 10}},
              "phrases": {"Prin urmare": {"label": "reasoning", "correct": 6, "n": 10}}}
    checked = {"labels": {"reasoning": {"correct": 9, "n": 10}},
               "phrases": {"Prin urmare": {"label": "reasoning", "correct": 9, "n": 10}}}
    settings = {"head_sha256": "ab" * 32, "threshold": 0.69, "neutral_threshold": 0.23}
    lexicon = dataclasses.replace(load_lexicon("ro"), measured_precision={
        "gold_set": "g", "about": "without", **before, "semantic_check": {**settings, "about": "with", **checked}})
    markers = {"reasoning": {"Prin urmare,": 5}}

    off = label_precision(lexicon, markers, {})
    assert off["labels"]["reasoning"]["precision"] == pytest.approx(0.6) and "semantic_check" not in off
    same = label_precision(lexicon, markers, {}, settings)
    assert same["labels"]["reasoning"]["precision"] == pytest.approx(0.9) and same["about"] == "with"
    assert same["semantic_check"] == "measured" and "measured with it on" in precision.markdown(same)
    other = label_precision(lexicon, markers, {}, {**settings, "threshold": 0.5})
    assert other["labels"]["reasoning"]["precision"] == pytest.approx(0.6) and other["about"] == "without"
    assert other["semantic_check"] == "not measured" and "before the check" in precision.markdown(other)
