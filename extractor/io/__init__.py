"""Reading and writing bytes: the one filesystem layer (`fs`: local paths and URIs), the
one Parquet writer (`parquet_writer`), the folder and file writer that swaps a finished
result in (`atomic`)."""
