"""Stage 1 logic: documents (dumps, text folders, JSONL, Parquet) -> cleaned, segmented sentences."""
