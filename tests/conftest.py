"""Fixtures shared by every test package."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pydantic_ai.models
import pytest
from fake_openai import FakeOpenAI, serve
from pydantic_ai.models import override_allow_model_requests

from iwr_bench.cli import main
from iwr_bench.dataset.synthetic import build_task_set


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Run async tests on asyncio (textual and browser-use need it)."""
    return "asyncio"


@pytest.fixture(scope="session")
def pristine_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-task synthetic set in the official layout (ids 1 and 2, 640x360); do not modify."""
    root = tmp_path_factory.mktemp("official")
    build_task_set(root, ids=(1, 2))
    return root


@pytest.fixture
def tasks_root(pristine_tasks: Path, tmp_path: Path) -> Path:
    """A private copy of the task set that a test may change."""
    dest = tmp_path / "ds"
    shutil.copytree(pristine_tasks, dest)
    return dest


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A metric cache folder shared by every test (checkpoints are OCR-read once per session).

    ``$IWR_TEST_METRIC_CACHE`` names a folder to reuse across sessions instead (a warm cache for
    the inner loop on a slow machine).
    """
    reuse = os.environ.get("IWR_TEST_METRIC_CACHE")
    if reuse:
        Path(reuse).mkdir(parents=True, exist_ok=True)
        return Path(reuse)
    return tmp_path_factory.mktemp("metric-cache")


@pytest.fixture(autouse=True)
def metric_cache(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the engine's metric cache (and subprocesses') at the session folder."""
    monkeypatch.setenv("IWR_BENCH_CACHE_DIR", str(session_cache))
    yield session_cache


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory, session_cache: Path) -> Path:
    """A completed offline run of task 102 (oracle, screenshot, blank)."""
    run = tmp_path_factory.mktemp("tui") / "run-102"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IWR_BENCH_CACHE_DIR", str(session_cache))
        assert main(["run", "--only", "102", "--out", str(run), "--quiet"]) == 0
    return run


@pytest.fixture(autouse=True)
def no_model_requests() -> Iterator[None]:
    """Block real provider calls in every test; fake-server tests opt back in with ``allow_requests``."""
    with override_allow_model_requests(False):
        assert pydantic_ai.models.ALLOW_MODEL_REQUESTS is False
        yield


@pytest.fixture
def allow_requests(no_model_requests: None) -> Iterator[None]:
    """Allow requests: only used with the fake server on 127.0.0.1 (the OpenAI model checks the flag)."""
    with override_allow_model_requests(True):
        yield


@pytest.fixture
async def fake(allow_requests: None) -> AsyncIterator[FakeOpenAI]:
    """A running fake OpenAI-compatible server; script it through ``fake.replies``."""
    async with serve(FakeOpenAI()) as server:
        yield server
