"""Model configs, run files, model building and key checks (no request is ever made here)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest
from pydantic_ai.models.openai import OpenAIChatModel

from iwr_bench.agents.generation import ModelConfig, build_model, load_run_file, slugify
from iwr_bench.agents.generation.models import accepts_video
from iwr_bench.agents.generation.wrappers import RetryPolicy, parse_retry_after
from iwr_bench.errors import UserError

RUN_FILE = """
title = "engine keys are ignored here"

[[models]]
name = "openai:gpt-4o"
max_tokens = 16384

[[models]]
name = "vllm:Qwen/Qwen2.5-VL-7B-Instruct"
base_url = "http://127.0.0.1:8000/v1"
image_budget = 20
frame_cap = 20
max_image_side = 1000
thinking = "high"
price = { input_per_mtok = 0.1, output_per_mtok = 0.2 }
"""


def test_run_file_models(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text(RUN_FILE, encoding="utf-8")
    run = load_run_file(path)
    assert [m.name for m in run.models] == ["openai:gpt-4o", "vllm:Qwen/Qwen2.5-VL-7B-Instruct"]
    gpt, qwen = run.models
    assert (gpt.image_budget, gpt.frame_cap, gpt.max_tokens) == (70, 64, 16384)
    assert (qwen.image_budget, qwen.frame_cap, qwen.max_image_side) == (20, 20, 1000)
    assert qwen.server_model_id == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert qwen.price is not None and qwen.price.cost(1_000_000, 1_000_000) == pytest.approx(0.3)
    assert qwen.model_settings()["thinking"] == "high"
    assert run.find("openai:gpt-4o") is gpt and run.find("nope") is None


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("[[models]]\nname = 'a:b'\nimage_budgets = 3\n", "image_budgets"),
        ("[[models]\n", "not valid TOML"),
        ("[[models]]\nname = 'a:b'\n[[models]]\nname = 'a:b'\n", "twice"),
    ],
)
def test_bad_run_files_are_user_errors(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "run.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UserError, match=needle):
        load_run_file(path)


def test_slugs() -> None:
    assert slugify("openai:gpt-4o") == "openai_gpt-4o"
    assert slugify("vllm:Qwen/Qwen2.5-VL-7B") == "vllm_qwen__qwen2.5-vl-7b"
    assert ModelConfig(name="openrouter:google/gemini-2.5-pro").slug == "openrouter_google__gemini-2.5-pro"
    # Without a provider prefix the folder is exactly the official generator's.
    assert slugify("Qwen/Qwen2.5-VL-7B") == "qwen__qwen2.5-vl-7b"
    assert slugify("claude-sonnet-4-20250514") == "claude-sonnet-4-20250514"
    assert slugify("a b:c") == "a_b_c"  # one "_" per character, not per run
    assert slugify("..") == "model" and slugify("") == "model"


def test_missing_api_key_is_a_user_error_before_any_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        build_model(ModelConfig(name="openai:gpt-4o"))
    monkeypatch.delenv("MY_KEY", raising=False)
    with pytest.raises(UserError, match="MY_KEY"):
        build_model(ModelConfig(name="local:m", base_url="http://127.0.0.1:1/v1", api_key_env="MY_KEY"))


def test_models_build_without_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-test")
    assert build_model(ModelConfig(name="openai:gpt-4o")).model_name == "gpt-4o"
    assert "claude" in build_model(ModelConfig(name="anthropic:claude-sonnet-4-5")).model_name
    # (google-gla works where a google-genai build compatible with pydantic-ai's httpx2 is installed.)
    router = build_model(ModelConfig(name="openrouter:google/gemini-2.5-flash", native_video=True))
    assert accepts_video(router)
    local = build_model(ModelConfig(name="ollama:qwen2.5vl", base_url="http://127.0.0.1:11434/v1"))
    assert isinstance(local, OpenAIChatModel) and local.model_name == "qwen2.5vl"
    assert not accepts_video(local)


@pytest.mark.parametrize(
    ("name", "needle"),
    [("nosuch:model", "Unknown provider"), ("mistral:pixtral-large", "not installed"), ("gpt-4o", "prefix")],
)
def test_unknown_or_uninstalled_providers_are_user_errors(
    name: str, needle: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", "m-test")
    with pytest.raises(UserError, match=needle):
        build_model(ModelConfig(name=name))


def test_retry_after_seconds_and_http_date() -> None:
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3", now) == 3.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=7), usegmt=True), now) == 7.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=7), usegmt=True), now) == 0.0
    assert parse_retry_after("soon", now) is None and parse_retry_after(None) is None


def test_backoff_grows_with_jitter_and_honours_retry_after() -> None:
    import random

    policy = RetryPolicy(base_delay=1.0, max_delay=10.0, jitter=0.5, max_retry_after=30.0)
    rng = random.Random(0)
    delays = [policy.delay(n, None, rng) for n in (1, 2, 3, 4, 5, 6)]
    assert 1.0 <= delays[0] <= 1.5 and 2.0 <= delays[1] <= 3.0 and 4.0 <= delays[2] <= 6.0
    assert all(10.0 <= d <= 15.0 for d in delays[4:])
    assert policy.delay(1, 12.0, rng) == 12.0
    assert policy.delay(1, 1000.0, rng) == 30.0


def test_official_runs_name_model_folders_as_the_official_generator() -> None:
    # its folder is model_name.lower().replace('/', '__'), where model_name is the id it sends
    from iwr_bench.engine.config import parse_run_config

    models = [
        {"name": "openai:gpt-4.1"},
        {"name": "vllm:Qwen/Qwen2.5-VL-7B", "base_url": "http://127.0.0.1:9/v1"},
        {"name": "openai:gpt-4o", "folder": "mine"},
        {"name": "oracle"},
    ]
    official = parse_run_config({"protocol": "official", "models": models}, "test")
    assert official.model_slugs == ["gpt-4.1", "qwen__qwen2.5-vl-7b", "mine", "oracle"]
    ours = parse_run_config({"models": models}, "test")
    assert ours.model_slugs == ["openai_gpt-4.1", "vllm_qwen__qwen2.5-vl-7b", "mine", "oracle"]
