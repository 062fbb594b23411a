"""Stage 1's plan (`DocumentsPlan`): what its one round's tasks read."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class DocumentsPlan:
    """Everything stage 1's tasks read, shipped with the units round's function (pickled by
    Spark): made from the listed inputs (`stage.make_plan`; what the Punkt step samples),
    and for the units round with the Punkt step's parameters and the table's folder
    (`stage.write_table`: the fields `process.process_unit` reads)."""

    corpora: Sequence[dict]          # per input corpus its settings (`process.corpus_settings`)
    lexicon: Any
    min_chars: int
    namespaces: Mapping[str, Any]    # per dump, its namespaces (`units.Listing.namespaces`)
    units: Sequence[Any] = ()        # the work units (`units.WorkUnit`)
    # sentences confidently in another language than the lexicon's are dropped and counted
    # (`--language-check on`; `language.foreign_languages`)
    drop_foreign: bool = False
    # the Punkt parameters (`segment.params_to_dict`) and their key (`process.punkt_key`):
    # None in the plan the Punkt step samples from
    punkt: dict | None = None
    punkt_key: str | None = None
    table_dir: str | None = None     # the sentences table's folder (the units round)
