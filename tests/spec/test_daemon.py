"""sparkberg's worker daemon moves the installed ``pyspark`` package's own ``pyspark.zip`` behind the package on the
path, and only that zip (a Spark distribution's may hold other code than any installed package); a process Spark's
worker factory started is a worker process to sparkberg's package, which then imports no PySpark before the path
moves."""
import os
import subprocess
import sys
import zipfile

import pyspark
import pytest

from sparkberg import zipimports
from sparkberg.daemon import prefer_installed_pyspark


@pytest.fixture(autouse=True)
def own_importer_cache(monkeypatch):
    # (the path is asked with PathFinder, which caches an importer for each entry it meets: the tests' zips stay
    # out of the process's cache)
    monkeypatch.setattr(sys, "path_importer_cache", dict(sys.path_importer_cache))


def installed(root):
    """A site-packages directory holding a pyspark package with its zip; returns (site, zip)."""
    lib = root / "site" / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (root / "site" / "pyspark" / "__init__.py").write_text("")
    with zipfile.ZipFile(lib / "pyspark.zip", "w") as z:
        z.writestr("pyspark/__init__.py", "")
    return str(root / "site"), str(lib / "pyspark.zip")


def test_the_installed_package_s_zip_moves_behind_it(tmp_path):
    site, zip_ = installed(tmp_path)
    path = ["", zip_, "/py4j.zip", "/usr/lib/python3.11", site]
    assert prefer_installed_pyspark(path)
    assert path == ["", "/py4j.zip", "/usr/lib/python3.11", site, zip_]
    no_zip = ["", "/usr/lib/python3.11", site]
    assert not prefer_installed_pyspark(no_zip) and no_zip == ["", "/usr/lib/python3.11", site]


def test_a_process_that_imported_pyspark_keeps_its_path(tmp_path, monkeypatch):
    # (this one has: moving the zip now would leave two copies of PySpark's modules within reach)
    site, zip_ = installed(tmp_path)
    monkeypatch.setattr(sys, "path", [zip_, site])
    assert "pyspark" in sys.modules and not prefer_installed_pyspark()
    assert sys.path == [zip_, site]
    monkeypatch.delitem(sys.modules, "pyspark")
    assert prefer_installed_pyspark() and sys.path == [site, zip_]


def test_a_symlinked_site_packages_is_the_same_directory(tmp_path):
    site, zip_ = installed(tmp_path)
    os.symlink(site, tmp_path / "lib64")
    path = [str(tmp_path / "lib64" / "pyspark" / "python" / "lib" / "pyspark.zip"), site]
    assert prefer_installed_pyspark(path) and path[-1].endswith("pyspark.zip")


@pytest.mark.parametrize("case", ["distribution", "package not on the path", "package before the zip", "no package",
                                  "another pyspark between"])
def test_any_other_zip_stays_first(tmp_path, case):
    site, zip_ = installed(tmp_path)
    if case == "distribution":  # ($SPARK_HOME/python/lib/pyspark.zip, and an installed package elsewhere)
        lib = tmp_path / "spark-home" / "python" / "lib"
        lib.mkdir(parents=True)
        zip_ = str(lib / "pyspark.zip")
        path = [zip_, site]
    elif case == "package not on the path":
        path = [zip_, "/usr/lib/python3.11"]
    elif case == "package before the zip":  # (PySpark is imported from the package already)
        path = [site, zip_]
    elif case == "no package":
        os.remove(os.path.join(site, "pyspark", "__init__.py"))
        path = [zip_, site]
    else:  # (a directory of the workers' PYTHONPATH with a PySpark of its own: behind the zip, ahead of the package)
        (tmp_path / "mine" / "pyspark").mkdir(parents=True)
        (tmp_path / "mine" / "pyspark" / "__init__.py").write_text("")
        path = [zip_, str(tmp_path / "mine"), site]
    before = list(path)
    assert not prefer_installed_pyspark(path)
    assert path == before


@pytest.mark.parametrize("variable", ["PYTHON_WORKER_FACTORY_SECRET", "PYTHON_WORKER_FACTORY_SOCK_DIR"])
def test_a_process_spark_s_worker_factory_started_is_a_worker_process_to_the_package(monkeypatch, variable):
    # (what Spark gives a daemon, whatever its module's name, to connect back with: TCP's secret, or the sockets')
    assert not zipimports.in_pyspark_worker()
    monkeypatch.setenv(variable, "x")
    assert zipimports.in_pyspark_worker()


def test_the_daemon_imports_pyspark_from_the_installed_package():
    # (started as Spark starts it: its path led by the installed package's zips, the factory's secret in its
    # environment; stdin closed, so it writes its port and stops at once. ``-v``: where each module came from)
    lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
    zips = [os.path.join(lib, f) for f in sorted(os.listdir(lib)) if f.endswith(".zip")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(zips), "PYTHON_WORKER_FACTORY_SECRET": "secret"}
    runs = {module: subprocess.run([sys.executable, "-v", "-m", module, "pyspark.worker"], stdin=subprocess.DEVNULL,
                                   capture_output=True, timeout=120, env=env)
            for module in ("pyspark.daemon", "sparkberg.daemon")}
    for module, run in runs.items():
        assert len(run.stdout) == 4, (module, run.stdout, run.stderr.decode()[-2000:])  # (the port it listens on)
    zipped = {m: [line for line in run.stderr.decode().splitlines()
                  if "pyspark.zip" in line and "import 'pyspark" in line] for m, run in runs.items()}
    assert zipped["pyspark.daemon"], "PySpark's own daemon imports PySpark from the zip"
    assert zipped["sparkberg.daemon"] == []
    cached = os.path.join(os.path.dirname(pyspark.__file__), "__pycache__", "__init__.")
    assert f"# code object from '{cached}" in runs["sparkberg.daemon"].stderr.decode()  # (the package's bytecode)
