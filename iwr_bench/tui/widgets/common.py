"""Small formatting helpers the views share."""

from __future__ import annotations


def pct(value: float | None) -> str:
    """A score (already x100) with two decimals, or ``-``."""
    return "-" if value is None else f"{value:.2f}"


def bar(done: int, total: int, width: int = 12) -> str:
    """A progress bar of ``width`` blocks."""
    filled = 0 if total <= 0 else round(width * min(done, total) / total)
    return "█" * filled + "░" * (width - filled)


def duration(seconds: float | None) -> str:
    """``h:mm:ss`` (or ``-``)."""
    if seconds is None:
        return "-"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def counts(values: dict[str, int]) -> str:
    """``a 1, b 2`` (or ``-``)."""
    return ", ".join(f"{k} {v}" for k, v in sorted(values.items())) or "-"
