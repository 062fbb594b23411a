"""The semantic check of every pair (stage `check`, between `pairs` and `splits`; off by default)."""
