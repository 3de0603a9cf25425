"""The settings planning and reads choose their strategy by, in one place.

Planning, per table (table properties, Iceberg's own names where Iceberg has the setting):

- ``read.data-planning-mode`` (``auto``): where data manifests are decoded: ``local`` on the driver,
  ``distributed`` on the executors, ``auto`` on the driver when the manifests left after pruning are under
  ``sparkberg.planning.local-max-bytes`` (48 MiB) and list at most ``sparkberg.planning.local-max-files``
  entries (250,000). The ``planning=`` argument of ``plan_files`` and ``to_df`` overrides it.
- ``read.delete-planning-mode`` (``auto``): where delete manifests are decoded: ``local`` on the driver,
  ``distributed`` on the executors (in the planning tasks themselves when there are no equality deletes, else
  in a job of their own), ``auto`` on the driver while they list at most
  ``sparkberg.planning.local-max-delete-entries`` entries (50,000: cheaper there than a Spark job), or by the
  planning tasks of a distributed plan without equality deletes.
- ``sparkberg.planning.scoped-pairs-max`` (20,000,000): a distributed plan without equality deletes lets each
  planning task decode only the delete manifests whose partitions overlap its data manifest's, found by
  comparing the partition summaries of every (data manifest, delete manifest) pair on the driver; past this many
  pairs, the driver decodes the delete manifests itself instead.

Reads, per session (Spark conf keys, :class:`ReadTuning`), each the size up to which a read takes a strategy:

- ``spark.sparkberg.read.driver-delete-rows-max`` (1,000,000): delete files holding up to this many rows in all
  are decoded on the driver (each once per process, kept by the delete cache) and reach Spark as Arrow data;
  beyond, Spark or the executors read them.
- ``spark.sparkberg.read.broadcast-delete-rows-max`` (2,000,000): deleted rows up to this many are broadcast to
  an anti-join with no shuffle of the table's rows; beyond, Spark shuffles both sides.
- ``spark.sparkberg.read.bitmap-bytes-max`` (64 MiB): position deletes reach the rows as one bitmap per data file
  while those bitmaps (sized by the files' record counts) stay under this; beyond, as (file, position) keys of
  an anti-join.
- ``spark.sparkberg.read.equality-positions-rows-max`` (4,000,000): equality deletes that apply to data files of
  up to this many rows in all are resolved once, on the driver, to the positions they delete, and applied as
  position deletes; beyond, Spark joins the rows with the deleted values.
- ``spark.sparkberg.read.scan-filter-slot-bits-max`` (16): the bitmaps a Parquet scan filters by are
  looked up in a table of at most 2 ** this many slots; reads whose files need more join the bitmaps instead.
- ``spark.sparkberg.read.name-ids-max-files`` (8,192): rows are matched to their data file (for deletes and
  metadata columns) by an id Spark computes from the file's name (a slice of its hash, distinct for the read's
  files) for reads of up to this many files; beyond, by a join on the path. (For n files a slice is distinct with
  odds exp(-n^2 / 2^24), which fall fast past a few thousand, and hashing the names costs the driver ~20 us each.)

Which reader reads a data file, per session:

- ``spark.sparkberg.read.spark-file-systems`` (empty): the schemes besides local files and HDFS whose Parquet
  files Spark's own reader reads, through the Hadoop file systems the cluster has for them (``s3a``, ``gs``,
  ``abfss``, EMR's ``s3``), when those reach the table's files with the same credentials (EMR, Dataproc,
  Databricks: an instance role, a cluster's service account). Files on an object store it does not name are read
  by sparkberg's Arrow reader on the executors with the table's FileIO, which a pip-installed PySpark (no Hadoop
  connector) needs and which carries a table's own or vended credentials. Spark's reader filters rows inside the
  scan and needs no Python worker; sparkberg's reads any store with the catalog's credentials.

Driver or cluster, per operation (module constants; each bound is where the driver's work, warm as in a fresh
process, stops costing less than the Spark job it replaces on the bench machine, set lower where the driver's one
thread meets a cluster of many cores; the figures are in docs/contributing/benchmarks.md, "Where the thresholds
and caches come from"):

- :data:`DRIVER_FILTER_VALUES` (16M): a DELETE tests its filter on the driver (``matched_on_driver``) when the
  files it may touch hold up to this many values of the columns the filter reads; a MERGE on the driver reads
  its target's keys under the same bound.
- :data:`DRIVER_POSITIONS_SHARE` (4): a DELETE, UPDATE or MERGE writes its delete files on the driver
  (``positions_on_driver``) when every row it could match, as a 16-byte (path hash, position) pair, fits
  ``spark.driver.maxResultSize`` divided by this.
- :data:`DRIVER_MERGE_ROWS` (1M): a MERGE of unconditional clauses on keys runs on the driver
  (``MergeBuilder._on_driver``) for a source of up to this many rows.
- :data:`DRIVER_REWRITE_BYTES` (16 MiB): a compaction rewrites a binpack file group of up to this many bytes on
  the driver (``_Run.on_driver``).

The fallbacks PySpark 3.5 needs where 4.x has an API (an Arrow relation made lazily, a scalar subquery from a
one-row relation) are in :mod:`sparkberg.spark.jvm`, named ``*_35``.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from sparkberg.errors import ValidationError
from sparkberg.spark.settings import session_conf
from sparkberg.format.metadata import TableMetadata

DRIVER_FILTER_VALUES = 16_000_000
DRIVER_POSITIONS_SHARE = 4
POSITION_BYTES = 16  # what a (path hash, position) pair costs a collect
DRIVER_MERGE_ROWS = 1_000_000
DRIVER_REWRITE_BYTES = 16 << 20

DATA_PLANNING_MODE = "read.data-planning-mode"
DELETE_PLANNING_MODE = "read.delete-planning-mode"
PLANNING_MODES = ("auto", "local", "distributed")
LOCAL_MAX_BYTES = "sparkberg.planning.local-max-bytes"
LOCAL_MAX_BYTES_DEFAULT = 48 * 1024 * 1024
LOCAL_MAX_FILES = "sparkberg.planning.local-max-files"
LOCAL_MAX_FILES_DEFAULT = 250_000
LOCAL_MAX_DELETE_ENTRIES = "sparkberg.planning.local-max-delete-entries"
LOCAL_MAX_DELETE_ENTRIES_DEFAULT = 50_000
SCOPED_PAIRS_MAX = "sparkberg.planning.scoped-pairs-max"
SCOPED_PAIRS_MAX_DEFAULT = 20_000_000
READ_CONF_PREFIX = "spark.sparkberg.read."


def planning_mode(metadata: TableMetadata, name: str, given: str | None = None) -> str:
    """The planning mode ``given``, else the table property ``name`` (:data:`DATA_PLANNING_MODE` or
    :data:`DELETE_PLANNING_MODE`), else ``auto``."""
    mode = given if given is not None else metadata.properties.get(name, "auto")
    if mode not in PLANNING_MODES:
        where = "planning" if given is not None else f"table property {name}"
        raise ValidationError(f"{where} must be one of {', '.join(PLANNING_MODES)}, got {mode!r}")
    return mode


def int_property(metadata: TableMetadata, name: str, default: int) -> int:
    """An integer table property, ``default`` when unset."""
    raw = metadata.properties.get(name)
    try:
        return default if raw is None else int(raw)
    except ValueError:
        raise ValidationError(f"table property {name} must be an integer, got {raw!r}") from None


@dataclass(frozen=True)
class ReadTuning:
    """A read's thresholds (see the module docstring), from the session's Spark conf."""

    driver_delete_rows_max: int = 1_000_000
    broadcast_delete_rows_max: int = 2_000_000
    bitmap_bytes_max: int = 64 << 20
    equality_positions_rows_max: int = 4_000_000
    scan_filter_slot_bits_max: int = 16
    name_ids_max_files: int = 8192
    spark_file_systems: frozenset[str] = frozenset()

    @staticmethod
    def key(name: str) -> str:
        """The Spark conf key of the field ``name``."""
        return READ_CONF_PREFIX + name.replace("_", "-")

    @classmethod
    def of(cls, spark) -> ReadTuning:
        """The session's settings (defaults where unset, or without a session)."""
        values = {}
        for f in fields(cls):
            raw = session_conf(spark, cls.key(f.name))
            if raw is None:
                continue
            if f.name == "spark_file_systems":  # (schemes, separated by commas)
                values[f.name] = frozenset(w.strip().lower() for w in raw.split(",") if w.strip())
                continue
            try:
                values[f.name] = int(raw)
            except ValueError:
                raise ValidationError(f"Spark conf {cls.key(f.name)} must be an integer, got {raw!r}") from None
        return cls(**values)
