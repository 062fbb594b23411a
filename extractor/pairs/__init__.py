"""Stage 2 logic: one document's sentences -> marked and neutral pairs (pure Python)."""
