"""The job's driver side: the `JobContext` a stage gets (`context`), the corpora it reads
(`inputs`), the user's relative paths (`paths`), the cost estimate of `--dry-run`
(`cost_model`). Importing `paths` or `cost_model` imports neither pyspark nor pyarrow."""
