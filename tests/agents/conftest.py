"""Fixtures of the judge tests: a browser pool and a task recorded from :mod:`judge_site`."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import yaml
from judge_site import SCRIPT, SITE

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.dataset.recorder import record
from iwr_bench.dataset.script import load_script
from iwr_bench.tools.pool import PagePool, PoolConfig


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[PagePool]:
    """Two headless pages, shared by a test module."""
    async with PagePool(PoolConfig(size=2)) as p:
        yield p


@pytest.fixture(scope="module")
async def task(pool: PagePool, tmp_path_factory: pytest.TempPathFactory) -> Task:
    """Task 3, recorded from the judge site."""
    root = tmp_path_factory.mktemp("judge")
    (root / "site").mkdir()
    (root / "site" / "index.html").write_text(SITE)
    (root / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
    await record(root / "site", load_script(root / "script.yaml"), root / "ds", pool=pool)
    return load_tasks(root / "ds").by_id(3)


@pytest.fixture(scope="module")
def executor(pool: PagePool) -> Executor:
    """The offline judges on the shared pool."""
    return Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
