"""Runs of the job on an output root (docs/deployment.md): one package, four concerns.

    extractor.runs.run      Run (staging, manifest, publish, --resume), read_manifest,
                            published_path, input_fingerprint, fault_point, environment faults
    extractor.runs.locks    LocalLock (flock), RemoteLock (heartbeat object)
    extractor.runs.report   stats.json and the summary table
    extractor.runs.errors   OutputExistsError, RunLockedError, OutputError, ResumeError

The names below are the package's API (what the job and the tests use).
"""
from __future__ import annotations

from extractor.runs.errors import OutputError, OutputExistsError, ResumeError, RunLockedError  # noqa: F401
from extractor.runs.locks import LocalLock, RemoteLock, new_run_id  # noqa: F401
from extractor.runs.report import end_summary, stats_bytes, summary_table  # noqa: F401
from extractor.runs.run import (CURRENT, LOCK, MANIFEST, RUNS, Run,  # noqa: F401
                                atomic_directory, check_output, environment_failure_message, environment_message,
                                fault_point,
                                first_difference, input_fingerprint, path_str, published_path, read_manifest)
