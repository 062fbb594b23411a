"""The trainer's user errors: each subclasses `extractor.core.errors.UserError` (printed by
`python -m trainer` as one ``error:`` line, exit status 2) and keeps its built-in base
(`ValueError`, `FileNotFoundError`) for callers that caught those before. Bad NLI data is
`trainer.data.loading.NLIDataError`; a lexicon is `extractor.lexicon.lexicon.LexiconError`."""
from __future__ import annotations

from extractor.core.errors import UserError


class RunError(UserError, ValueError):
    """A run directory or checkpoint that cannot be used (not a run, unknown model kind,
    labels the model does not know, a missing checkpoint)."""


class RunFileNotFound(RunError, FileNotFoundError):
    """A file of a run directory that is not there."""


class OutputExists(UserError, FileExistsError):
    """An ``--output`` that is already there, without ``--overwrite``."""


class ModelError(UserError, ValueError):
    """A model setting or model file given by the user that cannot be used (--pretrained,
    --vectors, embeddings of a model that has none)."""


class ModelFileNotFound(ModelError, FileNotFoundError):
    """A model file (word vectors, checkpoint) that is not there."""


__all__ = ["ModelError", "ModelFileNotFound", "OutputExists", "RunError", "RunFileNotFound", "UserError"]
