"""What the stages' options need: building an `Options` dataclass from the parsed flags,
a field's default (what `add_arguments` shows), and the defaults of the job's flags that
more than one stage reads. The stage contract itself is `extractor/engine/stage.py`.

No pyarrow, no numpy here: the job's `--help` imports it.
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
