"""The names every module shares, declared once: labels, split names, stage names."""
from __future__ import annotations

LABELS = ("contrasting", "entailment", "reasoning", "neutral")  # the canonical label order
MARKED_LABELS = ("contrasting", "entailment", "reasoning")       # labels a linking phrase marks
NEUTRAL = "neutral"                                              # the label of sampled pairs
SPLITS = ("train", "validation", "test")
STAGES = ("sentences", "pairs", "splits")                        # the job's stages, in order
