"""What the LLM judges share: one structured question to a model, streamed, retried, never raising.

:func:`ask` runs a pydantic-ai agent with structured output and reports the call through a
:class:`CallReporter` (see :mod:`iwr_bench.agents.events`): who asks and the request, then the
model's prose as it streams (text, thinking, and the prose field of the structured answer, never
its raw JSON), tool calls and their results, and the answer as fields once complete; so a watcher
sees the judge reason as it happens. An answer that does not validate goes back to the model with
the validation error (pydantic-ai's output retries), reported as a retry with that feedback; a
transport error is retried the same number of times. When nothing
usable comes back, :func:`ask` returns an :class:`Asked` whose ``output`` is None and whose
``error`` says why: the caller turns that into ``judge_error`` (assertions), a failed grounding, or
an HVS of 0 (rubric), as protocol.md says.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import anyio
from pydantic import BaseModel
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

from iwr_bench.agents.events import (
    PROSE_FIELDS,
    FieldValue,
    JudgeAnswer,
    JudgeCallStarted,
    JudgeDelta,
    JudgeRetry,
    JudgeRole,
    JudgeToolCall,
    emit,
    new_call_id,
    prose_of,
)

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


def answer_fields(output: object) -> dict[str, FieldValue]:
    """A structured answer's fields as shown: scalars as they are, the rest as text, prose left out."""
    data: dict[str, object] = output.model_dump() if isinstance(output, BaseModel) else {"answer": output}
    shown: dict[str, FieldValue] = {}
    for key, value in data.items():
        if key in PROSE_FIELDS:
            continue
        shown[key] = value if isinstance(value, str | int | float | bool) or value is None else str(value)
    return shown


class CallReporter:
    """Reports the events of one judge model call (see the module doc).

    Text and thinking stream as they come; a structured answer (output-tool arguments, JSON)
    streams only its prose field, as that grows, and is shown as fields once complete.
    """

    def __init__(self, role: JudgeRole, who: str, request: str, vote: int | None = None) -> None:
        self.role: JudgeRole = role
        self.call = new_call_id(role)
        self.who, self.request, self.vote = who, " ".join(request.split())[:300], vote
        self._args = ""
        self._shown = 0

    def started(self, attempt: int = 1) -> None:
        """The call (or a new attempt after a transport error) began."""
        emit(
            JudgeCallStarted(
                call=self.call,
                role=self.role,
                who=self.who,
                vote=self.vote,
                request=self.request,
                attempt=attempt,
            )
        )

    def retry(self, attempt: int, error: str, transport: bool = False) -> None:
        """An answer went back with ``error`` as feedback (or a failed request is asked again)."""
        self._args, self._shown = "", 0
        emit(
            JudgeRetry(
                call=self.call, role=self.role, attempt=attempt, error=error[:300], transport=transport
            )
        )

    def answered(self, fields: dict[str, FieldValue], error: str = "") -> None:
        """The call ended with an answer (its fields), or without one (``error``)."""
        emit(JudgeAnswer(call=self.call, role=self.role, fields=fields, error=error))

    def _text(self, text: str) -> None:
        if text:
            emit(JudgeDelta(call=self.call, role=self.role, text=text))

    def _answer_piece(self, args: str, start: bool) -> None:
        if start:
            self._args, self._shown = "", 0
        self._args += args
        prose = prose_of(self._args)
        if len(prose) > self._shown:
            self._text(prose[self._shown :])
            self._shown = len(prose)

    def event(self, event: AgentStreamEvent, result: str = "") -> None:
        """Report one streamed event of the agent; ``result`` summarises a tool's result."""
        if isinstance(event, PartStartEvent):
            part = event.part
            if isinstance(part, TextPart | ThinkingPart):
                self._text(part.content)
            elif isinstance(part, ToolCallPart) and isinstance(part.args, str):
                self._answer_piece(part.args, start=True)
        elif isinstance(event, PartDeltaEvent):
            delta = event.delta
            if isinstance(delta, TextPartDelta):
                self._text(delta.content_delta)
            elif isinstance(delta, ThinkingPartDelta):
                self._text(delta.content_delta or "")
            elif isinstance(delta, ToolCallPartDelta) and isinstance(delta.args_delta, str):
                self._answer_piece(delta.args_delta, start=False)
        elif isinstance(event, FunctionToolCallEvent):
            args = event.part.args_as_json_str()
            emit(JudgeToolCall(call=self.call, role=self.role, tool=event.part.tool_name, args=args))
        elif isinstance(event, FunctionToolResultEvent) and result:
            emit(JudgeToolCall(call=self.call, role=self.role, tool=event.part.tool_name, result=result))

    def handler(self) -> Any:
        """An ``event_stream_handler`` for ``agent.run`` that reports through this reporter."""

        async def handle(ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
            # Called once per model request (and per tool step): a request that carries retry
            # feedback is the model being asked again because its last answer was unusable.
            retried = _retry_parts(ctx.messages[-1]) if ctx.messages else []
            if retried:
                attempt = sum(bool(_retry_parts(m)) for m in ctx.messages)
                content = retried[0].content
                self.retry(attempt, content if isinstance(content, str) else json.dumps(content, default=str))
            async for event in events:
                self.event(event)

        return handle


async def ask(
    agent: Agent[Any, T],
    prompt: Sequence[UserContent],
    *,
    reporter: CallReporter,
    retries: int,
    settings: ModelSettings | None = None,
    deps: Any = None,
    shown: Callable[[T], dict[str, FieldValue]] = answer_fields,
) -> Asked[T]:
    """Ask ``agent`` once (with up to ``retries`` retries), reporting through ``reporter``; see the
    module doc. ``shown`` turns the answer into the fields a watcher sees."""
    transport = 0
    last = ""
    reporter.started()
    while True:
        try:
            result = await agent.run(
                prompt,
                deps=deps,
                model_settings=settings,
                retries={"output": retries},
                event_stream_handler=reporter.handler(),
            )
        except RunCancelled:
            raise
        except UnexpectedModelBehavior as exc:
            error = f"unusable answer after {retries} retries: {_short(exc)}"
            reporter.answered({}, error)
            return Asked(None, error, retries + transport)
        except ModelRequestRejectedError as exc:  # bad key, unknown model, too long: retrying cannot help
            error = f"{type(exc).__name__}: {_short(exc)}"
            reporter.answered({}, error)
            return Asked(None, error, transport)
        except (AgentRunError, *_TRANSIENT) as exc:
            last = f"{type(exc).__name__}: {_short(exc)}"
            if transport >= retries:
                reporter.answered({}, last)
                return Asked(None, last, transport)
            transport += 1
            reporter.retry(transport, last, transport=True)
            await anyio.sleep(min(8.0, 0.5 * 2**transport))
            reporter.started(attempt=transport + 1)
            continue
        messages = result.all_messages()
        requests = sum(1 for m in messages if not isinstance(m, ModelRequest))
        reporter.answered(shown(result.output))
        return Asked(result.output, "", _retry_prompts(messages) + transport, requests)


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] + ("..." if len(text) > 300 else "")
