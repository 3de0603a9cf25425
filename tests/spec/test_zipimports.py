"""The worker's zip importers: an archive's index is re-read by ``invalidate_caches`` only when the archive
changed, imports from it work as with ``zipimport.zipimporter``, and ``install`` swaps the cached importers and
the path hook (once)."""
import os
import sys
import zipfile
import zipimport

import pytest

from sparkberg import zipimports
from sparkberg.zipimports import StableZipImporter


def make_zip(path, modules):
    with zipfile.ZipFile(path, "w") as z:
        for name, src in modules.items():
            z.writestr(f"{name}.py", src)


def test_index_reread_only_when_the_archive_changes(tmp_path):
    archive = str(tmp_path / "mods.zip")
    make_zip(archive, {"alpha": "X = 1\n"})
    imp = StableZipImporter(archive)
    assert imp.find_spec("alpha") is not None and imp.find_spec("beta") is None
    reads = []
    real = zipimport._read_directory
    zipimport._read_directory = lambda a: reads.append(a) or real(a)
    try:
        imp.invalidate_caches()
        imp.invalidate_caches()
        assert reads == []                       # unchanged archive: nothing re-read
        make_zip(archive, {"alpha": "X = 1\n", "beta": "Y = 2\n"})
        st = os.stat(archive)
        os.utime(archive, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        imp.invalidate_caches()
        assert reads == [archive]                # changed: re-read once, and the new module is found
        assert imp.find_spec("beta") is not None
        imp.invalidate_caches()
        assert reads == [archive]
    finally:
        zipimport._read_directory = real


def test_install_swaps_cached_importers_and_the_hook(tmp_path, monkeypatch):
    archive = str(tmp_path / "pkgs.zip")
    make_zip(archive, {"sbzip_probe": "VALUE = 42\n"})
    monkeypatch.setattr(sys, "path_hooks", list(sys.path_hooks))
    monkeypatch.setattr(sys, "path_importer_cache", dict(sys.path_importer_cache))
    monkeypatch.setattr(sys, "path", [archive] + sys.path)
    sys.path_importer_cache[archive] = zipimport.zipimporter(archive)
    assert zipimports.install() == 1
    assert type(sys.path_importer_cache[archive]) is StableZipImporter
    assert StableZipImporter in sys.path_hooks and zipimport.zipimporter not in sys.path_hooks
    assert zipimports.install() == 0             # idempotent
    import importlib
    importlib.invalidate_caches()
    mod = importlib.import_module("sbzip_probe")
    assert mod.VALUE == 42
    sys.modules.pop("sbzip_probe", None)


def test_not_installed_outside_a_worker(monkeypatch):
    monkeypatch.setattr(sys, "path_hooks", list(sys.path_hooks))
    assert not zipimports.in_pyspark_worker()
    zipimports.install_in_worker()
    assert StableZipImporter not in sys.path_hooks


def test_a_missing_archive_is_reread_as_zipimport_does(tmp_path):
    archive = str(tmp_path / "gone.zip")
    make_zip(archive, {"gamma": "Z = 3\n"})
    imp = StableZipImporter(archive)
    os.remove(archive)
    imp.invalidate_caches()                      # the archive vanished: defer to zipimporter (empties its index)
    assert imp.find_spec("gamma") is None
    with pytest.raises(zipimport.ZipImportError):
        StableZipImporter(archive)
