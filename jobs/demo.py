"""spark-submit entry point: `spark-submit --properties-file spark-defaults.conf jobs/demo.py --help`
(the job is :mod:`sparkberg.jobs.demo`; also `python -m sparkberg.jobs.demo`)."""
import sys

from sparkberg.jobs.demo import main

if __name__ == "__main__":
    sys.exit(main())
