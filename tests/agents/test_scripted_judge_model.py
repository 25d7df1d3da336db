"""The built-in scripted judge model ``test:``: every judge role gets valid answers, offline.

The judges are the real ones, on the model :func:`build_model` gives for ``test:``, replaying the
judge site in a real Chromium (the llm grounder and assertion judge, and the ``agent`` step judge
built from run settings), or asked directly (the rubric judge, a plain-text agent, a script file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from judge_site import SITE, write_page
from pydantic_ai import Agent
from pydantic_ai.models.function import FunctionModel

from iwr_bench.agents.events import AgentEvent, emitting
from iwr_bench.agents.generation import ModelConfig, build_model
from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.grounding_llm import LLMGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.agents.judge.lab import MeteredModel
from iwr_bench.agents.judge.llm import LLMAssertionJudge
from iwr_bench.agents.judge.llm_base import model_label
from iwr_bench.agents.judge.records import AssertionRequest
from iwr_bench.agents.judge.rubric import RUBRIC_PARTS, RubricJudge
from iwr_bench.agents.scripted_model import PLAIN_TEXT
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.config import JudgeSettings
from iwr_bench.engine.judges import build_judges
from iwr_bench.engine.limits import Limits
from iwr_bench.errors import UserError
from iwr_bench.tools.pool import PagePool

Events = list[tuple[str, dict[str, Any]]]
PNG = b"\x89PNG\r\n\x1a\n not looked at"


def _collect(events: Events) -> Any:
    def sink(event: AgentEvent) -> None:
        data = event.model_dump()
        events.append((data["kind"], data))

    return sink


def _streamed(events: Events, role: str) -> str:
    return "".join(str(d["text"]) for k, d in events if k == "judge_delta" and d["role"] == role)


def test_test_model_needs_no_key_and_is_labelled_scripted(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    model = build_model(ModelConfig(name="test:"))
    assert isinstance(model, FunctionModel) and model_label(model) == "scripted:test"
    assert LLMAssertionJudge(model).name == "llm:scripted:test"


@pytest.mark.anyio
async def test_rubric_and_plain_text_answers_are_valid_and_unpriced() -> None:
    metered = MeteredModel(build_model(ModelConfig(name="test:")))
    events: Events = []
    with emitting(_collect(events)):
        result = await RubricJudge(metered)(PNG, PNG)
    assert not result.error and result.judge == "llm:scripted:test"
    assert set(result.parts) == set(RUBRIC_PARTS)
    assert all(0 <= result.parts[name] <= most for name, most in RUBRIC_PARTS.items())
    assert result.score == sum(result.parts.values()) and 0 < result.score < 100
    assert "Scripted answer (test model)" in result.reasoning
    assert "Scripted answer" in _streamed(events, "rubric")
    assert (metered.usage.requests, metered.usage.unpriced, metered.usage.cost_usd) == (1, 1, 0.0)

    plain = await Agent(metered).run("Write a haiku about browsers.")  # not streamed
    assert plain.output == PLAIN_TEXT and plain.all_messages()[-1].model_name == "test"  # type: ignore[union-attr]


@pytest.mark.browser
@pytest.mark.anyio
async def test_llm_grounder_and_assertion_judge_replay_a_page(
    task: Task, pool: PagePool, tmp_path: Path
) -> None:
    model = build_model(ModelConfig(name="test:"))
    events: Events = []
    executor = Executor(pool, LLMGrounder(model), LLMAssertionJudge(model), emit=_collect(events))
    replay = await executor.replay(task, write_page(tmp_path / "p", SITE), tmp_path / "ev")
    assert (replay.success_steps, replay.total_steps) == (5, 5), replay.actions
    grounded = [a.grounding for a in replay.actions if a.grounding]
    assert [g.reason.split(":")[0] for g in grounded] == ["button 'Add one'"] * 2 + ["textbox 'Your name'"]
    assert all(g.grounder == "llm:scripted:test" and g.score == 1.0 for g in grounded)
    verdicts = [a.assertion for a in replay.actions if a.assertion]
    assert [v.verdict for v in verdicts] == ["yes", "yes"]
    assert all(v.judge == "llm:scripted:test" and "Scripted answer" in v.reasoning for v in verdicts)
    for role in ("grounder", "assertions"):
        text = _streamed(events, role)
        assert "Scripted answer (test model)" in text and "{" not in text  # prose, never raw JSON
    pieces = [d for k, d in events if k == "judge_delta"]
    assert len(pieces) > 20 and max(len(str(d["text"])) for d in pieces) <= 8  # streamed in pieces


@pytest.mark.browser
@pytest.mark.anyio
async def test_agent_step_judge_from_run_settings(task: Task, pool: PagePool, tmp_path: Path) -> None:
    settings = JudgeSettings.model_validate({"model": "test:", "step": {"name": "agent"}})
    limits = Limits(
        browser_pages=1, metric_workers=1, judge_calls=2, provider_calls={}, default_provider_calls=1
    )
    answers: dict[str, str] = {}
    judges = build_judges(settings, limits, answers.get, lambda k, r, d: answers.__setitem__(k, d))
    assert judges.step is not None and judges.step.name == "agent:scripted:test"
    events: Events = []
    async with judges:
        executor = Executor(
            pool,
            HeuristicGrounder(semantic=False),
            HeuristicAssertionJudge(),
            emit=_collect(events),
            step=judges.step,
        )
        replay = await executor.replay(task, write_page(tmp_path / "p", SITE), tmp_path / "ev")
    assert replay.success_steps == 5, replay.actions
    click, typed, press, scroll = replay.actions[1], replay.actions[2], replay.actions[3], replay.actions[4]
    assert [c.split("(")[0] for c in click.tool_calls] == ["observe", "click"]
    assert click.grounding is not None and "Add one" in click.grounding.reason
    assert typed.tool_calls[1].startswith("type_text(index=2) -> ok")
    assert [c.split("(")[0] for c in press.tool_calls + scroll.tool_calls] == ["press", "scroll"]
    assert click.assertion is not None and click.assertion.verdict == "yes"
    assert "Scripted answer (test model): performed click" in click.assertion.reasoning
    assert click.budget is not None and click.budget.steps == 2 and click.budget.exhausted is None
    streamed = _streamed(events, "step")
    assert "Scripted (test model): click on [0] button 'Add one'" in streamed
    assert "Scripted answer (test model): performed" in streamed
    assert len(answers) == 3 + 3 + 3 + 2 + 2  # every answer kept in the run's store


def _script(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.anyio
async def test_a_script_file_is_served_first_then_the_default(tmp_path: Path) -> None:
    script = _script(
        tmp_path / "answers.jsonl",
        '{"match": "the count is 2", "output": {"reasoning": "from the script", "verdict": "no"}}',
        "",
        '{"output": {"reasoning": "not a verdict", "verdict": "maybe"}}',
        '{"text": "Result: Yes"}',
    )
    model = build_model(ModelConfig(name=f"test:{script},delay=0.001"))
    judge = LLMAssertionJudge(model, retries=1)
    events: Events = []
    with emitting(_collect(events)):
        other = await judge(AssertionRequest(assertion="a note appears", before_png=PNG, after_png=PNG))
        count = await judge(AssertionRequest(assertion="the count is 2", before_png=PNG, after_png=PNG))
        again = await judge(AssertionRequest(assertion="the count is 2", before_png=PNG, after_png=PNG))
    # The first request skips the line meant for the count, takes the invalid answer, is sent back
    # with the validation error, and gets the default answer on its retry.
    assert (other.verdict, count.verdict, again.verdict) == ("yes", "no", "yes")
    assert count.reasoning == "from the script" and "Scripted answer" in again.reasoning
    retries = [d for k, d in events if k == "judge_retry"]
    assert len(retries) == 1 and "maybe" in str(retries[0]["error"])
    assert (await Agent(model).run("Answer Yes or No")).output == "Result: Yes"
    assert (await Agent(model).run("Answer Yes or No")).output == PLAIN_TEXT  # the script is used up


def test_bad_test_model_options_are_one_line_errors(tmp_path: Path) -> None:
    bad = _script(tmp_path / "bad.jsonl", '{"text": "fine"}', '{"text": "both", "tool": "observe"}')
    cases = {
        f"test:{tmp_path / 'missing.jsonl'}": "cannot read the script",
        f"test:{bad}": "bad.jsonl:2: Value error, give exactly one of",
        "test:delay=soon": "delay must be 0 to 10 seconds",
        "test:speed=2": "unknown option 'speed'",
    }
    for name, message in cases.items():
        with pytest.raises(UserError, match=message):
            build_model(ModelConfig(name=name))
