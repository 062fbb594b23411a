"""Stage 1's plan (`DocumentsPlan`): what its one round's tasks read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class DocumentsPlan:
    """Everything stage 1's tasks read, shipped with the units round's function (pickled by
    Spark): made once from the listed inputs (`stage.make_plan`), then advanced by the
    driver with `dataclasses.replace` (the Punkt parameters, the table's folder)."""

    corpora: Sequence[dict]          # per input corpus its settings (`process.corpus_settings`)
    lexicon: Any
    min_chars: int
    namespaces: Mapping[str, Any]    # per dump, its namespaces (`units.Listing.namespaces`)
    units: Sequence[Any] = ()        # the work units (`units.WorkUnit`)
    # the Punkt parameters (`segment.params_to_dict`) and their key (`process.punkt_key`):
    # None until the driver's Punkt step
    punkt: dict | None = None
    punkt_key: str | None = None
    table_dir: str | None = None     # the sentences table's folder (the units round)
