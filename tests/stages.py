"""A check both test suites run on their PySpark (4.x in tests/spark, 3.5 in tests/interop): a Python stage made on
a classic session without PySpark's checks that pandas is installed and that the stage's type maps to Arrow
(``to_arrow_type``, which imports ``distutils`` on PySpark 3.5) gives the rows PySpark's own ``mapInArrow`` gives."""
from __future__ import annotations

import pytest


def stage_without_pandas_check(spark, monkeypatch):
    """Build a Python stage over ``spark.range`` by PySpark's ``mapInArrow``, then, with PySpark's pandas check and
    the driver's ``to_arrow_type`` made to fail, by :func:`sparkberg.spark.jvm.map_in_arrow_classic`; assert both
    give the same rows and return ``(df, doubled, expected)``: the input, the stage's function and its sorted
    rows."""
    import pyspark.sql.pandas.functions as pandas_functions
    import pyspark.sql.pandas.utils as pandas_utils
    import pyspark.sql.udf as udf
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

    def no_arrow_type_check(*args, **kwargs):
        raise ImportError("to_arrow_type called")
    with monkeypatch.context() as checked:  # (each check failing alone fails PySpark's own mapInArrow)
        for module in (pandas_utils, pandas_functions):
            checked.setattr(module, "require_minimum_pandas_version", no_pandas)
        with pytest.raises(ImportError, match="pandas checked"):
            df.mapInArrow(doubled, "d bigint, s string")
    with monkeypatch.context() as checked:
        checked.setattr(udf, "to_arrow_type", no_arrow_type_check)  # (the driver's: the workers' are their own)
        with pytest.raises(ImportError, match="to_arrow_type called"):
            df.mapInArrow(doubled, "d bigint, s string")
    for module in (pandas_utils, pandas_functions):
        monkeypatch.setattr(module, "require_minimum_pandas_version", no_pandas)
    monkeypatch.setattr(udf, "to_arrow_type", no_arrow_type_check)
    made = map_in_arrow_classic(df, doubled, "d bigint, s string")
    assert made is not None and sorted(made.collect()) == expected
    return df, doubled, expected
