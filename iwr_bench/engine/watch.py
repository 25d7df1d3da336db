"""The watchdog: judging jobs under its eye, their deadlines, and the ones it stops as ``stalled``."""

from __future__ import annotations

import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field

import anyio

from iwr_bench.agents.events import ActionStarted, AgentEvent
from iwr_bench.engine.deadlines import Progress, tracking


@dataclass
class JobWatch:
    """A running judging job as the watchdog sees it."""

    progress: Progress
    """Its last sign of life and where it is."""
    scope: anyio.CancelScope
    """Cancelled at the job's deadline, or by the watchdog."""
    stalled: bool = False
    """The watchdog stopped it."""


@dataclass
class Watchdog:
    """Fails judging jobs that show no sign of life for ``stall_after_s`` (outside queues and
    steps with deadlines of their own)."""

    stall_after_s: float
    watched: dict[str, JobWatch] = field(default_factory=dict[str, JobWatch])

    async def run(self) -> None:
        """Check the watched jobs about four times per ``stall_after_s`` (at most every second), forever."""
        while True:
            await anyio.sleep(min(1.0, self.stall_after_s / 4))
            now = time.monotonic()
            for watch in list(self.watched.values()):
                if not watch.stalled and watch.progress.stalled(now, self.stall_after_s):
                    watch.stalled = True
                    watch.scope.cancel()

    @contextmanager
    def watching(self, jid: str) -> Generator[JobWatch]:
        """Run a judging job's body under watch; its deadline is set once it has its browser page."""
        progress = Progress()
        with anyio.CancelScope() as scope, tracking(progress):
            watch = JobWatch(progress, scope)
            self.watched[jid] = watch
            try:
                yield watch
            finally:
                del self.watched[jid]

    def beat(self, jid: str, event: AgentEvent) -> None:
        """A sign of life from a job's agent (an action's start also names the action)."""
        watch = self.watched.get(jid)
        if watch is not None:
            watch.progress.beat(event.label() if isinstance(event, ActionStarted) else None)
