"""Rows to data files: partition transforms, Parquet with field ids, file sizing, metrics."""
