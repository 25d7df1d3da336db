"""OCR text similarity as the protocol defines it."""

from __future__ import annotations

from collections.abc import Iterable

from rapidfuzz.distance import Levenshtein


def join_segments(segments: Iterable[str]) -> str:
    """Lower-case OCR segments joined with single spaces."""
    return " ".join(s.strip().lower() for s in segments if s.strip())


def text_similarity(a: str, b: str) -> float:
    """``1 - Levenshtein(a, b) / max(len a, len b)``; both empty is 1, one empty is 0."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    return 1.0 - Levenshtein.distance(a, b) / max(len(a), len(b))
