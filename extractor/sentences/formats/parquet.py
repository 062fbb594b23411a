"""Parquet files of documents: a text column (`--text-field`) and optional id, title and
genre columns, as Hugging Face datasets and many pipelines write them; read in groups of
consecutive row groups. pyarrow is imported when a Parquet input is met (the job's
`--help` imports this package)."""
from __future__ import annotations

from typing import Callable

from extractor.core.hashing import stable_hex
from extractor.sentences.formats.base import DocumentSink, InputFormat
from extractor.sentences.units import Listing, UnitError, WorkUnit, check_file
from extractor.io import fs


class Parquet(InputFormat):
    name = "parquet"
    suffixes = (".parquet",)
    kinds = ("parquet",)

    def list_input(self, out: Listing, ci: int, source: int, path: str, unit_bytes: int, fields: dict) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        check_file(path)
        try:
            with fs.open_input(path) as fh:
                meta = pq.ParquetFile(fh).metadata
                schema = meta.schema.to_arrow_schema()
        except fs.FsError as exc:
            raise UnitError(str(exc)) from None
        except (pa.ArrowException, OSError) as exc:  # pyarrow's refusal of the footer: not Parquet
            raise UnitError(f"{path}: not a Parquet file ({str(exc).splitlines()[0]})") from None
        name = fields["text_field"]
        if name not in schema.names:
            raise UnitError(f"{path}: no column '{name}' (columns: {', '.join(schema.names)}); set --text-field")
        tp = schema.field(name).type
        if not (pa.types.is_string(tp) or pa.types.is_large_string(tp) or pa.types.is_string_view(tp)
                or pa.types.is_null(tp)):
            raise UnitError(f"{path}: column '{name}' holds {tp} values, not text (row group 0 of "
                            f"{meta.num_row_groups}, and every other: a Parquet column has one type); "
                            f"choose the text column with --text-field or convert it")
        groups: list[list[int]] = [[]]
        total = 0
        for g in range(meta.num_row_groups):
            s = meta.row_group(g).total_byte_size
            if groups[-1] and total + s > unit_bytes:
                groups.append([])
                total = 0
            groups[-1].append(g)
            total += s
        groups = [g for g in groups if g]
        out.units += [WorkUnit(ci, source, path, "parquet", k, g[0], g[-1] + 1) for k, g in enumerate(groups)]
        out.inputs[path] = {"read": "row-groups", "units": len(groups), "row_groups": meta.num_row_groups}
        if not groups:
            out.counts.append((ci, "inputs_damaged", "no_row_group", 1))

    def read(self, unit: WorkUnit, fields: dict, proc: DocumentSink, enough: Callable[[], bool]) -> None:
        import pyarrow.parquet as pq

        with fs.open_input(unit.path) as fh:
            pf = pq.ParquetFile(fh)
            names = pf.schema_arrow.names
            wanted = {k: fields[k] for k in ("text_field", "id_field", "title_field", "genre_field")
                      if fields[k] in names}
            for batch in pf.iter_batches(row_groups=range(unit.lo, unit.hi), columns=sorted(set(wanted.values()))):
                cols = {k: batch.column(v).to_pylist() for k, v in wanted.items()}
                for i, text in enumerate(cols["text_field"]):
                    def opt(key, cols=cols, i=i):
                        value = cols[key][i] if key in cols else None
                        return None if value is None else str(value)
                    doc_id = opt("id_field")
                    proc.plain_document(doc_id if doc_id is not None else stable_hex(text or ""), opt("title_field"),
                                        opt("genre_field"), text)
                    if enough():
                        return


FORMAT = Parquet()
