"""spark-submit entry point: `spark-submit --properties-file spark-defaults.conf jobs/health.py --help`
(the job is :mod:`sparkberg.jobs.health`; also `python -m sparkberg.jobs.health`)."""
import sys

from sparkberg.jobs.health import main

if __name__ == "__main__":
    sys.exit(main())
