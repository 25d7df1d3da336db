"""A rate of finished work and the time left at it, measured on a moving window (pure: the clock is
injected, so tests drive it by hand)."""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable

MIN_SPAN_S = 1e-3
"""Shortest busy time a finished batch counts for (one can end within the clock's resolution)."""
MAX_SPANS = 256
"""Finished batches a meter keeps at most."""


def busy_seconds(spans: Iterable[tuple[float, float]]) -> float:
    """Length of the union of ``(start, end)`` spans: the time at least one of them ran."""
    total, reached = 0.0, -math.inf
    for start, end in sorted(spans):
        if end > reached:
            total += end - max(start, reached)
            reached = end
    return total


class RateMeter:
    """Images per second of the work that finished recently (pure: the clock is injected).

    Each finished batch is a span: its start, its end (the clock when it is recorded) and its
    images. The rate is the images of the spans that ended in the last ``window_s`` (and always
    of the latest ``keep``) over the time at least one of them ran, so batches that several
    workers run side by side add up, and time the stage sat idle waiting for replays does not
    count against it.
    """

    def __init__(
        self, *, window_s: float = 300.0, keep: int = 3, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.window_s = window_s
        self.keep = keep
        self.clock = clock
        self._spans: deque[tuple[float, float, int]] = deque()

    def record(self, images: int, started: float, excluded: float = 0.0) -> None:
        """A batch that began at ``started`` (on :attr:`clock`) finished now, measuring ``images``;
        ``excluded`` seconds of it were not spent on them (loading a model)."""
        if images <= 0:
            return
        ended = max(started, self.clock())
        self._spans.append((min(ended, started + max(0.0, excluded)), ended, images))
        self._prune()

    def rate(self) -> float | None:
        """Images per second, or None before any batch finished."""
        self._prune()
        if not self._spans:
            return None
        busy = busy_seconds((start, end) for start, end, _ in self._spans)
        return sum(n for _, _, n in self._spans) / max(busy, MIN_SPAN_S)

    def eta(self, left: int) -> float | None:
        """Seconds until ``left`` images are done at :meth:`rate` (0 for none; None: unknown)."""
        if left <= 0:
            return 0.0
        rate = self.rate()
        return None if rate is None else left / rate

    def _prune(self) -> None:
        horizon = self.clock() - self.window_s
        while len(self._spans) > self.keep and (self._spans[0][1] < horizon or len(self._spans) > MAX_SPANS):
            self._spans.popleft()
