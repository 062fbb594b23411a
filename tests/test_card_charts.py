"""The card's charts on real pairs (SciNLI rows): whole-number ticks on count axes, and the
lengths chart's note on its last bin only where the axis shows that bin."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from extractor.splits import card
from extractor.splits.pair_tables import LENGTH_BINS, length_histograms
from tests.conftest import shared_file


def scinli_rows(per_label: int, min_words: int = 0) -> list[dict]:
    """The first `per_label` rows of each label of scinli-dev whose premise has `min_words` or more."""
    out, seen = [], {}
    for line in shared_file("nli/scinli-dev.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if len(r["sentence1"].split()) >= min_words and seen.get(r["label"], 0) < per_label:
            seen[r["label"]] = seen.get(r["label"], 0) + 1
            out.append(r)
    return out


def histograms(rows: list[dict]) -> list[list]:
    stats = pa.table({"kind": ["row"] * len(rows), "label": [r["label"] for r in rows],
                      "premise_words": [len(r["sentence1"].split()) for r in rows],
                      "hypothesis_words": [len(r["sentence2"].split()) for r in rows]})
    return length_histograms(stats)


@pytest.fixture
def figures(monkeypatch):
    """The figures the chart functions draw, kept open to be read."""
    drawn = []

    def keep(fig, path):
        drawn.append(fig)
        fig.tight_layout()
        fig.savefig(path)
        return path
    monkeypatch.setattr(card, "_save", keep)
    yield drawn
    for fig in drawn:
        card._pyplot().close(fig)


def whole(ticks) -> bool:
    return all(float(t).is_integer() for t in ticks)


def test_count_charts_of_a_tiny_corpus_have_whole_number_ticks(figures, tmp_path):
    rows = scinli_rows(2)  # 2 pairs per label: matplotlib's default ticks would be 0.25 apart
    counts: dict = {}
    for r in rows:
        counts[r["label"]] = counts.get(r["label"], 0) + 1
    dataset = {"splits": {"train": {"labels": {l: {"count": n} for l, n in counts.items()}},
                          "validation": {"labels": {}}, "test": {"labels": {}}}}
    card.plot_class_distribution(dataset, tmp_path / "c.png")
    card.plot_phrases({"reasoning": [["therefore", 2], ["thus", 1]], "contrasting": [["however", 2]]},
                      tmp_path / "p.png")
    bars, phrases = figures
    assert whole(bars.axes[0].get_yticks()) and len(bars.axes[0].get_yticks()) >= 2
    assert all(whole(ax.get_xticks()) for ax in phrases.axes)


def test_lengths_axis_and_its_last_bin_note_agree(figures, tmp_path):
    short = [r for r in scinli_rows(40) if len(r["sentence1"].split()) < LENGTH_BINS - 1
             and len(r["sentence2"].split()) < LENGTH_BINS - 1][:8]
    card.plot_lengths(histograms(short), tmp_path / "short.png")
    long = scinli_rows(2, min_words=LENGTH_BINS)  # premises of 61 words and more: in the last bin
    card.plot_lengths(histograms(long), tmp_path / "long.png")
    (short_fig, long_fig) = figures
    for ax in short_fig.axes:  # the axis stops at the longest sentence: no word of a last bin it hides
        assert ax.get_xlabel() == "whitespace words" and ax.get_xlim()[1] < LENGTH_BINS - 1
        assert whole(ax.get_xticks())
    for ax in long_fig.axes:  # the last bin is drawn, and named
        assert ax.get_xlabel() == f"whitespace words (last bin: {LENGTH_BINS - 1} and more)"
        assert ax.get_xlim()[1] > LENGTH_BINS - 1
