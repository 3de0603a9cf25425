"""The Arrow schema sparkberg gives a Spark schema (``sparkberg.spark.types.arrow_schema``, made without PySpark's
``to_arrow_schema``, which on PySpark 3.5 imports ``distutils``) is exactly PySpark's, type by type and nested."""
import pytest
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from sparkberg.spark.types import arrow_schema

PRIMITIVES = [T.BooleanType(), T.ByteType(), T.ShortType(), T.IntegerType(), T.LongType(), T.FloatType(),
              T.DoubleType(), T.DecimalType(9, 2), T.DecimalType(38, 10), T.StringType(), T.BinaryType(),
              T.DateType(), T.TimestampType(), T.TimestampNTZType(), T.DayTimeIntervalType(), T.NullType()]


def _pyspark(struct: T.StructType):
    try:
        return to_arrow_schema(struct, timezone="UTC")
    except TypeError:  # PySpark 3.5
        return to_arrow_schema(struct)


def _nested(t: T.DataType, required: bool) -> list[T.DataType]:
    return [T.ArrayType(t, True), T.ArrayType(t, not required), T.MapType(T.StringType(), t, True),
            T.MapType(T.LongType(), t, not required),
            T.StructType([T.StructField("a", t, True), T.StructField("b", t, not required)]),
            T.ArrayType(T.StructType([T.StructField("m", T.MapType(T.IntegerType(), T.ArrayType(t)))]))]


@pytest.mark.parametrize("spark_type", PRIMITIVES, ids=str)
def test_arrow_schema_is_pysparks(spark_type):
    required = not isinstance(spark_type, T.NullType)  # (Arrow has no non-nullable null field)
    fields = [T.StructField("v", spark_type, True), T.StructField("w", spark_type, not required)]
    fields += [T.StructField(f"n{i}", t, i % 2 == 0) for i, t in enumerate(_nested(spark_type, required))]
    struct = T.StructType(fields)
    got, want = arrow_schema(struct), _pyspark(struct)
    assert got.equals(want, check_metadata=True), f"{got}\n!=\n{want}"


def test_types_it_does_not_map_are_pysparks_own():
    time_type = getattr(T, "TimeType", None)
    if time_type is None:
        pytest.skip("this PySpark has no TimeType")
    struct = T.StructType([T.StructField("t", time_type(6)), T.StructField("id", T.LongType(), False)])
    assert arrow_schema(struct).equals(_pyspark(struct))
