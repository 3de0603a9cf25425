"""A Hive Metastore for the tests, on 127.0.0.1 and a free port, started and stopped by them: Hive 2.3's own
metastore server from the jars PySpark ships (``hive-metastore``, Derby, DataNucleus, libthrift), its database an
embedded Derby in a temporary directory. Its lock tables are made by a first start in Hive's test mode
(``hive.in.test``: the metastore creates them, as Hive's and Iceberg Java's tests have it), which is then stopped:
in test mode the metastore also refuses a lock request that names no operation type, as Iceberg Java's does."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

import pyspark

from pgserver import _free_port as free_port

_SITE = """<?xml version="1.0"?>
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName={db};create=true</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.apache.derby.jdbc.EmbeddedDriver</value></property>
  <property><name>datanucleus.schema.autoCreateAll</name><value>true</value></property>
  <property><name>datanucleus.connectionPoolingType</name><value>None</value></property>
  <property><name>hive.metastore.schema.verification</name><value>false</value></property>
  <property><name>hive.metastore.warehouse.dir</name><value>file://{warehouse}</value></property>
  <property><name>hive.in.test</name><value>{test}</value></property>
</configuration>
"""


class HiveMetastore:
    """A running metastore: ``uri`` (``thrift://127.0.0.1:<port>``); :meth:`stop` ends it."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="sparkberg-hms-")
        self.port = free_port()
        self.uri = f"thrift://127.0.0.1:{self.port}"
        self._start(test_mode=True)
        from sparkberg.catalog.thrift import Connection
        Connection("127.0.0.1", self.port, 120).call("get_open_txns", [])  # (the lock tables made)
        self.stop(keep=True)
        self._start(test_mode=False)

    def _start(self, test_mode: bool) -> None:
        conf = os.path.join(self.dir, "conf")
        os.makedirs(conf, exist_ok=True)
        with open(os.path.join(conf, "hive-site.xml"), "w") as f:
            f.write(_SITE.format(db=os.path.join(self.dir, "metastore_db"), warehouse=os.path.join(self.dir, "wh"),
                                 test=str(test_mode).lower()))
        jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
        self.proc = subprocess.Popen(
            ["java", "-Xmx512m", "-XX:+UseSerialGC",
             # (Hive's log4j2 configuration asks for asynchronous loggers, whose library Spark does not ship)
             "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector",
             "-cp", f"{conf}{os.pathsep}{jars}{os.sep}*", "org.apache.hadoop.hive.metastore.HiveMetaStore",
             "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.dir)
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("the Hive Metastore did not start (java and PySpark's jars are needed)")
                time.sleep(0.5)

    def stop(self, keep: bool = False) -> None:
        """End the server and (unless ``keep``) remove its database."""
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        if not keep:
            shutil.rmtree(self.dir, ignore_errors=True)


_PARQUET_SD = ("org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
               "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
               "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe")
_ORC_SD = ("org.apache.hadoop.hive.ql.io.orc.OrcInputFormat", "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
           "org.apache.hadoop.hive.ql.io.orc.OrcSerde")


def create_plain_table(uri: str, database: str, name: str, columns: list[tuple[str, str]],
                       partition_keys: list[tuple[str, str]], location: str,
                       partitions: list[tuple[list[str], str]] = (), parameters: dict[str, str] | None = None,
                       managed: bool = True, orc: bool = False) -> None:
    """A plain (not Iceberg) Hive table stored as Parquet (or ORC), as Hive's ``CREATE TABLE ... STORED AS``
    makes it, with ``partitions`` (values, location) added, through the metastore's own Thrift calls."""
    from sparkberg.catalog.thrift import BOOL, I32, LIST, MAP, STRING, STRUCT, Connection
    inp, out, serde = _ORC_SD if orc else _PARQUET_SD
    host, port = uri[len("thrift://"):].split(":")
    conn = Connection(host, int(port), 60)

    def fields(cols):
        return (STRUCT, [[(1, STRING, n), (2, STRING, t), (3, STRING, None)] for n, t in cols])

    def sd(at: str) -> list:
        return [(1, LIST, fields(columns)), (2, STRING, at), (3, STRING, inp), (4, STRING, out), (5, BOOL, False),
                (6, I32, -1), (7, STRUCT, [(2, STRING, serde), (3, MAP, (STRING, STRING, {"serialization.format": "1"}))]),
                (8, LIST, (STRING, [])), (9, LIST, (STRUCT, [])), (10, MAP, (STRING, STRING, {}))]
    now = int(time.time())
    params = {**(parameters or {}), **({} if managed else {"EXTERNAL": "TRUE"})}
    table = [(1, STRING, name), (2, STRING, database), (3, STRING, "etl"), (4, I32, now), (5, I32, 0), (6, I32, 0),
             (7, STRUCT, sd(location)), (8, LIST, fields(partition_keys)), (9, MAP, (STRING, STRING, params)),
             (12, STRING, "MANAGED_TABLE" if managed else "EXTERNAL_TABLE")]
    try:
        result = conn.call("create_table", [(1, STRUCT, table)])
        assert not set(result) - {0}, result
        if partitions:
            parts = [[(1, LIST, (STRING, list(values))), (2, STRING, database), (3, STRING, name), (4, I32, now),
                      (5, I32, 0), (6, STRUCT, sd(at)), (7, MAP, (STRING, STRING, {}))] for values, at in partitions]
            result = conn.call("add_partitions", [(1, LIST, (STRUCT, parts))])
            assert not set(result) - {0}, result
    finally:
        conn.close()
