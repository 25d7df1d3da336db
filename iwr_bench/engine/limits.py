"""Named concurrency limits: browser pages, model calls per provider, judge-model calls, metric workers.

Each :class:`NamedLimit` counts who holds it and who waits, remembers the most holders it ever
had at once (so tests and benchmarks can check it was respected), and reports its occupancy
through a callback. :class:`AdaptiveLimit` halves its capacity when its provider answers 429
(rate limited) and grows back by one after each quiet period, so one throttled provider slows
down while the others keep their speed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType

import anyio
from pydantic_ai.exceptions import ModelHTTPError

from iwr_bench.agents.generation.calls import Caller, ModelAnswer, ModelCall

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

    @property
    def capacity(self) -> int:
        """Current capacity."""
        return int(self.limiter.total_tokens)

    async def __aenter__(self) -> None:
        self.waiting += 1
        self.report(self)
        try:
            await self.limiter.acquire()
        finally:
            self.waiting -= 1
        self.in_use += 1
        self.acquired += 1
        self.max_in_use = max(self.max_in_use, self.in_use)
        self.report(self)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.in_use -= 1
        self.limiter.release()
        self.report(self)


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
        self.browser = NamedLimit("browser pages", browser_pages, report)
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
