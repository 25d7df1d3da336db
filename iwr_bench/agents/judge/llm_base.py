"""What the LLM judges share: one structured question to a model, streamed, retried, never raising.

:func:`ask` runs a pydantic-ai agent with structured output. While the answer streams in, every
piece of text, thinking or output-tool arguments is reported as a ``judge_delta`` event and every
tool call (and, for tool-using judges, its result) as ``judge_tool_call`` (see
:mod:`iwr_bench.agents.events`), so a watcher sees the judge reason as it happens. An answer that
does not validate goes back to the model with the validation error (pydantic-ai's output retries),
reported as ``judge_retry``; a transport error is retried the same number of times. When nothing
usable comes back, :func:`ask` returns an :class:`Asked` whose ``output`` is None and whose
``error`` says why: the caller turns that into ``judge_error`` (assertions), a failed grounding, or
an HVS of 0 (rubric), as protocol.md says.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio
from pydantic_ai import Agent, RunContext
from pydantic_ai.exceptions import (
    AgentRunError,
    ModelAPIError,
    ModelRequestRejectedError,
    RunCancelled,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import (
    AgentStreamEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ModelMessage,
    ModelRequest,
    PartDeltaEvent,
    PartStartEvent,
    RetryFeedbackPart,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
    ToolCallPart,
    ToolCallPartDelta,
    ToolReturnPart,
    UserContent,
)
from pydantic_ai.settings import ModelSettings

from iwr_bench.agents.events import emit

T = TypeVar("T")

_TRANSIENT: tuple[type[BaseException], ...] = (ModelAPIError, TimeoutError, OSError)


@dataclass
class Asked(Generic[T]):
    """The outcome of one question."""

    output: T | None
    """The validated answer, or None when the judge failed."""
    error: str = ""
    """Why there is no answer."""
    retries: int = 0
    """Answers sent back for another try, plus transport retries."""
    requests: int = 0
    """Model requests made (stored answers included)."""


def model_label(model: Any) -> str:
    """``system:model_name`` of a pydantic-ai model (what results record as the judge)."""
    return f"{getattr(model, 'system', '?')}:{getattr(model, 'model_name', type(model).__name__)}"


def _retry_prompts(messages: Sequence[ModelMessage]) -> int:
    return sum(
        isinstance(part, RetryFeedbackPart)
        or (isinstance(part, ToolReturnPart) and part.outcome == "retried")
        for m in messages
        if isinstance(m, ModelRequest)
        for part in m.parts
    )


def _retry_parts(message: ModelMessage) -> list[RetryFeedbackPart | ToolReturnPart]:
    if not isinstance(message, ModelRequest):
        return []
    return [
        p
        for p in message.parts
        if isinstance(p, RetryFeedbackPart) or (isinstance(p, ToolReturnPart) and p.outcome == "retried")
    ]


def _reporter(role: str) -> Any:
    async def handle(ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
        # Called once per model request (and per tool step): a request that carries retry
        # feedback is the model being asked again because its last answer was unusable.
        retried = _retry_parts(ctx.messages[-1]) if ctx.messages else []
        if retried:
            attempt = sum(bool(_retry_parts(m)) for m in ctx.messages)
            content = retried[0].content
            error = content if isinstance(content, str) else json.dumps(content, default=str)
            emit("judge_retry", {"role": role, "attempt": attempt, "error": error[:300]})
        async for event in events:
            report_event(role, event)

    return handle


def report_event(role: str, event: AgentStreamEvent, result: str = "") -> None:
    """Emit one streamed event of a judge agent: text pieces as ``judge_delta``, a tool call as
    ``judge_tool_call`` and, with ``result`` (a short summary), a tool's result the same way."""
    text = ""
    if isinstance(event, PartStartEvent):
        if isinstance(event.part, TextPart | ThinkingPart):
            text = event.part.content
        elif isinstance(event.part, ToolCallPart) and isinstance(event.part.args, str):
            text = event.part.args  # the first piece of a structured answer
    elif isinstance(event, PartDeltaEvent):
        delta = event.delta
        if isinstance(delta, TextPartDelta):
            text = delta.content_delta
        elif isinstance(delta, ThinkingPartDelta):
            text = delta.content_delta or ""
        elif isinstance(delta, ToolCallPartDelta) and isinstance(delta.args_delta, str):
            text = delta.args_delta
    elif isinstance(event, FunctionToolCallEvent):
        args = event.part.args_as_json_str()
        emit("judge_tool_call", {"role": role, "tool": event.part.tool_name, "args": args})
    elif isinstance(event, FunctionToolResultEvent) and result:
        emit("judge_tool_call", {"role": role, "tool": event.part.tool_name, "result": result})
    if text:
        emit("judge_delta", {"role": role, "text": text})


async def ask(
    agent: Agent[Any, T],
    prompt: Sequence[UserContent],
    *,
    role: str,
    retries: int,
    settings: ModelSettings | None = None,
    deps: Any = None,
) -> Asked[T]:
    """Ask ``agent`` once (with up to ``retries`` retries); see the module doc."""
    transport = 0
    last = ""
    while True:
        try:
            result = await agent.run(
                prompt,
                deps=deps,
                model_settings=settings,
                retries={"output": retries},
                event_stream_handler=_reporter(role),
            )
        except RunCancelled:
            raise
        except UnexpectedModelBehavior as exc:
            return Asked(None, f"unusable answer after {retries} retries: {_short(exc)}", retries + transport)
        except ModelRequestRejectedError as exc:  # bad key, unknown model, too long: retrying cannot help
            return Asked(None, f"{type(exc).__name__}: {_short(exc)}", transport)
        except (AgentRunError, *_TRANSIENT) as exc:
            last = f"{type(exc).__name__}: {_short(exc)}"
            if transport >= retries:
                return Asked(None, last, transport)
            transport += 1
            emit("judge_retry", {"role": role, "attempt": transport, "error": last})
            await anyio.sleep(min(8.0, 0.5 * 2**transport))
            continue
        messages = result.all_messages()
        requests = sum(1 for m in messages if not isinstance(m, ModelRequest))
        return Asked(result.output, "", _retry_prompts(messages) + transport, requests)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")
