"""Torch trainer for NLI splits: `python -m trainer <command>`. Never imports Spark."""
