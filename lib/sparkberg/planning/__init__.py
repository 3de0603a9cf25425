"""Scan planning as DataFrame transformations: manifests, pruning, delete matching, row lineage."""
