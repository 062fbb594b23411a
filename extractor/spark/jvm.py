"""JVM options for the driver in local mode, where the driver JVM is also the executor.

A Spark job on a laptop-sized input is short for a JVM: on the benchmark dumps the
JVM spent more CPU starting up (class loading, C2 JIT compiling code that runs a few
times) than on the data. Two standard HotSpot features cut that:

- `-XX:TieredStopAtLevel=1`: C1 JIT only, about half the JVM's CPU on small inputs
  (docs/extraction.md). On inputs of many GB
  C2's faster code would win back its compile time: `--jvm-tuning throughput` keeps the
  JVM's defaults.
- an application class-data archive (AppCDS, JDK >= 13): the classes Spark loads,
  pre-parsed into a file that the JVM maps instead of reading its classes from jars.
  The archive is written at the exit of a JVM
  started with `-XX:ArchiveClassesAtExit` (spark-submit.sh does that on its first run,
  `python -m extractor.spark.jvm --create-archive` on demand); its name holds the pyspark
  version and the java binary, so an upgrade of either makes a new one. A JVM that
  cannot use an archive (other build, other class path) ignores it and starts normally.

Executors of a cluster are not touched (`spark.executor.extraJavaOptions` stays yours).
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

TUNINGS = ("startup", "throughput")
C1_ONLY = "-XX:TieredStopAtLevel=1"
# Writing the archive logs ~1,400 "[warning][cds] Skipping <class>: Signed JAR" lines (classes
# that CDS cannot hold; they load normally); an unusable archive is ignored silently too.
QUIET_CDS = "-Xlog:cds*=off"


def java_binary() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else None
    if found is None or not found.exists():
        which = shutil.which("java")
        found = Path(which) if which else None
    return found.resolve() if found else None


def archive_path() -> Path | None:
    """Where the class-data archive of this pyspark and this java lives (in the venv)."""
    java = java_binary()
    if java is None:
        return None
    try:
        version = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        return None
    key = hashlib.sha256(f"{java}:{java.stat().st_mtime_ns}:{version}".encode()).hexdigest()[:12]
    return Path(sys.prefix) / "share" / "nli-spark-cds" / f"pyspark-{version}-{key}.jsa"


def driver_java_options(tuning: str = "startup", create_archive: bool = False) -> str:
    """The driver JVM options for a local master ('' for `throughput`)."""
    if tuning not in TUNINGS:
        raise ValueError(f"unknown JVM tuning '{tuning}' (choose from {', '.join(TUNINGS)})")
    if tuning == "throughput":
        return ""
    options = [C1_ONLY]
    archive = archive_path()
    if archive is not None and archive.exists():
        options += [f"-XX:SharedArchiveFile={archive}", QUIET_CDS]
    elif archive is not None and create_archive:
        archive.parent.mkdir(parents=True, exist_ok=True)
        options += [f"-XX:ArchiveClassesAtExit={archive}", QUIET_CDS]
    return " ".join(options)


def archive_pending(java_options: str) -> str | None:
    """The archive a driver JVM started with `java_options` writes at its exit (the first
    run's `-XX:ArchiveClassesAtExit`), or None: the job says so after its last line, or the
    ~20 s the JVM spends writing it look like a hang."""
    for option in java_options.split():
        if option.startswith("-XX:ArchiveClassesAtExit="):
            return option.split("=", 1)[1]
    return None


def create_archive(repo: Path | None = None) -> Path | None:
    """Write the archive by running the whole job once on the bundled Romanian sample through
    spark-submit (a JVM started from Python is killed at exit and would write nothing)."""
    archive = archive_path()
    if archive is None or archive.exists():
        return archive
    repo = repo or Path(__file__).resolve().parents[1]
    spark_submit = Path(sys.prefix) / "bin" / "spark-submit"
    out = repo / "output" / "_jvm-warm-up"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    subprocess.run([str(spark_submit), "--master", "local[1]", "--driver-java-options",
                    driver_java_options("startup", create_archive=True), "jobs/extract.py", "--lang", "ro",
                    "--output", str(out), "--overwrite"],
                   cwd=repo, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shutil.rmtree(out, ignore_errors=True)
    return archive if archive.exists() else None


def main(argv: list[str] | None = None) -> int:
    """python -m extractor.spark.jvm [--tuning T] [--create-archive]: print the driver options."""
    import argparse

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--tuning", choices=TUNINGS, default="startup")
    ap.add_argument("--for-first-run", action="store_true",
                    help="without an archive yet, ask this JVM to write one at exit")
    ap.add_argument("--create-archive", action="store_true", help="run a warm-up job that writes the archive")
    args = ap.parse_args(argv)
    if args.create_archive:
        print(create_archive() or "", file=sys.stderr)
    print(driver_java_options(args.tuning, create_archive=args.for_first_run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
