"""NLI corpus extraction library. Pure-Python text logic; Spark glue lives in *_stage modules.

Importing this package never imports pyspark."""
