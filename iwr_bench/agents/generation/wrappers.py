"""Wrappers around a :class:`~iwr_bench.agents.generation.calls.Caller`: retries, budget cap, cache.

The usual stack, outermost first: ``CachingCaller(BudgetedCaller(RetryingCaller(AgentCaller)))``,
so a cache hit costs nothing and never counts against the budget, and the budget is checked once
per call rather than per retry.
"""

from __future__ import annotations

import json
import logging
import os
import random
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from pathlib import Path

import anyio
import anyio.to_thread
from pydantic import ValidationError
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    UnexpectedModelBehavior,
)

from iwr_bench.agents.generation.calls import Caller, ModelAnswer, ModelCall
from iwr_bench.agents.generation.errors import BudgetExhausted, FailureKind, GenerationError

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[None]]


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header: a number of seconds or an HTTP date."""
    if value is None or not value.strip():
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def retry_after_of(exc: BaseException) -> float | None:
    """How long the provider asked to wait, from the error or its headers."""
    if isinstance(exc, ModelAPIError) and exc.retry_after is not None:
        return exc.retry_after
    if isinstance(exc, ModelHTTPError) and exc.headers:
        return parse_retry_after(exc.headers.get("retry-after"))
    return None


def classify(exc: BaseException) -> FailureKind:
    """The failure class of a provider error."""
    if isinstance(exc, GenerationError):
        return exc.kind
    if isinstance(exc, ModelRateLimitError) or (isinstance(exc, ModelHTTPError) and exc.status_code == 429):
        return FailureKind.rate_limited
    if isinstance(exc, ModelTimeoutError | TimeoutError):
        return FailureKind.timeout
    if isinstance(exc, ModelServerError | ModelUnavailableError) or (
        isinstance(exc, ModelHTTPError) and exc.status_code >= 500
    ):
        return FailureKind.server_error
    if isinstance(exc, ModelConnectionError):
        return FailureKind.connection_error
    if isinstance(exc, ModelRequestRejectedError | ModelHTTPError):
        return FailureKind.request_rejected
    if isinstance(exc, UnexpectedModelBehavior) or (isinstance(exc, ModelAPIError) and "decode" in str(exc)):
        return FailureKind.malformed_response
    return FailureKind.provider_error


RETRYABLE = frozenset(
    {FailureKind.rate_limited, FailureKind.server_error, FailureKind.timeout, FailureKind.connection_error}
)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, honouring Retry-After."""

    retries: int = 4
    """Retries after the first attempt."""
    base_delay: float = 1.0
    """Delay before the first retry, in seconds (doubled each time)."""
    max_delay: float = 60.0
    """Longest computed delay."""
    max_retry_after: float = 300.0
    """Longest Retry-After we agree to wait; a longer one is cut to this."""
    jitter: float = 0.5
    """Random extra delay, as a fraction of the computed delay."""
    attempt_timeout: float | None = None
    """Hard cap on one attempt (a backstop to the client's own timeout)."""

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        computed = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        computed += rng.uniform(0, self.jitter * computed)
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        return computed


class RetryingCaller:
    """Retries 429, 5xx, timeouts and connection errors; raises :class:`GenerationError` at the end."""

    def __init__(
        self, inner: Caller, policy: RetryPolicy, *, sleep: Sleep = anyio.sleep, seed: int | None = None
    ) -> None:
        self.inner = inner
        self.policy = policy
        self.sleep = sleep
        self.rng = random.Random(seed)

    async def __call__(self, call: ModelCall) -> ModelAnswer:
        """Call, retrying transient failures."""
        start = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            try:
                answer = await self._attempt(call)
            except (ModelAPIError, UnexpectedModelBehavior, TimeoutError) as exc:
                kind = classify(exc)
                if kind not in RETRYABLE or attempt > self.policy.retries:
                    message = f"{exc} (after {attempt} attempt(s))"
                    raise GenerationError(kind, message, attempts=attempt) from exc
                wait = self.policy.delay(attempt, retry_after_of(exc), self.rng)
                log.info("%s: %s, retry %d in %.2fs", call.model_name, kind.value, attempt, wait)
                await self.sleep(wait)
                continue
            return answer.model_copy(update={"attempts": attempt, "latency_s": time.monotonic() - start})

    async def _attempt(self, call: ModelCall) -> ModelAnswer:
        if self.policy.attempt_timeout is None:
            return await self.inner(call)
        with anyio.fail_after(self.policy.attempt_timeout):
            return await self.inner(call)


class Budget:
    """A USD cap shared by every caller of a run.

    Checked before each new call; calls already in flight may overshoot it by their own cost.
    """

    def __init__(self, limit_usd: float | None) -> None:
        self.limit_usd = limit_usd
        self.spent_usd = 0.0
        self.refused = 0

    @property
    def exhausted(self) -> bool:
        """Whether the cap has been reached."""
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def charge(self, usd: float | None) -> None:
        """Add a paid answer's cost (unknown prices add nothing)."""
        if usd:
            self.spent_usd += usd


class BudgetedCaller:
    """Refuses new calls once the budget is spent (:class:`BudgetExhausted`), charges each answer."""

    def __init__(self, inner: Caller, budget: Budget) -> None:
        self.inner = inner
        self.budget = budget

    async def __call__(self, call: ModelCall) -> ModelAnswer:
        """Call unless the budget is spent."""
        if self.budget.exhausted:
            self.budget.refused += 1
            raise BudgetExhausted(
                f"budget of ${self.budget.limit_usd:.4f} reached (${self.budget.spent_usd:.4f} spent)"
            )
        answer = await self.inner(call)
        self.budget.charge(answer.usage.cost_usd)
        return answer


class ResponseCache:
    """Answers on disk, one JSON file per request key, written atomically."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        """File of one key."""
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> ModelAnswer | None:
        """The stored answer, or None (also for an unreadable entry, which is then ignored)."""
        path = self.path(key)
        try:
            return ModelAnswer.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValidationError, json.JSONDecodeError) as exc:
            log.warning("ignoring unreadable cache entry %s: %s", path, exc)
            return None

    def put(self, key: str, answer: ModelAnswer) -> None:
        """Store an answer (temp file + rename, so readers never see half a file)."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, answer.model_dump_json(indent=1).encode())


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class CachingCaller:
    """Serves repeated requests from a :class:`ResponseCache`; stores answers, never failures."""

    def __init__(self, inner: Caller, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache

    async def __call__(self, call: ModelCall) -> ModelAnswer:
        """A cached answer, or a new one that is then stored."""
        key = call.cache_key()
        hit = await anyio.to_thread.run_sync(self.cache.get, key)
        if hit is not None:
            return hit.model_copy(update={"cache_hit": True})
        answer = await self.inner(call)
        await anyio.to_thread.run_sync(self.cache.put, key, answer)
        return answer
