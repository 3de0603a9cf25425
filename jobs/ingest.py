"""spark-submit entry point: `spark-submit --properties-file spark-defaults.conf jobs/ingest.py --help`
(the job is :mod:`sparkberg.jobs.ingest`; also `python -m sparkberg.jobs.ingest`)."""
import sys

from sparkberg.jobs.ingest import main

if __name__ == "__main__":
    sys.exit(main())
