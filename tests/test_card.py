"""Dataset card pieces without Spark: YAML header, body tables, chart."""
from __future__ import annotations

import yaml

from extractor.splits import card
from extractor import statistics as st


def _dataset():
    import pandas as pd
    df = pd.DataFrame({"premise": ["The dam held back the spring flood.", "Rain fell on the old town all day."] * 3,
                       "hypothesis": ["The town stayed dry.", "The river rose by a metre."] * 3,
                       "label": ["reasoning", "contrasting"] * 3})
    splits = {"train": df, "validation": df.iloc[:2], "test": df.iloc[:0]}
    return {"splits": {k: st.split_statistics(v) if len(v) else
                       {"labels": {}, "all": {"count": 0, **{a: None for a in st.AGGREGATES}}} for k, v in splits.items()}}


def test_header_leaves_out_empty_splits_and_names_labels():
    h = card.yaml_header(lang="ro", license="cc-by-sa-4.0", sizes={"train": 6, "validation": 2, "test": 0},
                         labels={"reasoning", "contrasting"})
    assert h["language"] == ["ro"] and h["task_ids"] == ["natural-language-inference"]
    assert [d["split"] for d in h["configs"][0]["data_files"]] == ["train", "validation"]
    assert [s["name"] for s in h["dataset_info"]["splits"]] == ["train", "validation"]
    assert card.label_names({"reasoning", "other"}) == ["contrasting", "entailment", "reasoning", "neutral", "other"]


def test_body_and_chart(tmp_path):
    ds = _dataset()
    stage = {"settings": {"split_ratios": [0.8, 0.1, 0.1], "balance": "none", "max_eval_per_corpus": 15000},
             "markers": {"reasoning": {"Prin urmare": 3}}, "corpora": {"train|ro": {"pairs": 6, "documents": 2}},
             "dropped": {"identical_pair_in_other_split": 2, "balance": {"train": {"neutral": 4}}}}
    build = {"command_line": "jobs/extract.py --lang ro", "lexicon": "phrase_lexicons/ro.yaml", "lexicon_sha256": "abc",
             "lang": "ro", "seed": 3, "versions": {"python": "3.11"}, "pos_filter": {"status": "off: no model"}}
    leakage = {"checks": {"documents_in_two_splits": 0, "pairs_in_two_splits": 1}, "between_splits": {}}
    body = card.card_body(dataset=ds, stage_stats=stage, build=build, leakage=leakage, license="cc-by-sa-4.0",
                          pairs_stats={"rejected": {"pos_no_predicate": 7}})
    assert "`jobs/extract.py --lang ro`" in body and "sha256 `abc`" in body and "seed: 3" in body
    assert "FAILED" in body  # a pair in two splits is reported, not hidden
    assert "| rejected.pos_no_predicate | 7 |" in body and "| balance.train.neutral | 4 |" in body
    assert "| reasoning | Prin urmare | 3 |" in body and "POS completeness filter: off: no model" in body
    assert "| reasoning | 3 (50.0%) | 1 (50.0%) | 0 |" in body
    # Files names only what was written: the empty test split is not
    assert "- `train/`, `validation/`: Parquet (" in body and "not written, being empty: `test/`" in body
    png = card.plot_class_distribution(ds, tmp_path / "c.png")
    assert png.read_bytes()[:4] == b"\x89PNG"
    files = card.write_card_files(tmp_path / "out", dataset=ds, stage_stats=stage, build=build, schema=None,
                                  lang="ro", license="cc-by-sa-4.0", leakage=leakage)
    text = files[0].read_text()
    header = yaml.safe_load(text.split("---\n")[1])
    assert header["dataset_info"]["splits"] == [{"name": "train", "num_bytes": 0, "num_examples": 6},
                                                {"name": "validation", "num_bytes": 0, "num_examples": 2}]


def test_paper_statistics_model_and_phrase_set_in_the_card():
    ds = _dataset()
    stage = {"settings": {"split_ratios": [0.8, 0.1, 0.1], "balance": "none", "max_eval_per_corpus": 0}}
    build = {"lexicon": "phrase_lexicons/ro.yaml", "lexicon_sha256": "abc", "phrase_set": ["extended"], "lang": "ro",
             "versions": {"spacy_model": "ro_legal_fl", "spacy_model_version": "3.6.1", "spacy_model_license": "CC4R"},
             "pos_filter": {"status": "on", "model": "ro_legal_fl", "sentences_checked": 12}}
    body = card.card_body(dataset=ds, stage_stats=stage, build=build, leakage={"checks": {}}, license="cc-by-sa-4.0")
    assert "phrase set(s) extended added" in body
    assert "model ro_legal_fl 3.6.1 (license CC4R)" in body and "on; model ro_legal_fl; 12 sentences checked" in body
    # RoNLI Table 2 layout: RoNLI's raw-token overlap and the normalised one, means (sample std)
    assert "overlap (RoNLI) train" in body and "overlap (normalised) train" in body
    # train: premises of 7 and 8 words, three times each -> mean 7.5, sample std 0.5477
    assert "| **overall** | 6 | 2 | 0 | 7.5 (0.5) | 7.5 (0.7) | - |" in body
    # "Rain fell on the old town all day." / "The river rose by a metre.": "The" != "the" for
    # RoNLI (0), shared once normalised (1/12 = 0.08)
    assert "| contrasting | 3 | 1 | - | 8.0 (0.0) | 8.0 | - | 6.0 (0.0) | 6.0 | - | 0.00 (0.00) | 0.00 | - | 0.08 (0.00) |" in body
    assert "## Top PMI words of premises per label" in body


def test_the_precision_estimate_names_its_gold_set_genres_and_flags_a_mismatch():
    from extractor.lexicon.lexicon import load_lexicon
    from extractor.statistics import precision

    ro = load_lexicon("ro").measured_precision
    block = {"gold_set": ro["gold_set"], "about": ro["about"], "genres": ro["genres"],
             "labels": precision.estimate({"reasoning": {"Prin urmare": 10}}, ro)}
    same = precision.markdown(block, ["news", "wikipedia"])
    assert "The gold set's text is news, speeches, novels, wikipedia; this corpus's is news, wikipedia: the same" in same
    travel = precision.markdown(block, ["travel guide"])
    assert "**genre mismatch** (travel guide not in the gold set)" in travel and "rough guide" in travel
    assert "genres are not recorded" in precision.markdown({**block, "genres": None}, ["news"])


def test_the_citation_has_what_a_bibliography_needs():
    build = {"lang": "ro", "year": 2026, "output": "/data/out/ro", "corpora": [{"name": "wikitravel"}],
             "lexicon": "phrase_lexicons/ro.yaml", "lexicon_sha256": "abcdef123456789", "seed": 0}
    text = card.citation_section(build, "cc-by-sa-3.0")
    assert "@misc{ro_nli_distant_2026," in text and "  year         = {2026}," in text
    assert "set --author" in text and "howpublished = {/data/out/ro (set --url" in text
    assert "NLI corpus engine " in text and "version = {" in text
    given = card.citation_section({**build, "author": "ACME Lab", "url": "https://example.org/ro-nli"}, "x")
    assert "  author       = {ACME Lab}," in given and "  url          = {https://example.org/ro-nli}," in given
    assert "howpublished" not in given
