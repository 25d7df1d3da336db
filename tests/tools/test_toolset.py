"""The pydantic-ai toolset, driven by a scripted FunctionModel (no real model calls)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic_ai import Agent, BinaryContent, models
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from iwr_bench.tools.models import PageSpec
from iwr_bench.tools.pool import PagePool
from iwr_bench.tools.toolset import build_toolset

pytestmark = [pytest.mark.browser, pytest.mark.anyio]
models.ALLOW_MODEL_REQUESTS = False

PAGE = """<html><body><h1 id="t">Before</h1>
<button onclick="document.getElementById('t').textContent = 'After'">Change</button></body></html>"""

PLAN = [
    ("observe", {}),
    ("click", {"index": 7}),  # out of range: comes back as a retry
    ("click", {"index": 0}),
    ("screenshot", {}),
    ("page_state", {}),
]


def _script() -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    step = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal step
        if step < len(PLAN):
            name, args = PLAN[step]
            step += 1
            return ModelResponse(parts=[ToolCallPart(name, args)])
        return ModelResponse(parts=[TextPart("done")])

    return respond


async def test_agent_drives_toolset(pool: PagePool, write_page: Callable[..., Path]) -> None:
    async with pool.page(PageSpec(page=str(write_page(PAGE)))) as tools:
        agent = Agent(FunctionModel(_script()), toolsets=[build_toolset(tools)])
        result = await agent.run("click the button")
        after = await tools.observe()
    assert result.output == "done"
    assert "After" in after.text
    messages = result.all_messages()
    returned = [str(p.content) for m in messages if isinstance(m, ModelRequest) for p in m.parts]
    assert any("out of range" in text for text in returned)  # the misuse went back to the model
    images = [
        c
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart) and not isinstance(p.content, str)
        for c in p.content
        if isinstance(c, BinaryContent)
    ]
    assert images and images[0].media_type == "image/png"
