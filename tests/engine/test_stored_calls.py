"""Judge-model answers kept by request: a multi-turn conversation replayed from the store asks nothing."""

from __future__ import annotations

from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply, serve
from pydantic import BaseModel
from pydantic_ai import Agent

from iwr_bench.agents.generation import ModelConfig, build_model
from iwr_bench.engine.judge_model import StoredModel
from iwr_bench.engine.limits import AdaptiveLimit

pytestmark = pytest.mark.anyio


class Found(BaseModel):
    """The agent's answer."""

    seen: str


def _agent(model: StoredModel) -> Agent[None, Found]:
    agent = Agent(model, output_type=Found)

    @agent.tool_plain
    def look(where: str) -> str:
        """Look somewhere."""
        return f"a button at {where}"

    return agent


async def _ask(model: StoredModel) -> Found:
    async def handler(_ctx: Any, stream: Any) -> None:  # streamed, as the agent judge asks
        async for _ in stream:
            pass

    async with model:
        result = await _agent(model).run("find the button", event_stream_handler=handler)
    return result.output


def _stored(url: str, calls: dict[str, str]) -> StoredModel:
    return StoredModel(
        build_model(ModelConfig(name="judge-vlm", base_url=url)),
        role="step",
        limit=AdaptiveLimit("judge calls", 2),
        get=calls.get,
        put=lambda key, _role, data: calls.__setitem__(key, data),
    )


async def test_a_streamed_conversation_is_replayed_whole_from_the_store(allow_requests: None) -> None:
    """Every turn of a tool-using conversation comes back from the store: a turn's key holds the
    earlier answers, so a stored answer must read back as it was given (provider URL, details and
    finish reason included), or the next turn's key differs and is paid again."""
    fake = FakeOpenAI(
        replies=[
            Reply(tool_call=("look", '{"where": "top"}')),
            Reply(tool_call=("look", '{"where": "left"}')),
            Reply(tool_call=("final_result", '{"seen": "a button"}')),
        ]
    )
    calls: dict[str, str] = {}
    async with serve(fake):
        first = _stored(fake.url, calls)
        assert (await _ask(first)).seen == "a button"
        assert len(fake.requests) == 3 and first.paid == 3 and len(calls) == 3
        again = _stored(fake.url, calls)
        assert (await _ask(again)).seen == "a button"
    assert len(fake.requests) == 3, "a stored turn was asked again"
    assert again.hits == 3 and again.paid == 0
