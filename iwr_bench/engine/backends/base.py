"""The seam between the engine and the place its moving stages run.

Two stages move: *replay* (a browser page; one pair in, its :class:`Replay` record and evidence
files out) and *metrics* (one pair's replay in, its :class:`Measured` similarities out). The
engine hands a backend data (the task, the page folder, the evidence folder) and gets data back;
the store, events, limits, judges and the rubric stay in the engine's process.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import anyio

from iwr_bench import registry

if TYPE_CHECKING:
    from iwr_bench.agents.judge.executor import Executor
    from iwr_bench.agents.judge.records import Replay
    from iwr_bench.dataset.layout import Task
    from iwr_bench.engine.config import RunConfig
    from iwr_bench.engine.deadlines import Background
    from iwr_bench.engine.limits import Limits
    from iwr_bench.protocol import EvalProtocol
    from iwr_bench.scoring.evaluation import Measured, VisualMetrics
    from iwr_bench.tools.pool import PagePool, PoolConfig


class WorkerLost(Exception):
    """The worker running a stage's call died (its process or its node) on every try; the engine
    records the job as ``worker_lost``."""


class FreeSlots:
    """Which of a backend's workers are free: a call holds one worker's index while it runs."""

    def __init__(self, count: int = 0) -> None:
        self._free = list(range(count))
        self._ready = anyio.Condition()

    def reset(self, count: int) -> None:
        """Every one of ``count`` workers free (a fresh set of workers)."""
        self._free = list(range(count))

    @asynccontextmanager
    async def hold(self) -> AsyncGenerator[int]:
        """Wait for a free worker and hold its index; it is free again when the block ends."""
        async with self._ready:
            while not self._free:
                await self._ready.wait()
            slot = self._free.pop(0)
        try:
            yield slot
        finally:
            with anyio.CancelScope(shield=True):  # a cancelled call still frees its worker
                async with self._ready:
                    self._free.append(slot)
                    self._ready.notify()


ExecutorFactory = Callable[["PagePool"], "Executor"]
"""Builds the run's executor over a page pool (the backend decides which pool that is)."""

Timer = Callable[[], AbstractContextManager[None]]


class StageBackend(Protocol):
    """Runs the replay and metric stages of (task, model) pairs somewhere: the product of a design
    registered under the ``backend`` role (built-in: ``in-process`` and ``ray``), which
    ``[backend] kind`` or ``--backend`` picks. Every member below is required."""

    name: str
    """The backend's name (the built-in ones: ``in-process``, ``ray``)."""

    def connect(self) -> None:
        """Reach the place the stages run (start or join a cluster); called while the run is set up.

        Raises:
            UserError: it cannot be reached (Ray missing, a bad address).
        """
        ...

    def describe(self) -> dict[str, Any]:
        """What the manifest records about the backend (after :meth:`connect`)."""
        ...

    def metrics(self, cfg: RunConfig, limits: Limits, timer: Timer, background: Background) -> VisualMetrics:
        """The run's metrics (cached and batched in this process, computed where the backend puts them)."""
        ...

    def open(self, pool: PoolConfig) -> AbstractAsyncContextManager[None]:
        """Start the browsers and workers for the time of a run; stop them (and a cluster the
        backend started) when it ends."""
        ...

    async def replay(
        self, executor: ExecutorFactory, task: Task, page: Path | None, evidence: Path
    ) -> Replay:
        """Replay ``task`` on ``page``, writing its screenshots into ``evidence``."""
        ...

    async def measure(
        self, task: Task, replay: Replay, evidence: Path, metrics: VisualMetrics, protocol: EvalProtocol
    ) -> Measured:
        """OCR and image similarity of the replay's scored pairs."""
        ...

    def replays_over(self) -> None:
        """Every replay of the run is over (the browsers idle from now on; metrics may take their cores)."""
        ...


def make_backend(cfg: RunConfig) -> StageBackend:
    """The backend design a run's ``[backend] kind`` names, built with ``[backend] options`` (its
    factory may also declare ``config`` to receive the run's :class:`RunConfig`). The built-in ones
    are ``in-process`` and ``ray``; Ray is imported only when a run asks for it.

    Raises:
        UserError: one line: an unknown kind (naming the known ones), options the factory refuses,
            or a product that lacks a member of :class:`StageBackend`.
    """
    backend, _ = registry.build("backend", cfg.backend.kind, cfg.backend.options, context={"config": cfg})
    return cast("StageBackend", backend)


def backend_record(cfg: RunConfig, backend: StageBackend) -> dict[str, Any]:
    """What the manifest keeps about a run's backend: what it describes of itself (``kind`` first,
    the registered name unless it says otherwise) and ``design``: its name, where its code came
    from and its options, as a judge design is recorded."""
    kind = cfg.backend.kind
    design: dict[str, Any] = {
        "name": kind,
        **registry.origin_of("backend", kind).model_dump(exclude_none=True),
        "options": dict(cfg.backend.options),
    }
    return {"kind": kind, **backend.describe(), "design": design}
