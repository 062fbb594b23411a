"""The one contract of the job's stages.

A stage is a module of `extractor/documents/`, `extractor/pairs/` or `extractor/splits/`
(`documents.stage`, `pairs.stage`, `splits.stage`) with:

    NAME                      its name (extractor.names.STAGES) and the table it writes
    Options                   a dataclass of the flags it reads, defaults declared there once;
                              `Options.from_args(args)` builds it from the parsed arguments
    add_arguments(parser)     its flags (their defaults come from `Options`)
    check(ctx)                settings checked before any stage runs (a bad flag, a missing
                              model): a one-line error now, not after hours of work
    run(ctx, runner)          plans the work units and runs the stage's rounds on `runner`
                              (an `extractor.engine.runner.Runner`); global steps (quotas,
                              dedup, split assignment) run in the driver on the rounds' small
                              results

Every stage has the same shape (`plan.py`, `rounds.py`, `stage.py` in its package): a frozen
plan dataclass made once from the options and the listed work, named rounds
(`extractor.engine.rounds.Round`: tasks and a function of (plan, task)), the driver advancing
the plan between rounds with `dataclasses.replace`; the rounds that decide run first, the
rounds that write the table run inside `ctx.write_table_with`.

This module holds only what the stages' options need (no pyarrow, no numpy: the job's
`--help` imports it).
"""
from __future__ import annotations

import dataclasses


def options_from_args(cls, args, **given):
    """A stage's options dataclass from parsed arguments: every field the arguments have
    (or `given`: values the stage resolved itself); the others keep the dataclass's default
    (a hand-built namespace in a test)."""
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    return cls(**{**{n: getattr(args, n) for n in names if hasattr(args, n)}, **given})


def default(cls, name: str):
    """The default of field `name` of an options dataclass (what `add_arguments` shows)."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is not dataclasses.MISSING:
                return f.default
            if f.default_factory is not dataclasses.MISSING:
                return f.default_factory()
            raise TypeError(f"{cls.__name__}.{name} has no default")
    raise KeyError(name)


# Flags of the job that more than one stage reads: their defaults, declared once.
MIN_CHARS = 50
SEED = 0
FILES_PER_TABLE = 4
