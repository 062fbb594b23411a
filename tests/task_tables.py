"""Write a table of plain rows the way the stages write theirs (stage 2's last rounds), for
the tests of the run writer: `ctx.write_table_with(name, write)`, where ``write(directory)``
hands two rounds of tasks to a runner:

1. scatter, one task per chunk of the input rows: each row goes to the scratch file of the
   table file it belongs in, the hash partition Spark's ``repartition(files, *partition_by,
   sort_by[0])`` gives it (`parquet_writer.spark_partition`);
2. files, one task per table file: that file's rows from every chunk, sorted by
   ``partition_by + sort_by``, written with `parquet_writer.write_sorted` as
   ``[<col>=<value>/]part-<file>.parquet``; then `finish_table_files`.

So the bytes depend on the rows only: not on how they were cut into chunks, in which order,
nor on the runner (`extractor.engine.runner.InProcessRunner` or `extractor.spark.runner.SparkRunner`).
The task functions are closures (pickled by value for Spark's workers) that use only
`extractor` and pyarrow names.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from extractor.io import fs
from extractor.engine import scratch
from extractor.io.parquet_writer import finish_table_files, spark_partition, task_attempt, write_sorted
from extractor.engine.runner import InProcessRunner


def table_of(rows: list[tuple], columns: list[str], schema: pa.Schema | None = None) -> pa.Table:
    """`rows` (tuples of `columns`) as an Arrow table; `schema` is needed when there are none."""
    return pa.Table.from_pylist([dict(zip(columns, r)) for r in rows], schema=schema)


def writer(rows: list[tuple], columns: list[str], partition_by=(), sort_by=None, files: int = 4,
           chunks: int = 1, runner=None, work: str | None = None, schema: pa.Schema | None = None):
    """``write(directory)`` for `ctx.write_table_with`: `rows` (tuples of `columns`) cut into
    `chunks` consecutive chunks, written as `files` hash-partitioned files by `runner`'s tasks
    (in-process by default). `sort_by` defaults to every column but the partition columns;
    `work`: the scratch folder (default: ``<directory>-scatter`` beside the table)."""
    partition_by = [partition_by] if isinstance(partition_by, str) else list(partition_by)
    sort_by = list(sort_by or [c for c in columns if c not in partition_by])
    key = partition_by + sort_by[:1]
    runner = runner or InProcessRunner()
    table = table_of(rows, columns, schema)
    schema = table.schema
    bounds = np.linspace(0, len(rows), chunks + 1).astype(int).tolist()

    def write(directory: str) -> list[dict]:
        directory = fs.canonical(directory)
        scatter = fs.canonical(work or directory.rstrip("/") + "-scatter")
        shared = runner.share(table)

        def scatter_task(c: int) -> dict:
            mine = shared.value.slice(bounds[c], bounds[c + 1] - bounds[c])
            files_of = np.array([spark_partition(values, files)
                                 for values in zip(*[mine.column(k).to_pylist() for k in key])], dtype=np.int64)
            for f, part in scratch.split_by(mine, files_of).items() if mine.num_rows else ():
                scratch.write_arrow(part, scratch.Scratch(scatter).cut("file", f, f"chunk-{c:05d}.arrow"))
            return {"rows": mine.num_rows}

        def file_task(f: int) -> dict:
            rows_ = scratch.read_arrow(scratch.Scratch(scatter).cut("file", f), schema)
            rows_ = rows_.take(pc.sort_indices(rows_, sort_keys=[(c, "ascending") for c in partition_by + sort_by]))
            written = write_sorted(rows_.to_batches(), directory, partition_by, f"part-{f:05d}.parquet",
                                   task_attempt())
            return {"files": [{"path": p, "rows": n, "bytes": b} for p, n, b in written]}

        try:
            runner.map(scatter_task, list(range(chunks)))
            written = [w for out in runner.map(file_task, list(range(files)), spread=True) for w in out["files"]]
        finally:
            shared.destroy()
            fs.delete(scatter)
        return finish_table_files(written, directory, lambda: schema)

    return write


def write_rows(ctx, name: str, rows: list[tuple], columns: list[str], partition_by=(), sort_by=None,
               chunks: int = 1, runner=None, schema: pa.Schema | None = None) -> str:
    """Table `name` of the context's run (or output), as a stage writes it: `writer` through
    `ctx.write_table_with`, with ``ctx.files_per_table()`` files."""
    return ctx.write_table_with(name, writer(rows, columns, partition_by, sort_by, ctx.files_per_table(), chunks,
                                             runner, schema=schema))
