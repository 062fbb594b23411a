"""Stage 1's round: one task per work unit (`process.process_unit`), its file written into
the table's folder, its count rows returned."""
from __future__ import annotations

from extractor.sentences.plan import DocumentsPlan
from extractor.sentences.process import process_unit
from extractor.engine.rounds import Round


def unit(plan: DocumentsPlan, k: int) -> list:
    """Unit `k`: its file written under `plan.table_dir`, its count rows."""
    return process_unit(plan.units[k], plan)


UNITS = Round("units", unit, spread=True)
