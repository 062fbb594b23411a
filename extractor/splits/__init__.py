"""Stage 3 logic: pairs -> leakage-free train/validation/test splits and the dataset card."""
