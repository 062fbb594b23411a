"""The job's inputs: the corpora to read (`--input`, `--corpus`, `--manifest`), listed and
checked on the driver, and the one-line message of a Spark failure caused by them."""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from extractor import runs
from extractor.core.errors import ERROR_MARK, OUTPUT_FAULT_MARK, InputError, yaml_problem
from extractor.sentences import formats
from extractor.sentences.readers import CorruptData, WIKIMEDIA_LICENSES, encoding_from_head, read_head, site_info
from extractor.io import fs

FORMATS = formats.NAMES  # extractor/sentences/formats: one module a format
ROLES = ("train", "test-only")
# Per-format options a manifest entry (or --text-field & co.) may set.
DEFAULT_OPTIONS = {"text_field": "text", "id_field": "id", "title_field": "title", "genre_field": "genre"}


@dataclass
class CorpusSpec:
    name: str
    genre: str
    format: str            # the name of one of `formats.FORMATS`: 'mediawiki', 'text', 'jsonl', ...
    paths: list[str]       # files (directories and globs already expanded for local paths)
    role: str = "train"    # 'train' | 'test-only'
    options: dict = field(default_factory=dict)

    def option(self, key: str) -> str | None:
        return self.options.get(key, DEFAULT_OPTIONS.get(key))


# --------------------------------------------------------------------------- corpora

def guess_format(path: str) -> str:
    """The reader for a file or directory, from its name (a directory is a txt corpus)."""
    fmt = formats.from_name(path)
    if fmt is not None:
        return fmt.name
    if _is_dir(path):
        return formats.FOLDER_DEFAULT.name
    raise InputError(f"{path}: cannot tell the format from the name; use --manifest with "
                     f"format: one of {', '.join(FORMATS)}")


def _is_dir(path: str) -> bool:
    try:
        return fs.is_dir(path)
    except fs.FsError:
        return False


def expand_paths(path: str, fmt: str | None = None) -> list[str]:
    """The files of a file, directory or glob, sorted (the order fixes the order of the work
    units). Local paths and URIs alike (through extractor.io.fs); globs are local only."""
    if not fs.is_uri(path) and any(ch in path for ch in "*?["):
        matches = sorted(glob.glob(path, recursive=True))
        if not matches:
            raise InputError(f"{path}: the glob matches no file")
        out: list[str] = []
        for match in matches:
            out.extend(expand_paths(match, fmt))
        return out
    try:
        if not fs.exists(path):
            raise InputError(f"{path}: no such file or directory")
        if fs.is_dir(path):
            reader = formats.get(fmt) if fmt else formats.FOLDER_DEFAULT
            files = [f for f, _ in fs.list_files(path) if f.lower().endswith(reader.files_of_folder())]
            if reader.reads_folders:
                return [path if fs.is_uri(path) else str(Path(path))] if files else _empty(path, reader)
            return files or _empty(path, reader)
        if fs.size(path) == 0:
            raise InputError(f"{path}: the file is empty")
    except fs.FsError as exc:
        raise InputError(str(exc)) from None
    return [path if fs.is_uri(path) else str(Path(path))]


def _empty(p, reader: formats.InputFormat):
    raise InputError(f"{p}: the directory holds no {' / '.join(reader.files_of_folder())} file for the "
                     f"{reader.name} reader")


def _dir_format(path: str) -> str:
    """A directory's format: the one its files have (the bundled samples are folders of dumps)."""
    try:
        if not fs.is_dir(path):
            return guess_format(path)
        names = [f for f, _ in fs.list_files(path)]
    except fs.FsError as exc:
        raise InputError(str(exc)) from None
    return formats.of_files(names).name


def corpus_name_for(path: str) -> str:
    """A default corpus name from a file name: 'rowiki-20240101-pages-articles.xml.bz2' ->
    'rowiki-20240101-pages-articles'."""
    name = Path(path.rstrip("/")).name
    for suffix in (*formats.COMPRESSED, *(s for f in formats.FORMATS for s in f.suffixes)):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name) or "corpus"


def corpora_from_args(inputs: list[str], corpus: str | None, genre: str | None,
                      options: dict | None = None) -> list[CorpusSpec]:
    """One corpus per --input (or one named --corpus when given a single input)."""
    if corpus and len(inputs) > 1:
        raise InputError("--corpus names a single input; for several corpora use --manifest corpora.yaml")
    specs = []
    for raw in inputs:
        fmt = _dir_format(raw) if not any(c in raw for c in "*?[") or fs.is_uri(raw) else guess_format(raw)
        paths = expand_paths(raw, fmt)
        site = dump_site(paths[0]) if fmt == "mediawiki" and paths else {}
        spec = CorpusSpec(name=corpus or corpus_name_for(raw), genre=genre or site.get("project") or
                          formats.get(fmt).genre, format=fmt, paths=paths, role="train", options=dict(options or {}))
        apply_site(spec, site)
        specs.append(spec)
    _check_unique(specs, "--input")
    return specs


def dump_site(path: str) -> dict[str, str]:
    """A MediaWiki dump's siteinfo (`readers.site_info`), {} when it cannot be read here (a
    damaged file is reported by stage 1, in its own words)."""
    try:
        head = read_head(path)
    except (CorruptData, OSError, EOFError, fs.FsError):
        return {}
    encoding = encoding_from_head(head[:4])
    return site_info(head.decode("utf-8" if encoding.startswith("utf-8") else encoding, errors="ignore"))


def apply_site(spec: CorpusSpec, site: dict[str, str]) -> None:
    """What a dump's siteinfo says of its corpus, kept in its options for the card: the site
    (`sitename`, `base`) and, for a Wikimedia project, its text license. Nothing is guessed:
    another site's dump has no license here."""
    if site.get("sitename"):
        spec.options.setdefault("site", site["sitename"])
    if site.get("base"):
        spec.options.setdefault("url_of_site", site["base"])
    license = WIKIMEDIA_LICENSES.get(site.get("project", ""))
    if license:  # below a corpus's own license and an explicit --license (`card.corpus_licenses`)
        spec.options.setdefault("site_license", license)


SAMPLE_LICENSE = "apache-2.0"  # the bundled samples are written by this project (samples/README.md)


def _sample_files(lexicon) -> list[Path] | None:
    sample = getattr(lexicon, "sample_input", None)
    if sample is None:
        return None
    return sorted(Path(p).resolve() for p in expand_paths(str(sample), _dir_format(str(sample))))


def mark_bundled_sample(corpora: list[CorpusSpec], lexicon, *, rename: bool, license: str | None) -> None:
    """The lexicon's bundled sample is one corpus whichever way it is given (the default
    input, an --input of its path, a manifest entry): a corpus reading exactly its files is
    named `<lang>-sample` where ``rename`` (no --corpus or manifest name chose another: the
    name seeds the split assignment, so the splits are the same) and gets the samples'
    license (`SAMPLE_LICENSE`, our own text) unless it has its own `license` option or
    ``license`` (an explicit --license) is given."""
    sample = _sample_files(lexicon)
    if sample is None:
        return
    for spec in corpora:
        if any(fs.is_uri(p) for p in spec.paths) or sorted(Path(p).resolve() for p in spec.paths) != sample:
            continue
        if rename:
            spec.name = f"{lexicon.lang}-sample"
        spec.options.setdefault("license", license or SAMPLE_LICENSE)
    _check_unique(corpora, "--input")


def load_manifest(path: str | Path) -> list[CorpusSpec]:
    """Read corpora.yaml: a list (or `corpora:` list) of {name, genre, format, path(s), role, ...options}."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such manifest file")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a valid YAML manifest: {yaml_problem(exc)}") from None
    if isinstance(raw, dict):
        raw = raw.get("corpora")
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{path}: expected a non-empty list of corpora (or a 'corpora:' key holding one)")
    base = path.parent
    specs = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or "name" not in entry or not (entry.get("path") or entry.get("paths")):
            raise InputError(f"{path}: entry {i + 1} needs at least 'name' and 'path'")
        known = {"name", "genre", "format", "path", "paths", "role"}
        role = entry.get("role", "train")
        if role not in ROLES:
            raise InputError(f"{path}: entry '{entry['name']}' has role '{role}'; use one of {', '.join(ROLES)}")
        raw_paths = entry.get("paths") or [entry["path"]]
        raw_paths = [p if fs.is_uri(p) or os.path.isabs(p) else str(base / p) for p in
                     ([raw_paths] if isinstance(raw_paths, str) else raw_paths)]
        fmt = entry.get("format") or _dir_format(raw_paths[0])
        if fmt not in FORMATS:
            raise InputError(f"{path}: entry '{entry['name']}' has format '{fmt}'; use one of {', '.join(FORMATS)}")
        paths = [f for p in raw_paths for f in expand_paths(p, fmt)]
        options = {k: v for k, v in entry.items() if k not in known}
        specs.append(CorpusSpec(name=str(entry["name"]), genre=str(entry.get("genre") or "unknown"), format=fmt,
                                paths=paths, role=role, options=options))
    _check_unique(specs, str(path))
    return specs


def _check_unique(specs: list[CorpusSpec], where: str) -> None:
    seen = set()
    for spec in specs:
        if spec.name in seen:
            raise InputError(f"{where}: two corpora are named '{spec.name}'; give each a distinct name")
        seen.add(spec.name)


# --------------------------------------------------------------------------- errors



def is_spark_failure(exc: BaseException) -> bool:
    """Whether `exc` is a failure that Spark or its JVM handed back (py4j's errors, PySpark's
    exceptions, the captured Java ones among them), by its type."""
    try:
        from py4j.protocol import Py4JError
        from pyspark.errors import PySparkException
    except ImportError:  # no Spark here: nothing can have come from it
        return False
    return isinstance(exc, (Py4JError, PySparkException))


def spark_failure_message(exc: BaseException, output: str) -> str | None:
    """The one line of a Spark failure that one of our tasks marked on purpose: the user's
    input (`ERROR_MARK`) or a write the output's filesystem refused
    (`extractor.core.errors.OUTPUT_FAULT_MARK`); None for anything else (a bug, a lost
    executor, an exception that is not Spark's), which the caller re-raises."""
    if not is_spark_failure(exc):
        return None
    from py4j.protocol import Py4JError

    text = str(exc)
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            text += "\n" + str(java.toString())
            cause = java.getCause()
            while cause is not None:
                text += "\n" + str(cause.toString())
                cause = cause.getCause()
        except Py4JError:  # the gateway may be gone
            pass
    at = text.find(ERROR_MARK)
    if at >= 0:
        return text[at + len(ERROR_MARK):].splitlines()[0].strip()
    at = text.find(OUTPUT_FAULT_MARK)
    if at >= 0:
        code = text[at + len(OUTPUT_FAULT_MARK):].split(":", 1)[0]
        return runs.environment_message(int(code), output) if code.isdigit() else None
    return None
