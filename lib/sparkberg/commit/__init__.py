"""Driver-side committers: snapshot producers, conflict handling, cleanup."""
