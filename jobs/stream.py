"""spark-submit entry point: `spark-submit --properties-file spark-defaults.conf jobs/stream.py --help`
(the job is :mod:`sparkberg.jobs.stream`; also `python -m sparkberg.jobs.stream`)."""
import sys

from sparkberg.jobs.stream import main

if __name__ == "__main__":
    sys.exit(main())
