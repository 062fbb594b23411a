"""Flags every writing or reading command spells the same way as the job
(`jobs/extract.py`): ``--output``, ``--overwrite``, ``--data``.

The trainer's older spellings (``--out``, ``--force``, ``predict --input``, ``evaluate
--test``) are accepted as deprecated aliases for one release: they set the same value and
print one ``note:`` line on stderr naming the new flag.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

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
