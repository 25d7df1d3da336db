"""A task set in the exact official layout, built once per session and copied per test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iwr_bench.dataset.synthetic import build_task_set


@pytest.fixture(scope="session")
def pristine_tasks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Root folder of a two-task set (ids 1 and 2); do not modify."""
    root = tmp_path_factory.mktemp("official")
    build_task_set(root, ids=(1, 2))
    return root


@pytest.fixture
def tasks_root(pristine_tasks: Path, tmp_path: Path) -> Path:
    """A private copy of the task set that a test may break."""
    dest = tmp_path / "ds"
    shutil.copytree(pristine_tasks, dest)
    return dest
