"""How agents report what they are doing while they do it, without knowing who listens.

The executor (or the engine) installs a sink for the duration of a replay with :func:`emitting`;
anything running inside it, in the same task or in tasks it starts, calls :func:`emit`. With no
sink installed, :func:`emit` does nothing, so agents work the same outside the engine.

Kinds agents emit (the engine turns them into typed events):

- ``action_started``, ``action_grounded``, ``action_finished``, ``assertion_verdict`` (executor);
- ``judge_delta``: ``{"role": "grounder" | "assertions" | "rubric", "text": str}``, a piece of
  a judge model's streamed reasoning or answer;
- ``judge_tool_call``: ``{"role": ..., "tool": str, "args": str}``, a tool a judge agent called,
  and ``{"role": ..., "tool": str, "result": str}`` once it returned (a short summary);
- ``judge_retry``: ``{"role": ..., "attempt": int, "error": str}``, an answer that was retried.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar

Emit = Callable[[str, dict[str, object]], None]
"""A sink: ``emit(kind, data)``; it must not block or raise."""


def _discard(kind: str, data: dict[str, object]) -> None:
    del kind, data


_current: ContextVar[Emit] = ContextVar("iwr_emit", default=_discard)


def emit(kind: str, data: dict[str, object]) -> None:
    """Report an event to the sink installed around the caller (no-op when there is none)."""
    _current.get()(kind, data)


@contextmanager
def emitting(sink: Emit) -> Generator[None]:
    """Install ``sink`` for the code inside the block (and the tasks it starts)."""
    token = _current.set(sink)
    try:
        yield
    finally:
        _current.reset(token)
