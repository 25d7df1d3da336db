"""The metric stage's progress in words: rates, counts, ETA and the one-line summary that the plain
progress lines and the terminal UI show."""

from __future__ import annotations

import math

from iwr_bench.engine.events import MetricProgress


def rate_text(rate: float | None) -> str:
    """``3.9 s/image`` below one image a second, ``12.1 images/s`` from one up, else ``rate unknown``."""
    if rate is None or rate <= 0:
        return "rate unknown"
    return f"{rate:.1f} images/s" if rate >= 1 else f"{1 / rate:.1f} s/image"


def clock_text(seconds: float) -> str:
    """``h:mm:ss``."""
    whole = max(0, math.ceil(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def eta_at(event: MetricProgress, now: float | None = None) -> float | None:
    """The event's ETA, counted down to ``now`` (Unix time; None: as published), never below 0."""
    if event.eta_s is None:
        return None
    if now is None:
        return event.eta_s
    return max(0.0, event.eta_s - max(0.0, now - event.time))


def eta_text(event: MetricProgress, now: float | None = None) -> str:
    """``ETA 0:01:53`` (whole seconds, rounded up), ``ETA unknown until a batch finishes``, or
    ``ETA soon`` once counting down to ``now`` has used it up while images are left."""
    eta = eta_at(event, now)
    if eta is None:
        return "ETA unknown until a batch finishes"
    if now is not None and eta <= 0 and event.left > 0:
        return "ETA soon"
    return f"ETA {clock_text(eta)}"


def counts_text(event: MetricProgress) -> str:
    """``23/52 images done (9 cached or identical), 29 left (8 running)``."""
    text = f"{event.done}/{event.total} images done"
    if event.skipped:
        text += f" ({event.skipped} cached or identical)"
    text += f", {event.left} left"
    if event.running:
        text += f" ({event.running} running)"
    if event.failed:
        text += f", {event.failed} failed"
    return text


def rates_text(event: MetricProgress) -> str:
    """``ocr 3.9 s/image, dino 11.2 images/s`` (the designs that had work)."""
    shown = [d for d in event.designs if d.done or d.left or d.failed]
    return ", ".join(f"{d.metric} {rate_text(d.rate)}" for d in shown)


def summary(event: MetricProgress, now: float | None = None) -> str:
    """The metric stage in one line: counts, each design's rate, and (with images left) the ETA."""
    parts = [counts_text(event)]
    rates = rates_text(event)
    if rates:
        parts.append(rates)
    if event.left:
        parts.append(eta_text(event, now))
    return "; ".join(parts)
