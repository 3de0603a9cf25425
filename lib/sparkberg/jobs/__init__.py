"""Entry points for scheduled Spark jobs and the command line: ``ingest``, ``health``, ``cli`` and ``demo``.

Each is a module with ``main(argv) -> int``, runnable as ``python -m sparkberg.jobs.<name>``, as a console
script (``sparkberg``, ``sparkberg-ingest``, ``sparkberg-health``, ``sparkberg-demo``), or with
``spark-submit jobs/<name>.py`` from the repository. Exit codes (:mod:`sparkberg.jobs.common`) tell a
scheduler what went wrong.
"""
