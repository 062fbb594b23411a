"""The layering of extractor/ (docs/DEVELOPING.md "Layout and ownership"), read from the
import statements of every module: a folder imports no folder above it."""
from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO

STAGES = {"sentences", "pairs", "check", "splits"}
# folder -> the folders of extractor/ it must not import
FORBIDDEN = {
    "core": {"io", "lexicon", "neardup", "statistics", "engine", "job", "runs", "spark"} | STAGES,
    "io": {"lexicon", "neardup", "statistics", "engine", "job", "runs", "spark"} | STAGES,
    "lexicon": {"engine", "job", "runs", "spark"} | STAGES,
    **{stage: {"job", "runs", "spark"} for stage in STAGES},
}


def imported_folders(folder: str) -> dict[str, set[str]]:
    """{module path: the extractor/ folders it imports}."""
    out = {}
    for path in sorted((REPO / "extractor" / folder).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        out[str(path.relative_to(REPO))] = {n.split(".")[1] for n in names
                                            if n.startswith("extractor.") and n.count(".") >= 1}
    return out


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_a_folder_imports_no_folder_above_it(folder):
    found = imported_folders(folder)
    assert found
    wrong = {module: sorted(folders & FORBIDDEN[folder]) for module, folders in found.items()
             if folders & FORBIDDEN[folder]}
    assert not wrong
