"""Near-duplicate detection (docs/neardup.md): the settings and their flags (`settings`:
imports no numpy, pandas or pyarrow, for the job's `--help`), the MinHash and LSH kernels
over a batch of texts (`minhash`), the steps of the stages' distributed rounds
(`distributed`), the leakage between a dataset's splits and its table (`leakage`)."""
