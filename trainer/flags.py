"""Flags every writing or reading command spells the same way as the job
(`jobs/extract.py`): ``--output``, ``--overwrite``, ``--data``.

What they mean is the same everywhere: a command that writes refuses an existing ``--output``
unless ``--overwrite`` (:func:`refuse_existing`, one message), writes a folder or a file
beside it and swaps it in (:func:`output_folder`, :func:`output_file`, through
extractor/io/atomic.py), and ``--json`` is a switch that prints JSON instead of the report.
"""
from __future__ import annotations

import argparse
import contextlib
from pathlib import Path
from typing import Iterator

from extractor.io import atomic
from trainer.errors import OutputExists

# A parser or an argument group of one.
Arguments = argparse._ActionsContainer


def add_output(p: Arguments, help: str, *, required: bool = False, type=Path) -> None:
    """``--output``."""
    p.add_argument("--output", required=required, type=type, metavar="PATH", help=help)


def add_overwrite(p: Arguments, help: str) -> None:
    """``--overwrite``."""
    p.add_argument("--overwrite", action="store_true", help=help)


def add_data(p: Arguments, help: str, *, required: bool = False, many: bool = False,
             type=Path) -> None:
    """``--data``; with ``many`` it takes one or more paths and repeats add up."""
    if many:
        p.add_argument("--data", required=required, type=type, nargs="+", action="extend", metavar="PATH",
                       help=help)
    else:
        p.add_argument("--data", required=required, type=type, metavar="PATH", help=help)


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
