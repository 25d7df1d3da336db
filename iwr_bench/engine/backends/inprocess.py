"""The default backend: both moving stages in the engine's own process (no Ray needed)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from iwr_bench.agents.judge.records import Replay
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.backends.base import ExecutorFactory, Timer
from iwr_bench.engine.config import RunConfig
from iwr_bench.engine.deadlines import Background
from iwr_bench.engine.limits import Limits
from iwr_bench.engine.setup import build_metrics
from iwr_bench.metrics import models
from iwr_bench.protocol import EvalProtocol
from iwr_bench.scoring.evaluation import Measured, VisualMetrics, measure
from iwr_bench.tools.pool import PagePool, PoolConfig


class InProcessBackend:
    """One :class:`PagePool` for the run's replays; metrics on this process's worker threads."""

    name = "in-process"

    def __init__(self) -> None:
        self._pool: PagePool | None = None

    def connect(self) -> None:
        """Nothing to reach."""

    def describe(self) -> dict[str, Any]:
        """Just the kind."""
        return {"kind": self.name}

    def metrics(self, cfg: RunConfig, limits: Limits, timer: Timer, background: Background) -> VisualMetrics:
        """The run's metrics, computed here."""
        return build_metrics(cfg, limits, timer, background)

    @asynccontextmanager
    async def open(self, pool: PoolConfig) -> AsyncGenerator[None]:
        """Start the browsers for the time of a run."""
        models.browsers_done(False)  # metrics leave half the cores to the browsers
        async with PagePool(pool) as opened:
            self._pool = opened
            try:
                yield
            finally:
                self._pool = None
                models.browsers_done(False)

    def replays_over(self) -> None:
        """No replay is left in this run: the metric models may use the browsers' cores too."""
        models.browsers_done()

    async def replay(
        self, executor: ExecutorFactory, task: Task, page: Path | None, evidence: Path
    ) -> Replay:
        """Replay on this process's browsers."""
        assert self._pool is not None, "replay outside open()"
        return await executor(self._pool).replay(task, page, evidence)

    async def measure(
        self, task: Task, replay: Replay, evidence: Path, metrics: VisualMetrics, protocol: EvalProtocol
    ) -> Measured:
        """The metric stage as the evaluator defines it."""
        return await measure(task, replay, evidence, metrics, protocol)
