"""One implementation of every NLI statistic, for the Spark job and for `trainer stats`.

Layers, each written once, one module each (callers import this package and use the names
it re-exports: ``from extractor import statistics``):

- `rows`: per-row functions on plain strings (`words`, `overlap_jaccard`, `lcs_ratio`,
  ...): the definitions, and :data:`ROW_COLUMNS`.
- `kernels`: `batch_statistics` computes them for a batch of pairs at once (vectorised
  over Arrow and numpy, bit for bit the per-row functions), with the word counts PMI is
  computed from. The Spark stage calls it per work unit
  (`extractor.splits.pair_tables.unit_statistics`); `trainer stats` on the whole split.
- `keys`: comparison keys of texts and pairs (`fold_text`, `pair_text_key`), duplicate and
  cross-split leakage counts.
- `aggregate`: :data:`AGGREGATES` says which row column is reduced how;
  `aggregate_columns` reduces numpy columns (exact medians), `aggregate_pandas` a pandas
  frame through it. The Spark stage calls it once per split
  (`extractor.splits.pair_tables.split_aggregates`), so the card and `trainer stats` agree.
- `pmi`: PMI between hypothesis words and labels (IndoNLI Table 9, after Gururangan et
  al. 2018): `pmi` is the formula over counts; word counts and the top words per label.
- `datasets`: the statistics of whole splits and datasets (`split_statistics`,
  `dataset_statistics`) from the layers above.
- `render`: Markdown tables of a result (`markdown_report`).

Word definitions (documented in docs/stats.md):
- *length* counts whitespace tokens of the raw text (RoNLI Table 2 "#words");
- *RoNLI overlap* (`overlap_jaccard_raw`, the overlap column of the RoNLI Table 2 layout)
  is the Jaccard index of the two sentences' raw whitespace-token sets, case and
  punctuation kept, as RoNLI's own code computes it ("Thus," != "thus");
- the other *overlap* statistics (`overlap_jaccard`, IndoNLI style, LCS, new tokens)
  compare normalised words: case-folded whitespace tokens with leading/trailing
  characters that are not letters or digits stripped, empty tokens dropped
  ("Thus," == "thus", "(§4.3)" == "4.3");
- standard deviations (IndoNLI Table 4's numbers in brackets) are sample standard
  deviations (n - 1 in the denominator; None below two rows), as pandas' ``std()`` and
  Spark's ``stddev_samp``.
"""
from __future__ import annotations

from extractor.statistics.aggregate import (
    AGGREGATES, DIGITS, aggregate_columns, aggregate_pandas, blocks_from_rows, sample_std,
)
from extractor.statistics.datasets import assemble_split_statistics, dataset_statistics, split_statistics
from extractor.statistics.kernels import batch_columns, batch_statistics, key_sums, row_statistics
from extractor.statistics.keys import (
    duplicate_counts, fold_text, fold_texts, folded_pair_key, leakage_counts, pair_text_key,
)
from extractor.statistics.pmi import (
    PMI_MIN_COUNT, PMI_SMOOTHING, add_word_counts, hypothesis_word_set, pmi, pmi_table, top_pmi,
    top_pmi_from_counts, word_counts, word_set,
)
from extractor.statistics.render import (
    RONLI_GROUPS, RONLI_NOTE, artefact_table, class_distribution_table, leakage_markdown, markdown_report,
    pmi_markdown, ronli_table,
)
from extractor.statistics.rows import (
    ROW_COLUMNS, ROW_DTYPES, inner_capital, lcs_length, lcs_ratio, new_token_rate, norm_token, norm_words,
    overlap_jaccard, overlap_jaccard_raw, word_count, words,
)

__all__ = [
    "AGGREGATES", "DIGITS", "PMI_MIN_COUNT", "PMI_SMOOTHING", "RONLI_GROUPS", "RONLI_NOTE",
    "ROW_COLUMNS", "ROW_DTYPES", "add_word_counts", "aggregate_columns", "aggregate_pandas",
    "artefact_table", "assemble_split_statistics", "batch_columns", "batch_statistics", "blocks_from_rows",
    "class_distribution_table", "dataset_statistics", "duplicate_counts", "fold_text", "fold_texts",
    "folded_pair_key", "hypothesis_word_set", "inner_capital", "key_sums", "lcs_length", "lcs_ratio", "leakage_counts",
    "leakage_markdown", "markdown_report", "new_token_rate", "norm_token", "norm_words", "overlap_jaccard",
    "overlap_jaccard_raw", "pair_text_key", "pmi", "pmi_markdown", "pmi_table", "row_statistics",
    "ronli_table", "sample_std", "split_statistics", "top_pmi", "top_pmi_from_counts", "word_count",
    "word_counts", "word_set", "words",
]
