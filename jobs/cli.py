"""spark-submit entry point: `spark-submit --properties-file spark-defaults.conf jobs/cli.py --help`
(the job is :mod:`sparkberg.jobs.cli`; also `python -m sparkberg.jobs.cli`)."""
import sys

from sparkberg.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main())
