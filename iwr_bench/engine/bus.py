"""The run's event bus: numbers events, persists them, and hands them to subscribers; and the
coalescer that joins a judge model's streamed prose into fewer events."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from iwr_bench.agents.events import JudgeDelta
from iwr_bench.engine.events import Event, FromAgent

log = logging.getLogger(__name__)


class EventSink(Protocol):
    """Where the bus writes events durably (the run store)."""

    def append_event(self, event: Event) -> None:
        """Persist one event."""
        ...

    def last_event_seq(self) -> int:
        """Highest sequence number persisted."""
        ...


Subscriber = Callable[[Event], None]


class EventBus:
    """Numbers events, persists them, and hands them to in-process subscribers.

    Subscribers are called synchronously on the event loop and must return quickly; an
    exception in one is logged and does not stop the run.
    """

    def __init__(self, sink: EventSink | None = None) -> None:
        self.sink = sink
        self._seq = sink.last_event_seq() if sink is not None else 0
        self._subscribers: list[Subscriber] = []

    def attach(self, sink: EventSink) -> None:
        """Persist every later event in ``sink`` (the run's store, once it is open), numbering on
        from the last event it holds."""
        self.sink = sink
        self._seq = max(self._seq, sink.last_event_seq())

    def subscribe(self, subscriber: Subscriber) -> Callable[[], None]:
        """Call ``subscriber`` with every later event; returns a function that unsubscribes."""
        self._subscribers.append(subscriber)
        return lambda: self._subscribers.remove(subscriber)

    def publish(self, event: Event) -> Event:
        """Assign the next sequence number, persist, and notify subscribers."""
        self._seq += 1
        event.seq = self._seq
        if self.sink is not None:
            self.sink.append_event(event)
        for subscriber in list(self._subscribers):
            try:
                subscriber(event)
            except Exception:
                log.exception("event subscriber failed on %s", event.kind)
        return event


class TextCoalescer:
    """Joins a judge model's streamed prose into one :class:`JudgeDelta` per ``every_s`` or ``max_chars``.

    A model streams a token at a time; each would be an event and a store write. Text of one job
    and judge call is held until ``every_s`` after its first piece, or until ``max_chars`` have
    come; any other event of that job flushes it first (so the order of events is kept), as does
    :meth:`flush_due` (call it on a timer) and :meth:`flush` (at the job's end).
    """

    def __init__(
        self, publish: Callable[[Event], object], every_s: float = 0.1, max_chars: int = 1024
    ) -> None:
        self.publish = publish
        self.every_s = every_s
        self.max_chars = max_chars
        self._held: dict[tuple[str, str, str], tuple[float, list[str], int]] = {}

    def add(self, job: str, role: str, text: str, call: str = "") -> None:
        """Hold a piece of streamed text of ``job``'s judge call ``call`` (publishing what is due)."""
        key = (job, call, role)
        first, parts, size = self._held.get(key, (time.monotonic(), [], 0))
        parts.append(text)
        self._held[key] = (first, parts, size + len(text))
        if size + len(text) >= self.max_chars or time.monotonic() - first >= self.every_s:
            self._publish(key)

    def flush(self, job: str | None = None) -> None:
        """Publish the held text of ``job`` (None: of every job)."""
        for key in [k for k in self._held if job is None or k[0] == job]:
            self._publish(key)

    def flush_due(self) -> None:
        """Publish held text older than ``every_s``."""
        now = time.monotonic()
        for key in [k for k, (first, _, _) in self._held.items() if now - first >= self.every_s]:
            self._publish(key)

    def _publish(self, key: tuple[str, str, str]) -> None:
        _, parts, _ = self._held.pop(key)
        self.publish(FromAgent(job=key[0], event=JudgeDelta(call=key[1], role=key[2], text="".join(parts))))
