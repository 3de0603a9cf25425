"""The instruction set of the compiled Avro decoder: what :mod:`sparkberg.avro.compiled` compiles a writer
schema into and :mod:`sparkberg.avro.kernels` runs (shared by both, so neither imports the other for it)."""

# instructions: (op, a, b, slot); slot -1: the value is read and not kept
(OP_NULL, OP_BOOLEAN, OP_INT, OP_FLOAT, OP_DOUBLE, OP_BYTES, OP_FIXED, OP_UNION, OP_JUMP, OP_ARRAY, OP_MAP,
 OP_ITEM_END, OP_SKIP_ARRAY, OP_KEYED_ARRAY, OP_MARK) = range(15)
# OP_SKIP_ARRAY steps over an array or map nothing is kept of whose items are flat (primitives, fixed, enums, and
# records of those: Iceberg's metrics maps), in one loop: its items' shape is ``b`` entries of the targets from
# ``a`` on, each a value's width in bytes, or one of these
SKIP_VARINT, SKIP_LENGTH = -1, -2  # (int, long, enum; bytes, string)
# OP_KEYED_ARRAY reads an array of (int key, flat value) records (Iceberg's metrics maps) of which only the items
# with some keys are kept (a scan's filter reads the metrics of one or two of a table's columns): every item is
# stepped over and those kept stored as the interpreter stores an array's items. ``a``: the targets from which
# the key's slot, the value's slot, the value's shape (SKIP_VARINT for an integer, SKIP_LENGTH or a width for
# bytes) and the ``b`` keys follow; the slot is the array's
# OP_MARK reads nothing and stores the position it is at (a byte offset into the data) in its int slot: where a
# field of a record starts, so a caller can copy the record's encoded bytes (the manifest rewrite)
MAX_DEPTH = 32  # arrays nested in arrays; manifests nest one level
