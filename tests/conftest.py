"""Fixtures shared by every test package."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

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
