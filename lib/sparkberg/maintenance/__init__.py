"""Table maintenance run as Spark jobs: snapshot expiry (:mod:`sparkberg.maintenance.expire`)."""
