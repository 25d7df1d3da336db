"""A pydantic-ai ``FunctionModel`` that answers structured-output agents from a Python function.

The function sees the messages and the agent info and returns the output tool's arguments as a
dict (a valid or invalid answer) or a string (plain text, which a structured agent rejects).
Answers are also streamed, in small pieces, as real providers do.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic_ai import BinaryContent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

Answer = Callable[[list[ModelMessage], AgentInfo], "dict[str, Any] | str"]


@dataclass
class Prompt:
    """The last user prompt of a conversation."""

    text: str
    """Its text parts, joined by newlines."""
    images: int
    """How many images it carries."""
    attempt: int
    """1 for the first answer, 2 after one retry, ..."""


def last_prompt(messages: list[ModelMessage]) -> Prompt:
    """The first user prompt of the run and how many answers were given since."""
    texts: list[str] = []
    images = 0
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and not texts:
                    items = [part.content] if isinstance(part.content, str) else list(part.content)
                    texts = [i for i in items if isinstance(i, str)]
                    images = sum(isinstance(i, BinaryContent) for i in items)
    attempt = 1 + sum(isinstance(m, ModelResponse) for m in messages)
    return Prompt("\n".join(texts), images, attempt)


@dataclass
class Scripted:
    """Builds the model and remembers every prompt it saw."""

    answer: Answer
    delay: float = 0.0
    """Seconds each streamed answer takes to start (a slow judge)."""
    prompts: list[Prompt] = field(default_factory=list[Prompt])
    settings: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])

    def _answer(self, messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any] | str:
        self.prompts.append(last_prompt(messages))
        self.settings.append(dict(info.model_settings or {}))
        return self.answer(messages, info)

    def model(self) -> FunctionModel:
        """The FunctionModel (plain and streamed requests)."""

        def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            got = self._answer(messages, info)
            if isinstance(got, str):
                return ModelResponse(parts=[TextPart(got)])
            return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, json.dumps(got))])

        async def stream(
            messages: list[ModelMessage], info: AgentInfo
        ) -> AsyncIterator[str | DeltaToolCalls]:
            got = self._answer(messages, info)
            if self.delay:
                await anyio.sleep(self.delay)
            if isinstance(got, str):
                for i in range(0, max(1, len(got)), 8):
                    yield got[i : i + 8]
                return
            args = json.dumps(got)
            yield {0: DeltaToolCall(name=info.output_tools[0].name, json_args=args[:8], tool_call_id="c1")}
            for i in range(8, len(args), 8):
                yield {0: DeltaToolCall(json_args=args[i : i + 8])}

        return FunctionModel(reply, stream_function=stream)


QUOTED = re.compile(r"'([^']+)'")


def after_text(prompt: Prompt) -> str:
    """The visible page text after the action, as the assertion judge's prompt gives it."""
    m = re.search(r"Visible text AFTER: (.*)", prompt.text, re.S)
    return m.group(1) if m else ""


def statement(prompt: Prompt) -> str:
    """The assertion being checked."""
    m = re.search(r"Statement to check: (.*)", prompt.text)
    return m.group(1) if m else ""


def truthful_verdict(prompt: Prompt) -> dict[str, Any]:
    """Yes when every quoted phrase of the statement is in the page text after the action."""
    quoted = QUOTED.findall(statement(prompt))
    after = after_text(prompt)
    ok = bool(quoted) and all(q in after for q in quoted)
    return {"reasoning": f"looked for {quoted} after the action", "verdict": "yes" if ok else "no"}


def element_for(prompt: Prompt) -> dict[str, Any]:
    """The listed element whose label is quoted in the description (``sure``), else none."""
    m = re.search(r"Target description: (.*)", prompt.text)
    wanted = QUOTED.findall(m.group(1) if m else "")
    for line in prompt.text.splitlines():
        el = re.match(r"\[(\d+)\] \S+ '([^']*)'", line)
        if el and el.group(2) in wanted:
            return {"index": int(el.group(1)), "sure": True, "reason": f"its label is {el.group(2)!r}"}
    return {"index": None, "sure": False, "reason": "nothing with that label"}


def answer_truthfully(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
    """A scripted assertion judge: :func:`truthful_verdict` of the prompt."""
    del info
    return truthful_verdict(last_prompt(messages))


def answer_grounding(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
    """A scripted grounder: :func:`element_for` of the prompt."""
    del info
    return element_for(last_prompt(messages))
