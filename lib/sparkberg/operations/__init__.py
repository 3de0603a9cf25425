"""What a write, a row-level change, a merge or an import changes, planned and written by Spark: each returns
the change as a value (:class:`~sparkberg.operations.changes.Changes`: files added and removed, the metadata updates
it makes with them, what it requires of the base it was planned on and how it checks a newer one) and never commits
it; the table hands it to the committer (:mod:`sparkberg.commit`)."""
