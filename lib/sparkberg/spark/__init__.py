"""The lowest layer that imports pyspark: Iceberg <-> Spark types."""
