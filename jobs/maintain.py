"""spark-submit entry point: `spark-submit --properties-file spark-defaults.conf jobs/maintain.py --help`
(the job is :mod:`sparkberg.jobs.maintain`; also `python -m sparkberg.jobs.maintain`)."""
import sys

from sparkberg.jobs.maintain import main

if __name__ == "__main__":
    sys.exit(main())
