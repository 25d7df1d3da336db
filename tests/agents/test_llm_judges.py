"""The LLM grounder, assertion judge and rubric judge, driven by scripted models on a real page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_openai import FakeOpenAI, Reply
from judge_site import SITE, write_page
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo
from scripted_model import (
    Scripted,
    answer_grounding,
    answer_truthfully,
    element_for,
    last_prompt,
    truthful_verdict,
)

from iwr_bench.agents.events import AgentEvent
from iwr_bench.agents.generation import ModelConfig, build_model
from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.grounding_llm import LLMGrounder
from iwr_bench.agents.judge.executor import Executor, ExecutorConfig
from iwr_bench.agents.judge.llm import LLMAssertionJudge
from iwr_bench.agents.judge.records import AssertionRequest
from iwr_bench.agents.judge.rubric import RubricJudge
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.judge_model import StoredModel
from iwr_bench.engine.limits import AdaptiveLimit
from iwr_bench.registry import create
from iwr_bench.scoring.evaluation import VisualMetrics, evaluate
from iwr_bench.tools.pool import PagePool

browser = [pytest.mark.browser, pytest.mark.anyio]
Events = list[tuple[str, dict[str, object]]]


def _collect(events: Events) -> Any:
    def sink(event: AgentEvent) -> None:  # a typed event: a malformed one fails where it is built
        data = event.model_dump()
        events.append((data["kind"], data))

    return sink


@pytest.mark.parametrize("page", ["reference", "off_by_one"])
@pytest.mark.browser
@pytest.mark.anyio
async def test_llm_judges_replay_a_page(task: Task, pool: PagePool, tmp_path: Path, page: str) -> None:
    grounder_model, judge_model = Scripted(answer_grounding), Scripted(answer_truthfully)
    events: Events = []
    executor = Executor(
        pool,
        LLMGrounder(grounder_model.model(), name="llm:g"),
        LLMAssertionJudge(judge_model.model(), name="llm:a"),
        emit=_collect(events),
    )
    html = SITE if page == "reference" else SITE.replace("n += 1;", "n += n === 1 ? 2 : 1;")
    replay = await executor.replay(task, write_page(tmp_path / page, html), tmp_path / "ev")
    if page == "reference":
        assert (replay.success_steps, replay.total_steps) == (5, 5), replay.actions
        assert [a.assertion.verdict for a in replay.actions if a.assertion] == ["yes", "yes"]
    else:
        failed = replay.actions[1]
        assert (replay.success_steps, failed.failure) == (1, "assertion_failed")
        assert failed.assertion is not None and failed.assertion.judge == "llm:a"
        assert "Count: 2" in failed.assertion.reasoning
    grounded = [a.grounding for a in replay.actions if a.grounding]
    assert grounded and all(g.grounder == "llm:g" and g.score == 1.0 for g in grounded)
    assert all(p.images == 0 for p in grounder_model.prompts)  # sure from the list: no screenshot needed
    assert all(p.images == 2 for p in judge_model.prompts)  # before and after
    assert all(s.get("temperature") == 0.0 for s in judge_model.settings)
    deltas = "".join(str(d["text"]) for k, d in events if k == "judge_delta" and d["role"] == "assertions")
    assert "looked for" in deltas and "{" not in deltas  # the prose streamed, never the raw JSON
    answers = [d for k, d in events if k == "judge_answer" and d["role"] == "assertions"]
    assert answers and all(d["fields"]["verdict"] in ("yes", "no") for d in answers)  # type: ignore[index]
    started = [d for k, d in events if k == "judge_call_started" and d["role"] == "grounder"]
    assert started and all(str(d["request"]).startswith(("Click: ", "Type: ", "Scroll: ")) for d in started)
    assert any(k == "judge_delta" and d["role"] == "grounder" for k, d in events)


@pytest.mark.browser
@pytest.mark.anyio
async def test_unparsable_answers_are_retried_then_fail_by_policy(
    task: Task, pool: PagePool, tmp_path: Path
) -> None:
    page = write_page(tmp_path / "p", SITE)

    def flaky(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any] | str:
        prompt = last_prompt(messages)
        if prompt.attempt == 1:
            return "Yes, the count went up."  # text where a structured answer is due
        if prompt.attempt == 2:
            return {"reasoning": "hm", "verdict": "maybe"}  # not an allowed verdict
        return answer_truthfully(messages, info)

    events: Events = []
    executor = Executor(pool, HeuristicGrounder(), LLMAssertionJudge(Scripted(flaky).model(), retries=2))
    executor.emit = _collect(events)
    replay = await executor.replay(task, page, tmp_path / "ev0")
    assert replay.success_steps == 5 and replay.judge_errors == 0
    retries = [d for k, d in events if k == "judge_retry"]
    assert [(d["role"], d["attempt"]) for d in retries] == [("assertions", 1), ("assertions", 2)] * 2

    def hopeless(messages: list[ModelMessage], info: AgentInfo) -> str:
        del messages, info
        return "I cannot tell."

    for policy, steps in (("fail", 1), ("pass", 5)):
        judge = LLMAssertionJudge(Scripted(hopeless).model(), retries=1)
        config = ExecutorConfig(judge_error_policy=policy)  # type: ignore[arg-type]
        replay = await Executor(pool, HeuristicGrounder(), judge, config).replay(
            task, page, tmp_path / policy
        )
        verdicts = [a.assertion for a in replay.actions if a.assertion]
        assert verdicts[0] is not None and verdicts[0].verdict == "error"
        assert "retries" in verdicts[0].reasoning
        assert replay.success_steps == steps and replay.judge_errors == (0 if policy == "fail" else 2)
        if policy == "fail":
            assert replay.actions[1].failure == "judge_error"


@pytest.mark.browser
@pytest.mark.anyio
async def test_votes_take_the_majority(task: Task, pool: PagePool, tmp_path: Path) -> None:
    page = write_page(tmp_path / "p", SITE)

    def by_seed(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        seed = int((info.model_settings or {}).get("seed", 0))
        answer = truthful_verdict(last_prompt(messages))
        return {**answer, "verdict": "no"} if seed == 1 else answer  # vote 1 dissents

    three = Scripted(by_seed)
    replay = await Executor(pool, HeuristicGrounder(), LLMAssertionJudge(three.model(), votes=3)).replay(
        task, page, tmp_path / "ev3"
    )
    verdicts = [a.assertion for a in replay.actions if a.assertion]
    assert replay.success_steps == 5
    assert all(v is not None and v.verdict == "yes" and v.votes == ["yes", "no", "yes"] for v in verdicts)
    assert verdicts[0] is not None and verdicts[0].reasoning.startswith("[2 yes, 1 no]")
    assert sorted({s["seed"] for s in three.settings}) == [0, 1, 2]
    assert all(s["temperature"] == 1.0 for s in three.settings)

    two = LLMAssertionJudge(Scripted(by_seed).model(), votes=2)  # 1 yes, 1 no: a tie
    for policy, steps in (("pass", 5), ("fail", 1)):
        config = ExecutorConfig(undetermined_policy=policy)  # type: ignore[arg-type]
        replay = await Executor(pool, HeuristicGrounder(), two, config).replay(task, page, tmp_path / policy)
        first = next(a.assertion for a in replay.actions if a.assertion)
        assert first is not None and first.verdict == "undetermined" and first.votes == ["yes", "no"]
        assert replay.success_steps == steps


@pytest.mark.browser
@pytest.mark.anyio
async def test_grounder_looks_when_unsure_and_retries_bad_indices(
    task: Task, pool: PagePool, tmp_path: Path
) -> None:
    def cautious(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        del info
        prompt = last_prompt(messages)
        answer = element_for(prompt)
        if prompt.images == 0:
            return {**answer, "sure": False}  # not sure from the list alone
        if prompt.attempt == 1:
            return {**answer, "index": 999}  # not an element of the page
        return answer

    model = Scripted(cautious)
    events: Events = []
    executor = Executor(
        pool, LLMGrounder(model.model()), LLMAssertionJudge(Scripted(answer_truthfully).model())
    )
    executor.emit = _collect(events)
    replay = await executor.replay(task, write_page(tmp_path / "p", SITE), tmp_path / "ev")
    assert replay.success_steps == 5, replay.actions
    assert [p.images for p in model.prompts][:3] == [0, 1, 1]  # list, then screenshot, then the retry
    first = replay.actions[0]
    assert first.grounding is not None and "after looking at the screenshot" in first.grounding.reason
    assert "screenshot()" in first.tool_calls

    def nothing(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        del messages, info
        return {"index": None, "sure": True, "reason": "no such button here"}

    blank = await Executor(pool, LLMGrounder(Scripted(nothing).model()), HeuristicGrounder()).replay(  # type: ignore[arg-type]
        task, write_page(tmp_path / "b", SITE), tmp_path / "evb"
    )
    assert blank.actions[0].failure == "element_not_found"
    assert blank.actions[0].message.startswith("no such button here")


@pytest.mark.browser
@pytest.mark.anyio
async def test_rubric_judge_gives_hvs(task: Task, executor: Executor, tmp_path: Path) -> None:
    def fair(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        del info
        prompt = last_prompt(messages)
        assert prompt.images == 2 and prompt.text.index("Reference") < prompt.text.index("Generated")
        parts = {"layout": 8, "elements": 12, "content": 30, "style": 10, "overall": 15}
        return {"reasoning": "close", **parts}

    def greedy(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        del messages, info
        return {
            "reasoning": "perfect",
            "layout": 50,
            "elements": 15,
            "content": 40,
            "style": 15,
            "overall": 20,
        }

    ocr, _ = create("metric", "phash")
    dino, _ = create("metric", "phash")
    replay = await executor.replay(task, write_page(tmp_path / "p", SITE), tmp_path / "ev")
    scored = {}
    for name, fn in (("fair", fair), ("greedy", greedy)):
        rubric = RubricJudge(Scripted(fn).model(), retries=1, name=f"llm:{name}")
        metrics = VisualMetrics(ocr=ocr, dino=dino)
        scored[name] = await evaluate(
            task, "m", replay, tmp_path / "ev", tmp_path / name, metrics, rubric=rubric
        )
    fair_ev, greedy_ev = scored["fair"], scored["greedy"]
    assert fair_ev.all_mllm_scores == [0.75] * 5 and fair_ev.hvs == 0.75 and not fair_ev.lvs_only
    assert fair_ev.rubric_judge == "llm:fair" and fair_ev.rubric_errors == 0
    assert fair_ev.rubric_results[0].parts["content"] == 30
    assert any(b.metric == "rubric" for b in fair_ev.backends)
    assert abs(fair_ev.vfs - (0.5 * fair_ev.lvs + 0.5 * 0.75)) < 1e-9
    # An answer outside the rubric's ranges, every time: scored 0 and flagged, never dropped.
    assert greedy_ev.all_mllm_scores == [0.0] * 5 and greedy_ev.rubric_errors == 5
    assert greedy_ev.rubric_results[0].error


def _verdict_reply(verdict: str, delay: float = 0.0) -> Reply:
    return Reply(
        tool_call=("final_result", f'{{"reasoning": "saw it", "verdict": "{verdict}"}}'), delay=delay
    )


@pytest.mark.anyio
async def test_assertion_judge_over_openai_http_with_stored_answers(fake: FakeOpenAI) -> None:
    fake.replies = [_verdict_reply("yes", delay=0.2)]
    calls: dict[str, str] = {}
    limit = AdaptiveLimit("judge calls", 2)
    model = StoredModel(
        build_model(ModelConfig(name="judge-vlm", base_url=fake.url)),
        role="assertions",
        limit=limit,
        get=calls.get,
        put=lambda key, role, data: calls.__setitem__(key, data),
    )
    judge = LLMAssertionJudge(model, name="llm:judge-vlm")
    png = Path(__file__).with_name("judge_site.py").read_bytes()  # any bytes: the fake does not look
    requests = [AssertionRequest(assertion=f"'{i}' shows", before_png=png, after_png=png) for i in range(6)]
    verdicts: list[Any] = [None] * 6

    async def one(i: int) -> None:
        verdicts[i] = await judge(requests[i])

    async with model, anyio.create_task_group() as tg:  # entering the model closes its client after
        for i in range(6):
            tg.start_soon(one, i)
    assert all(v.verdict == "yes" and v.reasoning == "saw it" for v in verdicts)
    assert len(fake.requests) == 6 and fake.max_in_flight == 2  # the judge limit held
    assert all(
        r["stream"] is True and r["tools"][0]["function"]["name"] == "final_result" for r in fake.requests
    )
    assert model.paid == 6 and len(calls) == 6
    async with model:
        again = await judge(requests[3])  # asked again (a resumed replay): served from the store
    assert again.verdict == "yes" and len(fake.requests) == 6 and model.hits == 1

    fake.requests.clear()
    fake.replies = [Reply(status=500)] * 2 + [_verdict_reply("no")]
    async with model:
        fresh = await judge(AssertionRequest(assertion="new", before_png=png, after_png=png))
    assert fresh.verdict == "no"  # two server errors retried (here and by the client), then an answer
