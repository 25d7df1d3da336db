"""Deadlines for the steps of a job, and the progress record the engine's watchdog reads.

Each judging job carries a :class:`Progress` (set for its task with :func:`tracking`): its
last sign of life, the action it is on, the bounded steps in progress and the named limit it is
queued for. Steps with a deadline of their own (a judge call, a metric batch) mark themselves
with :func:`bounded_step`, so the watchdog leaves them to their deadline; time spent queued for
a shared limit (:func:`queued`) is not a stall either.

:class:`Background` runs work in tasks of its own so that whoever waits for it can stop
waiting. That matters for work that waits on a worker thread (OCR, CLIP): a thread cannot be
cancelled, and ``anyio.to_thread.run_sync`` keeps its caller until the thread returns. The
waiter gives up at the deadline and its job goes on (or fails); the thread runs to its end in
the background and its result is dropped. The run waits for such threads when it closes.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
from anyio.abc import TaskGroup

from iwr_bench.errors import IwrError

T = TypeVar("T")

GRACE_S = 5.0
"""Extra time the watchdog gives a bounded step past its own deadline before calling it stalled."""


class StepTimeout(IwrError):
    """A step of a job went past its deadline."""

    def __init__(self, step: str, seconds: float) -> None:
        super().__init__(f"{step} took over {seconds:g} s")
        self.step = step
        self.seconds = seconds


@dataclass
class Progress:
    """What one job did last, and when (monotonic seconds)."""

    last: float = field(default_factory=time.monotonic)
    """Time of the last sign of life."""
    action: str = "opening the page"
    """The action the job is on (for messages)."""
    step: str = ""
    """The step in progress, when one is marked."""
    deadlines: list[float] = field(default_factory=list[float])
    """Deadlines of the bounded steps in progress (several rubric calls run at once)."""
    queued: int = 0
    """Named limits the job is waiting for (waiting in a queue is not a stall)."""

    def beat(self, action: str | None = None) -> None:
        """A sign of life (``action``: the action the job moved on to)."""
        self.last = time.monotonic()
        if action is not None:
            self.action = action

    def stalled(self, now: float, after: float) -> bool:
        """No sign of life for ``after`` seconds, outside bounded steps and queues."""
        if self.queued:
            return False
        if self.deadlines and now <= max(self.deadlines) + GRACE_S:
            return False
        return now - self.last > after

    def where(self) -> str:
        """The action (and step) the job was at, for a failure message."""
        return f"{self.action}, {self.step}" if self.step else self.action


_CURRENT: ContextVar[Progress | None] = ContextVar("iwr_job_progress", default=None)


@contextmanager
def tracking(progress: Progress) -> Generator[Progress]:
    """Make ``progress`` the current job's record (tasks started inside inherit it)."""
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)


def current_progress() -> Progress | None:
    """The current job's progress record, if any."""
    return _CURRENT.get()


@contextmanager
def bounded_step(step: str, seconds: float) -> Generator[None]:
    """Mark a step that has a deadline of its own (the watchdog waits for that deadline)."""
    progress = _CURRENT.get()
    if progress is None:
        yield
        return
    deadline = time.monotonic() + seconds
    progress.deadlines.append(deadline)
    progress.step = step
    progress.beat()
    try:
        yield
    finally:
        progress.deadlines.remove(deadline)
        if not progress.deadlines:
            progress.step = ""
        progress.beat()


@contextmanager
def queued() -> Generator[None]:
    """Mark a wait for a shared limit."""
    progress = _CURRENT.get()
    if progress is None:
        yield
        return
    progress.queued += 1
    try:
        yield
    finally:
        progress.queued -= 1
        progress.beat()


class Handle(Generic[T]):
    """One piece of background work: its outcome once ``done`` is set."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.value: T | None = None
        self.error: Exception | None = None
        self.scope = anyio.CancelScope()

    async def _run(self, work: Callable[[], Awaitable[T]]) -> None:
        with self.scope:
            try:
                self.value = await work()
            except Exception as exc:  # noqa: BLE001 - handed to the waiter, who raises it
                self.error = exc
            self.done.set()

    def result(self) -> T:
        """The value, or the work's exception raised again."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


class Background:
    """A task group for work that its waiters may abandon (entered for the whole run)."""

    def __init__(self) -> None:
        self._tg: TaskGroup | None = None

    async def __aenter__(self) -> Background:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        return self

    async def __aexit__(self, *exc: object) -> None:
        tg, self._tg = self._tg, None
        if tg is not None:
            tg.cancel_scope.cancel()  # work still running is abandoned; a thread ends on its own
            await tg.__aexit__(None, None, None)

    @property
    def active(self) -> bool:
        """Whether background tasks can be started (inside ``async with``)."""
        return self._tg is not None

    def start(self, work: Callable[[], Awaitable[T]]) -> Handle[T]:
        """Start ``work`` in the background."""
        assert self._tg is not None, "Background used outside `async with`"
        handle: Handle[T] = Handle()
        self._tg.start_soon(handle._run, work)  # pyright: ignore[reportPrivateUsage]
        return handle

    async def call(self, step: str, seconds: float, work: Callable[[], Awaitable[T]]) -> T:
        """Await ``work`` for at most ``seconds``.

        Raises:
            StepTimeout: past the deadline (the work is cancelled; a thread it waits on runs on).
        """
        with bounded_step(step, seconds):
            if self._tg is None:  # not entered: bounded in the caller's own task
                with anyio.move_on_after(seconds):
                    return await work()
                raise StepTimeout(step, seconds)
            handle = self.start(work)
            try:
                with anyio.move_on_after(seconds):
                    await handle.done.wait()
            finally:
                if not handle.done.is_set():
                    handle.scope.cancel()
            if not handle.done.is_set():
                raise StepTimeout(step, seconds)
            return handle.result()


def find_error(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    """``exc`` itself, or the first ``kind`` inside (nested) exception groups."""
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:  # pyright: ignore[reportUnknownVariableType]
            found = find_error(inner, kind)  # pyright: ignore[reportUnknownArgumentType]
            if found is not None:
                return found
    return None
