"""The three table contracts, declared once (DESIGN.md "Data flow and tables").

Every writer (stage 1 tasks, the pairs and splits stages, tests, benchmarks) builds its
Arrow batches against these schemas, so a column is named and typed in one place (stage 3
writes the pairs columns). Words: a *work unit* is a byte range or stream of
an input file that one task reads (never "split"); a *split* is train/validation/test.
"""
from __future__ import annotations

import pyarrow as pa


# Where a sentence sits: (doc_id, section, para_idx, sent_idx). Pairs carry one per side.
REF = pa.struct([
    pa.field("doc_id", pa.string()),
    pa.field("section", pa.string()),
    pa.field("para_idx", pa.int32()),
    pa.field("sent_idx", pa.int32()),
])

# 1. documents -> sentences/ (partitioned by corpus). `short`: below --min-chars, kept
#    but skipped by pairing so that indices never need renumbering. `role`: train or test-only.
SENTENCES = pa.schema([
    pa.field("corpus", pa.string()),
    pa.field("genre", pa.string()),
    pa.field("lang", pa.string()),
    pa.field("doc_id", pa.string()),
    pa.field("title", pa.string()),
    pa.field("section", pa.string()),
    pa.field("para_idx", pa.int32()),
    pa.field("sent_idx", pa.int32()),
    pa.field("text", pa.string()),
    pa.field("short", pa.bool_()),
    pa.field("role", pa.string()),
])

# 2. sentences -> pairs/ (partitioned by label). `marker`: the stripped phrase (null for
#    neutral); `source`: "marker" or the neutral strategy's name.
PAIRS = pa.schema([
    pa.field("pair_id", pa.string()),
    pa.field("corpus", pa.string()),
    pa.field("genre", pa.string()),
    pa.field("lang", pa.string()),
    pa.field("doc_id", pa.string()),
    pa.field("premise", pa.string()),
    pa.field("hypothesis", pa.string()),
    pa.field("label", pa.string()),
    pa.field("marker", pa.string()),
    pa.field("source", pa.string()),
    pa.field("premise_ref", REF),
    pa.field("hypothesis_ref", REF),
])
