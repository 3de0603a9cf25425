"""The Iceberg format itself: pure Python, no pyspark and no I/O."""
