"""Delete matching by the spec's rules ("Scan Planning"), no Spark: sequence numbers, partitions, global
equality deletes, deletion vectors replacing position deletes, referenced data files, file_path bounds."""
from sparkberg.planning.matching import DeleteIndex, in_path_bounds, path_bounds


def delete(path, content=1, fmt="parquet", ref=None, eq=None):
    return {"file_path": path, "content": content, "file_format": fmt, "equality_ids": eq,
            "referenced_data_file": ref, "content_offset": None, "content_size_in_bytes": None}


P = (("p", 1),)
Q = (("p", 2),)


def paths(index, spec, pkey, seq, path):
    return [d["file_path"] for d in index.for_file(spec, pkey, seq, path)]


def test_position_deletes_apply_to_data_with_sequence_number_at_most_theirs():
    index = DeleteIndex([(0, P, 5, delete("pos5"))], set())
    assert paths(index, 0, P, 4, "a") == ["pos5"]
    assert paths(index, 0, P, 5, "a") == ["pos5"]  # same commit: a position delete applies
    assert paths(index, 0, P, 6, "a") == []


def test_equality_deletes_apply_only_to_strictly_older_data():
    index = DeleteIndex([(0, P, 5, delete("eq5", content=2, eq=[1]))], set())
    assert paths(index, 0, P, 4, "a") == ["eq5"]
    assert paths(index, 0, P, 5, "a") == []  # rows added in the same commit as the delete are kept
    assert paths(index, 0, Q, 4, "a") == []  # another partition


def test_deletes_match_spec_and_partition():
    index = DeleteIndex([(0, P, 5, delete("pos")), (1, P, 5, delete("other-spec"))], set())
    assert paths(index, 0, P, 1, "a") == ["pos"]
    assert paths(index, 0, Q, 1, "a") == []


def test_equality_deletes_of_an_unpartitioned_spec_are_global():
    index = DeleteIndex([(0, (), 5, delete("global", content=2, eq=[1])), (0, (), 5, delete("pos-unpart"))], {0})
    assert paths(index, 1, P, 4, "a") == ["global"]  # any spec, any partition; position deletes are not global
    assert paths(index, 1, Q, 5, "a") == []


def test_referenced_data_file_limits_a_position_delete_file():
    index = DeleteIndex([(0, P, 5, delete("pos", ref="a"))], set())
    assert paths(index, 0, P, 1, "a") == ["pos"]
    assert paths(index, 0, P, 1, "b") == []


def test_deletion_vector_applies_to_its_file_and_replaces_position_deletes():
    index = DeleteIndex([(0, P, 5, delete("dv", fmt="puffin", ref="a")), (0, P, 5, delete("pos"))], set())
    assert paths(index, 0, P, 1, "a") == ["dv"]
    assert paths(index, 0, P, 1, "b") == ["pos"]
    assert paths(index, 0, P, 6, "a") == []  # data newer than the DV


def test_position_delete_files_are_pruned_by_their_file_path_bounds():
    lower, upper = path_bounds({2147483546: b"/t/data/b.parquet"}, {2147483546: b"/t/data/c.parquet"})
    assert (lower, upper) == ("/t/data/b.parquet", "/t/data/c.parquet")
    index = DeleteIndex([(0, P, 5, delete("pos"), (lower, upper))], set())
    assert paths(index, 0, P, 1, "/t/data/b.parquet") == ["pos"]
    assert paths(index, 0, P, 1, "/t/data/bb.parquet") == ["pos"]
    assert paths(index, 0, P, 1, "/t/data/a.parquet") == []
    assert paths(index, 0, P, 1, "/t/data/d.parquet") == []
    assert in_path_bounds("x", (None, None)) and in_path_bounds("x", None)
    # UTF-8 byte order is code point order
    assert in_path_bounds("/t/\u00e9", ("/t/e", "/t/\U0001F600"))
