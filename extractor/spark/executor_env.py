"""The Python environment for cluster executors, packed the way Spark documents for YARN,
Kubernetes and standalone clusters (docs: "Python Package Management"): a virtual
environment with the engine's dependencies (without pyspark: the cluster's Spark brings
it), packed with venv-pack, shipped with

    spark-submit --archives nli-env-<key>.tar.gz#environment \\
                 --conf spark.pyspark.python=./environment/bin/python \\
                 --conf spark.pyspark.driver.python=$(which python) ...

Every executor unpacks the archive in its working directory and runs
`./environment/bin/python`, so its own Python needs none of the engine's dependencies.
`./spark-submit.sh` does this for every non-local master (or `NLI_PACK_ENV=1`); by hand:

    python -m extractor.spark.executor_env            # prints the archive's path

The archive is cached under `.spark-deps/` by a key of the requirements, the Python version
and the platform, so it is built once (a minute or two from pip's cache) and reused.
venv-pack keeps the interpreter as a link to the Python that made the venv: the nodes need
the same Python version at the same path (true on one image, e.g. a Dataproc or EMR node
image built from docker/; otherwise use conda-pack, which packs the interpreter too).
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from extractor.io import atomic
from extractor.lexicon.lexicon import LexiconError, load_lexicon, model_installed

DIST = "nli-corpus-engine"
EXTRAS = ("extract",)
# The cluster's Spark brings these; a second copy on the executors' path would shadow it.
SPARK_PROVIDED = {"pyspark", "py4j", "venv-pack"}
# The driver alone uses matplotlib (the card's PNG) and polars (nothing in extractor/):
# left out of the executors' archive, which is then about half the size.
DRIVER_ONLY = {"matplotlib", "polars"}
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def requirements(dist: str = DIST, extras=EXTRAS, driver: bool = False) -> list[str]:
    """The engine's requirements for executors (or, with `driver`, for an image that runs
    the driver too): base dependencies and those of `extras`, without what the cluster's
    Spark brings, from the installed distribution's metadata."""
    left_out = SPARK_PROVIDED | (set() if driver else DRIVER_ONLY)
    out = []
    for req in importlib.metadata.requires(dist) or []:
        spec, _, marker = req.partition(";")
        found = _NAME.match(spec)
        assert found is not None, req  # a requirement starts with a distribution name
        name = found.group(1).lower().replace("_", "-")
        if name in left_out:
            continue
        marker = marker.strip()
        if marker:
            wanted = re.findall(r'extra\s*==\s*["\']([^"\']+)["\']', marker)
            if wanted and not any(e in extras for e in wanted):
                continue
        out.append(spec.strip())
    return sorted(set(out))


def lexicon_models(lang: str | None) -> list[tuple[str, tuple[str, ...]]]:
    """(pip requirement, pip options) of the spaCy model the job will use for `lang`: the
    lexicon's first installed model (the POS filter then runs on the executors too), when
    pip can install it by name. [] when none is installed here or the lexicon has none."""
    if not lang:
        return []
    try:
        lexicon = load_lexicon(lang)
    except (LexiconError, OSError):
        return []
    model = lexicon.model_info(lexicon.spacy_model)
    if model is None or not model.pip or not model_installed(model.name):
        return []
    return [(model.pip, tuple(model.pip_options))]


def archive_key(reqs: list[str], models=()) -> str:
    text = "\n".join(reqs) + f"\n{sorted(models)}\n{sys.version_info[:3]}\n{platform.machine()}\n{sys.base_prefix}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def build(directory: str | Path, reqs: list[str] | None = None, force: bool = False, log=print,
          models=()) -> Path:
    """The packed environment's path, building it when it is not there yet. `models`:
    (requirement, pip options) of spaCy models to add (`lexicon_models(lang)`)."""
    if reqs is None:  # plus what the user adds
        reqs = requirements() + os.environ.get("NLI_EXECUTOR_REQUIREMENTS", "").split()
    models = [(spec, tuple(opts)) for spec, opts in models]
    directory = Path(directory)
    archive = directory / f"nli-env-{archive_key(reqs, models)}.tar.gz"
    if archive.exists() and not force:
        return archive
    directory.mkdir(parents=True, exist_ok=True)
    import venv_pack

    with tempfile.TemporaryDirectory(dir=directory, prefix="_build-") as tmp:
        env = Path(tmp) / "env"
        log(f"[setup] packing the executors' Python environment ({len(reqs)} requirements) into {archive}")
        base = getattr(sys, "_base_executable", None) or sys.executable
        subprocess.run([base, "-m", "venv", str(env)], check=True)
        subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile",
                        "--disable-pip-version-check", *reqs], check=True, stdout=sys.stderr)
        for spec, opts in models:  # each with its own options (a model may pin an older spaCy: --no-deps)
            log(f"[setup] adding the spaCy model {spec} to the executors' environment")
            subprocess.run([str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile",
                            "--disable-pip-version-check", *opts, spec], check=True, stdout=sys.stderr)
        with atomic.WorkFile(archive) as partial:
            venv_pack.pack(prefix=str(env), output=str(partial), format="tar.gz", compress_level=1, force=True)
            os.chmod(partial, 0o644)
    for old in directory.glob("nli-env-*.tar.gz"):  # archives of earlier requirements
        if old != archive:
            old.unlink()
    return archive


def main(argv: list[str] | None = None) -> int:
    """python -m extractor.spark.executor_env [--dir .spark-deps] [--force] [--requirements]"""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=str(Path.cwd() / ".spark-deps"), help="where the archive is cached")
    ap.add_argument("--force", action="store_true", help="build it again")
    ap.add_argument("--lang", default=None,
                    help="add the spaCy model that the job uses for this lexicon (when installed here)")
    ap.add_argument("--requirements", action="store_true", help="only print the executors' requirements")
    ap.add_argument("--driver", action="store_true",
                    help="with --requirements: those of an image that runs the driver too (docker/)")
    args = ap.parse_args(argv)
    if args.requirements:
        print("\n".join(requirements(driver=args.driver)))
        return 0
    try:
        print(build(args.dir, force=args.force, log=lambda m: print(m, file=sys.stderr),
                    models=lexicon_models(args.lang)))
    except (subprocess.CalledProcessError, ImportError, OSError) as exc:
        print(f"error: could not pack the executors' environment into {args.dir}: {exc}; "
              f"install venv-pack (pip install venv-pack) and check pip can install the requirements",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
