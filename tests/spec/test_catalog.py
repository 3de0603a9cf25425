"""The file-system catalog (HadoopCatalog layout) without Spark: layout, identifiers, versions, races."""
import json
import os
import threading

import pytest

from sparkberg.catalog.filesystem import FileSystemCatalog
from sparkberg.errors import (
    CommitFailedException, InvalidIdentifierError, NamespaceAlreadyExistsError, NamespaceNotEmptyError,
    NoSuchNamespaceError, NoSuchTableError, TableAlreadyExistsError,
)
from sparkberg.format import types as T
from sparkberg.format import updates as U
from commits import pending

SCHEMA = T.Schema([T.NestedField(1, "id", T.LONG, True)])


@pytest.fixture
def cat(tmp_path):
    return FileSystemCatalog("file://" + str(tmp_path / "wh"))


def make(cat, ident="db.t", version=2):
    loc = cat.default_table_location(ident)
    return cat.create(ident, U.new_table_metadata(SCHEMA, loc, format_version=version))


def test_layout_matches_hadoop_catalog(cat, tmp_path):
    make(cat, "a.b.t")
    mdir = tmp_path / "wh" / "a" / "b" / "t" / "metadata"
    assert (mdir / "v1.metadata.json").exists()
    assert (mdir / "version-hint.text").read_text() == "1"
    assert json.loads((mdir / "v1.metadata.json").read_text())["location"].endswith("/wh/a/b/t")
    assert cat.list_namespaces() == [("a",)]
    assert cat.list_namespaces("a") == [("a", "b")]
    assert [str(i) for i in cat.list_tables("a.b")] == ["a.b.t"]
    assert cat.table_exists("a.b.t") and not cat.table_exists("a.b.u")


def test_namespaces(cat):
    cat.create_namespace("ns")
    assert cat.namespace_exists("ns")
    with pytest.raises(NamespaceAlreadyExistsError):
        cat.create_namespace("ns")
    make(cat, "ns.t")
    with pytest.raises(NamespaceNotEmptyError):
        cat.drop_namespace("ns")
    with pytest.raises(NoSuchNamespaceError):
        cat.list_tables("nope")
    cat.drop("ns.t", purge=True)
    cat.drop_namespace("ns")
    assert not cat.namespace_exists("ns")


@pytest.mark.parametrize("ident", ["t", "db..t", "../t", "db./t", "db.t/..", "db.a\\b", "..", "db. ", "db.t\x00"])
def test_path_tricks_are_rejected(cat, ident):
    with pytest.raises(InvalidIdentifierError):
        make(cat, ident)


def test_commits_advance_versions_and_log(cat):
    ident, loc, meta = make(cat)
    new = U.apply_all([U.SetProperties({"a": "1"})], meta)
    loc2, written = cat.commit(ident, loc, pending(meta, new))
    assert loc2.endswith("/v2.metadata.json")
    assert written.metadata_log[-1].metadata_file == loc
    _, current, loaded = cat.load("db.t")
    assert current == loc2 and loaded.properties["a"] == "1"
    with pytest.raises(CommitFailedException, match="changed"):
        cat.commit(ident, loc, pending(meta, U.apply_all([U.SetProperties({"b": "1"})], meta)))
    assert cat.load("db.t")[2] == loaded  # the failed commit changed nothing


def test_missing_hint_finds_newest_version(cat, tmp_path):
    ident, loc, meta = make(cat)
    cat.commit(ident, loc, pending(meta, U.apply_all([U.SetProperties({"a": "1"})], meta)))
    hint = tmp_path / "wh" / "db" / "t" / "metadata" / "version-hint.text"
    hint.write_text("1")  # stale hint, as after a writer crashed between file and hint
    assert cat.load("db.t")[1].endswith("v2.metadata.json")
    hint.unlink()
    assert cat.load("db.t")[1].endswith("v2.metadata.json")


def test_racing_writers_one_wins(cat):
    ident, loc, meta = make(cat)
    results = []
    barrier = threading.Barrier(8)

    def writer(i):
        new = U.apply_all([U.SetProperties({"writer": str(i)})], meta)
        barrier.wait()
        try:
            cat.commit(ident, loc, pending(meta, new))
            results.append(("ok", i))
        except CommitFailedException:
            results.append(("lost", i))

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for r, i in results if r == "ok"]
    assert len(winners) == 1 and len(results) == 8
    _, current, m = cat.load("db.t")
    assert current.endswith("v2.metadata.json") and m.properties["writer"] == str(winners[0])
    files = os.listdir(os.path.dirname(current[len("file://"):]))
    assert sorted(f for f in files if f.endswith(".json")) == ["v1.metadata.json", "v2.metadata.json"]
    assert not [f for f in files if f.endswith(".tmp")]


def test_create_twice_and_missing(cat):
    make(cat)
    with pytest.raises(TableAlreadyExistsError):
        make(cat)
    with pytest.raises(NoSuchTableError):
        cat.load("db.none")


def test_previous_versions_max_and_delete_after_commit(cat, tmp_path):
    ident, loc, meta = make(cat)
    meta2 = U.apply_all([U.SetProperties({"write.metadata.previous-versions-max": "2",
                                          "write.metadata.delete-after-commit.enabled": "true"})], meta)
    loc, meta = cat.commit(ident, loc, pending(meta, meta2))
    for i in range(4):
        nxt = U.apply_all([U.SetProperties({"i": str(i)})], meta)
        loc, meta = cat.commit(ident, loc, pending(meta, nxt))
    assert len(meta.metadata_log) == 2
    names = sorted(os.listdir(tmp_path / "wh" / "db" / "t" / "metadata"))
    assert names == ["v4.metadata.json", "v5.metadata.json", "v6.metadata.json", "version-hint.text"]


def test_drop_without_purge_keeps_data(cat, tmp_path):
    make(cat)
    data = tmp_path / "wh" / "db" / "t" / "data"
    data.mkdir()
    (data / "f.parquet").write_bytes(b"x")
    cat.drop("db.t")
    assert not cat.table_exists("db.t") and (data / "f.parquet").exists()
