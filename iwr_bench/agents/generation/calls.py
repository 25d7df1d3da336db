"""One model call: the request, the answer, the caller Protocol and the pydantic-ai agent caller.

Cross-cutting concerns (retries, cache, budget) wrap a :class:`Caller`; see ``wrappers.py``.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from pydantic import BaseModel
from pydantic_ai import Agent, UserContent
from pydantic_ai.messages import ModelResponse, TextPart
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RunUsage

from iwr_bench.agents.generation.config import Price
from iwr_bench.agents.generation.records import CallUsage, SentRequest
from iwr_bench.agents.generation.wire import capturing, summarize


@dataclass(frozen=True)
class ModelCall:
    """Everything one request needs, plus what identifies it for the cache."""

    model_name: str
    """Configured model name."""
    content: list[UserContent]
    """The user message parts: instructions, sheets, frames."""
    settings: dict[str, Any]
    """pydantic-ai model settings."""
    key_parts: dict[str, Any] = field(default_factory=dict[str, Any])
    """JSON-serialisable identity of the request: model, settings, instructions digest, sampling key."""

    def cache_key(self) -> str:
        """SHA-256 of :attr:`key_parts` plus the model name and settings."""
        payload = {"model": self.model_name, "settings": self.settings, **self.key_parts}
        text = json.dumps(payload, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()


class ModelAnswer(BaseModel):
    """What a model call returned (this is what the response cache stores)."""

    text: str
    """Concatenated text parts of the answer."""
    finish_reason: str | None = None
    """Finish reason (``stop``, ``length``, ...)."""
    usage: CallUsage = CallUsage()
    """Tokens and cost."""
    provider_model: str | None = None
    """Model name the provider reported."""
    attempts: int = 1
    """Requests made for this answer, retries included."""
    latency_s: float = 0.0
    """Seconds spent on the call (all attempts)."""
    cache_hit: bool = False
    """Read from the cache rather than requested."""
    sent: SentRequest | None = None
    """What the request that produced this answer really carried (kept in the cache too)."""


class Caller(Protocol):
    """Sends one request and returns the answer; raises on provider errors."""

    async def __call__(self, call: ModelCall) -> ModelAnswer:
        """Make the call."""
        ...


class AgentCaller:
    """The base caller: one pydantic-ai agent run, one model request, text output, no tools."""

    def __init__(self, model: Model, price: Price | None = None) -> None:
        self.model = model
        self.price = price
        self.agent: Agent[None, str] = Agent(model, output_type=str, retries=0)

    async def __call__(self, call: ModelCall) -> ModelAnswer:
        """Run the agent for exactly one model response and return it as it came.

        The run stops at the first response, so an empty answer is returned (as an empty page)
        rather than re-prompted.
        """
        start = time.monotonic()
        response: ModelResponse | None = None
        settings: ModelSettings = ModelSettings(**call.settings)  # pyright: ignore[reportArgumentType]
        with capturing() as wire:
            before = len(wire)
            async with self.agent.iter(call.content, model_settings=settings) as run:
                async for node in run:
                    if Agent.is_call_tools_node(node):
                        response = node.model_response
                        break
                usage = run.usage
            sent = summarize(wire[-1], call.settings) if len(wire) > before else None
        if response is None:  # pragma: no cover - the graph always reaches a response first
            raise RuntimeError("the agent run ended without a model response")
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        return ModelAnswer(
            text=text,
            finish_reason=response.finish_reason,
            usage=self._usage(usage),
            provider_model=response.model_name,
            attempts=1,
            latency_s=time.monotonic() - start,
            sent=sent,
        )

    def _usage(self, usage: RunUsage) -> CallUsage:
        base = CallUsage(
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, requests=usage.requests
        )
        if self.price is not None:
            base.cost_usd = self.price.cost(usage.input_tokens, usage.output_tokens)
            base.cost_source = "override"
        elif isinstance(usage.cost, Decimal):
            base.cost_usd = float(usage.cost)
            base.cost_source = "genai-prices"
        return base
