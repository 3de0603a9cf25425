"""What planning imports, whichever decoder reads the manifests (compiled code, or the reference decoder a small
table's plan uses while compiled code is not loaded): their entries pruned, inherited and matched to their delete
files, the arrays all built from buffers or Python values (``sparkberg.arrays``), never through ``pa.array``,
``pa.scalar`` (which every compute call given a Python value makes) or ``to_numpy``: these import pandas whenever
it is installed, a cost a fresh process pays before its first plan. Checked in a fresh process with no Spark, on
tables Spark wrote, with position delete files (v2) and deletion vectors (v3)."""
import json
import os
import subprocess
import sys

import pytest
from pandas_watch import WATCH

LIB = os.path.join(os.path.dirname(__file__), "..", "..", "lib")

CHILD = WATCH + r"""
import sparkberg
from sparkberg.avro import compiled
from sparkberg.expressions.predicates import bind
from sparkberg.planning.scan import plan
from sparkberg.expressions.sql import translate_filter

decoder = sys.argv[2]
if decoder == "compiled":
    compiled.load()  # (compiled decoding from the first manifest, as a process that has planned a large table)
counts = {}
for name in sys.argv[3:]:
    t = sparkberg.catalog(None, sys.argv[1]).load_table(name)
    schema, snap = t.metadata.current_schema, t.metadata.current_snapshot
    for label, text in (("full", None), ("selective", "id >= 100 AND id < 300")):
        bound = bind(translate_filter(text, schema, lambda: "UTC"), schema) if text else None
        tasks = plan(None, t.metadata, t.io, snap, *((bound,) if text else ()), mode="local").arrow()
        counts[f"{name} {label}"] = [tasks.num_rows, sum(len(d) for d in tasks.column("deletes").to_pylist())]
print(json.dumps({"pandas": first[0] if first else None, "counts": counts, "compiled": compiled.loaded()}))
"""


def test_planning_manifests_with_deletes_imports_no_pandas(spark, warehouse):
    import sparkberg
    cat = sparkberg.catalog(spark, warehouse)
    src = spark.sql("SELECT id, CAST(id % 7 AS int) AS k, concat('v', id) AS v FROM range(0, 2000)")
    expected = {}
    for version in (2, 3):
        name = f"db.planned_v{version}"
        t = cat.create_table(name, "id bigint, k int, v string", partition_by=["k", "bucket(4, id)"],
                             properties={"format-version": str(version), "write.delete.mode": "merge-on-read"})
        t.append(src)
        t.append(src.selectExpr("id + 2000 AS id", "k", "v"))
        t.delete("id % 10 = 3")
        for label, text in (("full", None), ("selective", "id >= 100 AND id < 300")):
            planned = t.plan_files(filter=text).collect()
            expected[f"{name} {label}"] = [len(planned), sum(len(r["deletes"]) for r in planned)]
    assert all(deletes for _, deletes in expected.values()), expected
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for decoder in ("compiled", "reference"):
        p = subprocess.run([sys.executable, "-c", CHILD, warehouse, decoder, "db.planned_v2", "db.planned_v3"],
                           capture_output=True, text=True, env={**env, "PYTHONPATH": LIB}, timeout=300)
        assert p.returncode == 0, p.stderr[-3000:]
        got = json.loads(p.stdout.strip().splitlines()[-1])
        assert got["compiled"] == (decoder == "compiled")
        assert got["counts"] == expected, decoder
        assert got["pandas"] is None, (decoder, got["pandas"])


BUDGET_CHILD = r"""
import json, sys
import sparkberg
from sparkberg.avro import compiled, decode
from sparkberg.planning import entries, scan

t = sparkberg.catalog(None, sys.argv[1]).load_table(sys.argv[2])
snap = t.metadata.current_snapshot
manifests = entries.snapshot_manifests(t.io, snap)
deletes = sum(entries.known_entries(m) for m in manifests if m.content == 1)
total = sum(entries.known_entries(m) for m in manifests)
# the budget: past the delete manifests alone ("reached"), or past all of them ("missed"), each manifest counted
# as its entries and MANIFEST_ENTRIES more
worth = decode.MANIFEST_ENTRIES
decode.LOAD_BUDGET_ENTRIES = deletes + worth * sum(m.content == 1 for m in manifests) + 1 \
    if sys.argv[4] == "reached" else total + worth * len(manifests) + 1
if sys.argv[3] == "local":
    rows = scan.plan(None, t.metadata, t.io, snap, mode="local").arrow().num_rows
else:  # the decoder a distributed plan's tasks run, called here on all the data manifests (as one task)
    made = {}
    scan.manifests_df = lambda spark, data_manifests: data_manifests
    scan.map_in_arrow = lambda data_manifests, tasks, struct: made.update(tasks=tasks, manifests=data_manifests)
    scan.ScanPlan = lambda *args, **kwargs: None
    scan.plan(None, t.metadata, t.io, snap, mode="distributed")
    assert type(made["tasks"]).__name__ == "ScopedTaskDecoder", made["tasks"]
    scan.manifests_of = lambda given, io: given
    rows = sum(b.num_rows for b in made["tasks"]([(m, i, t.io) for i, m in enumerate(made["manifests"])]))
print(json.dumps({"rows": rows, "reference": decode._reference_entries, "compiled": compiled.loaded(),
                  "deletes": deletes, "total": total}))
"""


def test_a_plan_that_reaches_the_load_budget_decodes_its_delete_manifests_compiled_too(spark, warehouse):
    """A plan decodes its delete manifests before its data manifests: when all of them reach the budget that pays
    for loading compiled code, it is loaded before the first, so no manifest of the plan goes by the reference
    decoder (on the driver's local plan and in a distributed plan's task alike)."""
    import sparkberg
    t = sparkberg.catalog(spark, warehouse).create_table(
        "db.budget", "id bigint, k int", partition_by=["k"],
        properties={"format-version": "2", "write.delete.mode": "merge-on-read"})
    t.append(spark.sql("SELECT id, CAST(id % 5 AS int) AS k FROM range(0, 500)"))
    t.delete("id % 10 = 3")
    planned = t.plan_files().count()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for mode in ("local", "distributed"):
        for budget in ("reached", "missed"):
            p = subprocess.run([sys.executable, "-c", BUDGET_CHILD, warehouse, "db.budget", mode, budget],
                               capture_output=True, text=True, env={**env, "PYTHONPATH": LIB}, timeout=300)
            assert p.returncode == 0, p.stderr[-3000:]
            got = json.loads(p.stdout.strip().splitlines()[-1])
            assert got["rows"] == planned and 0 < got["deletes"] < got["total"], got
            if budget == "reached":
                assert got["compiled"] and got["reference"] == 0, (mode, got)
            else:  # (the control: below the budget every manifest goes by the reference decoder)
                assert not got["compiled"] and got["reference"] == got["total"], (mode, got)
