"""Tasks to rows: field-id column mapping, deletes applied, metadata columns."""
