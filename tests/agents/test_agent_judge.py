"""The ``agent`` step judge and the replay-policy role, on the judge site in a real Chromium.

The agent's model is a scripted pydantic-ai ``FunctionModel`` that reads the step from its prompt
and calls the tools in order (observe, the action tool with the index it found, text_snapshot),
then answers from what the snapshot says, as an honest model would; and, over HTTP, the fake
OpenAI server answering the same calls in a fixed order.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, Reply
from judge_site import MUTANTS, SITE, write_page
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from iwr_bench.agents.events import AgentEvent
from iwr_bench.agents.grounding import HeuristicGrounder, element_label
from iwr_bench.agents.judge.agent import AgentStepJudge
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.agents.judge.replay import DefaultReplay
from iwr_bench.dataset.layout import Task
from iwr_bench.dataset.models import Action
from iwr_bench.engine.config import JudgeSettings
from iwr_bench.engine.judges import build_judges
from iwr_bench.engine.limits import Limits
from iwr_bench.plugins import PageTools, Performed, create, names, register
from iwr_bench.registry import describe
from iwr_bench.tools.models import Observation
from iwr_bench.tools.pool import PagePool

browser = [pytest.mark.browser, pytest.mark.anyio]
Events = list[tuple[str, dict[str, object]]]
QUOTED = re.compile(r"'([^']+)'")
ACTION_TOOL = {"Click": "click", "Type": "type_text", "Press": "press", "Scroll": "scroll"}


def _prompt(messages: list[ModelMessage]) -> dict[str, str]:
    """The step's fields (``Step 1: Click``, ``Description: ...``) from the first user prompt."""
    first = messages[0]
    assert isinstance(first, ModelRequest)
    text = "\n".join(
        item
        for part in first.parts
        for item in ([part.content] if isinstance(part.content, str) else part.content)  # type: ignore[union-attr]
        if isinstance(item, str)
    )
    fields = dict(re.findall(r"^([A-Z][a-z ]+): (.*)$", text, re.M))
    fields["type"] = re.search(r"^Step \d+: (\w+)", text, re.M).group(1)  # type: ignore[union-attr]
    return fields


def _returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    return [
        p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)
    ]


def honest(messages: list[ModelMessage], info: AgentInfo) -> tuple[str, dict[str, Any]]:
    """Observe, act on the element the description quotes, read the snapshot, answer from it."""
    step = _prompt(messages)
    done = [p.tool_name for p in _returns(messages) if p.outcome == "success"]
    action = ACTION_TOOL[step["type"]]
    if step["type"] in ("Click", "Type") and not done:
        return "observe", {}
    if action not in done:
        if step["type"] in ("Press", "Scroll"):
            return action, {}
        obs = next(p.content for p in _returns(messages) if isinstance(p.content, Observation))
        wanted = QUOTED.findall(step["Description"])[0].lower()
        target = next((e for e in obs.elements if wanted in element_label(e).lower()), None)
        if target is None:
            return info.output_tools[0].name, {
                "reasoning": f"no element labelled {wanted!r}",
                "performed": False,
                "verdict": "undetermined",
            }
        return action, {"index": target.index}
    if "text_snapshot" not in done:
        return "text_snapshot", {}
    snapshot = next(str(p.content) for p in _returns(messages) if p.tool_name == "text_snapshot")
    quoted = QUOTED.findall(step.get("Statement to check after the action", ""))
    holds = all(q in snapshot for q in quoted)
    said = " / ".join(line for line in snapshot.splitlines() if "Count" in line or "Hello" in line)
    return info.output_tools[0].name, {
        "reasoning": f"looked for {quoted}; the page reads: {said}",
        "performed": True,
        "verdict": "yes" if holds else "no",
    }


def looping(messages: list[ModelMessage], info: AgentInfo) -> tuple[str, dict[str, Any]]:
    """Never acts, never answers: observes again and again."""
    del messages, info
    return "observe", {}


def scripted(decide: Any) -> FunctionModel:
    """A FunctionModel (plain and streamed) whose every turn is one call chosen by ``decide``."""

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        name, args = decide(messages, info)
        return ModelResponse(parts=[ToolCallPart(name, json.dumps(args))])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[DeltaToolCalls]:
        name, args = decide(messages, info)
        turn = sum(isinstance(m, ModelResponse) for m in messages)
        yield {0: DeltaToolCall(name=name, json_args=json.dumps(args), tool_call_id=f"call{turn}")}

    return FunctionModel(reply, stream_function=stream, model_name="scripted-agent")


def _collect(events: Events) -> Any:
    def sink(event: AgentEvent) -> None:  # a typed event: a malformed one fails where it is built
        data = event.model_dump()
        events.append((data["kind"], data))

    return sink


def _executor(pool: PagePool, step: Any, events: Events | None = None) -> Executor:
    sink = _collect(events) if events is not None else None
    return Executor(pool, HeuristicGrounder(semantic=False), HeuristicAssertionJudge(), emit=sink, step=step)


@pytest.mark.parametrize("page", ["reference", *(m for m in MUTANTS if m != "recoloured")])
@pytest.mark.browser
@pytest.mark.anyio
async def test_agent_performs_and_judges_each_step(
    task: Task, pool: PagePool, tmp_path: Path, page: str
) -> None:
    events: Events = []
    judge = AgentStepJudge(scripted(honest))
    html = SITE
    expected: tuple[int, str | None] = (5, None)
    if page != "reference":
        old, new, at, failure = MUTANTS[page]
        html, expected = SITE.replace(old, new), (at, failure)
    replay = await _executor(pool, judge, events).replay(
        task, write_page(tmp_path / page, html), tmp_path / "ev"
    )
    failed = next((a for a in replay.actions if a.status == "failed"), None)
    assert (replay.success_steps, failed.failure if failed else None) == expected, replay.actions
    first = replay.actions[0]
    if page != "label_changed":
        assert first.grounding is not None and first.grounding.grounder == "agent:function:scripted-agent"
        assert "Add one" in first.grounding.reason  # the element acted on, from the observe it made
    if page == "reference":
        click = replay.actions[1]
        assert click.assertion is not None and click.assertion.verdict == "yes"
        assert [c.split("(")[0] for c in click.tool_calls] == ["observe", "click", "text_snapshot"]
        assert "Count: 2" in click.tool_calls[2]  # the snapshot's result is kept with the call
        assert click.budget is not None and (click.budget.max_steps, click.budget.steps) == (12, 3)
        assert click.budget.tokens > 0 and click.budget.exhausted is None
        assert replay.actions[3].assertion and replay.actions[3].assertion.verdict == "yes"  # Hello, Ada!
        assert replay.actions[4].scroll_moved_px and replay.actions[4].scroll_moved_px > 5
        assert (tmp_path / "ev" / "step_5.png").is_file()
    if page == "off_by_one":
        assert failed is not None and failed.assertion is not None
        assert failed.assertion.verdict == "no" and "Count: 3" in failed.assertion.reasoning
    if page == "label_changed":
        assert failed is not None and "no element labelled 'add one'" in failed.message
    calls = [d for k, d in events if k == "judge_tool_call" and d["role"] == "step"]
    assert any(d["tool"] == "observe" and "args" in d for d in calls)  # the call, live
    assert any(d["tool"] == "observe" and "elements" in str(d.get("result")) for d in calls)  # its result


@pytest.mark.browser
@pytest.mark.anyio
async def test_a_model_that_never_answers_hits_the_step_budget(
    task: Task, pool: PagePool, tmp_path: Path
) -> None:
    judge = AgentStepJudge(scripted(looping), max_steps=4)
    replay = await _executor(pool, judge).replay(task, write_page(tmp_path / "p", SITE), tmp_path / "ev")
    first = replay.actions[0]
    assert replay.success_steps == 0 and first.status == "failed" and first.failure == "judge_error"
    assert "step budget exhausted" in first.message and "max_steps=4" in first.message
    assert first.budget is not None and first.budget.exhausted == "steps" and first.budget.steps == 4
    assert len(first.tool_calls) == 4 and all(c.startswith("observe()") for c in first.tool_calls)
    assert [a.status for a in replay.actions[1:]] == ["not_run"] * 4


@pytest.mark.browser
@pytest.mark.anyio
async def test_a_token_budget_ends_the_run(task: Task, pool: PagePool, tmp_path: Path) -> None:
    judge = AgentStepJudge(scripted(honest), max_tokens=1, before_screenshot=False)
    replay = await _executor(pool, judge).replay(task, write_page(tmp_path / "p", SITE), tmp_path / "ev")
    first = replay.actions[0]
    assert first.status == "failed" and first.failure == "judge_error" and "max_tokens=1" in first.message
    assert first.budget is not None and first.budget.exhausted == "tokens"


# -- the replay-policy role --------------------------------------------------------------------


class PageDownScroll:
    """A policy that scrolls with the PageDown key and counts any move as done (presses as usual)."""

    name = "page-down"

    async def __call__(self, tools: PageTools, action: Action) -> Performed:
        if action.type == "Press":
            return await DefaultReplay()(tools, action)
        before = (await tools.page_state()).scroll_y
        await tools.press("PageDown")
        moved = abs((await tools.page_state()).scroll_y - before)
        ok = moved > 0
        return Performed(
            ok=ok,
            failure=None if ok else "no_scroll",
            tool_calls=["press('PageDown')"],
            scroll_moved_px=moved,
        )


@register("replay", "page-down")
def page_down() -> PageDownScroll:
    """Scroll with the PageDown key."""
    return PageDownScroll()


@pytest.mark.browser
@pytest.mark.anyio
async def test_a_registered_replay_policy_performs_scrolls(
    task: Task, pool: PagePool, tmp_path: Path
) -> None:
    assert {"default", "official", "page-down"} <= set(names("replay")) and names("step") == ["agent"]
    assert [o.name for o in describe("step", "agent").options] == [
        "max_steps",
        "max_tokens",
        "retries",
        "before_screenshot",
    ]
    policy, _ = create("replay", "page-down")
    executor = Executor(pool, HeuristicGrounder(semantic=False), HeuristicAssertionJudge(), policy=policy)
    replay = await executor.replay(task, write_page(tmp_path / "p", SITE), tmp_path / "ev")
    scroll = replay.actions[4]
    assert replay.success_steps == 5 and scroll.tool_calls == ["press('PageDown')"]
    assert scroll.scroll_moved_px is not None and scroll.scroll_moved_px > 100  # a page, not half a viewport
    assert replay.actions[3].tool_calls == ["press('Enter')"]  # the policy presses too (a key it knows)


# -- through the engine's judge builder, over HTTP -----------------------------------------------


def _call(name: str, args: dict[str, Any] | None = None) -> Reply:
    return Reply(tool_call=(name, json.dumps(args or {})))


def _answer(verdict: str = "yes") -> Reply:
    return _call(
        "final_result", {"reasoning": "the snapshot shows it", "performed": True, "verdict": verdict}
    )


@pytest.mark.browser
@pytest.mark.anyio
async def test_step_judge_from_run_settings_over_openai_http(
    task: Task, pool: PagePool, tmp_path: Path, fake: FakeOpenAI
) -> None:
    fake.replies = [
        *(_call("observe"), _call("click", {"index": 0}), _call("text_snapshot"), _answer()),
        *(_call("observe"), _call("click", {"index": 0}), _call("text_snapshot"), _answer()),
        *(_call("observe"), _call("type_text", {"index": 2}), _answer()),
        *(_call("press"), _call("text_snapshot"), _answer()),
        *(_call("scroll"), _answer()),
    ]
    settings = JudgeSettings.model_validate(
        {"model": "judge-vlm", "base_url": fake.url, "step": {"name": "agent", "options": {"max_steps": 6}}}
    )
    limits = Limits(
        browser_pages=1, metric_workers=1, judge_calls=2, provider_calls={}, default_provider_calls=1
    )
    answers: dict[str, str] = {}
    judges = build_judges(settings, limits, answers.get, lambda k, r, d: answers.__setitem__(k, d))
    assert judges.describe()["designs"]["step"] == {
        "name": "agent",
        "kind": "builtin",
        "module": "iwr_bench.agents.judge.agent",
        "options": {"max_steps": 6},
        "model": "judge-vlm",
    }
    async with judges:
        executor = Executor(pool, judges.grounder, judges.assertions, policy=judges.replay, step=judges.step)
        replay = await executor.replay(task, write_page(tmp_path / "p", SITE), tmp_path / "ev")
    assert replay.success_steps == 5, replay.actions
    assert [a.assertion.verdict for a in replay.actions if a.assertion] == ["yes", "yes"]
    assert replay.actions[2].tool_calls[1].startswith("type_text(index=2) -> ok")
    assert all(a.budget and a.budget.max_steps == 6 for a in replay.actions)
    assert len(fake.requests) == 16 and len(answers) == 16  # every answer kept in the run's store
    sent = fake.requests[1]
    assert {t["function"]["name"] for t in sent["tools"]} == {
        "observe",
        "text_snapshot",
        "screenshot",
        "hover",
        "scroll",
        "click",
        "final_result",
    }
