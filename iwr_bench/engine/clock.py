"""The work clock: how long each stage of the pipeline had work in progress, and the engine's overhead.

A stage's busy time is the wall time during which at least one piece of that stage's work was in
progress (two pages replaying at once count once), so the sum of the stages' busy times over the
wall time says how much they overlapped. The engine's overhead is the wall time during which no
stage had work in progress.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum


class StageName(StrEnum):
    """The stages a (task, model) pair flows through, in order."""

    generate = "generate"
    """The model writes the page (model-call limits)."""
    replay = "replay"
    """The recorded actions are replayed on the page (browser pages limit)."""
    metrics = "metrics"
    """OCR and image similarity of the scored pairs (metric workers limit)."""
    rubric = "rubric"
    """The rubric judge's HVS (judge calls limit)."""
    record = "record"
    """eval.json, evidence rows and scores written."""


@dataclass
class _Span:
    active: int = 0
    since: float = 0.0
    busy: float = 0.0


@dataclass
class WorkClock:
    """Busy time per stage (union over concurrent work) and the time no stage was busy."""

    _stages: dict[StageName, _Span] = field(default_factory=dict[StageName, _Span])
    _any: _Span = field(default_factory=_Span)

    @contextmanager
    def work(self, stage: StageName) -> Generator[None]:
        """Mark a stretch of ``stage`` work."""
        spans = (self._stages.setdefault(stage, _Span()), self._any)
        now = time.perf_counter()
        for span in spans:
            if span.active == 0:
                span.since = now
            span.active += 1
        try:
            yield
        finally:
            end = time.perf_counter()
            for span in spans:
                span.active -= 1
                if span.active == 0:
                    span.busy += end - span.since

    def _busy(self, span: _Span, now: float) -> float:
        return span.busy + (now - span.since if span.active else 0.0)

    def busy(self) -> dict[str, float]:
        """Seconds each stage had work in progress, by stage name (stages in pipeline order)."""
        now = time.perf_counter()
        return {str(s): round(self._busy(self._stages[s], now), 3) for s in StageName if s in self._stages}

    @property
    def covered(self) -> float:
        """Seconds during which some stage had work in progress."""
        return self._busy(self._any, time.perf_counter())
