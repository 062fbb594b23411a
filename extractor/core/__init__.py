"""What every part of the engine shares: the names (labels, splits, stages), the three
table schemas, the user errors, the stable hashes. Imports nothing of the engine."""
