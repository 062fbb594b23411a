"""Scratch files the stages' tasks exchange between rounds (Arrow IPC streams through
`extractor.fs`, so they work on a local disk and in a bucket alike), and the cut of a
table into buckets. Written and read back only by the stages themselves, deleted at the
end of the stage."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from extractor import fs


def write_arrow(table: pa.Table, path: str) -> None:
    """One scratch file (Arrow IPC stream)."""
    import pyarrow.ipc as ipc

    with fs.open_output(path) as out, ipc.new_stream(out, table.schema) as writer:
        writer.write_table(table)


def read_arrow(folder: str, schema: pa.Schema) -> pa.Table:
    """Every scratch file under `folder` (none: an empty table of `schema`), in name order."""
    import pyarrow.ipc as ipc

    tables = []
    for path, _ in sorted(fs.list_files(folder) if fs.exists(folder) else []):
        with fs.open_input(path) as fh:
            tables.append(ipc.open_stream(fh).read_all())
    return pa.concat_tables(tables) if tables else schema.empty_table()


def read_one(path: str) -> pa.Table:
    """One scratch file."""
    import pyarrow.ipc as ipc

    with fs.open_input(path) as fh:
        return ipc.open_stream(fh).read_all()


def split_by(table: pa.Table, buckets: np.ndarray) -> dict[int, pa.Table]:
    """The rows of `table` per bucket number, in their order."""
    order = np.argsort(buckets, kind="stable")
    values, starts = np.unique(buckets[order], return_index=True)
    ends = list(starts[1:]) + [len(order)]
    return {int(v): table.take(pa.array(order[s:e])) for v, s, e in zip(values, starts, ends)}


def folder(base: str, name: str, i: int) -> str:
    """The scratch folder of bucket (or range) `i` of kind `name`."""
    return fs.join(base, f"{name}-{i:05d}")
