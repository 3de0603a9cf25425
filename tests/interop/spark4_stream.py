"""sparkberg's streaming read of a table, on PySpark 4 (Python streaming data sources need it), for the interop
tests that run on PySpark 3.5 with Iceberg Java: prints a JSON list of the micro-batches, each the sorted rows it
delivered.

    python spark4_stream.py WAREHOUSE TABLE CHECKPOINT OPTIONS_JSON"""
import json
import os
import sys

from sparkberg.spark.session import session_builder

import sparkberg


def main(warehouse: str, table: str, checkpoint: str, options: str) -> int:
    spark = session_builder("spark4-stream", master="local[2]").config("spark.ui.enabled", "false").getOrCreate()
    t = sparkberg.catalog(spark, warehouse).load_table(table)
    batches = []
    q = t.read_stream(**json.loads(options)).writeStream.trigger(availableNow=True) \
        .option("checkpointLocation", checkpoint) \
        .foreachBatch(lambda df, _: batches.append(sorted(tuple(r) for r in df.collect()))).start()
    q.awaitTermination()
    print("BATCHES " + json.dumps([b for b in batches if b]), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main(*sys.argv[1:5]))
