"""File I/O: local files with atomic create-if-absent, and object stores/HDFS through pyarrow.fs."""
from sparkberg.io.fileio import (  # noqa: F401
    FileIO, LocalFileIO, ObjectStoreFileIO, TableFileIO, file_io_for, to_local_path,
)
