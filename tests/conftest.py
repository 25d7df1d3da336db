"""Fixtures shared by every test package."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pydantic_ai.models
import pytest
from fake_openai import FakeOpenAI, serve
from heaviest_first import HEAVIEST_FIRST
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
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # One cache for all the workers of this session (SQLite in WAL mode takes parallel writers):
        # the folder above each worker's base temp is the session's.
        shared = tmp_path_factory.getbasetemp().parent / "metric-cache"
        shared.mkdir(exist_ok=True)
        return shared
    return tmp_path_factory.mktemp("metric-cache")


@pytest.fixture(autouse=True)
def metric_cache(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the engine's metric cache (and subprocesses') at the session folder."""
    monkeypatch.setenv("IWR_BENCH_CACHE_DIR", str(session_cache))
    yield session_cache


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {path: place for place, path in enumerate(HEAVIEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))  # (stable)


def pytest_configure(config: pytest.Config) -> None:
    """Runs built by the tests score text with the pHash stand-in, not EasyOCR (seconds a screenshot).

    Set for the whole session, so fixtures of every scope and subprocesses see it; what a test
    checks is the engine, a judge, the store or a report, not OCR values. Tests of what a run
    scores with EasyOCR are marked ``real_metrics`` (see :func:`real_metrics`). Results label the
    stand-in a substitute.
    """
    del config
    os.environ["IWR_OCR_DESIGN"] = "phash"


@pytest.fixture(autouse=True)
def real_metrics(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked ``real_metrics`` runs with the default metric designs (EasyOCR)."""
    if request.node.get_closest_marker("real_metrics") is not None:
        monkeypatch.delenv("IWR_OCR_DESIGN", raising=False)


@pytest.fixture(scope="session")
def finished_run(tmp_path_factory: pytest.TempPathFactory, session_cache: Path) -> Path:
    """A completed offline run of task 102 (oracle, screenshot, blank), text scored by the pHash
    stand-in (see :func:`pytest_configure`)."""
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


_SESSION_START = time.monotonic()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Under ``make test``: how long each phase took, the tests' wall time included."""
    phases = os.environ.get("IWR_TEST_PHASES")
    if not phases:
        return
    times = dict(p.split("=", 1) for p in phases.split(",") if "=" in p)
    times["tests"] = f"{time.monotonic() - _SESSION_START:.1f}"
    total = sum(float(t) for t in times.values())
    terminalreporter.section("phases of make test")
    for name, took in times.items():
        terminalreporter.write_line(f"{name:<10} {float(took):8.1f} s")
    terminalreporter.write_line(f"{'total':<10} {total:8.1f} s")
