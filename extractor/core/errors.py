"""The one base of every user error, for the job and the trainer.

A `UserError` is a mistake in what the user gave (a flag, a file, a setting): the entry
points (`jobs/extract.py`, `python -m trainer`) print it as one line, ``error: <message>``,
and exit with status 2. Every domain error of the library subclasses it (keeping its
built-in base, e.g. `ValueError`, so older `except ValueError` callers still work).
Anything else is a bug: the entry points let its traceback show.
"""
from __future__ import annotations


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
