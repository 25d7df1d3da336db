"""Judge models as the engine runs them: under the "judge calls" limit, with answers kept in the store.

:class:`StoredModel` wraps any pydantic-ai model. Each request takes a slot of the judge limit
(a 429 halves it for a while), and each answer is stored in the run's ``calls`` table under a
digest of the request (messages without their timestamps, settings, tools and output schema).
When an interrupted replay is executed again on resume, the same requests get the stored
answers back and nothing is paid twice. Streamed requests are served the same way: a stored
answer is replayed as a stream.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

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

_VOLATILE = frozenset({"timestamp", "run_id", "conversation_id", "provider_response_id"})


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in _VOLATILE}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_strip(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def request_key(
    model_name: str,
    messages: list[ModelMessage],
    settings: ModelSettings | None,
    params: ModelRequestParameters,
) -> str:
    """Digest of everything that shapes a judge model's answer."""
    body = {
        "model": model_name,
        "messages": _strip(json.loads(ModelMessagesTypeAdapter.dump_json(messages))),
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


class StoredModel(WrapperModel):
    """A judge model whose calls are limited and whose answers are kept (see the module doc)."""

    def __init__(self, wrapped: Model, *, role: str, limit: NamedLimit, get: Get, put: Put) -> None:
        super().__init__(wrapped)
        self.role = role
        self.limit = limit
        self._get = get
        self._put = put
        self.hits = 0
        self.paid = 0

    def _key(
        self, messages: list[ModelMessage], settings: ModelSettings | None, params: ModelRequestParameters
    ) -> str:
        return request_key(f"{self.system}:{self.model_name}", messages, settings, params)

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """A stored answer, or a new (limited) request whose answer is then stored."""
        key = self._key(messages, model_settings, model_request_parameters)
        known = self._get(key)
        if known is not None:
            self.hits += 1
            return _load(known)
        async with self.limit:
            try:
                response = await self.wrapped.request(messages, model_settings, model_request_parameters)
            except ModelHTTPError as exc:
                if is_rate_limited(exc) and isinstance(self.limit, AdaptiveLimit):
                    self.limit.penalise()
                raise
        self.paid += 1
        self._put(key, self.role, _dump(response))
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
        known = self._get(key)
        if known is not None:
            self.hits += 1
            yield ReplayedStream(model_request_parameters, _response=_load(known))
            return
        async with self.limit:
            async with self.wrapped.request_stream(
                messages, model_settings, model_request_parameters, run_context
            ) as stream:
                yield stream
            self.paid += 1
            self._put(key, self.role, _dump(stream.get()))


@dataclass
class ReplayedStream(StreamedResponse):
    """A stored :class:`ModelResponse` played back as stream events."""

    _response: ModelResponse = field(kw_only=True)
    _timestamp: datetime = field(default_factory=_utils.now_utc, init=False)

    def __post_init__(self) -> None:
        self._usage = self._response.usage

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
        """Not known for a stored answer."""
        return None

    @property
    def timestamp(self) -> datetime:
        """When the replay started."""
        return self._timestamp

    async def close_stream(self) -> None:
        """Nothing to close."""
