"""Flags every writing or reading command spells the same way as the job
(`jobs/extract.py`): ``--output``, ``--overwrite``, ``--data``.

What they mean is the same everywhere: a command that writes refuses an existing ``--output``
unless ``--overwrite`` (:func:`refuse_existing`, one message), writes a folder or a file
beside it and swaps it in (:func:`output_folder`, :func:`output_file`, through
extractor/io/atomic.py), and ``--json`` is a switch that prints JSON instead of the report.

The trainer's older spellings (``--out``, ``--force``, ``predict --input``, ``evaluate
--test``) are accepted as deprecated aliases for one release: they set the same value and
print one ``note:`` line on stderr naming the new flag.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Iterator

from extractor.io import atomic
from trainer.errors import OutputExists

DEPRECATED = "deprecated alias, removed in the next release"


class _Alias(argparse.Action):
    """Stores like its wrapped action; an old spelling also prints a deprecation note."""

    def __init__(self, option_strings, dest, *, deprecated=(), store_true=False, extend=False, **kw):
        self.deprecated, self.store_true, self.extend = tuple(deprecated), store_true, extend
        if store_true:
            kw.update(nargs=0, default=kw.get("default", False))
        super().__init__(option_strings, dest, **kw)

    def __call__(self, parser, namespace, values, option_string=None):
        if option_string in self.deprecated:
            print(f"note: {option_string} is a {DEPRECATED}; use {self.option_strings[0]}", file=sys.stderr)
        if self.store_true:
            values = True
        elif self.extend:
            values = list(getattr(namespace, self.dest, None) or []) + list(values)
        setattr(namespace, self.dest, values)


def add_output(p: argparse.ArgumentParser, help: str, *, required: bool = False, type=Path) -> None:
    """``--output`` (alias ``--out``, deprecated)."""
    p.add_argument("--output", "--out", dest="output", required=required, type=type, action=_Alias,
                   deprecated=("--out",), metavar="PATH", help=f"{help} (--out: {DEPRECATED})")


def add_overwrite(p: argparse.ArgumentParser, help: str) -> None:
    """``--overwrite`` (alias ``--force``, deprecated)."""
    p.add_argument("--overwrite", "--force", dest="overwrite", action=_Alias, store_true=True,
                   deprecated=("--force",), help=f"{help} (--force: {DEPRECATED})")


def add_data(p: argparse.ArgumentParser, help: str, *, old: str | None = None, required: bool = False,
             many: bool = False, type=Path) -> None:
    """``--data`` (alias `old`, deprecated, where the command spelled it otherwise); with
    ``many`` it takes one or more paths and repeats add up."""
    names = ("--data", old) if old else ("--data",)
    extra = dict(nargs="+", extend=True) if many else {}
    p.add_argument(*names, dest="data", required=required, type=type, action=_Alias,
                   deprecated=(old,) if old else (), metavar="PATH", **extra,
                   help=f"{help} ({old}: {DEPRECATED})" if old else help)


def add_label_map_arguments(p: argparse.ArgumentParser) -> None:
    """``--label-map`` and ``--unmapped``, as `evaluate` and `stress` take them."""
    p.add_argument("--label-map", action="append", default=[], metavar="A=B,...",
                   help="rename labels of the data and of the model into one label space (many-to-one allowed; "
                        "repeatable: the maps add up, a label mapped to two names is an error)")
    p.add_argument("--unmapped", choices=["keep", "drop", "error"], default="keep",
                   help="gold labels the model cannot predict after --label-map: keep them as errors (default), "
                        "drop those rows (counted), or stop")


def add_json(p: argparse.ArgumentParser, what: str) -> None:
    """``--json``: a switch, the same in every command: print `what` as JSON on stdout instead of
    the human-readable report (a file is written only to ``--output``)."""
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON instead of the report")


# ---------------------------------------------------------------------------- --output and --overwrite

def refuse_existing(out: Path | str, overwrite: bool) -> Path:
    """``out`` as a Path, after the one rule of every writing command: something already at
    ``out`` (a file, or a folder that is not empty) is replaced only with ``--overwrite``."""
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not overwrite:
        raise OutputExists(f"{out}: already exists; choose another --output or pass --overwrite to replace it")
    return out


def output_folder(out: Path | str, overwrite: bool) -> atomic.WorkFolder:
    """``with output_folder(out, overwrite) as work:`` write into a work folder beside ``out``
    (extractor/io/atomic.py); when the block ends it replaces ``out``, and on any error it is
    removed (``out`` left as it was). An existing ``out`` needs ``--overwrite``."""
    return atomic.WorkFolder(refuse_existing(out, overwrite))


@contextlib.contextmanager
def output_file(out: Path | str) -> Iterator[Path]:
    """``with output_file(out) as path:`` write the file ``path`` (beside ``out``:
    extractor/io/atomic.py's `WorkFile`); when the block ends it replaces ``out`` in one
    rename, and on any error it is removed (``out`` left as it was). Check ``--overwrite``
    with :func:`refuse_existing` before the work starts."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic.WorkFile(out) as work:
        yield work
