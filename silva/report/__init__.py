"""Reports built from a run directory, read-only (`silva report ...`)."""
