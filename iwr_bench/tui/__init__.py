"""Textual terminal UI."""
