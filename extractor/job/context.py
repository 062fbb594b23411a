"""What a stage gets from the job: the `JobContext` (Spark session, flags, lexicon, output
root, stats, warnings) with its table read/write."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extractor import runs
from extractor.core.errors import InputError
from extractor.io import fs
from extractor.job.inputs import CorpusSpec
from extractor.job.stages import NAMES, input_table, switched_on


@dataclass
class JobContext:
    """What a stage gets. Stages talk to the output only through these methods, so the same
    stage code writes into a run's staging directory (the job: `run` is set, and the run is
    published all at once at the end, extractor/runs/) or straight into `output` (tests
    and benchmarks that build a context by hand):

        ctx.table_path(name)                  where table `name` is (written by this run, or
                                              reused from the published run with --start-at)
        ctx.read_table(name)                  a DataFrame of it
        ctx.write_table_with(name, write)     the table's files, written by `write(directory)`
                                              (the stage's tasks, with parquet_writer.write_sorted)
        ctx.put_file(local_path, "splits/README.md"), ctx.put_bytes(data, "punkt_params.json")
                                              any other file of the run (card, PNG, JSON)
        ctx.stats[stage], ctx.warn(msg)       counts for stats.json, warnings
    """
    spark: Any                   # pyspark.sql.SparkSession (pyspark is imported by extractor/spark/ only)
    args: object                 # argparse.Namespace with every flag of every stage
    lexicon: object              # extractor.lexicon.lexicon.Lexicon
    output: Path                 # where this run writes (its staging directory) when local
    corpora: list[CorpusSpec]
    stats: dict = field(default_factory=dict)
    command_line: str = ""
    warnings: list[str] = field(default_factory=list)
    output_uri: str | None = None  # set when the output is a URI (gs://, s3a://, file://...)
    run: runs.Run | None = None    # the job's run; None: write into `output`
    options: dict = field(default_factory=dict)  # stage name -> its options (built once by the job)

    def stage_options(self, name: str, stage):
        """The options of stage `name` (its `extractor.engine.stage.Stage`): the ones the job
        built from the flags, else built now from `args` (a context made by hand)."""
        if name not in self.options:
            self.options[name] = stage.options(self.args, self.lexicon)
        return self.options[name]

    @property
    def root(self) -> str:
        """Where this run writes: its staging directory, or the output root without a run
        (a URI or an absolute local path)."""
        if self.run is not None:
            return self.run.dir
        return self.output_uri or runs.path_str(self.output)

    def input_table(self, spec) -> str:
        """The table the stage of `spec` (a `StageSpec` that reads one) reads
        (`extractor.job.stages.input_table` over the stages the flags switch on)."""
        found = input_table(spec.name, switched_on(self.args))
        assert found is not None, f"stage {spec.name!r} reads the job's inputs, not a table"
        return found

    def table_path(self, name: str) -> str:
        if self.run is not None:
            return self.run.table_path(name)
        return f"{self.root.rstrip('/')}/{name}"

    def file_path(self, relative: str) -> str:
        """Where a file of this run goes (e.g. 'punkt_params.json')."""
        return f"{self.root.rstrip('/')}/{relative}"

    def files_per_table(self, num_files: int | None = None) -> int:
        """How many files (hash partitions, `parquet_writer.spark_partition`) a stage cuts its
        table into (--files-per-table)."""
        return num_files or int(getattr(self.args, "files_per_table", 0) or 4)

    def write_table_with(self, name: str, write, keep: bool = False) -> str:
        """Write table `name` with ``write(directory)``: the one way a stage publishes its
        table into the run (every stage calls it once). The reuse guard: a table reused from
        the published run (--start-at) is never written. In a run the table goes to the
        staging directory, cleared first (a retried stage) unless `keep` (a resumed stage
        whose finished units are there already); without a run, through a temporary
        directory moved into place only on success."""
        target = self.table_path(name)
        if self.run is not None:
            if name in self.run.reused:
                raise ValueError(f"{target}: table '{name}' is reused from the published run (--start-at); "
                                   f"a stage cannot write it")
            if fs.exists(target) and not keep:
                fs.delete(target)  # a retried stage of this same run
            write(target)
            return target
        overwrite = bool(getattr(self.args, "overwrite", False))
        with runs.atomic_directory(self.spark, target, overwrite) as tmp:
            write(tmp)
        return target

    def read_table(self, name: str):
        path = self.table_path(name)
        if not fs.exists(path):
            raise InputError(f"{path}: no such table; run the stage that writes '{name}' first "
                             f"(--stages {name if name in NAMES else 'all'})")
        return self.spark.read.parquet(path)

    def put_bytes(self, data: bytes, relative: str) -> str:
        """Write a file of this run (relative to the run's root, e.g. 'splits/README.md')."""
        if self.run is not None:
            return self.run.put_bytes(relative, data)
        path = self.file_path(relative)
        fs.write_bytes(path, data)
        return path

    def put_file(self, local_path, relative: str) -> str:
        """Copy a local file (a card, a PNG) into this run, e.g. put_file(png, 'splits/x.png')."""
        return self.put_bytes(Path(local_path).read_bytes(), relative)

    def warn(self, msg: str) -> None:
        self.warnings.append(msg)
        self.stats.setdefault("warnings", []).append(msg)
