"""Named concurrency limits: browser pages, model calls per provider, judge-model calls, metric workers.

Each :class:`NamedLimit` counts who holds it and who waits, remembers the most holders it ever
had at once (so tests and benchmarks can check it was respected), and reports its occupancy
through a callback. :class:`AdaptiveLimit` halves its capacity when its provider answers 429
(rate limited) and grows back by one after each quiet period, so one throttled provider slows
down while the others keep their speed.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from types import TracebackType

import anyio
from pydantic_ai.exceptions import ModelHTTPError

from iwr_bench.agents.generation.calls import Caller, ModelAnswer, ModelCall
from iwr_bench.engine.deadlines import queued
from iwr_bench.engine.events import Event, LimitOccupancy

Report = Callable[["NamedLimit"], None]


def _quiet(limit: NamedLimit) -> None:
    del limit


class NamedLimit:
    """A capacity limiter with a name, occupancy counters and a high-water mark."""

    def __init__(self, name: str, capacity: int, report: Report | None = None) -> None:
        if capacity < 1:
            raise ValueError(f"limit {name!r} needs a capacity of at least 1")
        self.name = name
        self.limiter = anyio.CapacityLimiter(capacity)
        self.in_use = 0
        self.waiting = 0
        self.max_in_use = 0
        self.acquired = 0
        self.report = report or _quiet
        self._idle_s = 0.0
        self._idle_since: float | None = time.perf_counter()

    def reset_clock(self) -> None:
        """Start counting idle time now (the engine calls it when its run starts)."""
        self._idle_s = 0.0
        self._idle_since = time.perf_counter() if self.in_use == 0 else None

    @property
    def idle_s(self) -> float:
        """Seconds since :meth:`reset_clock` during which nobody held this limit."""
        open_idle = time.perf_counter() - self._idle_since if self._idle_since is not None else 0.0
        return self._idle_s + open_idle

    @property
    def capacity(self) -> int:
        """Current capacity."""
        return int(self.limiter.total_tokens)

    async def __aenter__(self) -> None:
        self.waiting += 1
        self.report(self)
        try:
            with queued():  # waiting for a shared limit is not a stall
                await self.limiter.acquire()
        finally:
            self.waiting -= 1
        self._took()

    def _took(self) -> None:
        if self._idle_since is not None:
            self._idle_s += time.perf_counter() - self._idle_since
            self._idle_since = None
        self.in_use += 1
        self.acquired += 1
        self.max_in_use = max(self.max_in_use, self.in_use)
        self.report(self)

    def _gave_back(self) -> None:
        self.in_use -= 1
        if self.in_use == 0:
            self._idle_since = time.perf_counter()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._gave_back()
        self.limiter.release()
        self.report(self)


class OrderedLimit(NamedLimit):
    """A limit whose free slots go to the waiter with the lowest rank (then the longest waiting).

    The engine ranks judging jobs by (task position, model position), so the browser pages go
    round-robin over the models: every model's page of a task is replayed before any model's
    page of a later task, and the live means of all models fill in together.
    """

    def __init__(self, name: str, capacity: int, report: Report | None = None) -> None:
        super().__init__(name, capacity, report)
        self._free = capacity
        self._queue: list[tuple[tuple[int, ...], int, anyio.Event]] = []
        self._arrivals = 0

    def _grant(self) -> None:
        while self._free > 0 and self._queue:
            *_, event = heapq.heappop(self._queue)
            self._free -= 1
            event.set()

    @asynccontextmanager
    async def slot(self, rank: tuple[int, ...]) -> AsyncGenerator[None]:
        """Hold one slot, granted in ``rank`` order among the waiters."""
        self._arrivals += 1
        entry = (rank, self._arrivals, anyio.Event())
        heapq.heappush(self._queue, entry)
        self.waiting += 1
        self.report(self)
        self._grant()
        try:
            with queued():
                await entry[2].wait()
        except BaseException:
            if entry[2].is_set():
                self._free += 1  # granted as it was cancelled: hand the slot on
            else:
                self._queue.remove(entry)
                heapq.heapify(self._queue)
            self._grant()
            raise
        finally:
            self.waiting -= 1
        self._took()
        try:
            yield
        finally:
            self._gave_back()
            self._free += 1
            self._grant()
            self.report(self)

    async def __aenter__(self) -> None:
        raise TypeError(f"{self.name}: use `async with limit.slot(rank)`")


class AdaptiveLimit(NamedLimit):
    """A limit that backs off on rate-limit answers and recovers when they stop."""

    def __init__(
        self,
        name: str,
        capacity: int,
        report: Report | None = None,
        *,
        recover_after: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(name, capacity, report)
        self.ceiling = capacity
        self.recover_after = recover_after
        self.clock = clock
        self.rate_limited = 0
        self._last_penalty: float | None = None

    def penalise(self) -> None:
        """A 429 arrived: halve the capacity (at least 1)."""
        self.rate_limited += 1
        self._last_penalty = self.clock()
        self.limiter.total_tokens = max(1, self.capacity // 2)
        self.report(self)

    def maybe_recover(self) -> None:
        """Grow by one if no 429 came for ``recover_after`` seconds."""
        if self._last_penalty is None or self.capacity >= self.ceiling:
            return
        if self.clock() - self._last_penalty >= self.recover_after:
            self.limiter.total_tokens = self.capacity + 1
            self._last_penalty = self.clock()
            self.report(self)

    async def __aenter__(self) -> None:
        self.maybe_recover()
        await super().__aenter__()


def is_rate_limited(exc: BaseException) -> bool:
    """Whether a provider error is a 429."""
    return isinstance(exc, ModelHTTPError) and exc.status_code == 429


class LimitedCaller:
    """Holds a provider's limit for each single request; reports 429s to it.

    It sits under the retry wrapper, so backoff sleeps do not hold a slot.
    """

    def __init__(self, inner: Caller, limit: NamedLimit) -> None:
        self.inner = inner
        self.limit = limit

    async def __call__(self, call: ModelCall) -> ModelAnswer:
        """One request under the limit."""
        async with self.limit:
            try:
                return await self.inner(call)
            except ModelHTTPError as exc:
                if is_rate_limited(exc) and isinstance(self.limit, AdaptiveLimit):
                    self.limit.penalise()
                raise


class Limits:
    """The run's named limits, created on first use."""

    def __init__(
        self,
        *,
        browser_pages: int,
        metric_workers: int,
        judge_calls: int,
        provider_calls: dict[str, int],
        default_provider_calls: int,
        report: Report | None = None,
        recover_after: float = 30.0,
    ) -> None:
        self.report = report
        self.browser = OrderedLimit("browser pages", browser_pages, report)
        self.metric = NamedLimit("metric workers", metric_workers, report)
        self.judge = AdaptiveLimit("judge calls", judge_calls, report, recover_after=recover_after)
        self._provider_caps = dict(provider_calls)
        self._default = default_provider_calls
        self._recover_after = recover_after
        self.providers: dict[str, AdaptiveLimit] = {}

    def provider(self, name: str) -> AdaptiveLimit:
        """The model-call limit of one provider (``openai``, a base URL's host, ...)."""
        if name not in self.providers:
            cap = self._provider_caps.get(name, self._default)
            self.providers[name] = AdaptiveLimit(
                f"model calls: {name}", cap, self.report, recover_after=self._recover_after
            )
        return self.providers[name]

    def all(self) -> list[NamedLimit]:
        """Every limit created so far."""
        return [self.browser, self.metric, self.judge, *self.providers.values()]


class OccupancyReporter:
    """Publishes the occupancy of each named limit that changed since the last :meth:`flush`."""

    def __init__(self, publish: Callable[[Event], object]) -> None:
        self.publish = publish
        self._changed: set[str] = set()

    def changed(self, limit: NamedLimit) -> None:
        """Note that a limit's occupancy changed (the limits call this)."""
        self._changed.add(limit.name)

    def flush(self, limits: list[NamedLimit]) -> None:
        """Publish a :class:`LimitOccupancy` for each of ``limits`` that changed."""
        for limit in limits:
            if limit.name in self._changed:
                self.publish(
                    LimitOccupancy(
                        name=limit.name, in_use=limit.in_use, capacity=limit.capacity, waiting=limit.waiting
                    )
                )
        self._changed.clear()
