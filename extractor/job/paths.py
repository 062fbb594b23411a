"""Where the paths a user gives are resolved: against the directory the command was run in.

`./spark-submit.sh` runs spark-submit in the user's directory (it used to change to the
repository first, so `--input data.xml.bz2` given in a data folder was looked for in the
repository), and the job makes every local path it was given absolute right after parsing
its flags (`resolve_job_args`), so the Spark tasks, which on a standalone cluster run in
the workers' own directories, open the same files as the driver:

    --input, --output, --manifest, --punkt-params   relative to the command's directory
    --lang FILE.yaml, --spacy-model DIR             the same (a language code / model name stays)
    paths inside a manifest                         relative to the manifest file (extractor.job.inputs.load_manifest)
    the job script (jobs/extract.py)                relative to the command's directory, else to
                                                    the repository of spark-submit.sh (`submit_args`)

URIs (`gs://`, `s3a://`, `hdfs://`, `file://`) are left as they are; `~` is expanded.

Cluster deploy mode (`--deploy-mode cluster` on YARN or Kubernetes) runs the driver on a
cluster node, in a directory of its own: there the job's paths must be absolute paths on
storage every node sees, or URIs. `spark-submit.sh` refuses a relative one in that mode
(`cluster_mode_errors`). Client mode (the default, also with a standalone `spark://`
master) runs the driver here and resolves paths here.

Pure functions (no Spark, no file system access except `resolve_app`'s existence checks);
`python -m extractor.job.paths submit REPO CWD -- ARGS...` is what spark-submit.sh calls.
When the job's arguments ask for `--help` or `--dry-run`, which start no Spark, its answer
begins with `--plain-python` and goes on with the job's own command line
(`plain_python_args`): spark-submit.sh runs that with plain Python, without a JVM.
"""
from __future__ import annotations

import os
import sys
from pathlib import PurePath

from extractor.io.fs import is_uri


# The job's flags that name a local file or directory (the argparse dest, the flag).
JOB_PATH_FLAGS = (("input", "--input"), ("output", "--output"), ("manifest", "--manifest"),
                  ("punkt_params", "--punkt-params"))

# spark-submit's options that take no value (SparkSubmitOptionParser's switches); every other
# option takes one, as `--opt value` or `--opt=value`.
SUBMIT_SWITCHES = frozenset({"--help", "-h", "--supervise", "--usage-error", "--verbose", "-v", "--version"})


def absolute(path: str, base: str) -> str:
    """`path` as an absolute local path, relative ones taken against `base`; URIs and
    absolute paths are kept (`~` expanded). Glob characters are kept as they are."""
    text = str(path)
    if not text or is_uri(text):
        return text
    text = os.path.expanduser(text)
    if os.path.isabs(text):
        return os.path.normpath(text) if not text.startswith("//") else text
    return os.path.normpath(os.path.join(base, text))


def is_lexicon_file(lang: str) -> bool:
    """`--lang` names a lexicon file (the test extractor.lexicon.lexicon.load_lexicon makes), not a code."""
    return PurePath(str(lang)).suffix in (".yaml", ".yml")


def is_model_path(name: str) -> bool:
    """`--spacy-model` names a directory rather than an installed package (package names
    hold no path separator and do not start with a dot or ~)."""
    text = str(name)
    return "/" in text or os.sep in text or text.startswith((".", "~"))


def resolve_job_args(args, base: str | None = None):
    """Make the job's path flags absolute against `base` (default: the current directory,
    the one the command was run in). Mutates and returns the argparse namespace; flags the
    namespace lacks (a stage not installed) are skipped."""
    base = base if base is not None else os.getcwd()
    for dest, _ in JOB_PATH_FLAGS:
        value = getattr(args, dest, None)
        if value is None:
            continue
        if isinstance(value, (list, tuple)):
            setattr(args, dest, [absolute(v, base) for v in value])
        else:
            setattr(args, dest, absolute(value, base))
    lang = getattr(args, "lang", None)
    if lang and is_lexicon_file(lang):
        args.lang = absolute(lang, base)
    model = getattr(args, "spacy_model", None)
    if model and is_model_path(model):
        args.spacy_model = absolute(model, base)
    return args


# --------------------------------------------------------------------------- spark-submit.sh

def split_submit_args(argv: list[str]) -> int | None:
    """The index of the application (the job script) in spark-submit's arguments: the first
    argument that is neither an option nor an option's value. None when there is none."""
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg == "-":
            return i
        if arg in SUBMIT_SWITCHES or "=" in arg:
            i += 1
        else:
            i += 2  # --opt value
    return None


def _submit_options(argv: list[str], app: int | None):
    """(option, value) pairs of spark-submit's own arguments (before the application); a
    switch has value None."""
    end = len(argv) if app is None else app
    i = 0
    while i < end:
        arg = argv[i]
        if arg in SUBMIT_SWITCHES:
            yield arg, None
            i += 1
        elif "=" in arg:
            yield tuple(arg.split("=", 1))
            i += 1
        else:
            yield arg, argv[i + 1] if i + 1 < end else None
            i += 2


def cluster_deploy_mode(argv: list[str], app: int | None) -> bool:
    """Whether the driver runs on the cluster (--deploy-mode cluster, or the
    spark.submit.deployMode conf), by the last setting given."""
    cluster = False
    for name, value in _submit_options(argv, app):
        if name == "--deploy-mode":
            cluster = value == "cluster"
        elif name == "--conf" and value and value.replace(" ", "").startswith("spark.submit.deployMode="):
            cluster = value.replace(" ", "").split("=", 1)[1] == "cluster"
    return cluster


def job_paths(job_argv: list[str]) -> list[tuple[str, str]]:
    """(flag, value) of every local-path flag in the job's own arguments: the JOB_PATH_FLAGS,
    `--lang` when it names a file, `--spacy-model` when it names a directory."""
    flags = {flag for _, flag in JOB_PATH_FLAGS}
    found = []
    i = 0
    while i < len(job_argv):
        arg = job_argv[i]
        name, value, step = arg, None, 1
        if "=" in arg and arg.startswith("--"):
            name, value = arg.split("=", 1)
        elif i + 1 < len(job_argv):
            value, step = job_argv[i + 1], 2
        if name in flags or (name == "--lang" and value and is_lexicon_file(value)) or \
                (name == "--spacy-model" and value and is_model_path(value)):
            if value is not None:
                found.append((name, value))
            i += step
        else:
            i += 1
    return found


def cluster_mode_errors(argv: list[str]) -> list[str]:
    """One message per relative local path given to the job in cluster deploy mode (where
    the driver runs on a cluster node and cannot see this directory); [] otherwise."""
    app = split_submit_args(argv)
    if app is None or not cluster_deploy_mode(argv, app):
        return []
    return [f"{flag} {value}: with --deploy-mode cluster the driver runs on a cluster node, not in this "
            f"directory; give an absolute path on storage every node sees, or a URI (gs://, s3a://, hdfs://)"
            for flag, value in job_paths(argv[app + 1:])
            if not is_uri(value) and not os.path.isabs(os.path.expanduser(value))]


def resolve_app(app: str, cwd: str, repo: str, exists=os.path.exists) -> str:
    """The job script: relative to the command's directory when it is there, else relative
    to the repository (`/repo/spark-submit.sh jobs/extract.py` from any folder); URIs stay."""
    if is_uri(app):
        return app
    here = absolute(app, cwd)
    if exists(here) or os.path.isabs(os.path.expanduser(app)):
        return here
    in_repo = absolute(app, repo)
    return in_repo if exists(in_repo) else here


def submit_args(argv: list[str], cwd: str, repo: str, exists=os.path.exists) -> list[str]:
    """spark-submit's arguments with the job script made absolute (`resolve_app`); the job
    resolves its own paths (`resolve_job_args`). Raises ValueError (one line) for relative
    job paths in cluster deploy mode."""
    errors = cluster_mode_errors(argv)
    if errors:
        raise ValueError(errors[0])
    app = split_submit_args(argv)
    if app is None:
        return list(argv)
    out = list(argv)
    if out[app].endswith(".py"):
        out[app] = resolve_app(out[app], cwd, repo, exists)
    return out


PLAIN_PYTHON = "--plain-python"  # the first word of `main`'s answer: run the job with plain Python
PLAIN_FLAGS = frozenset({"-h", "--help", "--dry-run"})  # the job's flags that start no Spark


def unknown_lang(job: list[str], lexicons: str) -> bool:
    """The job's `--lang` names no bundled lexicon in `lexicons` (and is not a lexicon file):
    the job refuses it in one line, which plain Python says without a JVM."""
    value = None
    for i, a in enumerate(job):
        if a == "--lang" and i + 1 < len(job):
            value = job[i + 1]
        elif a.startswith("--lang="):
            value = a.split("=", 1)[1]
    if value is None or "/" in value or value.endswith((".yaml", ".yml")):
        return False
    return not os.path.exists(os.path.join(lexicons, f"{value}.yaml"))


def plain_python_args(argv: list[str], lexicons: str | None = None) -> list[str] | None:
    """The job's command line (script, then its arguments) when spark-submit's arguments
    `argv` ask the job for `--help` or `--dry-run`, which need no Spark, or name a `--lang`
    with no lexicon in `lexicons` (its one-line refusal): spark-submit.sh runs it with plain
    Python, so no JVM starts (about 10 s). spark-submit's `--master` is handed
    to the job's own `--master` (the dry run's estimate of the wall time depends on it).
    None otherwise, and for a job that is not a Python script."""
    app = split_submit_args(argv)
    if app is None or not argv[app].endswith(".py"):
        return None
    job = list(argv[app + 1:])
    if not PLAIN_FLAGS & {a.split("=", 1)[0] for a in job} and not (lexicons and unknown_lang(job, lexicons)):
        return None
    master = [value for name, value in _submit_options(argv, app) if name == "--master" and value]
    if master and not any(a == "--master" or a.startswith("--master=") for a in job):
        job += ["--master", master[-1]]
    return [argv[app], *job]


def main(argv: list[str] | None = None) -> int:
    """`python -m extractor.job.paths submit REPO CWD -- ARGS...`: ARGS for spark-submit, each
    followed by a NUL, on stdout (spark-submit.sh reads them with `read -d ''`); or
    `--plain-python`, then the job's command line (`plain_python_args`)."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 4 or argv[0] != "submit" or argv[3] != "--":
        print("usage: python -m extractor.job.paths submit REPO CWD -- SPARK_SUBMIT_ARGS...", file=sys.stderr)
        return 2
    try:
        args = submit_args(argv[4:], argv[2], argv[1])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    plain = plain_python_args(args, os.path.join(argv[1], "phrase_lexicons"))
    if plain is not None:
        args = [PLAIN_PYTHON, *plain]
    sys.stdout.write("".join(a + "\0" for a in args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
