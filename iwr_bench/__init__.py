"""IWR-Bench engine."""
