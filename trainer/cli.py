"""`python -m trainer <command>`: one sub-command per module.

Each command module exposes ``add_arguments(parser)`` and ``run(args) -> int``. Modules
are imported only when their command runs, so `stats` works without torch installed.
A `UserError` (extractor/core/errors.py) is printed as one line, ``error: ...``, exit status 2;
any other exception is a bug and shows its traceback.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from extractor.core.errors import UserError  # re-exported: `from trainer.cli import UserError` keeps working

# command -> (module, one-line help)
COMMANDS = {
    "stats": ("trainer.commands.stats", "statistics and leakage report for any NLI dataset"),
    "train": ("trainer.commands.train", "train a baseline or transformer on NLI splits"),
    "evaluate": ("trainer.commands.evaluate", "evaluate a saved run on new data"),
    "predict": ("trainer.commands.predict", "label a file with a saved run"),
    "cartography": ("trainer.commands.cartography", "data cartography from a run's training dynamics"),
    "compare": ("trainer.commands.compare", "significance tests between two or more runs"),
    "experiment": ("trainer.commands.experiment", "run a RoNLI-style line-up from a YAML file"),
    "stress": ("trainer.commands.stress", "stress tests (length mismatch, negation, overlap, spelling) of a run"),
    "annotate": ("trainer.commands.annotate", "human validation: export blind batches, import annotations, agreement"),
    "consistency": ("trainer.commands.consistency",
                    "meta-inferential consistency of a run's labels (MC, SC, EI readings)"),
}


class OneLineParser(argparse.ArgumentParser):
    """argparse errors as one line, ``error: ...``, exit 2 (the trainer's convention)."""

    def error(self, message):  # noqa: D401 - argparse API
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m trainer", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=OneLineParser)
    wanted = next((a for a in argv if not a.startswith("-")), None)
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == wanted:  # import only the module that will run
            importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    module = importlib.import_module(COMMANDS[args.command][0])
    try:
        return int(module.run(args) or 0)
    except UserError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 2


__all__ = ["COMMANDS", "OneLineParser", "UserError", "build_parser", "main"]
