"""Generator and judge agents."""
