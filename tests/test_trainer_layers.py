"""The trainer's folders are layered (docs/DEVELOPING.md, "Layout and ownership"): a module
imports only its own folder and the folders below it, lazy imports inside functions too."""
from __future__ import annotations

import ast
from pathlib import Path

import trainer

ROOT = Path(trainer.__file__).parent

# lowest first; one rank may hold several folders, which then import none of each other
RANKS = {"errors": 0, "flags": 1, "data": 2, "models": 3, "analysis": 3, "training": 4, "annotation": 4,
         "commands": 5, "cli": 6, "__main__": 7}


def part_of(module: str) -> str:
    """`trainer.models.loop` -> "models"; `trainer.errors` -> "errors"."""
    return module.split(".")[1]


def trainer_imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "trainer":
                out |= {f"trainer.{a.name}" for a in node.names}
            elif node.module.startswith("trainer."):
                out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("trainer.")}
    return out


def upward_imports() -> list[str]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.name == "__init__.py" and len(rel.parts) == 1:
            continue
        src = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        for module in sorted(trainer_imports(path)):
            dst = part_of(module)
            if dst != src and RANKS[dst] >= RANKS[src]:
                found.append(f"trainer/{rel}: imports {module} ({dst} is not below {src})")
    return found


def test_every_trainer_part_has_a_rank():
    parts = {p.name if p.is_dir() else p.stem for p in ROOT.iterdir()
             if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and p.name != "__init__.py")}
    assert parts == set(RANKS), parts ^ set(RANKS)


def test_no_trainer_folder_imports_one_at_or_above_its_rank():
    assert upward_imports() == []


def test_the_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The check fails on the import that models/ -> training/ was (a model kind importing the loop
    when the loop lived in training/)."""
    fake = tmp_path / "trainer"
    (fake / "models").mkdir(parents=True)
    (fake / "training").mkdir()
    (fake / "models" / "kind.py").write_text("def f():\n    from trainer.training.loop import fit\n")
    (fake / "training" / "runs.py").write_text("from trainer.models import model_class\n")
    monkeypatch.setattr(f"{__name__}.ROOT", fake)
    assert upward_imports() == ["trainer/models/kind.py: imports trainer.training.loop (training is not below "
                                "models)"]
