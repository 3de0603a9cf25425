"""Writes a class-data-sharing archive (the JDK's dynamic CDS) of the classes a Spark driver loads, for the JVMs
`make test` and `make interop` start: each of them then maps Spark's classes parsed and verified from the archive instead of loading
them from its jars again. The classes are those of one run of the demo job (a session, SQL, Parquet, Python
workers, every kind of write), in a JVM started with the options the tests' JVMs get.

    python tests/jvm_archive.py ARCHIVE [JVM option ...]

A JVM whose classpath or JDK differs from the archive's (another Spark, extra driver class paths) checks it,
finds it not its own and loads its classes as without it. If the JVM cannot write an archive (a JDK without its
base archive), ARCHIVE is left empty and the tests' JVMs start without one.
"""
import os
import sys
import tempfile


def main(archive: str, jvm_options: list[str]) -> int:
    partial = archive + ".partial"
    for path in (archive, partial):
        if os.path.exists(path):
            os.remove(path)
    os.environ["SPARK_SUBMIT_OPTS"] = " ".join(
        [*jvm_options, f"-XX:ArchiveClassesAtExit={os.path.abspath(partial)}", "-Xlog:cds*=off"])
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    from pyspark import SparkContext

    from sparkberg.jobs.demo import main as demo

    with tempfile.TemporaryDirectory() as scratch, open(os.devnull, "w") as quiet:
        # (the demo's output and the JVM's log are not wanted here; a traceback of the demo's is)
        stdout, saved_stderr, sys.stdout = sys.stdout, os.dup(2), quiet
        os.dup2(quiet.fileno(), 2)
        try:
            demo(["--warehouse", os.path.join(scratch, "warehouse")])
        finally:
            sys.stdout = stdout
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
        # the archive is written as the JVM exits, which it does when its stdin closes (PySpark's gateway)
        jvm = SparkContext._gateway.proc
        jvm.stdin.close()
        rc = jvm.wait(timeout=300)
    if rc == 0 and os.path.exists(partial) and os.path.getsize(partial) > 0:
        os.replace(partial, archive)
        print(f"{archive}: {os.path.getsize(archive) >> 20} MiB")
    else:
        open(archive, "w").close()
        print(f"{archive}: none written (JVM exit {rc}); the tests' JVMs start without one")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
