"""spark-submit entry point: `spark-submit --properties-file spark-defaults.conf jobs/sql.py --help`
(the job is :mod:`sparkberg.jobs.sql`; also `python -m sparkberg.jobs.sql`)."""
import sys

from sparkberg.jobs.sql import main

if __name__ == "__main__":
    sys.exit(main())
