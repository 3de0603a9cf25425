"""File I/O: local files with atomic create-if-absent, and object stores/HDFS through pyarrow.fs."""
from sparkberg.io.fileio import FileIO, LocalFileIO, PyArrowFileIO, file_io_for, to_local_path  # noqa: F401
