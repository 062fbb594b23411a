"""The docs run (issue 31, item 6): every command of every shell block in README.md and
docs/*.md is either executed here, on the bundled samples with small settings, with what
the text promises about its output checked, or skipped with its reason (a cluster, a GPU,
a cloud account, Label Studio, hours). The registry of what runs how is
tests/docs_commands.py, beside this file; a command the registry does not know fails, and
so does a registry entry whose command is no longer in the docs.

How a command runs: `bash -c` in one workspace shared by the module (a folder outside the
repository holding links to the repository's `.venv`, `jobs`, `examples`, `samples`,
`tests` and `benchmarks`, so a command written for the repository root runs there
unchanged), with `.venv/bin` first on PATH (`python` is the project's), after the entry's
substitutions (a placeholder such as RUN_DIR, a smaller setting such as `--epochs 1`).
`./spark-submit.sh` is the repository's, called by its absolute path from the workspace
(paths from anywhere); `../shared/data` is tests/conftest.py's shared data folder.
Entries that produce something others use (`provides`) run once, before their users
(`needs`), whatever test selection is made.

A shell block is a fenced block tagged bash, sh or shell (every line is a command) or
console (a transcript: the lines after a `$ ` prompt are the commands); an untagged block
that holds a command fails the test of its file (tag it, so it is run or listed).
"""
from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import docs_commands as reg
from tests.conftest import REPO, SHARED_DATA

pytestmark = [pytest.mark.slow, pytest.mark.spark]

DOCS = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^(```|~~~)([\w+-]*)[^\n]*\n(.*?)^\1[ \t]*$", re.S | re.M)
# the first word of a line that is a command (an untagged block holding one is an error)
COMMAND_WORDS = re.compile(r"^\s*(\$ |\./\S+ |\.venv/bin/|python3? (-m |\S+\.py)|spark-submit (-|\S+\.py)|"
                           r"jobs/extract\.py --|pip install|source |docker |gcloud |curl |torchrun |NLI_\w+=)")
LINKS = (".venv", "jobs", "examples", "samples", "tests", "benchmarks", "phrase_lexicons", "docker")


@dataclass(frozen=True)
class Command:
    doc: str
    line: int
    text: str      # as written, continuation lines joined
    key: str       # normalised: no trailing comment, single spaces (the registry's key)

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def normalise(text: str) -> str:
    """One line: trailing `# comment` and prompt removed, runs of white space made one."""
    text = re.sub(r"^\$ ", "", text.strip())
    text = re.sub(r"(^|\s)#(?![!{]).*$", "", text)
    return " ".join(text.split())


def blocks(doc: str):
    """(language, first line number of the body, body) of every fenced block of a file."""
    text = (REPO / doc).read_text(encoding="utf-8")
    for m in FENCE.finditer(text):
        yield m.group(2).lower(), text[:m.start(3)].count("\n") + 1, m.group(3)


def commands(doc: str) -> list[Command]:
    """The commands of a file's shell blocks: continuation lines joined, comment-only and
    empty lines left out."""
    out = []
    for lang, first, body in blocks(doc):
        if lang not in SHELL:
            continue
        lines = body.split("\n")
        if lang == "console":  # a transcript: the commands are the lines after the prompt
            lines = [line if line.startswith("$ ") else "" for line in lines]
        i = 0
        while i < len(lines):
            start, parts = i, [lines[i]]
            while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
                parts[-1] = parts[-1].rstrip()[:-1]
                i += 1
                parts.append(lines[i])
            i += 1
            text = " ".join(p.strip() for p in parts).strip()
            key = normalise(text)
            if key:
                out.append(Command(doc, first + start, text, key))
    return out


ALL = [c for doc in DOCS for c in commands(doc)]


def entry_for(command: Command):
    return reg.REGISTRY.get(command.doc, {}).get(command.key)


# --------------------------------------------------------------------------- workspace

class Workspace:
    """The folder the commands run in, and what ran there."""

    def __init__(self, root: Path, tiny_checkpoint):
        self.root, self.repo, self.shared = root, REPO, SHARED_DATA
        self.results: dict = {}         # name provided -> the Result of its entry, or the exception
        self.resources: dict = {}       # resource name -> its value (a path)
        self._tiny_checkpoint = tiny_checkpoint
        for name in LINKS:
            if (REPO / name).exists():
                (root / name).symlink_to(REPO / name)
        self.env = dict(os.environ)
        for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "NLI_PACK_ENV", "PYTHONPATH"):
            self.env.pop(key, None)
        venv_bin = REPO / ".venv" / "bin"
        self.env.update(PATH=f"{venv_bin}{os.pathsep}{self.env.get('PATH', '')}", VIRTUAL_ENV=str(REPO / ".venv"),
                        SPARK_LOCAL_IP="127.0.0.1", MPLBACKEND="Agg")

    def fill(self, text: str) -> str:
        """{ws}, {repo}, {shared} replaced by their paths."""
        for key, value in (("ws", self.root), ("repo", self.repo), ("shared", self.shared)):
            text = text.replace("{" + key + "}", str(value))
        return text

    def path(self, rel: str) -> Path:
        return self.root / rel

    def tiny_bert(self) -> Path:
        if "tiny_bert" not in self.resources:
            self.resources["tiny_bert"] = self._tiny_checkpoint("bert", "docs-tiny")["bert"]
        return self.resources["tiny_bert"]

    def need(self, name: str):
        """A resource (tests/docs_commands.py RESOURCES) or what an entry `provides`, made once."""
        if name in reg.RESOURCES:
            if name not in self.resources:
                self.resources[name] = reg.RESOURCES[name](self)
            return self.resources[name]
        if name not in self.results:
            providers = [(c, e) for c in ALL for e in [entry_for(c)] if isinstance(e, reg.Run) and e.provides == name]
            if not providers:
                raise AssertionError(f"nothing in the docs provides {name!r} (tests/docs_commands.py)")
            command, entry = providers[0]
            try:
                self.results[name] = self.run(command, entry)
                entry.verify(self, self.results[name])
            except BaseException as exc:  # noqa: BLE001  recorded: its users fail naming it
                self.results[name] = exc
        result = self.results[name]
        if isinstance(result, BaseException):
            raise AssertionError(f"needs {name!r}, whose command failed: {str(result).splitlines()[0][:300]}")
        return result

    def run(self, command: Command, entry: "reg.Run") -> "reg.Result":
        for name in entry.needs:
            self.need(name)
        text = entry.command_line(command.text, self)
        t0 = time.time()
        proc = subprocess.run(["bash", "-c", text], cwd=self.root, env={**self.env, **{k: self.fill(v) for k, v in entry.env.items()}}, text=True,
                              capture_output=True, timeout=entry.timeout)
        result = reg.Result(text, proc.returncode, proc.stdout, proc.stderr, time.time() - t0)
        print(f"{command.id}: {result.seconds:.1f} s, exit {result.rc}: {text}")
        return result


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, tiny_nli_checkpoint):
    return Workspace(tmp_path_factory.mktemp("docs-run"), tiny_nli_checkpoint)


# --------------------------------------------------------------------------- tests

@pytest.mark.parametrize("command", ALL, ids=[c.id for c in ALL])
def test_doc_command(command: Command, workspace: Workspace):
    entry = entry_for(command)
    if entry is None:
        pytest.fail(f"{command.id}: `{command.key}` is in no entry of tests/docs_commands.py REGISTRY[{command.doc!r}]; "
                    f"add one: Run(...) with its substitutions and checks, or Skip(..., reason)")
    if isinstance(entry, reg.Skip):
        pytest.skip(f"{command.id}: {entry.reason}")
    if entry.provides:
        workspace.need(entry.provides)
        result = workspace.results[entry.provides]
    else:
        result = workspace.run(command, entry)
        entry.verify(workspace, result)
    assert result.rc == entry.rc


def test_registry_names_only_commands_the_docs_hold():
    present = {(c.doc, c.key) for c in ALL}
    stale = [f"{doc}: {key}" for doc, entries in reg.REGISTRY.items() for key in entries if (doc, key) not in present]
    assert not stale, "entries of tests/docs_commands.py whose command is no longer in the docs:\n" + "\n".join(stale)


@pytest.mark.parametrize("doc", DOCS)
def test_untagged_blocks_hold_no_commands(doc):
    untagged = [f"{doc}:{first}: {line.strip()}" for lang, first, body in blocks(doc) if lang == ""
                for line in body.split("\n") if COMMAND_WORDS.match(line)]
    assert not untagged, ("commands in blocks not tagged ```bash (tag them so the docs run, or make them "
                          "```text if they are output):\n" + "\n".join(untagged))


def test_the_parser_reads_continuations_and_comments():
    cmds = commands("README.md")
    assert cmds and all("\\" not in c.key and not c.key.startswith("#") for c in cmds)
    assert normalise("python -m x --out a   # writes a/") == "python -m x --out a"
    assert normalise("--archives x.tar.gz#environment") == "--archives x.tar.gz#environment"
