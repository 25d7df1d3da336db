"""What a model request really carried: read off the HTTP request, not off our settings.

pydantic-ai's model classes change settings on the way out: the OpenAI chat model drops
``temperature`` for reasoning models (o-series, gpt-5) and sends ``max_tokens`` as
``max_completion_tokens``; other classes rename or refuse fields too. To record what was really sent,
:func:`record_requests` adds a request hook to a provider's own HTTP client (and to every client it
re-creates); inside :func:`capturing`, each JSON request body is kept (its scalar and object fields,
never the messages), and :func:`summarize` turns the last one into a :class:`SentRequest`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Protocol

import anyio.to_thread
from pydantic_ai.providers import Provider

from iwr_bench.agents.generation.records import SentRequest

# Where the JSON body's completion limit may sit, by API: chat completions (either name),
# the Responses API, Anthropic, Google's generationConfig.
_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


@dataclass(frozen=True)
class WireRequest:
    """One HTTP request as it left: its settings fields and the read timeout it carried."""

    fields: dict[str, Any]
    """Top-level fields of the JSON body that are not lists (the messages and tools are left out)."""
    timeout_s: float | None
    """Read timeout of the request, in seconds, when the client set one."""


_SINK: ContextVar[list[WireRequest] | None] = ContextVar("iwr_wire_requests", default=None)


@contextmanager
def capturing() -> Generator[list[WireRequest]]:
    """Collect the requests sent by hooked clients from this context (tasks it starts included).

    Re-entrant: inside another ``capturing()`` block this yields that block's list, so an outer
    caller sees what inner ones captured.
    """
    current = _SINK.get()
    if current is not None:
        yield current
        return
    sink: list[WireRequest] = []
    token = _SINK.set(sink)
    try:
        yield sink
    finally:
        _SINK.reset(token)


class _Request(Protocol):
    @property
    def content(self) -> bytes: ...

    @property
    def extensions(self) -> dict[str, Any]: ...


async def _on_request(request: _Request) -> None:
    sink = _SINK.get()
    if sink is None:
        return
    content = request.content
    try:  # a request with 70 images is tens of MB of JSON: parse it off the event loop
        body = (
            await anyio.to_thread.run_sync(json.loads, content)
            if len(content) > 1 << 16
            else json.loads(content)
        )
    except (ValueError, UnicodeDecodeError):
        return
    if not isinstance(body, dict):
        return
    items: dict[str, Any] = body  # pyright: ignore[reportUnknownVariableType]
    fields = {k: v for k, v in items.items() if not isinstance(v, list)}
    timeout: object = request.extensions.get("timeout")
    read: object = timeout.get("read") if isinstance(timeout, dict) else None  # pyright: ignore[reportUnknownMemberType]
    sink.append(WireRequest(fields=fields, timeout_s=float(read) if isinstance(read, int | float) else None))


class _Hooked(Protocol):
    event_hooks: dict[str, list[Callable[..., Any]]]


def _hook(client: object) -> bool:
    hooks: object = getattr(client, "event_hooks", None)
    if not isinstance(hooks, dict) or "request" not in hooks:
        return False
    hooked: _Hooked = client  # type: ignore[assignment]
    if _on_request not in hooked.event_hooks["request"]:
        hooked.event_hooks = {**hooked.event_hooks, "request": [*hooked.event_hooks["request"], _on_request]}
    return True


def record_requests(provider: Provider[Any]) -> bool:
    """Hook the provider's own HTTP client (and the ones it re-creates later); False when it has none.

    Uses the same two provider attributes pydantic-ai's own gateway hooks its clients through.
    """
    client = provider._own_http_client  # pyright: ignore[reportPrivateUsage]
    factory = provider._http_client_factory  # pyright: ignore[reportPrivateUsage]
    if client is None or factory is None or not _hook(client):
        return False

    def hooked_factory() -> Any:
        new = factory()
        _hook(new)
        return new

    provider._http_client_factory = hooked_factory  # pyright: ignore[reportPrivateUsage]
    return True


def _limit(fields: dict[str, Any]) -> tuple[str | None, int | None]:
    for name in _LIMIT_FIELDS:
        if isinstance(fields.get(name), int):
            return name, fields[name]
    config = fields.get("generationConfig")
    if isinstance(config, dict) and isinstance(config.get("maxOutputTokens"), int):  # pyright: ignore[reportUnknownMemberType]
        return "generationConfig.maxOutputTokens", int(config["maxOutputTokens"])  # pyright: ignore[reportUnknownArgumentType]
    return None, None


def _temperature(fields: dict[str, Any]) -> float | None:
    value = fields.get("temperature")
    config = fields.get("generationConfig")
    if value is None and isinstance(config, dict):
        value = config.get("temperature")  # pyright: ignore[reportUnknownMemberType]
    return float(value) if isinstance(value, int | float) else None  # pyright: ignore[reportUnknownArgumentType]


def summarize(request: WireRequest, asked: dict[str, Any]) -> SentRequest:
    """What ``request`` carried, and which of the settings ``asked`` for did not go out."""
    field, limit = _limit(request.fields)
    temperature = _temperature(request.fields)
    dropped: list[str] = []
    changed: dict[str, Any] = {}
    for name, value in (("temperature", temperature), ("max_tokens", limit)):
        wanted = asked.get(name)
        if wanted is None:
            continue
        if value is None:
            dropped.append(name)
        elif value != wanted:
            changed[name] = value
    model = request.fields.get("model")
    return SentRequest(
        model=model if isinstance(model, str) else None,
        temperature=temperature,
        max_tokens=limit,
        max_tokens_field=field,
        timeout_s=request.timeout_s,
        dropped=dropped,
        changed=changed,
        fields=request.fields,
    )


def sent_line(model: str, sent: dict[str, Any]) -> str:
    """One line for a report: what ``model``'s requests carried, and what its model class left out."""
    parts: list[str] = []
    if sent.get("max_tokens") is not None:
        parts.append(f"{sent.get('max_tokens_field') or 'max_tokens'}={sent['max_tokens']}")
    if sent.get("temperature") is not None:
        parts.append(f"temperature={sent['temperature']:g}")
    if sent.get("timeout_s") is not None:
        parts.append(f"timeout={sent['timeout_s']:g}s")
    dropped: list[str] = list(sent.get("dropped") or [])
    changed: dict[str, Any] = dict(sent.get("changed") or {})
    line = f"{model}: sent " + (", ".join(parts) or "no limit or temperature")
    if dropped:
        line += f"; not sent (dropped by the model class): {', '.join(dropped)}"
    if changed:
        line += "; changed: " + ", ".join(f"{k}={v}" for k, v in changed.items())
    return line
