"""Settings of planning and reads (sparkberg.spark.tuning)."""
import pytest

from sparkberg.errors import ValidationError
from sparkberg.spark.tuning import ReadTuning


def test_read_tuning_comes_from_spark_conf_keys_and_names_a_bad_value():
    class Conf:
        def __init__(self, values):
            self.values = values

        def get(self, key, default=None):
            return self.values.get(key, default)

    class Session:
        def __init__(self, values):
            self.conf = Conf(values)
    assert ReadTuning.of(None) == ReadTuning() == ReadTuning.of(Session({}))
    got = ReadTuning.of(Session({"spark.sparkberg.read.driver-delete-rows-max": "5",
                                 "spark.sparkberg.read.scan-filter-slot-bits-max": "0"}))
    assert got == ReadTuning(driver_delete_rows_max=5, scan_filter_slot_bits_max=0)
    with pytest.raises(ValidationError, match="spark.sparkberg.read.bitmap-bytes-max must be an integer, got 'big'"):
        ReadTuning.of(Session({"spark.sparkberg.read.bitmap-bytes-max": "big"}))
