"""The card's researcher sections without Spark: example pairs, intended use and limitations,
citation, artefact warnings, the inputs' license (the bundled sample however given, manifest
licenses) and the charts (lengths per label, top phrases per label, drop funnel)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import yaml

from extractor import statistics as st
from extractor.job.inputs import SAMPLE_LICENSE, corpora_from_args, load_manifest, mark_bundled_sample
from extractor.lexicon.lexicon import load_lexicon
from extractor.splits import card
from extractor.splits import pair_tables as bt
from tests.conftest import REPO

STAGE = {"settings": {"split_ratios": [0.8, 0.1, 0.1], "balance": "downsample", "max_eval_per_corpus": 15000},
         "markers": {"reasoning": {"Prin urmare": 3}}, "corpora": {"train|ro": {"pairs": 6, "documents": 2}},
         "dropped": {"identical_pair_in_other_split": 2, "balance": {"train": {"neutral": 4}}}}
BUILD = {"command_line": "jobs/extract.py --lang ro", "lexicon": "phrase_lexicons/ro.yaml", "lexicon_sha256": "abc123",
         "lang": "ro", "seed": 3, "versions": {"python": "3.11"}, "pos_filter": {"status": "on"},
         "corpora": [{"name": "ro-sample", "genre": "wikipedia", "format": "mediawiki", "role": "train",
                      "license": "apache-2.0"}]}
LEAKAGE = {"checks": {"documents_in_two_splits": 0}, "between_splits": {}}


def _dataset(capital_neutral: float, capital_reasoning: float, n: int = 40) -> dict:
    """A train split of `n` neutral and `n` reasoning pairs whose hypotheses have an inner
    capital in the given shares."""
    def hyps(share, word):
        k = round(share * n)
        return [f"Then the {word} rose near Vienna in year {i}." for i in range(k)] + \
               [f"Then the {word} rose near the town in year {i}." for i in range(n - k)]
    df = pd.DataFrame({"premise": [f"The dam held back the spring flood number {i}." for i in range(2 * n)],
                       "hypothesis": hyps(capital_neutral, "water") + hyps(capital_reasoning, "river"),
                       "label": ["neutral"] * n + ["reasoning"] * n})
    return {"splits": {"train": st.split_statistics(df)}}


def _kept(n: int = 12) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    labels = ["contrasting", "reasoning", "neutral"]
    table = pa.table({"pair_id": [f"p{i:02d}" for i in range(n)], "label": [labels[i % 3] for i in range(n)],
                      "marker": [None if i % 3 == 2 else f"phrase {i}" for i in range(n)],
                      "premise": [f"Premise {i}." for i in range(n)], "hypothesis": [f"Hypothesis {i}." for i in range(n)],
                      "_split": ["train" if i % 4 else "test" for i in range(n)]})
    rows = np.arange(n)
    hashes = np.array([(i * 7919) % 101 for i in range(n)], dtype=np.int64)
    return table, rows, hashes


def test_examples_are_the_lowest_hashes_per_label_whatever_the_units():
    table, rows, hashes = _kept()
    whole = card.merge_examples(bt.pick_examples(table, rows, hashes, k=2), k=2)
    # two "units", their rows given in another order: the same pick after the merge
    a, b = table.slice(0, 5), table.slice(5)
    parts = bt.pick_examples(a, rows[:5][::-1], hashes[:5][::-1], k=2) + bt.pick_examples(b, rows[5:] - 5, hashes[5:], k=2)
    assert card.merge_examples(parts, k=2) == whole
    assert [e["label"] for e in whole] == ["contrasting", "contrasting", "reasoning", "reasoning", "neutral", "neutral"]
    for label in ("contrasting", "reasoning", "neutral"):
        mine = sorted(h for h, l in zip(hashes, table.column("label").to_pylist()) if l == label)[:2]
        assert [e["h"] for e in whole if e["label"] == label] == mine
    text = card.examples_section(whole)
    first = whole[0]
    assert f"| contrasting | {first['split']} | {first['premise']} | {first['hypothesis']} | {first['marker']} |" in text
    assert "| neutral |" in text and text.rstrip().endswith("| - |")  # no phrase for neutral pairs


def test_body_has_examples_limitations_citation_and_license_list():
    ds = _dataset(0.3, 0.3)
    examples = [{"h": 1, "pair_id": "x", "label": "reasoning", "split": "train", "marker": "Prin urmare",
                 "premise": "A | b.", "hypothesis": "C " + "d" * 400}]
    body = card.card_body(dataset=ds, stage_stats=STAGE, build=BUILD, leakage=LEAKAGE,
                          license=["apache-2.0", "cc-by-sa-4.0"], examples=examples)
    assert "## Intended use and limitations" in body and "*Distant supervision.*" in body
    assert "*Label noise.* No precision" in body and "The text comes from wikipedia" in body
    assert "| reasoning | train | A \\| b. |" in body and "…" in body and "| Prin urmare |" in body
    assert "## Citation" in body and "@misc{ro_nli_distant," in body and "@software{nli_corpus_engine," in body
    assert "sha256 abc123" in body and "apache-2.0, cc-by-sa-4.0" in body
    measured = card.card_body(dataset=ds, stage_stats=STAGE, build={**BUILD, "label_precision_measured": True},
                              leakage=LEAKAGE, license="x")
    assert "*Label noise.* The lexicon carries precision figures" in measured
    header = card.yaml_header(lang="ro", license=["apache-2.0", "cc-by-sa-4.0"], sizes={"train": 80})
    assert yaml.safe_load(yaml.safe_dump(header))["license"] == ["apache-2.0", "cc-by-sa-4.0"]


def test_strong_artefact_difference_warns_balanced_does_not():
    strong = _dataset(0.5, 0.2)
    found = card.artefact_warnings(strong)
    assert len(found) == 1, found
    assert found[0].startswith("**Warning (train):** hypothesis inner-capital share differs strongly between labels: "
                               "neutral 0.50 against reasoning 0.20 (a difference of 0.30")
    assert found[0] in card.card_body(dataset=strong, stage_stats=STAGE, build=BUILD, leakage=LEAKAGE, license="x")
    assert card.artefact_warnings(strong, markdown=False) == [found[0].replace("**Warning (train):**", "train:")]
    balanced = _dataset(0.3, 0.3)
    assert card.artefact_warnings(balanced) == []
    assert "No indicator differs strongly between labels" in card.artefact_warnings_text(balanced)
    # too few pairs per label to compare: no warning either
    assert card.artefact_warnings(_dataset(0.6, 0.0, n=10)) == []


def test_charts_written_and_shown(tmp_path):
    ds = _dataset(0.3, 0.3)
    table, rows, hashes = _kept()
    stats = bt.unit_statistics(table)
    lengths = bt.length_histograms(stats)
    assert {(l, s) for l, s, _ in lengths} == {(l, s) for l in ("contrasting", "neutral", "reasoning")
                                                for s in ("premise", "hypothesis")}
    assert all(len(c) == bt.LENGTH_BINS and sum(c) == 4 and c[2] == 4 for _, _, c in lengths)  # 2 words each
    assert card.merge_histograms(lengths + lengths)[0][2][2] == 8
    earlier = card.earlier_stats({"sentences": {"documents": {"read": 42, "kept": 37},
                                                "sentences": {"total": 724, "short": 1}},
                                  "pairs": {"candidates": {"marked_sentences": {"reasoning": 70, "contrasting": 69}}}})
    results = [{"lengths": lengths, "markers": [["reasoning", "Prin urmare", 5], ["reasoning", "Astfel", 2],
                                                ["contrasting", "În contrast", 4]]}]
    data = card.chart_data(results, earlier, 281, {"balance": {"train": {"neutral": 4}}, "identical": 3},
                           {"train": 200, "validation": 30, "test": 30})
    assert data["funnel"] == [["documents read", 42], ["documents kept", 37], ["sentences", 724],
                              ["sentences long enough", 723], ["sentences opening with a phrase", 139],
                              ["pairs (marked + neutral)", 281], ["pairs after duplicates, leakage, filters", 278],
                              ["pairs in the splits (after balance)", 260]]
    assert data["phrases"] == {"contrasting": [["În contrast", 4]], "reasoning": [["Prin urmare", 5], ["Astfel", 2]]}
    files = card.write_card_files(tmp_path, dataset=ds, stage_stats=STAGE, build=BUILD, schema=None, lang="ro",
                                  license="apache-2.0", leakage=LEAKAGE, charts=data)
    names = {f.name for f in files}
    assert set(card.CHART_FILES.values()) | {"class_distribution.png", "README.md"} <= names
    for name in card.CHART_FILES.values():
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"
    readme = (tmp_path / "README.md").read_text()
    for name in card.CHART_FILES.values():
        assert f"]({name})" in readme
    # the stage drew them in a task already: the driver draws none, the card still shows them
    other = tmp_path / "drawn"
    files = card.write_card_files(other, dataset=ds, stage_stats=STAGE, build=BUILD, schema=None, lang="ro",
                                  license="apache-2.0", leakage=LEAKAGE, charts=data, chart=False)
    assert {f.name for f in files} == {"README.md", "stats.json", "leakage.json"}
    assert "](drop_funnel.png)" in (other / "README.md").read_text()
    # no phrases (a dataset of neutral pairs only): that chart is left out, and not shown
    assert card.available_charts({**data, "phrases": {}}) == ["lengths", "funnel"]


def test_bundled_sample_is_one_corpus_however_given(tmp_path, monkeypatch):
    lexicon = load_lexicon("ro")
    sample = lexicon.sample_input
    assert sample is not None
    # the default input and an explicit --input of the same file, relative or absolute
    monkeypatch.chdir(REPO)
    xml = sorted(sample.glob("*.xml")) if sample.is_dir() else [sample]
    assert len(xml) == 1
    for given in (str(sample), str(sample.relative_to(REPO)), f"./{sample.relative_to(REPO)}", str(xml[0]),
                  str(xml[0].relative_to(REPO))):
        corpora = corpora_from_args([given], None, None)
        mark_bundled_sample(corpora, lexicon, rename=True, license=None)
        assert corpora[0].name == "ro-sample" and corpora[0].options["license"] == SAMPLE_LICENSE, given
        assert card.corpus_licenses(corpora, "cc-by-sa-4.0") == "apache-2.0"
    # an explicit --license wins; --corpus keeps its name
    corpora = corpora_from_args([str(sample)], "mine", None)
    mark_bundled_sample(corpora, lexicon, rename=False, license="cc0-1.0")
    assert corpora[0].name == "mine" and card.corpus_licenses(corpora, "cc0-1.0") == "cc0-1.0"
    # another file is not the sample: the flag's license
    other = tmp_path / "rowiki-other-pages-articles.xml"
    other.write_bytes(xml[0].read_bytes())
    corpora = corpora_from_args([str(other)], None, None)
    mark_bundled_sample(corpora, lexicon, rename=True, license=None)
    assert corpora[0].name == "rowiki-other-pages-articles" and "license" not in corpora[0].options
    assert card.corpus_licenses(corpora, "cc-by-sa-4.0") == "cc-by-sa-4.0"


def test_manifest_license_per_corpus(tmp_path):
    lexicon = load_lexicon("ro")
    news = tmp_path / "news.jsonl"
    news.write_text('{"id": "1", "text": "x"}\n', encoding="utf-8")
    manifest = tmp_path / "corpora.yaml"
    manifest.write_text(yaml.safe_dump([
        {"name": "wiki", "path": str(lexicon.sample_input)},  # the sample under another name: its license
        {"name": "news", "path": "news.jsonl", "license": "cc-by-4.0"},
        {"name": "more", "path": "news.jsonl", "format": "jsonl"},
    ]), encoding="utf-8")
    corpora = load_manifest(manifest)
    mark_bundled_sample(corpora, lexicon, rename=False, license=None)
    assert [c.name for c in corpora] == ["wiki", "news", "more"]
    assert card.corpus_licenses(corpora, "cc-by-sa-4.0") == ["apache-2.0", "cc-by-4.0", "cc-by-sa-4.0"]
    assert card.corpus_licenses(corpora[1:2], "cc-by-sa-4.0") == "cc-by-4.0"
