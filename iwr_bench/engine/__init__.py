"""Scheduling, limits, the run store and the event stream."""
