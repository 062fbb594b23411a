"""The names every module shares, declared once: labels, split names (the stages' names:
extractor/job/stages.py)."""
from __future__ import annotations

LABELS = ("contrasting", "entailment", "reasoning", "neutral")  # the canonical label order
MARKED_LABELS = ("contrasting", "entailment", "reasoning")       # labels a linking phrase marks
NEUTRAL = "neutral"                                              # the label of sampled pairs
SPLITS = ("train", "validation", "test")
