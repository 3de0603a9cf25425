"""A check both test suites run on their PySpark (4.x in tests/spark, 3.5 in tests/interop): a Python stage made on
a classic session without PySpark's check that pandas is installed gives the rows PySpark's own ``mapInArrow``
gives."""
from __future__ import annotations

import pytest


def stage_without_pandas_check(spark, monkeypatch):
    """Build a Python stage over ``spark.range`` by PySpark's ``mapInArrow``, then, with PySpark's pandas check made
    to fail, by :func:`sparkberg.spark.jvm.map_in_arrow_classic`; assert both give the same rows and return
    ``(df, doubled, expected)``: the input, the stage's function and its sorted rows."""
    import pyspark.sql.pandas.functions as pandas_functions
    import pyspark.sql.pandas.utils as pandas_utils
    from sparkberg.spark.jvm import map_in_arrow_classic

    def doubled(batches):  # (defined here, so pickled by value: the workers cannot import a test module)
        import pyarrow as pa
        import pyarrow.compute as pc
        for b in batches:
            yield pa.record_batch([pc.multiply(b.column(0), 2), b.column(1)], names=["d", "s"])

    df = spark.range(0, 1000, 1, 3).selectExpr("id", "CAST(id AS string) AS s")
    expected = sorted(df.mapInArrow(doubled, "d bigint, s string").collect())
    assert expected[-1] == (1998, "999")

    def no_pandas() -> None:
        raise ImportError("pandas checked")
    for module in (pandas_utils, pandas_functions):
        monkeypatch.setattr(module, "require_minimum_pandas_version", no_pandas)
    with pytest.raises(ImportError, match="pandas checked"):
        df.mapInArrow(doubled, "d bigint, s string")
    made = map_in_arrow_classic(df, doubled, "d bigint, s string")
    assert made is not None and sorted(made.collect()) == expected
    return df, doubled, expected
