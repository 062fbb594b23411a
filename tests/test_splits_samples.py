"""End to end on the bundled samples: `jobs/extract.py --lang ro|es|en` (every stage, the default
command), then three non-empty splits with every label, no document and no pair in two splits,
and the folder loads with `datasets`."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module", params=["ro", "es", "en"])
def sample_output(request, spark, tmp_path_factory):
    from jobs.extract import main

    lang = request.param
    if not (REPO / "samples" / lang).exists():
        pytest.skip(f"samples/{lang} not bundled")
    out = tmp_path_factory.mktemp(f"sample_{lang}")
    assert main(["--lang", lang, "--output", str(out), "--overwrite"]) == 0
    return lang, out


def test_default_command_gives_three_splits_with_every_label(sample_output):
    """The first thing a user sees: train, validation and test, each holding all four labels,
    balanced by the default --balance downsample, with at least 150 training pairs (measured on
    ro / es / en with the label filters: 156 / 212 / 200 train, 16 / 16 / 20 validation, 16 / 24 / 28 test)."""
    lang, out = sample_output
    labels = {"contrasting", "entailment", "reasoning", "neutral"}
    for split in ("train", "validation", "test"):
        df = pd.read_parquet(out / "splits" / split)
        counts = df["label"].value_counts().to_dict()
        assert set(counts) == labels, (lang, split, counts)
        assert len(set(counts.values())) == 1, (lang, split, counts)  # downsampled: one count per label
        assert len(set(df["doc_id"])) >= 3, (lang, split)
    assert len(pd.read_parquet(out / "splits" / "train")) >= 150
    stats = json.loads((out / "stats.json").read_text())
    assert stats["splits"]["splits"]["validation"] > 0 and stats["splits"]["splits"]["test"] > 0
    assert not [w for w in stats.get("warnings", []) if "empty" in w], stats.get("warnings")


def test_no_document_and_no_pair_in_two_splits(sample_output):
    lang, out = sample_output
    splits = {s: pd.read_parquet(out / "splits" / s) for s in ("train", "validation", "test")
              if (out / "splits" / s).exists()}
    assert "train" in splits and len(splits) >= 2
    where_doc, where_pair = {}, {}
    for name, df in splits.items():
        docs = set(df["doc_id"]) | {r["doc_id"] for r in df["premise_ref"]} | {r["doc_id"] for r in df["hypothesis_ref"]}
        for d in docs:
            assert where_doc.setdefault(d, name) == name, f"{lang}: document {d} in {where_doc[d]} and {name}"
        for pid, p, h in zip(df["pair_id"], df["premise"], df["hypothesis"]):
            for key in (pid, frozenset((" ".join(p.casefold().split()), " ".join(h.casefold().split())))):
                assert where_pair.setdefault(key, name) == name, f"{lang}: pair {key} in {where_pair[key]} and {name}"
    stats = json.loads((out / "stats.json").read_text())["splits"]
    assert stats["leakage"]["documents_in_two_splits"] == 0
    assert stats["leakage"]["sentence_pairs_in_two_splits"] == 0
    # every pair of pairs/ is in a split or counted as dropped with a reason
    n_pairs = len(pd.read_parquet(out / "pairs"))
    dropped = stats["dropped"]
    removed = sum(v for k, v in dropped.items() if k != "balance") + \
        sum(n for per in dropped["balance"].values() for n in per.values())
    assert sum(len(df) for df in splits.values()) + removed == n_pairs


def test_sample_loads_with_datasets_and_has_a_card(sample_output):
    datasets = pytest.importorskip("datasets")
    lang, out = sample_output
    ds = datasets.load_dataset(str(out / "splits"))
    stats = json.loads((out / "stats.json").read_text())["splits"]["splits"]
    assert {s: ds[s].num_rows for s in ds} == {s: n for s, n in stats.items() if n}
    card = (out / "splits" / "README.md").read_text()
    assert f"language:\n- {lang}\n" in card and "PASSED" in card
    assert f"phrase_lexicons/{lang}.yaml" in card
