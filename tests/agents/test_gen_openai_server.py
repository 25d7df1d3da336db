"""The real OpenAI provider, end to end, against a scripted fake server on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_openai import FakeOpenAI, Reply

from iwr_bench.agents.generation import (
    Budget,
    GenerationResult,
    LVLMGenerator,
    ModelConfig,
    ResponseCache,
    RetryPolicy,
    build_generator,
)
from iwr_bench.dataset.layout import Task, load_tasks

FAST = RetryPolicy(retries=2, base_delay=0.01, max_delay=0.05)


def _task(root: Path, task_id: int = 1) -> Task:
    return load_tasks(root).by_id(task_id)


def _config(fake: FakeOpenAI, **extra: object) -> ModelConfig:
    fields: dict[str, object] = {"name": "local:gpt-4o", "base_url": fake.url, "max_tokens": 2048, **extra}
    return ModelConfig.model_validate(fields)


async def _once(gen: LVLMGenerator, task: Task) -> GenerationResult:
    """One generation with the model's HTTP client opened and closed around it."""
    async with gen:
        return await gen(task)


@pytest.mark.anyio
async def test_normal_answer(fake: FakeOpenAI, tasks_root: Path) -> None:
    result = await _once(build_generator(_config(fake), retry=FAST), _task(tasks_root))
    assert result.status == "ok", result.error
    assert result.html == "<html><body>ok</body></html>\n"
    assert len(fake.requests) == 1
    body = fake.requests[0]
    assert body["model"] == "gpt-4o" and body["temperature"] == 0
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 2048
    content = body["messages"][-1]["content"]
    assert content[0]["type"] == "text" and "640x360" in content[0]["text"]
    assert [c["type"] for c in content[1:]] == ["image_url"] * (len(content) - 1)
    assert content[1]["image_url"]["url"].startswith("data:image/png")
    assert content[-1]["image_url"]["url"].startswith("data:image/jpeg")
    assert result.usage.input_tokens == 1000 and result.usage.output_tokens == 500
    assert result.usage.cost_usd is not None and result.usage.cost_source == "genai-prices"
    assert result.attempts == 1 and not result.cache_hit


@pytest.mark.anyio
async def test_answer_without_html_block(fake: FakeOpenAI, tasks_root: Path) -> None:
    fake.replies = [Reply(text="<html><body>bare</body></html>")]
    result = await _once(build_generator(_config(fake), retry=FAST), _task(tasks_root))
    assert result.status == "ok" and result.html == "<html><body>bare</body></html>\n"


@pytest.mark.anyio
async def test_429_then_success_waits_for_retry_after(fake: FakeOpenAI, tasks_root: Path) -> None:
    fake.replies = [Reply(status=429, headers={"Retry-After": "1"}), Reply()]
    result = await _once(build_generator(_config(fake), retry=FAST), _task(tasks_root))
    assert result.status == "ok", result.error
    assert len(fake.requests) == 2 and result.attempts == 2
    assert fake.times[1] - fake.times[0] >= 0.95  # the 1 s asked for, not the 0.01 s backoff


@pytest.mark.anyio
async def test_persistent_500_is_a_recorded_failure_after_the_retries(
    fake: FakeOpenAI, tasks_root: Path
) -> None:
    fake.replies = [Reply(status=500)]
    result = await _once(build_generator(_config(fake), retry=FAST), _task(tasks_root))
    assert len(fake.requests) == 3  # first try + 2 retries
    assert result.status == "failed" and result.error is not None
    assert result.error.kind == "server_error" and result.attempts == 3
    assert result.error.type == "GenerationError" and "500" in result.error.message
    assert result.html == ""


@pytest.mark.anyio
async def test_400_is_not_retried(fake: FakeOpenAI, tasks_root: Path) -> None:
    fake.replies = [Reply(status=400)]
    result = await _once(build_generator(_config(fake), retry=FAST), _task(tasks_root))
    assert len(fake.requests) == 1
    assert result.error is not None and result.error.kind == "request_rejected"


@pytest.mark.anyio
@pytest.mark.parametrize("body", ["this is not json", '{"unexpected": true}'])
async def test_malformed_body_is_a_recorded_failure(fake: FakeOpenAI, tasks_root: Path, body: str) -> None:
    fake.replies = [Reply(body=body)]
    result = await _once(build_generator(_config(fake), retry=FAST), _task(tasks_root))
    assert result.status == "failed" and result.error is not None
    assert result.error.kind == "malformed_response"
    assert len(fake.requests) == 1


@pytest.mark.anyio
async def test_slow_answer_hits_the_timeout(fake: FakeOpenAI, tasks_root: Path) -> None:
    fake.replies = [Reply(delay=3.0)]
    gen = build_generator(_config(fake, timeout=0.3), retry=RetryPolicy(retries=1, base_delay=0.01))
    result = await _once(gen, _task(tasks_root))
    assert result.status == "failed" and result.error is not None
    assert result.error.kind == "timeout" and result.attempts == 2
    assert len(fake.requests) == 2
    assert result.latency_s < 2.5


@pytest.mark.anyio
async def test_empty_and_truncated_answers_are_recorded(fake: FakeOpenAI, tasks_root: Path) -> None:
    fake.replies = [Reply(text=""), Reply(text="```html\n<div>cut", finish_reason="length")]
    async with build_generator(_config(fake), retry=FAST) as gen:
        empty = await gen(_task(tasks_root, 1))
        cut = await gen(_task(tasks_root, 2))
    assert empty.status == "empty" and empty.html == ""
    assert cut.status == "truncated" and cut.html == "<div>cut\n"
    assert len(fake.requests) == 2


@pytest.mark.anyio
async def test_rerun_is_served_from_the_cache(fake: FakeOpenAI, tasks_root: Path, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    first = await _once(build_generator(_config(fake), cache=cache, retry=FAST), _task(tasks_root))
    assert len(fake.requests) == 1 and not first.cache_hit
    again = await _once(build_generator(_config(fake), cache=cache, retry=FAST), _task(tasks_root))
    assert len(fake.requests) == 1  # zero new requests
    assert again.cache_hit and again.html == first.html and again.attempts == 0
    assert again.paid_usd == 0.0 and again.usage == first.usage
    # Another setting is another key; no cache means a new request too.
    await _once(build_generator(_config(fake, max_tokens=99), cache=cache, retry=FAST), _task(tasks_root))
    await _once(build_generator(_config(fake), retry=FAST), _task(tasks_root))
    assert len(fake.requests) == 3
    assert not list((tmp_path / "cache").rglob("*.tmp"))


@pytest.mark.anyio
async def test_failures_are_not_cached(fake: FakeOpenAI, tasks_root: Path, tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "cache")
    fake.replies = [Reply(status=500), Reply()]
    failed = await _once(
        build_generator(_config(fake), cache=cache, retry=RetryPolicy(retries=0)), _task(tasks_root)
    )
    assert failed.status == "failed"
    ok = await _once(
        build_generator(_config(fake), cache=cache, retry=RetryPolicy(retries=0)), _task(tasks_root)
    )
    assert ok.status == "ok" and not ok.cache_hit and len(fake.requests) == 2


@pytest.mark.anyio
async def test_budget_cap_stops_new_calls(fake: FakeOpenAI, tasks_root: Path) -> None:
    budget = Budget(0.01)  # each fake answer costs $0.0075 at gpt-4o prices
    price = {"input_per_mtok": 2.5, "output_per_mtok": 10.0}
    async with build_generator(_config(fake, price=price), budget=budget, retry=FAST) as gen:
        results = [await gen(_task(tasks_root, i)) for i in (1, 2, 1)]
    assert [r.status for r in results] == ["ok", "ok", "failed"]
    assert results[2].error is not None and results[2].error.kind == "budget_exhausted"
    assert len(fake.requests) == 2
    assert budget.spent_usd == pytest.approx(0.015) and budget.refused == 1
    assert results[0].usage.cost_source == "override"


def _stack(gen: LVLMGenerator) -> list[str]:
    """The caller layers of a generator, outermost first."""
    layers: list[str] = []
    caller: object = gen.caller
    while caller is not None:
        layers.append(type(caller).__name__)
        caller = getattr(caller, "inner", None)
    return layers


def test_the_engine_and_the_registered_design_build_one_caller_stack(tmp_path: Path) -> None:
    """A run's generator and the registered ``lvlm`` design: the same layers in the same order (the
    run adds the provider's slot between the retries and the budget)."""
    from iwr_bench.engine.config import parse_run_config
    from iwr_bench.engine.limits import Limits
    from iwr_bench.engine.setup import GeneratorFactory
    from iwr_bench.registry import create

    run = parse_run_config({"models": [{"name": "local:gpt-4o", "base_url": "http://127.0.0.1:9"}]}, "test")
    limits = Limits(
        browser_pages=1, metric_workers=1, judge_calls=1, provider_calls={}, default_provider_calls=2
    )
    engine_gen = GeneratorFactory(run, limits, tmp_path / "cache", {}, None)(run.models[0])
    assert isinstance(engine_gen, LVLMGenerator)
    assert _stack(engine_gen) == [
        "CachingCaller",
        "RetryingCaller",
        "LimitedCaller",
        "BudgetedCaller",
        "AgentCaller",
    ]
    design, _ = create(
        "generator", "lvlm", model={"name": "local:gpt-4o", "base_url": "http://127.0.0.1:9"},
        cache_dir=str(tmp_path / "cache"), budget_usd=1.0,
    )  # fmt: skip
    assert _stack(design) == ["CachingCaller", "RetryingCaller", "BudgetedCaller", "AgentCaller"]
