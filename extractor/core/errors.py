"""The one base of every user error, for the job and the trainer.

A `UserError` is a mistake in what the user gave (a flag, a file, a setting): the entry
points (`jobs/extract.py`, `python -m trainer`) print it as one line, ``error: <message>``,
and exit with status 2. Every domain error of the library subclasses it (keeping its
built-in base, e.g. `ValueError`, so older `except ValueError` callers still work).
Anything else is a bug: the entry points let its traceback show.
"""
from __future__ import annotations

import errno


class UserError(Exception):
    """A problem with the user's input: printed as one line, exit status 2. The message
    says what is wrong, where (file, page, line, offset) and what to do."""

    def one_line(self) -> str:
        text = str(self)
        return text.splitlines()[0] if text else type(self).__name__


class InputError(UserError, ValueError):
    """Bad or missing input; the message is one line and names the file."""


# Errors raised inside Spark tasks reach the driver wrapped in a Java stack trace; this
# mark lets the job find the one line meant for the user.
ERROR_MARK = "[nli-input-error] "


# A Spark task's failure reaches the driver as text inside a Spark exception. The job reads
# nothing of that text but the marks our own tasks put in it on purpose: the user's input
# (`ERROR_MARK`), or a write the output's filesystem refused, with its errno
# (`OUTPUT_FAULT_MARK`, put by the Spark runner's task harness).
OUTPUT_FAULT_MARK = "[nli-output-fault] errno "
# the errnos of a filesystem that refuses the output (extractor.runs.environment_message)
OUTPUT_FAULTS = (errno.ENOSPC, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EDQUOT)


def yaml_problem(exc: Exception) -> str:
    """A YAML parser's error as one phrase with its place: ``line 26, column 13: mapping
    values are not allowed here`` (PyYAML's marks count from 0; people count from 1)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or [type(exc).__name__])[0]
    if mark is None:
        return str(problem)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"
