"""Fixtures of the judge tests: a browser pool and a task recorded from :mod:`judge_site`."""

from __future__ import annotations

from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
import yaml
from judge_site import SCRIPT, SITE
from patience import roomy

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.dataset.recorder import record
from iwr_bench.dataset.script import load_script
from iwr_bench.tools.models import Limits
from iwr_bench.tools.pool import PagePool, PoolConfig


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[PagePool]:
    """Two headless pages, shared by a test module; the default page limits, with room to spare on
    a busy machine (no test here examines them; see :mod:`patience`)."""
    limits = Limits(action_timeout=roomy(10.0), load_timeout=roomy(15.0))
    async with PagePool(PoolConfig(size=2, limits=limits)) as p:
        yield p


@pytest.fixture(scope="session")
def judge_site_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset of task 3, recorded from the judge site once per test session (do not modify).

    Recorded in a pool of its own with the default settings, as each module's pool would record it.
    The recording runs its own event loop on a thread of its own: a session-scoped async fixture
    would keep a loop open in the test thread, and later tests that call ``iwr`` (which starts
    one) would fail with "Already running asyncio in this thread".
    """
    root = tmp_path_factory.mktemp("judge")
    (root / "site").mkdir()
    (root / "site" / "index.html").write_text(SITE)
    (root / "script.yaml").write_text(yaml.safe_dump(SCRIPT))

    async def record_it() -> None:
        async with PagePool(PoolConfig(size=1)) as own:
            await record(root / "site", load_script(root / "script.yaml"), root / "ds", pool=own)

    with ThreadPoolExecutor(1) as thread:
        thread.submit(anyio.run, record_it).result()
    return root / "ds"


@pytest.fixture(scope="module")
def task(judge_site_dataset: Path) -> Task:
    """Task 3, recorded from the judge site."""
    return load_tasks(judge_site_dataset).by_id(3)


@pytest.fixture(scope="module")
def executor(pool: PagePool) -> Executor:
    """The offline judges on the shared pool."""
    return Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
