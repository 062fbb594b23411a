"""Runs of the job on an output root (docs/deployment.md): one package, four concerns.

    extractor.run.run             Run (staging, manifest, publish, --resume), read_manifest,
                                  published_path, fingerprint, fault_point, environment faults
    extractor.run.locks           LocalLock (flock), RemoteLock (heartbeat object)
    extractor.run.parquet_writer  the one Parquet writer (write_sorted, spark_partition, ...)
    extractor.run.report          stats.json and the summary table
    extractor.run.errors          OutputExistsError, RunLockedError, OutputError, ResumeError

The names below are the package's API (what the job and the tests use).
"""
from __future__ import annotations

from extractor import fs  # noqa: F401  (the job reaches the filesystem layer through it)
from extractor.run.errors import OutputError, OutputExistsError, ResumeError, RunLockedError  # noqa: F401
from extractor.run.locks import LocalLock, RemoteLock, new_run_id  # noqa: F401
from extractor.run.parquet_writer import (PARQUET_OPTIONS, ROW_GROUP_ROWS, finish_table_files,  # noqa: F401
                                          partition_dir, partition_values, plain_schema, spark_partition,
                                          task_attempt, write_sorted)
from extractor.run.report import end_summary, read_stats, stats_bytes, summary_table, write_stats  # noqa: F401
from extractor.run.run import (CURRENT, LEGACY_ENTRIES, LOCK, MANIFEST, RUNS, TABLE_NAMES, Run,  # noqa: F401
                               atomic_directory, environment_failure_message, environment_message, fault_point,
                               fingerprint, first_difference, is_uri, path_str, published_path, read_manifest)
