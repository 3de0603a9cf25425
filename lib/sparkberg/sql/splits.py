"""What sparkberg's Python data sources share (the batch source, :mod:`sparkberg.sql.source`, Spark 4.1+; the
stream source, :mod:`sparkberg.sql.stream_source`, 4.0+): the option that carries the catalog's configuration, and
the tasks' grouping into Spark partitions. No import of ``pyspark.sql.datasource`` here: its filter classes came in
PySpark 4.1, and the stream source must import on 4.0."""
from __future__ import annotations

# (the catalog's configuration, which may hold a password: Spark redacts an option whose name says "secret")
CONFIG_OPTION = "catalog-config-secret"
# (how Spark's file sources size their splits: at most maxPartitionBytes, at least openCostInBytes, else the
# data spread over the default parallelism; each file counts its open cost too)
SPLIT_BYTES_MAX = 128 * 1024 * 1024
OPEN_COST_BYTES = 4 * 1024 * 1024


def split_tasks(tasks: list[dict], parallelism: int) -> list[list[dict]]:
    """Tasks in consecutive groups (at least one) sized as Spark sizes the splits of a file source."""
    total = sum(t["file_size_in_bytes"] + OPEN_COST_BYTES for t in tasks)
    target = min(SPLIT_BYTES_MAX, max(OPEN_COST_BYTES, total // max(parallelism, 1)))
    groups: list[list[dict]] = [[]]
    size = 0
    for t in tasks:
        cost = t["file_size_in_bytes"] + OPEN_COST_BYTES
        if groups[-1] and size + cost > target:
            groups.append([])
            size = 0
        groups[-1].append(t)
        size += cost
    return groups
