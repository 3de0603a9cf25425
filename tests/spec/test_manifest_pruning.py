"""Manifest pruning by partition summaries, a spec at a time over a manifest list's columns (compiled decoder),
keeps exactly the manifests Iceberg's manifest evaluator keeps one by one (``manifest_may_match``): summaries
absent or shorter than the spec, nulls, NaNs, absent and unreadable bounds, every predicate on integral fields;
fields of other types go manifest by manifest. The manifests kept come out in manifest list order."""
import numpy as np
from hypothesis import given, settings, strategies as st

from sparkberg.avro.columnar import ManifestListColumns
from sparkberg.avro.decode import manifest_list
from sparkberg.avro.manifest import write_manifest_list
from sparkberg.format.manifests import FieldSummary, ManifestFile
from sparkberg.expressions.evaluators import manifest_mask, manifest_may_match
from sparkberg.expressions.predicates import And, BoundPredicate, Not, Or
from sparkberg.planning.scan import _partition_filters, prune_manifests
from sparkberg.expressions.predicates import bind
from sparkberg.expressions.sql import translate_filter
from sparkberg.format import types as T
from sparkberg.format import updates as U
from sparkberg.format.partitioning import PartitionField, PartitionSpec
from sparkberg.format.transforms import IdentityTransform

SCHEMA = T.Schema([T.NestedField(1, "i", T.INT), T.NestedField(2, "l", T.LONG), T.NestedField(3, "d", T.DATE),
                   T.NestedField(4, "s", T.STRING)])
SPEC = PartitionSpec(0, [PartitionField(1, 1000, IdentityTransform(), "i"),
                         PartitionField(2, 1001, IdentityTransform(), "l"),
                         PartitionField(3, 1002, IdentityTransform(), "d")])
STRINGS = PartitionSpec(1, [PartitionField(4, 1003, IdentityTransform(), "s")])
METADATA = U.new_table_metadata(SCHEMA, "file:///wh/t", SPEC, format_version=2, fresh_ids=False)
PTYPE = SPEC.partition_type(SCHEMA)
FIELD_TYPES = {1000: T.INT, 1001: T.LONG, 1002: T.DATE}

bound = st.none() | st.integers(-6, 6).map(lambda v: v.to_bytes(8, "little", signed=True)) | \
    st.integers(-6, 6).map(lambda v: v.to_bytes(4, "little", signed=True)) | st.just(b"\x01\x02\x03")
summary = st.builds(FieldSummary, st.booleans(), st.sampled_from([None, False, True]), bound, bound)
summaries = st.none() | st.lists(summary, max_size=3).map(tuple)


def leaves():
    fids = st.sampled_from([1000, 1001, 1002])
    unary = st.builds(lambda op, f: BoundPredicate(op, f, FIELD_TYPES[f]),
                      st.sampled_from(["is_null", "not_null", "is_nan", "not_nan"]), fids)
    literal = st.builds(lambda op, f, v: BoundPredicate(op, f, FIELD_TYPES[f], v),
                        st.sampled_from(["lt", "lt_eq", "gt", "gt_eq", "eq", "not_eq"]), fids, st.integers(-5, 5))
    sets = st.builds(lambda op, f, vs: BoundPredicate(op, f, FIELD_TYPES[f], tuple(vs)),
                     st.sampled_from(["in", "not_in"]), fids, st.lists(st.integers(-5, 5), min_size=1, max_size=3))
    return unary | literal | sets


exprs = st.recursive(leaves(), lambda c: st.builds(And, c, c) | st.builds(Or, c, c) | st.builds(Not, c), max_leaves=4)


def _listing(parts, compiled: bool = True) -> ManifestListColumns:
    """A manifest list's columns, decoded by compiled code (lists of any size) or by the reference decoder."""
    from sparkberg.avro import decode
    saved, decode.FAST_LIST_MIN_BYTES = decode.FAST_LIST_MIN_BYTES, 0 if compiled else 2 ** 40
    try:
        return _read_listing(parts)
    finally:
        decode.FAST_LIST_MIN_BYTES = saved


def _read_listing(parts) -> ManifestListColumns:
    manifests = [ManifestFile(f"s3://b/m{k}.avro", 100 + k, 0, 7, 0, 3, 3, 1, 0, 0, 10, 0, 0, p)
                 for k, p in enumerate(parts)]
    listing = manifest_list(write_manifest_list(manifests, format_version=2, snapshot_id=7,
                                                parent_snapshot_id=None, sequence_number=3))
    assert listing.manifests() == manifests
    return listing


@settings(max_examples=300, deadline=None)
@given(exprs, st.lists(summaries, min_size=1, max_size=6))
def test_vectorized_manifest_pruning_equals_the_scalar_evaluator(pred, parts):
    rows = np.arange(len(parts))
    listing = _listing(parts)  # (the compiled decoder's columns: the reference decoder's objects are pruned as such)
    got = manifest_mask(pred, PTYPE, len(parts), lambda k: listing.summaries(rows, k))
    assert got is not None and list(got) == [manifest_may_match(pred, PTYPE, p) for p in parts]


@settings(max_examples=50, deadline=None)
@given(st.lists(summaries, min_size=1, max_size=8), st.sampled_from(
    ["i > 2", "l = 1 OR d IS NULL", "i IN (1, 3) AND l < 0", "i IS NOT NULL"]))
def test_the_manifests_kept_are_those_of_the_scalar_evaluator_in_order(parts, text):
    filters = _partition_filters(METADATA, bind(translate_filter(text, SCHEMA), SCHEMA))
    for listing in (_listing(parts), _listing(parts, compiled=False)):
        got = prune_manifests(METADATA, listing, filters)
        assert got == [m for m in listing.manifests() if manifest_may_match(filters[0], PTYPE, m.partitions)]


def test_fields_of_other_types_are_left_to_the_scalar_evaluator():
    ptype = STRINGS.partition_type(SCHEMA)
    assert manifest_mask(BoundPredicate("eq", 1003, T.STRING, "a"), ptype, 1, lambda k: None) is None
    metadata = U.new_table_metadata(SCHEMA, "file:///wh/t", PartitionSpec(0, STRINGS.fields), format_version=2,
                                    fresh_ids=False)
    listing = _listing([(FieldSummary(False, None, b"a", b"c"),), (FieldSummary(False, None, b"d", b"f"),), None])
    filters = _partition_filters(metadata, bind(translate_filter("s = 'b'", SCHEMA), SCHEMA))
    assert [m.manifest_path for m in prune_manifests(metadata, listing, filters)] == ["s3://b/m0.avro",
                                                                                       "s3://b/m2.avro"]


def test_a_subset_of_manifests_comes_out_in_the_order_asked():
    listing = _listing([None, (FieldSummary(True, None, b"\x01\x00\x00\x00", b"\x02\x00\x00\x00"),), ()])
    assert [m.manifest_path for m in listing.manifests([2, 0])] == ["s3://b/m2.avro", "s3://b/m0.avro"]
    assert listing.manifests([1])[0].partitions == (FieldSummary(True, None, b"\x01\x00\x00\x00",
                                                                 b"\x02\x00\x00\x00"),)
