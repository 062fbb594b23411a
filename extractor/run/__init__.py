"""Runs of the job on an output root (docs/deployment.md): one package, four concerns.

    extractor.run.run             Run (staging, manifest, publish, --resume), read_manifest,
                                  published_path, fingerprint, fault_point, environment faults
    extractor.run.locks           LocalLock (flock), RemoteLock (heartbeat object)
    extractor.run.report          stats.json and the summary table
    extractor.run.errors          OutputExistsError, RunLockedError, OutputError, ResumeError

The names below are the package's API (what the job and the tests use).
"""
from __future__ import annotations

from extractor.run.errors import OutputError, OutputExistsError, ResumeError, RunLockedError  # noqa: F401
from extractor.run.locks import LocalLock, RemoteLock, new_run_id  # noqa: F401
from extractor.run.report import end_summary, read_stats, stats_bytes, summary_table, write_stats  # noqa: F401
from extractor.run.run import (CURRENT, LEGACY_ENTRIES, LOCK, MANIFEST, RUNS, TABLE_NAMES, Run,  # noqa: F401
                               atomic_directory, environment_failure_message, fault_point, fingerprint,
                               first_difference, is_uri, path_str, published_path, read_manifest)
