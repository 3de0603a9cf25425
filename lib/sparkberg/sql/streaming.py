"""Structured Streaming into and out of a table, with no jar: the sink is a ``foreachBatch`` function that commits
each micro-batch as an idempotent write, the source a Python streaming data source
(:mod:`sparkberg.sql.stream_source`, PySpark 4.0+).

The sink's exactly-once rests on two facts. Spark runs a micro-batch again, with the same id and the same rows,
when the query restarts from its checkpoint before the batch's end was recorded (the batch's offsets are logged
before it runs; a deterministic source replays them). And each batch is committed with the idempotency key
(query id, batch id) (:mod:`sparkberg.operations.request`): the query id is the one the checkpoint keeps across
restarts (its ``metadata`` file), so a batch committed before a crash is found recorded when it runs again, and
written nothing. The snapshot also records Iceberg Java's sink properties ``spark.sql.streaming.queryId`` and
``spark.sql.streaming.epochId``.

A micro-batch is written as Iceberg Java's sink writes it: with no shuffle, each task writing a file per partition it
meets (its rows are not clustered first), unless the table property ``write.distribution-mode`` or the session
conf ``spark.sql.iceberg.distribution-mode`` names a distribution. Spark runs micro-batches without adaptive
execution, so a clustering shuffle would run ``spark.sql.shuffle.partitions`` tasks (200 by default) for each, a
Python worker's task each (7 s a batch of 1000 rows on 2 cores, against 0.3 s without).

A checkpoint belongs to one table: the sink leaves ``sparkberg-sink.json`` (the table's name and uuid) in it when
a query first starts, and refuses to start over a checkpoint of another table, or one another kind of query wrote.
"""
from __future__ import annotations

import json
from typing import Any

from sparkberg.operations.properties import checked
from sparkberg.operations.target import resolve
from sparkberg.errors import NotSupportedError, SparkbergError, ValidationError
from sparkberg.io.fileio import FileIO, normalize_location
from sparkberg.spark.session import spark_version
from sparkberg.spark.settings import session_conf
from sparkberg.table import Table, catalog
from sparkberg.format.properties import ACCEPT_ANY_SCHEMA, boolean
from sparkberg.write.dataframe import DISTRIBUTION_CONF, MERGE_SCHEMA_CONF, align, store_assignment_policy

QUERY_ID = "spark.sql.streaming.queryId"
EPOCH_ID = "spark.sql.streaming.epochId"
MARKER = "sparkberg-sink.json"
OUTPUT_MODES = ("append", "complete")
TRIGGERS = ("processingTime", "once", "availableNow")


def write_stream(table: Table, df: Any, checkpoint_location: str, trigger: dict[str, Any] | None,
                 output_mode: str, query_name: str | None, branch: str | None,
                 snapshot_properties: dict[str, str] | None) -> Any:
    """:meth:`~sparkberg.table.Table.write_stream`: the checks, the checkpoint's claim, and the started query."""
    if not getattr(df, "isStreaming", False):
        raise ValidationError("write_stream needs a streaming DataFrame (spark.readStream...); write a DataFrame "
                              "with Table.append")
    if output_mode not in OUTPUT_MODES:
        raise ValidationError(f"output_mode must be one of {', '.join(OUTPUT_MODES)}, got {output_mode!r}")
    trigger = dict(trigger or {})
    if "continuous" in trigger:
        raise NotSupportedError("a continuous trigger commits no micro-batches; use processingTime or availableNow")
    if len(trigger) > 1 or any(k not in TRIGGERS for k in trigger):
        raise ValidationError(f"trigger takes one of DataStreamWriter.trigger's keywords ({', '.join(TRIGGERS)}), "
                              f"got {sorted(trigger)}")
    if not isinstance(checkpoint_location, str) or not checkpoint_location.strip():
        raise ValidationError(f"checkpoint_location must be a location, got {checkpoint_location!r}")
    if table.catalog is None or table.identifier is None:
        raise SparkbergError(f"table {table.name} was loaded by path and is read-only; load it from a catalog to "
                             "write to it")
    resolve(table.spark, table.metadata, branch).head_id(table.metadata)  # (a missing branch fails now)
    merges = boolean(table.metadata.properties, ACCEPT_ANY_SCHEMA) or \
        (session_conf(table.spark, MERGE_SCHEMA_CONF) or "").strip().lower() == "true"
    if not merges:
        # (the stream's columns checked against the table's now, as each batch's append would check them: a
        # mismatch is the named error here, not a StreamingQueryException around it from the first batch)
        align(df, table.metadata.current_schema, store_assignment_policy(table.spark))
    properties = checked(snapshot_properties)
    checkpoint = normalize_location(checkpoint_location).rstrip("/")
    claim(checkpoint, table)  # (with the table's FileIO: a checkpoint beside the table, on its store)
    batches = CommitBatch(table.catalog.config, str(table.identifier), checkpoint, output_mode, branch, properties)
    writer = df.writeStream.foreachBatch(batches).outputMode(output_mode) \
        .option("checkpointLocation", checkpoint_location)
    if trigger:
        writer = writer.trigger(**trigger)
    if query_name is not None:
        writer = writer.queryName(query_name)
    return writer.start()


def claim(checkpoint: str, table: Table) -> None:
    """Leave the table's name and uuid in ``checkpoint`` (once), or a named error when it is another table's, or a
    checkpoint another kind of query wrote."""
    io = table.io
    mine = {"table": table.name, "table-uuid": table.metadata.table_uuid}
    marker = f"{checkpoint}/{MARKER}"
    if io.exists(marker):
        theirs = json.loads(io.read(marker))
        if theirs.get("table-uuid") != mine["table-uuid"]:
            raise ValidationError(f"checkpoint {checkpoint} is the checkpoint of a stream into table "
                                  f"{theirs.get('table')} (uuid {theirs.get('table-uuid')}), not {table.name} (uuid "
                                  f"{mine['table-uuid']}); give each stream its own checkpoint")
        return
    if io.exists(f"{checkpoint}/metadata"):
        raise ValidationError(f"checkpoint {checkpoint} was written by another query, not a stream into a sparkberg "
                              "table; give this stream its own checkpoint")
    io.create(marker, json.dumps(mine).encode())


class CommitBatch:
    """The ``foreachBatch`` function: commits micro-batch ``batch_id`` as an append (``output_mode`` complete: an
    overwrite of every row) with the idempotency key (query id, batch id). Picklable (Spark Connect runs it in a
    Python process of the server): it opens the catalog again from its arguments, once per process."""

    def __init__(self, catalog_config: dict[str, Any], identifier: str, checkpoint: str, output_mode: str,
                 branch: str | None, properties: dict[str, str]):
        self.catalog_config, self.identifier, self.checkpoint = catalog_config, identifier, checkpoint
        self.output_mode, self.branch, self.properties = output_mode, branch, properties
        self._table: Table | None = None
        self._query_id: str | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_table": None}

    def query_id(self, io: FileIO) -> str:
        """The query's id, as its checkpoint keeps it across restarts (read with ``io``, the table's FileIO)."""
        if self._query_id is None:
            text = io.read(f"{self.checkpoint}/metadata").decode()
            self._query_id = json.loads(text.splitlines()[0])["id"]
        return self._query_id

    def table(self, spark: Any) -> Table:
        """The table, as committed now."""
        if self._table is None or self._table.spark is not spark:
            config = dict(self.catalog_config)
            self._table = catalog(spark, config.pop("uri"), **config).load_table(self.identifier)
        else:
            self._table.refresh()
        return self._table

    def __call__(self, batch: Any, batch_id: int) -> None:
        spark = batch.sparkSession  # (the query's own session, which Spark clones for it)
        table = self.table(spark)
        query_id = self.query_id(table.io)
        named = "write.distribution-mode" in table.metadata.properties or session_conf(spark, DISTRIBUTION_CONF)
        mode = None if named else "none"  # (fanned out: see the module docstring)
        properties = {**self.properties, QUERY_ID: query_id, EPOCH_ID: str(batch_id)}
        key = (query_id, int(batch_id))
        if self.output_mode == "complete":
            table.overwrite(batch, None, properties, self.branch, idempotency=key, distribution_mode=mode)
        else:
            table.append(batch, properties, self.branch, idempotency=key, distribution_mode=mode)


def read_stream(table: Table, options: dict[str, Any]) -> Any:
    """:meth:`~sparkberg.table.Table.read_stream`: a streaming DataFrame over the data source (PySpark 4.0+)."""
    if spark_version(None) < (4, 0) or spark_version(table.spark) < (4, 0):
        raise NotSupportedError("read_stream needs PySpark and Spark 4.0 or later (Python streaming data sources); "
                                "on Spark 3.5 read what was appended since a snapshot with "
                                "Table.to_df(start_snapshot_id=...)")
    from sparkberg.sql.stream_source import stream_frame  # (imports pyspark.sql.datasource: PySpark 4 only)
    return stream_frame(table, options)


__all__ = ["write_stream", "read_stream", "CommitBatch", "QUERY_ID", "EPOCH_ID"]
