"""Table properties read in one place: defaults, any-case values, and a named error for a value a property does
not take (a misspelt mode no longer falls back to copy-on-write)."""
import pytest

from sparkberg.errors import ValidationError
from sparkberg.format import properties as P


def test_row_level_modes_and_isolation_levels():
    assert P.row_level_mode({}, "delete") == P.COPY_ON_WRITE
    assert P.row_level_mode({"write.merge.mode": " Merge-On-Read"}, "merge") == P.MERGE_ON_READ
    assert P.isolation_level({}, "update") == P.SERIALIZABLE
    assert P.isolation_level({"write.update.isolation-level": "SNAPSHOT"}, "update") == P.SNAPSHOT
    with pytest.raises(ValidationError, match="write.delete.mode must be one of copy-on-write, merge-on-read, got "
                                              "'merge_on_read'"):
        P.row_level_mode({"write.delete.mode": "merge_on_read"}, "delete")
    with pytest.raises(ValidationError, match="write.merge.isolation-level must be one of serializable, snapshot"):
        P.isolation_level({"write.merge.isolation-level": "strict"}, "merge")


def test_booleans():
    assert P.boolean({}, P.WAP_ENABLED) is False and P.boolean({}, P.WAP_ENABLED, True) is True
    assert P.boolean({P.WAP_ENABLED: "TRUE "}, P.WAP_ENABLED) is True
    assert P.boolean({P.WAP_ENABLED: "false"}, P.WAP_ENABLED) is False
    with pytest.raises(ValidationError, match="write.wap.enabled must be one of true, false, got 'yes'"):
        P.boolean({P.WAP_ENABLED: "yes"}, P.WAP_ENABLED)


def test_write_properties_and_their_defaults():
    from sparkberg.format.types import LONG, NestedField, Schema
    from sparkberg.format.updates import new_table_metadata
    schema = Schema([NestedField(1, "id", LONG, False)], schema_id=0)
    assert P.data_location(new_table_metadata(schema, "file:///w/t")) == "file:///w/t/data"
    assert P.data_location(new_table_metadata(schema, "file:///w/t", properties={P.DATA_PATH: "s3://b/d"})) == \
        "s3://b/d"
    assert P.compression({}) == "zstd" and P.compression({P.COMPRESSION: " GZIP"}) == "gzip"
    assert P.target_file_size({}) == 512 * 1024 * 1024
    assert P.target_file_size({P.TARGET_FILE_SIZE: "1048576"}) == 1048576
    with pytest.raises(ValidationError, match="write.target-file-size-bytes must be an integer, got '1g'"):
        P.target_file_size({P.TARGET_FILE_SIZE: "1g"})
