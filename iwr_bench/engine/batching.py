"""Batch metric work across concurrent judging jobs.

Jobs ask for their pairs' similarities whenever they finish a replay. :class:`BatchingMetric`
collects the requests that arrive within a short window and sends them to the metric as one
batch (one model forward pass for the embedders), up to ``max_batch`` pairs; each caller gets
its own values back. At most ``workers`` batches run at once (the "metric workers" limit).

Each batch has a deadline (``timeout``, counted from the batch's start, not from the time its
callers spent queued). With a :class:`~iwr_bench.engine.deadlines.Background` the batch runs in a
task of its own: its callers stop waiting at the deadline (their jobs fail as ``timeout``) even
when the metric is stuck in a worker thread, which cannot be cancelled and finishes on its own;
a caller that is cancelled (its job timed out) leaves the other callers' batch running.

With :attr:`BatchingMetric.progress` set (the engine's
:class:`~iwr_bench.engine.metric_progress.DesignTally`), each request's images are counted when
it arrives and moved along as its batch starts and ends, for the metric stage's progress.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.to_thread

from iwr_bench.engine.deadlines import Background, StepTimeout, bounded_step, queued
from iwr_bench.engine.limits import NamedLimit
from iwr_bench.metrics.pair import MetricWrapper, Pair, PairMetric

if TYPE_CHECKING:
    from iwr_bench.engine.metric_progress import BatchStart, DesignTally, Work

T = TypeVar("T")


@dataclass(eq=False)  # compared by identity (list.remove), never by their images
class _Request:
    pairs: list[Pair]
    done: anyio.Event = field(default_factory=anyio.Event)
    values: list[float] | None = None
    error: BaseException | None = None
    batch: _Batch | None = None
    work: Work | None = None
    """Its images, as the progress tally counted them."""


@dataclass(eq=False)
class _Batch:
    requests: list[_Request]
    deadline: float
    """Loop time by which the batch must be done."""
    seconds: float
    """Its time limit (the deadline less its start)."""
    finished: anyio.Event = field(default_factory=anyio.Event)

    def settle(self, values: list[float] | None, error: BaseException | None) -> None:
        """Hand each request that still waits its values (or the error)."""
        start = 0
        for r in self.requests:
            n = len(r.pairs)
            if not r.done.is_set():
                r.values, r.error = (None, error) if values is None else (values[start : start + n], None)
                r.done.set()
            start += n
        self.finished.set()

    @property
    def works(self) -> list[Work | None]:
        """The images of its requests."""
        return [r.work for r in self.requests]


class BatchingMetric(MetricWrapper):
    """A :class:`~iwr_bench.metrics.pair.PairMetric` that merges concurrent requests."""

    def __init__(
        self,
        inner: PairMetric,
        limit: NamedLimit,
        *,
        window: float = 0.02,
        max_batch: int = 32,
        timer: Callable[[], AbstractContextManager[None]] = nullcontext,
        timeout: float = 300.0,
        pair_timeout: float = 0.0,
        background: Background | None = None,
    ) -> None:
        self.inner = inner
        self.timer = timer
        """Marks the stretch of each batch as metrics work (the engine's work clock)."""
        self.limit = limit
        self.window = window
        self.max_batch = max_batch
        self.timeout = timeout
        """Longest one batch may take once started, before ``pair_timeout`` per pair it holds."""
        self.pair_timeout = pair_timeout
        """Extra time per pair: a full batch on a busy machine takes far longer than a small one."""
        self.background = background
        self.progress: DesignTally | None = None
        """Counts the images that go through (set by the engine; None: not counted)."""
        self._pending: list[_Request] = []
        self.batches = 0
        self.pairs = 0
        self.timeouts = 0

    @property
    def step(self) -> str:
        """How a timed-out batch is named in failure messages."""
        return f"{self.backend.metric} metric batch"

    async def __call__(self, pairs: Sequence[Pair]) -> list[float]:
        """Similarities of ``pairs``, computed in a batch with other jobs' pairs.

        Raises:
            StepTimeout: the batch holding these pairs went past its deadline.
        """
        if not pairs:
            return []
        request = _Request(list(pairs))
        if self.progress is not None:
            request.work = await self.progress.submitted(request.pairs)
        self._pending.append(request)
        try:
            while not request.done.is_set():
                if request.batch is not None:
                    await self._wait(request.batch)
                    continue
                with queued():
                    async with self.limit:
                        if request.done.is_set() or request.batch is not None:
                            continue
                        await anyio.sleep(self.window)
                        await self._run_batch()
        finally:
            if request in self._pending:  # a cancelled caller withdraws what was not started
                self._pending.remove(request)
                if self.progress is not None:
                    self.progress.dropped(request.work)
        if request.error is not None:
            raise request.error
        assert request.values is not None
        return request.values

    async def exclusive(self, work: Callable[[], T]) -> T:
        """Run other work of this metric's backend (reading OCR text for eval.json) on a worker
        thread, under the metric-workers limit and on the work clock, like a batch.

        Raises:
            StepTimeout: it went past the batch deadline.
        """
        with queued():
            async with self.limit:
                with bounded_step(self.step, self._limit(1)), self.timer():
                    with anyio.fail_after(self._limit(1)):
                        return await anyio.to_thread.run_sync(work)

    def _take(self) -> _Batch | None:
        taken: list[_Request] = []
        size = 0
        while self._pending and (not taken or size + len(self._pending[0].pairs) <= self.max_batch):
            r = self._pending.pop(0)
            taken.append(r)
            size += len(r.pairs)
        if not taken:
            return None
        seconds = self._limit(size)
        batch = _Batch(taken, anyio.current_time() + seconds, seconds)
        for r in taken:
            r.batch = batch
        return batch

    def _limit(self, pairs: int) -> float:
        return self.timeout + self.pair_timeout * pairs

    async def _compute(self, batch: _Batch) -> None:
        pairs = [p for r in batch.requests for p in r.pairs]
        progress = self.progress
        started: BatchStart | None = progress.started(batch.works) if progress is not None else None
        try:
            with self.timer():
                values = await self.inner(pairs)
        except Exception as exc:  # noqa: BLE001 - handed to every caller of the batch
            batch.settle(None, exc)
            if progress is not None:
                progress.finished(batch.works, ok=False)
            return
        except BaseException:
            if progress is not None:  # cancelled: its requests wait again (or time out)
                progress.requeued(batch.works)
            raise
        self.batches += 1
        self.pairs += len(pairs)
        batch.settle(values, None)
        if progress is not None:
            progress.finished(batch.works, ok=True, started=started)

    async def _run_batch(self) -> None:
        batch = self._take()
        if batch is None:
            return
        if self.background is not None and self.background.active:
            self.background.start(lambda: self._compute(batch))
            await self._wait(batch)
            return
        # No background: the batch runs in this caller's task (a thread it waits on holds it).
        try:
            with bounded_step(self.step, batch.seconds), anyio.move_on_after(batch.seconds):
                await self._compute(batch)
        except BaseException:
            for r in batch.requests:  # cancelled: the other callers take their requests back
                if not r.done.is_set():
                    r.batch = None
                    self._pending.insert(0, r)
            raise
        self._expire(batch)

    async def _wait(self, batch: _Batch) -> None:
        left = max(0.0, batch.deadline - anyio.current_time())
        with bounded_step(self.step, left), anyio.move_on_after(left):
            await batch.finished.wait()
        self._expire(batch)

    def _expire(self, batch: _Batch) -> None:
        if not batch.finished.is_set():
            self.timeouts += 1
            batch.settle(None, StepTimeout(self.step, batch.seconds))
            if self.progress is not None:
                self.progress.finished(batch.works, ok=False)
