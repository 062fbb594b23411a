"""The numbers of issue 47's "Show" section, recomputed from the tree.

    python benchmarks/refactor_metrics.py                # the table
    python benchmarks/refactor_metrics.py --verbose      # and every location counted
    python benchmarks/refactor_metrics.py --json         # machine-readable
    python benchmarks/refactor_metrics.py --since REV    # commit subjects of REV..HEAD

Standard library only (ast, re, tokenize, subprocess): it reads the sources, it imports
none of them. Each counter is a syntactic approximation, defined in one line in the table
(and in its function's docstring); `tests/test_refactor_metrics.py` plants a case of each.
"""
from __future__ import annotations

import argparse
import ast
import functools
import io
import json
import re
import statistics
import subprocess
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LIBRARY = ("extractor", "trainer", "jobs")  # the library's top-level packages
USERS = ("tests", "benchmarks")  # code that may use the library without being it
# The one module that names scratch paths, and the one atomic writer.
SCRATCH_MODULES = ("extractor/engine/scratch.py",)
ATOMIC_MODULES = ("extractor/io/atomic.py",)
SUBJECT_LIMIT = 72
# Library names only tests/ and benchmarks/ refer to, kept in the library on purpose: API
# whose users are outside this tree, each with its reason. names_only_tests_use does not
# count them (--verbose lists them as kept). Keep it short: code that only tests or
# benchmarks use belongs in tests/ or benchmarks/ (docs/DEVELOPING.md).
KEPT_FOR_USERS = {
    "extractor.runs.run.published_path":
        "docs/deployment.md: how a reader of an object-store output finds the published tables",
    "extractor.engine.runner.InProcessRunner":
        "the engine's in-process Runner (README, docs/DEVELOPING.md): any stage's rounds without Spark",
}


@dataclass
class Metric:
    key: str
    definition: str
    hits: list[str] = field(default_factory=list)  # "path:line: detail"
    count: int | None = None  # when the number is not len(hits) (e.g. distinct names)

    @property
    def value(self) -> int:
        return len(self.hits) if self.count is None else self.count


# --- the tree ---------------------------------------------------------------------------

@dataclass
class Module:
    rel: str  # "extractor/pairs/stage.py"
    name: str  # "extractor.pairs.stage"
    source: str
    tree: ast.Module

    @property
    def top(self) -> str:
        return self.rel.split("/", 1)[0]

    @functools.cached_property
    def lines(self) -> list[str]:
        return self.source.splitlines()

    @functools.cached_property
    def nodes(self) -> list[ast.AST]:
        return list(ast.walk(self.tree))

    @functools.cached_property
    def annotation_trees(self) -> list[ast.AST]:
        return list(_annotation_strings(self))

    @functools.cached_property
    def docstrings(self) -> list[ast.Constant]:
        return _docstring_nodes(self)


def load_modules(root: Path, tops: tuple[str, ...]) -> list[Module]:
    modules = []
    for top in tops:
        base = root / top
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if any(part.startswith(".") or part == "__pycache__" for part in rel.split("/")):
                continue
            source = path.read_text(encoding="utf-8", errors="replace")
            try:
                tree = ast.parse(source, filename=rel)
            except SyntaxError:
                continue
            name = rel[:-3].replace("/", ".")
            if name.endswith(".__init__"):
                name = name[: -len(".__init__")]
            modules.append(Module(rel, name, source, tree))
    return modules


def where(module: Module, node: ast.AST, detail: str) -> str:
    return f"{module.rel}:{getattr(node, 'lineno', 0)}: {detail}"


def segment(module: Module, node: Any) -> str:
    """The source text of a node, on one line."""
    lines = module.lines
    first, last = node.lineno - 1, node.end_lineno - 1
    if first == last:
        text = lines[first].encode()[node.col_offset:node.end_col_offset].decode(errors="replace")
    else:
        text = "\n".join([lines[first].encode()[node.col_offset:].decode(errors="replace"), *lines[first + 1:last],
                          lines[last].encode()[:node.end_col_offset].decode(errors="replace")])
    return " ".join(text.split())


def functions(tree: ast.AST):
    """Every function of a tree, and the module itself (its top-level code)."""
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node


def own_nodes(scope: ast.AST):
    """The nodes of one scope, not those of the functions and classes nested in it."""
    stack = list(ast.iter_child_nodes(scope))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


# --- 1. plan keys written after creation ------------------------------------------------

PLAN_NAME = re.compile(r"(^|_)plan$")
PLAN_METHODS = ("update", "setdefault", "pop", "popitem", "clear")


def _plan_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name) and PLAN_NAME.search(node.id):
        return node.id
    if isinstance(node, ast.Attribute) and PLAN_NAME.search(node.attr):
        return node.attr
    return None


def plan_writes(modules: list[Module]) -> Metric:
    """`plan[key] = ...` (also `+=`, `del`), `plan.update(...)`, `plan.setdefault(...)`
    on a name ending in `plan` in extractor/; the number is the distinct (module, key)
    pairs, each site listed."""
    m = Metric("plan_keys_written", "distinct (module, key) written into a plan dict after it was created "
               "(plan[k] = / += / del, plan.update/setdefault/pop), extractor/")
    keys = set()
    for mod in modules:
        if mod.top != "extractor":
            continue
        for node in mod.nodes:
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Delete):
                targets = node.targets
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Subscript) and _plan_name(sub.value):
                        key = segment(mod, sub.slice)
                        keys.add((mod.rel, key))
                        m.hits.append(where(mod, sub, f"{_plan_name(sub.value)}[{key}] written"))
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in PLAN_METHODS and _plan_name(node.func.value)):
                literal = node.args[0] if node.args and isinstance(node.args[0], ast.Dict) else None
                written = [segment(mod, k) for k in (literal.keys if literal else []) if k is not None]
                written += [repr(k.arg) for k in node.keywords if k.arg]
                if node.func.attr in ("setdefault", "pop") and node.args:
                    written = [segment(mod, node.args[0])]
                for key in written or [f"<{node.func.attr}:{node.lineno}>"]:
                    keys.add((mod.rel, key))
                m.hits.append(where(mod, node, f"{segment(mod, node.func)}({', '.join(written) or '...'})"))
    m.count = len(keys)
    return m


# --- 2. hand-formatted scratch paths ----------------------------------------------------

# A file name: no spaces; a zero-padded number, a scratch suffix or a numbered prefix.
NAME_TEXT = re.compile(r"^[\w.\-/]*$")
SCRATCH_SUFFIX = re.compile(r"\.(arrow|parquet|ipc|feather|npy|npz)$")
NUMBERED_PREFIX = re.compile(r"(^|/)(bucket|part|unit|range|band|shard|chunk)-")
ZERO_PADDED = re.compile(r"^0\d+d$")
JOIN_CALLS = ("join", "folder")  # fs.join, os.path.join, scratch.folder
WORK_TEXT = re.compile(r"work|scratch|tmp", re.I)
FOLDER_LITERAL = re.compile(r"^[A-Za-z_][\w.\-]*$")


def _fstring_is_name(node: ast.JoinedStr) -> bool:
    text = "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    specs = ["".join(str(s.value) for s in v.format_spec.values if isinstance(s, ast.Constant))
             for v in node.values if isinstance(v, ast.FormattedValue) and isinstance(v.format_spec, ast.JoinedStr)]
    if not NAME_TEXT.match(text):
        return False
    return bool(SCRATCH_SUFFIX.search(text) or NUMBERED_PREFIX.search(text) or any(ZERO_PADDED.match(s) for s in specs))


def _format_is_name(text: str) -> bool:
    """A %-format or str.format template that builds a file name."""
    bare = re.sub(r"%[-0-9.]*[sdif]|\{[^}]*\}", "", text)
    if bare == text or not NAME_TEXT.match(bare):
        return False
    return bool(SCRATCH_SUFFIX.search(bare) or NUMBERED_PREFIX.search(bare) or re.search(r"%0\d+d|:0\d+d\}", text))


def scratch_paths(modules: list[Module]) -> tuple[Metric, Metric]:
    """Scratch paths spelt by hand in extractor/ and jobs/, outside the scratch module:
    (a) file names formatted in place: an f-string, %-format or .format() with no spaces
    and a scratch suffix (`.arrow`, ...), a numbered prefix (`bucket-`, `unit-`, ...) or a
    zero-padded number (`{b:05d}`); (b) folder-name string literals passed to a join
    (`fs.join`, `os.path.join`, `scratch.folder`) after a work path (its text says work,
    scratch or tmp)."""
    names = Metric("scratch_names_formatted", "scratch file names formatted in place (f\"bucket-{b:05d}.arrow\", "
                   "%/format), extractor/ and jobs/ outside the scratch module")
    folders = Metric("scratch_folder_literals", "folder-name literals joined to a work path (fs.join(plan[\"work\"], "
                     "\"kept\", ...)), extractor/ and jobs/ outside the scratch module")
    for mod in modules:
        if mod.top not in ("extractor", "jobs") or mod.rel in SCRATCH_MODULES:
            continue
        docstrings = {id(n) for n in mod.docstrings}
        for node in mod.nodes:
            if isinstance(node, ast.JoinedStr) and _fstring_is_name(node):
                names.hits.append(where(mod, node, segment(mod, node)))
            elif (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant)
                  and isinstance(node.left.value, str) and id(node.left) not in docstrings
                  and _format_is_name(node.left.value)):
                names.hits.append(where(mod, node, segment(mod, node)))
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
                  and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)
                  and _format_is_name(node.func.value.value)):
                names.hits.append(where(mod, node, segment(mod, node)))
            if isinstance(node, ast.Call) and len(node.args) >= 2:
                func = node.func
                fname = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if fname in JOIN_CALLS and WORK_TEXT.search(segment(mod, node.args[0])):
                    for arg in node.args[1:]:
                        if (isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                                and FOLDER_LITERAL.match(arg.value) and not SCRATCH_SUFFIX.search(arg.value)):
                            folders.hits.append(where(mod, arg, f"{arg.value!r} in {segment(mod, node)[:90]}"))
    names.definition += f"; {len({h.split(': ', 1)[1] for h in names.hits})} distinct templates"
    folders.definition += f"; {len({h.split(': ', 1)[1].split(' in ')[0] for h in folders.hits})} distinct names"
    return names, folders


# --- 3. substring classifiers of exception text -----------------------------------------

EXC_PARAM = re.compile(r"^(e|exc|err|error|exception|failure|cause)$")
EXC_ANNOTATION = re.compile(r"(Exception|Error)\b")
SEARCH_METHODS = ("find", "rfind", "index", "rindex", "startswith", "endswith", "count")
RE_FUNCS = ("search", "match", "fullmatch", "findall", "finditer")
MARKER = re.compile(r"MARK", re.I)  # the project's own marker in its tasks' messages: allowed


def _tainted(scope: ast.AST) -> set[str]:
    """Names of one function that hold an exception or text derived from one."""
    taint: set[str] = set()
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for a in scope.args.args + scope.args.kwonlyargs + scope.args.posonlyargs:
            ann = ast.unparse(a.annotation) if a.annotation is not None else ""
            if EXC_PARAM.match(a.arg) or EXC_ANNOTATION.search(ann):
                taint.add(a.arg)
    nodes = list(own_nodes(scope))
    for node in nodes:
        if isinstance(node, ast.ExceptHandler) and node.name:
            taint.add(node.name)
    if not taint:
        return taint
    flows = []  # (names read, names bound) of each assignment and loop
    for node in nodes:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = set().union(*(names_in(t) for t in targets))
            read = names_in(node.value) | (bound if isinstance(node, ast.AugAssign) else set())
            flows.append((read, bound))
        elif isinstance(node, (ast.For, ast.comprehension)):
            flows.append((names_in(node.iter), names_in(node.target)))
    for _ in range(5):  # propagate through assignments until nothing changes
        before = len(taint)
        for read, bound in flows:
            if read & taint:
                taint |= bound
        if len(taint) == before:
            break
    return taint


def _constant_needles(scope: ast.AST) -> set[str]:
    """Names bound by loops over constant tables (an UPPER_CASE name or a literal)."""
    out: set[str] = set()
    for node in own_nodes(scope):
        if isinstance(node, (ast.For, ast.comprehension)):
            it = node.iter
            if (isinstance(it, (ast.Tuple, ast.List, ast.Set))
                    or (isinstance(it, ast.Name) and it.id.lstrip("_").isupper())
                    or (isinstance(it, ast.Attribute) and it.attr.lstrip("_").isupper())):
                out |= names_in(node.target)
    return out


def _is_needle(node: ast.AST, loop_names: set[str]) -> bool:
    """A literal string, an UPPER_CASE constant, or a name taken from a constant table
    (also `needle.lower()`): not the project's own marker."""
    text = ast.unparse(node)
    if MARKER.search(text):
        return False
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        return True
    if isinstance(node, (ast.Tuple, ast.List)):
        return any(_is_needle(e, loop_names) for e in node.elts)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _is_needle(node.func.value, loop_names)
    if isinstance(node, ast.Name):
        return node.id in loop_names or node.id.lstrip("_").isupper()
    if isinstance(node, ast.Attribute):
        return node.attr.lstrip("_").isupper()
    return False


def substring_classifiers(modules: list[Module]) -> Metric:
    """In extractor/, trainer/, jobs/: `needle in text` / `not in`, `text.find(needle)`
    (startswith, endswith, index, count) and `re.search(pattern, text)` where `text` is an
    exception or text derived from one (`str(exc)`, `java.toString()`, `.lower()`, ...:
    the `except ... as` name, a parameter named exc/e/err/error or annotated as an
    exception, and what is assigned from them) and the needle a literal, an UPPER_CASE
    constant or an entry of a constant table; the project's own marker (`*MARK*`) is not
    counted."""
    m = Metric("substring_classifiers", "tests of exception text for a literal or a table's substrings "
               "(\"...\" in str(exc), text.find(...), re.search), the project's *MARK* excepted")
    for mod in modules:
        for scope in functions(mod.tree):
            taint = _tainted(scope)
            if not taint:
                continue
            loops = _constant_needles(scope)
            for node in own_nodes(scope):
                hit = False
                if isinstance(node, ast.Compare):
                    for op, left, right in zip(node.ops, [node.left] + node.comparators[:-1], node.comparators):
                        if isinstance(op, (ast.In, ast.NotIn)) and names_in(right) & taint and _is_needle(left, loops):
                            hit = True
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    f = node.func
                    if (f.attr in SEARCH_METHODS and names_in(f.value) & taint and node.args
                            and _is_needle(node.args[0], loops)):
                        hit = True
                    elif (f.attr in RE_FUNCS and isinstance(f.value, ast.Name) and f.value.id == "re"
                          and len(node.args) >= 2 and names_in(node.args[1]) & taint):
                        hit = not MARKER.search(ast.unparse(node.args[0]))
                    elif (f.attr in RE_FUNCS and node.args and names_in(node.args[0]) & taint
                          and not (isinstance(f.value, ast.Name) and f.value.id == "re")
                          and not MARKER.search(ast.unparse(f.value))):
                        hit = True  # PATTERN.search(text)
                if hit:
                    m.hits.append(where(mod, node, segment(mod, node)[:100]))
    return m


# --- 4. flat modules --------------------------------------------------------------------

def flat_modules(root: Path) -> Metric:
    """`extractor/*.py` other than `__init__.py` (modules beside the packages)."""
    m = Metric("flat_modules_extractor", "modules directly under extractor/ (extractor/*.py but __init__.py)")
    for path in sorted((root / "extractor").glob("*.py")):
        if path.name != "__init__.py":
            m.hits.append(f"extractor/{path.name}")
    return m


# --- 5. trainer commands importing commands --------------------------------------------

def command_modules(root: Path, modules: list[Module]) -> set[str]:
    """Modules registered as commands in trainer/cli.py (string constants naming a
    trainer module), and every module under trainer/commands/."""
    known = {m.name for m in modules}
    out = {m.name for m in modules if m.name.startswith("trainer.commands.") and not m.rel.endswith("__init__.py")}
    for cli in ("trainer/cli.py", "trainer/commands/__init__.py"):
        mod = next((m for m in modules if m.rel == cli), None)
        if mod is None:
            continue
        for node in mod.nodes:
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if node.value in known and node.value.startswith("trainer.") and node.value != mod.name:
                    out.add(node.value)
                elif f"trainer.commands.{node.value}" in known:
                    out.add(f"trainer.commands.{node.value}")
    return out



def imported_module(node: ast.ImportFrom, package: str) -> str:
    """The absolute name of the module a `from ... import` names (relative ones resolved
    against `package`)."""
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
        base = ".".join(parts + ([node.module] if node.module else []))
    return base

def imported_modules(mod: Module, known: set[str]) -> list[tuple[ast.AST, str]]:
    """The project modules one module imports (absolute or relative; `from pkg import mod`
    names the module)."""
    out: list[tuple[ast.AST, str]] = []
    package = mod.name if mod.rel.endswith("__init__.py") else mod.name.rpartition(".")[0]
    for node in mod.nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in known:
                    out.append((node, a.name))
        elif isinstance(node, ast.ImportFrom):
            base = imported_module(node, package)
            for a in node.names:
                full = f"{base}.{a.name}"
                if full in known:
                    out.append((node, full))
                elif base in known:
                    out.append((node, base))
    return out


def commands_importing_commands(root: Path, modules: list[Module]) -> Metric:
    """A trainer command module (registered in trainer/cli.py, or under trainer/commands/)
    that imports another command module: one per (importer, imported) pair."""
    m = Metric("commands_importing_commands", "trainer command modules importing another command module "
               "(commands from trainer/cli.py or trainer/commands/), per pair")
    commands = command_modules(root, modules)
    known = {x.name for x in modules}
    for mod in modules:
        if mod.name not in commands:
            continue
        seen = set()
        for node, target in imported_modules(mod, known):
            if target in commands and target != mod.name and target not in seen:
                seen.add(target)
                m.hits.append(where(mod, node, f"{mod.name} imports {target}"))
    return m


# --- 6. temp-file writers outside the atomic helper ------------------------------------

MOVE_CALLS = {("os", "replace"), ("os", "rename"), ("shutil", "move"), ("fs", "move")}
TEMP_TEXT = re.compile(r"tmp|temp|partial|\.part\b|work", re.I)


def temp_writers(modules: list[Module]) -> Metric:
    """A file or folder moved into place by hand outside the atomic helper
    (extractor/io/atomic.py): `os.replace`, `os.rename`,
    `shutil.move`, `fs.move(src, ...)`, `src.replace(...)` / `src.rename(...)` where the
    source's text names a temporary (tmp, temp, partial, work)."""
    m = Metric("temp_file_writers", "temp files/folders moved into place by hand (os.replace/rename, shutil.move, "
               "fs.move, Path.replace of a tmp) outside the atomic helper")
    for mod in modules:
        if mod.rel in ATOMIC_MODULES:
            continue
        for node in mod.nodes:
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            f = node.func
            src = None
            if isinstance(f.value, ast.Name) and (f.value.id, f.attr) in MOVE_CALLS and node.args:
                src = node.args[0]
            elif f.attr in ("replace", "rename") and len(node.args) == 1 and not node.keywords:
                src = f.value  # Path.replace(target): a str.replace has two arguments
            if src is not None and TEMP_TEXT.search(segment(mod, src)):
                m.hits.append(where(mod, node, segment(mod, node)[:100]))
    return m


# --- 7. dead names, names used only by tests and benchmarks ----------------------------

@dataclass
class Definition:
    module: Module
    name: str
    node: ast.AST


def module_definitions(mod: Module) -> list[Definition]:
    """Functions, classes and assigned names at module level (also inside a top-level
    `if`/`try`)."""
    out = []
    stack = list(mod.tree.body)
    while stack:
        node = stack.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(Definition(mod, node.name, node))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        out.append(Definition(mod, n.id, node))
        elif isinstance(node, (ast.If, ast.Try, ast.With)):
            for field_name in ("body", "orelse", "finalbody"):
                stack.extend(getattr(node, field_name, []))
            for h in getattr(node, "handlers", []):
                stack.extend(h.body)
    return out


def dunder_all(mod: Module) -> set[str]:
    out: set[str] = set()
    for node in mod.tree.body:
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                out |= {n.value for n in ast.walk(node.value)
                        if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return out


def _annotation_strings(mod: Module):
    """Expressions inside string annotations (`"pa.Table"`)."""
    for node in mod.nodes:
        anns = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args.args + node.args.kwonlyargs + node.args.posonlyargs
            anns = [a.annotation for a in args] + [node.returns]
        elif isinstance(node, ast.AnnAssign):
            anns = [node.annotation]
        for ann in anns:
            for c in ast.walk(ann) if ann is not None else []:
                if isinstance(c, ast.Constant) and isinstance(c.value, str):
                    try:
                        yield ast.parse(c.value, mode="eval")
                    except SyntaxError:
                        pass


ENTRY_POINT = re.compile(r"^([\w.]+):(\w+)$")


class References:
    """Who refers to which module-level name: `refs[(module, name)]` is the set of the
    referring files; `loose[name]` the files with an attribute `x.name` on something not
    known to be a module (counted as a reference to every definition of that name)."""

    def __init__(self, modules: list[Module], root: Path):
        self.known = {m.name for m in modules}
        self.refs: dict[tuple[str, str], set[str]] = {}
        self.loose: dict[str, set[str]] = {}
        # `from n import x as y` in m: (m, y) -> (n, x); who refers to m.y refers to n.x
        self.bindings: list[tuple[tuple[str, str], tuple[str, str]]] = []
        for mod in modules:
            self._scan(mod)
            for name in dunder_all(mod):  # a declared export is used
                self.add(mod.name, name, mod.rel)
        self._entry_points(root)
        for _ in range(10):  # re-exports of re-exports
            changed = False
            for local, source in self.bindings:
                users = self.refs.get(local, set()) - self.refs.get(source, set())
                if users:
                    self.refs.setdefault(source, set()).update(users)
                    changed = True
            if not changed:
                break

    def add(self, module: str, name: str, rel: str) -> None:
        self.refs.setdefault((module, name), set()).add(rel)

    def _entry_points(self, root: Path) -> None:
        pyproject = root / "pyproject.toml"
        if pyproject.exists():
            for mod, name in re.findall(r"\"([\w.]+):(\w+)\"", pyproject.read_text(encoding="utf-8")):
                self.add(mod, name, "pyproject.toml")

    def _scan(self, mod: Module) -> None:
        rel, known = mod.rel, self.known
        aliases: dict[str, str] = {}  # local name -> module
        names: dict[str, tuple[str, str]] = {}  # local name -> (module, name) imported
        package = mod.name if mod.rel.endswith("__init__.py") else mod.name.rpartition(".")[0]
        for node in mod.nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in known:
                        aliases[a.asname] = a.name
                    elif a.name.split(".")[0] in ("extractor", "trainer", "jobs"):
                        aliases[a.name.split(".")[0]] = a.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom):
                base = imported_module(node, package)
                for a in node.names:
                    local = a.asname or a.name
                    if f"{base}.{a.name}" in known:
                        aliases[local] = f"{base}.{a.name}"
                    elif base in known:
                        names[local] = (base, a.name)
                        self.bindings.append(((mod.name, local), (base, a.name)))
        for tree in [mod.tree, *mod.annotation_trees]:
            for node in (mod.nodes if tree is mod.tree else ast.walk(tree)):
                if isinstance(node, ast.Attribute):
                    dotted = self._dotted(node, aliases)
                    if dotted is not None:
                        base, attr = dotted
                        self.add(base, attr, rel)
                    else:
                        self.loose.setdefault(node.attr, set()).add(rel)
                elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
                    if node.id in names:
                        self.add(*names[node.id], rel)
                    else:
                        self.add(mod.name, node.id, rel)
                elif isinstance(node, ast.Call):
                    self._string_refs(node, aliases, rel)
                elif isinstance(node, ast.Constant) and isinstance(node.value, str) and ":" in node.value:
                    found = ENTRY_POINT.match(node.value)  # "pkg.module:Name" (a registry)
                    if found and found.group(1) in known:
                        self.add(found.group(1), found.group(2), rel)

    def _dotted(self, node: ast.Attribute, aliases: dict[str, str]) -> tuple[str, str] | None:
        """(module, name) when `node` is `<module alias>[.sub...].name`."""
        chain = []
        cur: ast.AST = node
        while isinstance(cur, ast.Attribute):
            chain.append(cur.attr)
            cur = cur.value
        if not isinstance(cur, ast.Name) or cur.id not in aliases:
            return None
        base = aliases[cur.id]
        chain.reverse()
        for i, part in enumerate(chain):
            if f"{base}.{part}" in self.known and i < len(chain) - 1:
                base = f"{base}.{part}"
                continue
            return (base, part) if i == len(chain) - 1 or base in self.known else None
        return None

    def _string_refs(self, node: ast.Call, aliases: dict[str, str], rel: str) -> None:
        """getattr(module, "name"), monkeypatch.setattr(module, "name", ...) and
        monkeypatch.setattr("pkg.module.name", ...)."""
        f = node.func
        fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if fname not in ("getattr", "setattr", "hasattr", "delattr"):
            return
        args = node.args
        if len(args) >= 2 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
            target = args[0]
            if isinstance(target, ast.Name) and target.id in aliases:
                self.add(aliases[target.id], args[1].value, rel)
            else:
                self.loose.setdefault(args[1].value, set()).add(rel)
        if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str) and "." in args[0].value:
            base, _, name = args[0].value.rpartition(".")
            if base in self.known:
                self.add(base, name, rel)


def dead_names(root: Path, library: list[Module], users: list[Module]) -> tuple[Metric, Metric]:
    """Module-level names of extractor/, trainer/, jobs/ that nothing refers to (in those
    packages, tests/ or benchmarks/), and those only tests/ or benchmarks/ refer to.
    A reference: a use of the name in its module, an import of it, `module.name`
    through an imported module, getattr/monkeypatch.setattr with its name, a
    `module:name` entry point of pyproject.toml, or `x.name` on anything not known to be
    a module (a method call may reach it: counted, to stay on the safe side). Dunder
    names and names listed in their module's `__all__` are not counted, nor test-only names
    kept on purpose (`KEPT_FOR_USERS`: listed with their reason)."""
    dead = Metric("dead_names", "module-level names of extractor/, trainer/, jobs/ referred to nowhere "
                  "(library, tests/, benchmarks/, pyproject entry points)")
    test_only = Metric("names_only_tests_use", "module-level library names referred to only by tests/ or "
                       "benchmarks/ (but those KEPT_FOR_USERS, listed as kept)")
    kept = []
    refs = References(library + users, root)
    library_files = {m.rel for m in library}
    for mod in library:
        exported = dunder_all(mod)
        defs = module_definitions(mod)
        loads = _own_loads(mod)
        for d in defs:
            if (d.name.startswith("__") and d.name.endswith("__")) or d.name in exported or d.name == "_":
                continue
            users_of = set(refs.refs.get((mod.name, d.name), set())) | refs.loose.get(d.name, set())
            if mod.rel in users_of and not _used_in_own_module(loads, d):
                users_of.discard(mod.rel)
            kind = type(d.node).__name__.replace("Def", "").replace("Async", "").replace("Ann", "").lower()
            if not users_of:
                dead.hits.append(where(mod, d.node, f"{mod.name}.{d.name} ({kind})"))
            elif not users_of & library_files:
                used = f"{', '.join(sorted(users_of)[:3])}{', ...' if len(users_of) > 3 else ''}"
                reason = KEPT_FOR_USERS.get(f"{mod.name}.{d.name}")
                if reason is None:
                    test_only.hits.append(where(mod, d.node, f"{mod.name}.{d.name} ({kind}; used by {used})"))
                else:
                    kept.append(where(mod, d.node, f"{mod.name}.{d.name} (kept, not counted: {reason})"))
    test_only.count = len(test_only.hits)
    test_only.hits += kept
    return dead, test_only


def _own_loads(mod: Module) -> dict[str, list[int]]:
    """Per name, the ids of the module's nodes that load it (a Name, or `x.name`)."""
    out: dict[str, list[int]] = {}
    for tree in [mod.tree, *mod.annotation_trees]:
        for node in (mod.nodes if tree is mod.tree else ast.walk(tree)):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
                out.setdefault(node.id, []).append(id(node) if tree is mod.tree else 0)
            elif isinstance(node, ast.Attribute):
                out.setdefault(node.attr, []).append(id(node) if tree is mod.tree else 0)
    return out


def _used_in_own_module(loads: dict[str, list[int]], d: Definition) -> bool:
    """Whether the module itself loads the name outside the definition's own statement
    (a recursive function alone is not a use)."""
    ids = loads.get(d.name)
    if not ids:
        return False
    inside = {id(n) for n in ast.walk(d.node)}
    return any(i not in inside for i in ids)


# --- 8. private names across modules ----------------------------------------------------

def private_across(library: list[Module]) -> Metric:
    """A `_name` of one library module imported by another (`from m import _x`) or reached
    as `m._x` through an imported module; the number is the distinct (module, name) pairs
    (every site listed). A private module imported under a private alias (`as _m`) is
    not counted; the names it reaches through it are."""
    m = Metric("private_names_across_modules", "distinct _names of a library module used by another library "
               "module (from m import _x, m._x)")
    known = {x.name for x in library}
    pairs = set()
    for mod in library:
        aliases: dict[str, str] = {}
        package = mod.name if mod.rel.endswith("__init__.py") else mod.name.rpartition(".")[0]
        for node in mod.nodes:
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                    base = ".".join(parts + ([node.module] if node.module else []))
                for a in node.names:
                    full = f"{base}.{a.name}"
                    if full in known:
                        aliases[a.asname or a.name] = full
                    elif base in known and base != mod.name and a.name.startswith("_") and not a.name.startswith("__"):
                        pairs.add((base, a.name))
                        m.hits.append(where(mod, node, f"from {base} import {a.name}"))
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in known:
                        aliases[a.asname] = a.name
        for node in mod.nodes:
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and aliases[node.value.id] != mod.name):
                pairs.add((aliases[node.value.id], node.attr))
                m.hits.append(where(mod, node, f"{node.value.id}.{node.attr} ({aliases[node.value.id]})"))
    m.count = len(pairs)
    return m


# --- 9. measurements in comments and docstrings ----------------------------------------

MEASUREMENT = re.compile(
    r"\bCPU-s\b|\bCPU-seconds?\b|\b[KMGT]iB\b|\b[KMG]B/s\b|\b20[12]\d-[01]\d(-[0-3]\d)?\b"
    r"|\b\d+(\.\d+)?\s?(ms|µs)\b|\b\d+(\.\d+)?\s?(MB|GB|KB)\b|\b\d+(\.\d+)?x\b(?= (faster|slower|the|less|more))")


def _docstring_nodes(mod: Module) -> list[ast.Constant]:
    out = []
    for node in mod.nodes:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                out.append(first.value)
    return out


def measurements(library: list[Module]) -> Metric:
    """Docstrings and comments of extractor/, trainer/, jobs/ carrying a measurement:
    CPU-s, KiB/MiB/GiB, MB/s, a figure in ms, MB or GB, a dated figure (2026-05). A
    docstring counts once; so does a block of consecutive comment lines."""
    m = Metric("measurements_in_comments", "docstrings and comment blocks with a measurement (CPU-s, MiB, "
               "MB/s, 15 ms, 250 MB, a date like 2026-05), library")
    for mod in library:
        for doc in mod.docstrings:
            found = MEASUREMENT.search(str(doc.value))
            if found:
                m.hits.append(where(mod, doc, f"docstring: {found.group(0)!r}"))
        last_line = -2
        block_hit = False
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(mod.source).readline))
        except (tokenize.TokenError, IndentationError):
            continue
        for tok in tokens:
            if tok.type != tokenize.COMMENT:
                continue
            line = tok.start[0]
            if line != last_line + 1:
                block_hit = False
            last_line = line
            found = MEASUREMENT.search(tok.string)
            if found and not block_hit:
                block_hit = True
                m.hits.append(f"{mod.rel}:{line}: comment: {found.group(0)!r}")
    return m


# --- 10. module aliases -----------------------------------------------------------------

# Third-party modules under their community's short names: not counted.
ALIAS_CONVENTIONS = {
    "np": "numpy", "pd": "pandas", "pl": "polars", "pa": "pyarrow", "pc": "pyarrow.compute",
    "pq": "pyarrow.parquet", "ds": "pyarrow.dataset", "pafs": "pyarrow.fs", "plt": "matplotlib.pyplot",
    "ET": "xml.etree.ElementTree",
}
# Two modules of the same name in one file: the alias says which. Listed ("path: alias")
# with the reason, not counted (--verbose lists them as kept).
SAME_NAME_ALIASES = {
    "extractor/job/stages.py: documents_options": "the stages' `options` modules, side by side in the list of stages",
    "extractor/job/stages.py: pairs_options": "the stages' `options` modules, side by side in the list of stages",
    "extractor/job/stages.py: splits_options": "the stages' `options` modules, side by side in the list of stages",
}


def module_aliases(library: list[Module]) -> Metric:
    """In extractor/, trainer/, jobs/: a module imported under a name other than its own
    (`import a.b as c`, `from a import b as c` where `a.b` is a library module, c not b),
    but a third-party module under its convention (`ALIAS_CONVENTIONS`: np, pa, pc, pd, ...)
    and a same-name disambiguation listed with its reason (`SAME_NAME_ALIASES`, listed as
    kept). `from m import name as other` of a function or constant is no module alias."""
    m = Metric("module_aliases", "modules imported under another name (import a.b as c, from a import b as c), "
               "library; third-party conventions (np, pa, pc, pd, ...) and listed same-name aliases excepted")
    known = {x.name for x in library}
    kept = []
    for mod in library:
        package = mod.name if mod.rel.endswith("__init__.py") else mod.name.rpartition(".")[0]
        for node in mod.nodes:
            found: list[tuple[str, str]] = []  # (module, alias)
            if isinstance(node, ast.Import):
                found = [(a.name, a.asname) for a in node.names
                         if a.asname and a.asname != a.name.rpartition(".")[2]]
            elif isinstance(node, ast.ImportFrom):
                base = imported_module(node, package)
                found = [(f"{base}.{a.name}", a.asname) for a in node.names
                         if a.asname and a.asname != a.name and f"{base}.{a.name}" in known]
            for module, alias in found:
                if ALIAS_CONVENTIONS.get(alias) == module:
                    continue
                reason = SAME_NAME_ALIASES.get(f"{mod.rel}: {alias}")
                if reason is None:
                    m.hits.append(where(mod, node, f"{module} as {alias}"))
                else:
                    kept.append(where(mod, node, f"{module} as {alias} (kept, not counted: {reason})"))
    m.count = len(m.hits)
    m.hits += kept
    return m


# --- 11. commit subjects ----------------------------------------------------------------

def commit_subjects(root: Path, since: str | None, last: int) -> Metric:
    """Commit subjects longer than 72 characters in `since..HEAD` (default: the last
    `last` commits)."""
    span = f"{since}..HEAD" if since else f"the last {last} commits"
    m = Metric("commit_subjects_over_72", f"commit subjects over {SUBJECT_LIMIT} characters ({span})")
    cmd = ["git", "-C", str(root), "log", "--no-merges", "--format=%h%x09%s"]
    cmd += [f"{since}..HEAD"] if since else [f"-n{last}"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        m.hits.append(f"git log failed: {getattr(exc, 'stderr', exc)}".strip())
        m.count = -1
        return m
    lengths = []
    for line in out.splitlines():
        sha, _, subject = line.partition("\t")
        lengths.append(len(subject))
        if len(subject) > SUBJECT_LIMIT:
            m.hits.append(f"{sha}: {len(subject)} chars: {subject[:80]}...")
    if lengths:
        m.definition += f"; {len(lengths)} commits, median subject {statistics.median(lengths):.0f}, " \
                        f"longest {max(lengths)}"
    return m


# --- the report -------------------------------------------------------------------------

def measure(root: Path, since: str | None = None, last: int = 20) -> list[Metric]:
    library = load_modules(root, LIBRARY)
    users = load_modules(root, USERS)
    names, folders = scratch_paths(library)
    dead, test_only = dead_names(root, library, users)
    return [
        plan_writes(library),
        names,
        folders,
        substring_classifiers(library),
        flat_modules(root),
        commands_importing_commands(root, library),
        temp_writers(library),
        dead,
        test_only,
        private_across(library),
        measurements(library),
        module_aliases(library),
        commit_subjects(root, since, last),
    ]


def table(metrics: list[Metric], verbose: bool) -> str:
    width = max(len(m.key) for m in metrics)
    lines = [f"{'metric':<{width}}  {'value':>5}  definition", f"{'-' * width}  {'-' * 5}  {'-' * 10}"]
    for m in metrics:
        lines.append(f"{m.key:<{width}}  {m.value:>5}  {m.definition}")
        if verbose:
            lines.extend(f"{'':<{width}}         {hit}" for hit in m.hits)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the repository (default: the one holding this script)")
    parser.add_argument("--verbose", "-v", action="store_true", help="list every location counted")
    parser.add_argument("--json", action="store_true", help="one JSON object: {metric: {value, definition, hits}}")
    parser.add_argument("--since", help="commit subjects of SINCE..HEAD (default: the last --last commits)")
    parser.add_argument("--last", type=int, default=20, help="commits to read without --since (default 20)")
    args = parser.parse_args(argv)
    metrics = measure(args.root, args.since, args.last)
    if args.json:
        print(json.dumps({m.key: {"value": m.value, "definition": m.definition, "hits": m.hits} for m in metrics},
                         indent=1))
    else:
        print(table(metrics, args.verbose))
    return 0


if __name__ == "__main__":
    sys.exit(main())
