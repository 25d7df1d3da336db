"""Batch metric work across concurrent judging jobs.

Jobs ask for their pairs' similarities whenever they finish a replay. :class:`BatchingMetric`
collects the requests that arrive within a short window and sends them to the metric as one
batch (one model forward pass for the embedders), up to ``max_batch`` pairs; each caller gets
its own values back. At most ``workers`` batches run at once (the "metric workers" limit).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import anyio

from iwr_bench.engine.limits import NamedLimit
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.pair import Pair, PairMetric


@dataclass
class _Request:
    pairs: list[Pair]
    done: anyio.Event = field(default_factory=anyio.Event)
    values: list[float] | None = None
    error: BaseException | None = None


class BatchingMetric:
    """A :class:`~iwr_bench.metrics.pair.PairMetric` that merges concurrent requests."""

    def __init__(
        self,
        inner: PairMetric,
        limit: NamedLimit,
        *,
        window: float = 0.02,
        max_batch: int = 32,
        timer: Callable[[str], AbstractContextManager[None]] = lambda kind: nullcontext(),
    ) -> None:
        self.inner = inner
        self.timer = timer
        """Marks the stretch of each batch as ``metric`` work (the engine's work clock)."""
        self.limit = limit
        self.window = window
        self.max_batch = max_batch
        self._pending: list[_Request] = []
        self.batches = 0
        self.pairs = 0

    @property
    def backend(self) -> Backend:
        """What computes it."""
        return self.inner.backend

    async def __call__(self, pairs: Sequence[Pair]) -> list[float]:
        """Similarities of ``pairs``, computed in a batch with other jobs' pairs."""
        if not pairs:
            return []
        request = _Request(list(pairs))
        self._pending.append(request)
        while not request.done.is_set():
            async with self.limit:
                if request.done.is_set():
                    break
                await anyio.sleep(self.window)
                await self._run_batch()
        if request.error is not None:
            raise request.error
        assert request.values is not None
        return request.values

    async def _run_batch(self) -> None:
        batch: list[_Request] = []
        size = 0
        while self._pending and (not batch or size + len(self._pending[0].pairs) <= self.max_batch):
            taken = self._pending.pop(0)
            batch.append(taken)
            size += len(taken.pairs)
        if not batch:
            return
        try:
            with self.timer("metric"):
                values = await self.inner([p for r in batch for p in r.pairs])
        except Exception as exc:  # noqa: BLE001 - handed to every caller of the batch
            for r in batch:
                r.error = exc
                r.done.set()
            return
        except BaseException:
            self._pending[:0] = batch  # cancelled: the other callers take their requests back
            raise
        self.batches += 1
        self.pairs += size
        start = 0
        for r in batch:
            r.values = values[start : start + len(r.pairs)]
            start += len(r.pairs)
            r.done.set()
