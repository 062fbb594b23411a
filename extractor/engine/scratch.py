"""Scratch files the stages' tasks exchange between rounds (Arrow IPC streams through
`extractor.io.fs`, so they work on a local disk and in a bucket alike), and the cut of a
table into buckets. Written and read back only by the stages themselves, deleted at the
end of the stage.

`Scratch` names every scratch path: a stage's scratch folder (`root`), the folders of its
kinds of files (`kind`), the folders of a kind cut into buckets (`cut`), and the file a
task writes there, named by what wrote it (`unit`, `bucket`, `band`, `range`, `corpus`).
A stage's plan module subclasses it with one method per kind of file (`PairsScratch`,
`SplitsScratch`), so that no stage module formats a scratch name itself.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from extractor.io import fs


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


def _numbered_file(kind: str, i: int, width: int = 5) -> str:
    return f"{kind}-{i:0{width}d}.arrow"


def unit_name(k: int) -> str:
    """The file a task of unit `k` writes into a folder."""
    return _numbered_file("unit", k, 6)


def bucket_name(b: int) -> str:
    """The file a task of bucket `b` writes into a folder."""
    return _numbered_file("bucket", b)


def band_name(k: int) -> str:
    """The file a task of band bucket `k` writes into a folder."""
    return _numbered_file("band", k)


def range_name(r: int) -> str:
    """The file a task of unit range `r` writes into a folder."""
    return _numbered_file("range", r)


def corpus_dir(corpus: str) -> str:
    """A corpus's folder name (any corpus name, safe on every filesystem)."""
    return f"corpus-{zlib.crc32(corpus.encode('utf-8')):08x}-{len(corpus)}"


def corpus_name(corpus: str) -> str:
    """A corpus's file name."""
    return f"{corpus_dir(corpus)}.arrow"


def numbered(i: int) -> str:
    """The folder name of a numbered part (an output file's bucket)."""
    return f"{i:05d}"


@dataclass(frozen=True)
class Scratch:
    """A stage's scratch folder and the paths in it."""

    root: str

    def kind(self, kind: str, *parts: str) -> str:
        """The folder (or, with `parts`, a path) of a kind of scratch file."""
        return fs.join(self.root, kind, *parts)

    def cut(self, kind: str, i: int, *parts: str) -> str:
        """The folder (or, with `parts`, a path) of bucket (or range) `i` of a kind cut into buckets."""
        return fs.join(self.root, f"{kind}-{i:05d}", *parts)

    def exists(self) -> bool:
        return fs.exists(self.root)

    def delete(self) -> None:
        """The whole scratch folder removed (nothing when absent)."""
        fs.delete(self.root)
