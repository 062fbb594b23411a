"""The errors of runs: each a one-line user error (extractor.core.errors.UserError)."""
from __future__ import annotations

from extractor.core.errors import UserError


class OutputExistsError(UserError, FileExistsError):
    """The output already holds a table and --overwrite was not given."""


class RunLockedError(UserError, RuntimeError):
    """Another live run is writing the same output."""


class OutputError(UserError, OSError):
    """The output cannot be written (permissions, full disk, read-only filesystem); `errno`
    is the filesystem's own when known (the job names a read-only or full one by it)."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.errno = code


class ResumeError(UserError, ValueError):
    """--resume found an unfinished run made from other inputs or settings."""
