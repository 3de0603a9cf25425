"""The reserved columns of the spec ("Reserved Field IDs"), in one place as Iceberg Java's ``MetadataColumns``:
the metadata columns a read can ask for, the columns of position delete files, and the v3 row-lineage columns.

Field ids above ``Integer.MAX_VALUE - 200`` are reserved; no user schema may use them, so a reserved id always
means the same column, whatever its name in a file.
"""
from __future__ import annotations

from sparkberg.format.types import BOOLEAN, INT, LONG, STRING, NestedField

# metadata columns of a read (``t.to_df(columns=[...])``)
FILE_PATH = NestedField(2147483646, "_file", STRING, True)
ROW_POSITION = NestedField(2147483645, "_pos", LONG, True)
IS_DELETED = NestedField(2147483644, "_deleted", BOOLEAN, True)
SPEC_ID = NestedField(2147483643, "_spec_id", INT, True)
PARTITION_ID, PARTITION_NAME = 2147483642, "_partition"  # (a struct whose type is the table's partition type)

# position delete files
DELETE_FILE_PATH = NestedField(2147483546, "file_path", STRING, True)
DELETE_FILE_POS = NestedField(2147483545, "pos", LONG, True)
DELETE_FILE_ROW_ID, DELETE_FILE_ROW_NAME = 2147483544, "row"  # (a struct of the table's columns)

# row lineage (v3)
ROW_ID = NestedField(2147483540, "_row_id", LONG)
LAST_UPDATED_SEQUENCE_NUMBER = NestedField(2147483539, "_last_updated_sequence_number", LONG)

# the metadata columns a read can return, by name; the last two on v3 tables only
READ_COLUMNS = (FILE_PATH.name, ROW_POSITION.name, SPEC_ID.name, PARTITION_NAME, ROW_ID.name,
                LAST_UPDATED_SEQUENCE_NUMBER.name)
LINEAGE_COLUMNS = (ROW_ID.name, LAST_UPDATED_SEQUENCE_NUMBER.name)
