"""Judge models as the engine runs them: under the "judge calls" limit, with answers kept in the store.

:class:`StoredModel` wraps any pydantic-ai model. Each request takes a slot of the judge limit
(a 429 halves it for a while), and each answer is stored in the run's ``calls`` table under a
digest of the request (messages without their timestamps, settings, tools and output schema).
When an interrupted replay is executed again on resume, the same requests get the stored
answers back and nothing is paid twice. Streamed requests are served the same way: a stored
answer is replayed as a stream, and reads back exactly as it was given, so the later turns of a
tool-using conversation find theirs too.

Answers are also kept across runs (:class:`SharedCalls`, ``~/.cache/iwr-bench/judge-calls.sqlite``;
``[judge] cache = false`` or ``--no-judge-cache`` turns it off), keyed by the request and the
server it went to: a second run of the same judge on the same pages asks nothing again. An answer
found there is copied into the run's store, so the run keeps everything its scores rest on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import anyio.to_thread
from pydantic_ai import _utils
from pydantic_ai._run_context import RunContext
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    ModelResponseStreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from iwr_bench.engine.limits import AdaptiveLimit, NamedLimit, is_rate_limited
from iwr_bench.metrics.cache import MetricCache, default_cache_dir

log = logging.getLogger(__name__)

_VOLATILE = frozenset({"timestamp", "run_id", "conversation_id", "provider_response_id"})


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _VOLATILE}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_strip(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


_ANSWER_METADATA = frozenset(
    {"usage", "provider_url", "provider_details", "canonical_system", "finish_reason", "state", "metadata"}
)
"""What an earlier answer in the history says about how it was given, not what it said: left out
of the key, so a turn's key does not hang on how faithfully that answer was kept."""


def _messages(messages: list[ModelMessage]) -> list[Any]:
    out: list[Any] = []
    for message in json.loads(ModelMessagesTypeAdapter.dump_json(messages)):
        if message.get("kind") == "response":
            message = {k: v for k, v in message.items() if k not in _ANSWER_METADATA}
        out.append(_strip(message))
    return out


def request_key(
    model_name: str,
    messages: list[ModelMessage],
    settings: ModelSettings | None,
    params: ModelRequestParameters,
) -> str:
    """Digest of everything that shapes a judge model's answer."""
    body = {
        "model": model_name,
        "messages": _messages(messages),
        "settings": {k: v for k, v in (settings or {}).items() if k != "timeout"},
        "tools": [t.name for t in params.function_tools],
        "output": [t.name for t in params.output_tools],
        "output_mode": params.output_mode,
    }
    data = json.dumps(body, sort_keys=True, default=str).encode()
    return hashlib.sha256(data).hexdigest()


Get = Callable[[str], str | None]
Put = Callable[[str, str, str], None]


def _dump(response: ModelResponse) -> str:
    return ModelMessagesTypeAdapter.dump_json([response]).decode()


def _load(data: str) -> ModelResponse:
    message = ModelMessagesTypeAdapter.validate_json(data)[0]
    assert isinstance(message, ModelResponse)
    return message


class SharedCalls:
    """Judge-model answers kept across runs, in a SQLite file (safe for runs in parallel).

    The file is opened on first use, so a run whose judges ask no model never touches it; one that
    cannot be opened (a read-only home) is warned about once, and answers are then kept in the
    run's store only."""

    NAMESPACE = "judge-calls"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cache: MetricCache | None = None
        self._unusable = False
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> SharedCalls:
        """The cache in ``$IWR_BENCH_CACHE_DIR`` (default ``~/.cache/iwr-bench``)."""
        return cls(default_cache_dir() / "judge-calls.sqlite")

    @staticmethod
    def key(request: str, server: str) -> str:
        """A request's key in this cache: the same request to another server is another answer."""
        return hashlib.sha256(f"{server}\n{request}".encode()).hexdigest()

    def _opened(self) -> MetricCache | None:
        with self._lock:
            if self._cache is None and not self._unusable:
                try:
                    self._cache = MetricCache(self.path)
                except (OSError, sqlite3.Error) as exc:
                    self._unusable = True
                    log.warning("judge answers are not kept across runs: %s", exc)
            return self._cache

    def get(self, key: str) -> str | None:
        """The kept answer (JSON of a model response), or None."""
        cache = self._opened()
        value = None if cache is None else cache.get(self.NAMESPACE, key)
        return value if isinstance(value, str) else None

    def put(self, key: str, response: str) -> None:
        """Keep an answer."""
        cache = self._opened()
        if cache is not None:
            cache.put(self.NAMESPACE, key, response)

    def close(self) -> None:
        """Close the database, if it was opened."""
        with self._lock:
            if self._cache is not None:
                self._cache.close()
                self._cache = None


class StoredModel(WrapperModel):
    """A judge model whose calls are limited and whose answers are kept (see the module doc)."""

    def __init__(
        self,
        wrapped: Model,
        *,
        role: str,
        limit: NamedLimit,
        get: Get,
        put: Put,
        shared: SharedCalls | None = None,
        salt: str = "",
    ) -> None:
        super().__init__(wrapped)
        self.role = role
        """What the run's store files its answers under (``<design label>/<role>`` in a run with
        several designs)."""
        self.salt = salt
        """Mixed into every request's key (a repeated judging's number): the same request under
        another salt is asked again."""
        self.limit = limit
        self._get = get
        self._put = put
        self.shared = shared
        """The cross-run cache, if used."""
        self.hits = 0
        """Answers served from the run's store."""
        self.shared_hits = 0
        """Answers served from the cross-run cache (copied into the run's store)."""
        self.paid = 0

    def _key(
        self, messages: list[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> str:
        key = request_key(f"{self.system}:{self.model_name}", messages, settings, params)
        return hashlib.sha256(f"{key}:{self.salt}".encode()).hexdigest() if self.salt else key

    @property
    def _server(self) -> str | None:
        """The URL answers come from; None for a model in this process (a function, the scripted
        ``test:`` model): free to ask, so not kept across runs."""
        url = self.wrapped.base_url
        return str(url) if url else None

    def _shared_key(self, key: str) -> str:
        return SharedCalls.key(key, self._server or "")

    async def _known(self, key: str) -> str | None:
        known = self._get(key)
        if known is not None:
            self.hits += 1
            return known
        if self.shared is None or self._server is None:
            return None
        known = await anyio.to_thread.run_sync(self.shared.get, self._shared_key(key))
        if known is not None:
            self.shared_hits += 1
            await anyio.to_thread.run_sync(self._put, key, self.role, known)
        return known

    async def _keep(self, key: str, response: ModelResponse) -> None:
        """Keep a paid answer before anyone sees it (``put`` may wait for the disk: a run killed
        the moment after finds it on resume)."""
        self.paid += 1
        data = _dump(response)
        await anyio.to_thread.run_sync(self._put, key, self.role, data)
        if self.shared is not None and self._server is not None:
            await anyio.to_thread.run_sync(self.shared.put, self._shared_key(key), data)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """A stored answer, or a new (limited) request whose answer is then stored."""
        key = self._key(messages, model_settings, model_request_parameters)
        known = await self._known(key)
        if known is not None:
            return _load(known)
        async with self.limit:
            try:
                response = await self.wrapped.request(messages, model_settings, model_request_parameters)
            except ModelHTTPError as exc:
                if is_rate_limited(exc) and isinstance(self.limit, AdaptiveLimit):
                    self.limit.penalise()
                raise
        await self._keep(key, response)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        """Replay a stored answer as a stream, or stream a new one and store it when complete."""
        key = self._key(messages, model_settings, model_request_parameters)
        known = await self._known(key)
        if known is not None:
            yield ReplayedStream(model_request_parameters, _response=_load(known))
            return
        async with self.limit:
            async with self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as stream:
                yield stream
            await self._keep(key, stream.get())


@dataclass
class ReplayedStream(StreamedResponse):
    """A stored :class:`ModelResponse` played back as stream events."""

    _response: ModelResponse = field(kw_only=True)
    _timestamp: datetime = field(default_factory=_utils.now_utc, init=False)

    def __post_init__(self) -> None:
        stored = self._response
        self._usage = stored.usage
        self.provider_response_id = stored.provider_response_id
        self.provider_details = stored.provider_details
        self.canonical_system = stored.canonical_system
        self.finish_reason = stored.finish_reason
        self.metadata = stored.metadata

    def get(self) -> ModelResponse:
        """The stored answer itself once played through (what pydantic-ai keeps in the history,
        so the next turn's request, and its key, are those of the run that paid for it)."""
        if self._finished:
            return self._response
        return super().get()

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        for i, part in enumerate(self._response.parts):
            if isinstance(part, TextPart):
                for event in self._parts_manager.handle_text_delta(vendor_part_id=i, content=part.content):
                    yield event
            elif isinstance(part, ThinkingPart):
                for event in self._parts_manager.handle_thinking_delta(
                    vendor_part_id=i, content=part.content
                ):
                    yield event
            elif isinstance(part, ToolCallPart):
                yield self._parts_manager.handle_tool_call_part(
                    vendor_part_id=i,
                    tool_name=part.tool_name,
                    args=cast("str | dict[str, Any] | None", part.args),
                    tool_call_id=part.tool_call_id,
                )

    @property
    def model_name(self) -> str:
        """Model that gave the stored answer."""
        return self._response.model_name or "stored"

    @property
    def provider_name(self) -> str | None:
        """Provider that gave the stored answer."""
        return self._response.provider_name

    @property
    def provider_url(self) -> str | None:
        """Where the stored answer came from."""
        return self._response.provider_url

    @property
    def timestamp(self) -> datetime:
        """When the replay started."""
        return self._timestamp

    async def close_stream(self) -> None:
        """Nothing to close."""
