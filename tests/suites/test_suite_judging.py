"""The offline judges on the built-in suite: every task proves itself, every mutant fails where it should.

`make test` proves the tasks in :data:`CORE` (every mutant kind, every level of interaction, a game,
a form and the phone-sized task among them); the rest are marked ``long`` (`make test-long`).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from patience import roomy

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.agents.proof import OracleProver
from iwr_bench.dataset.bundle import mutant_page
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.metrics.hashing import phash_similarity
from iwr_bench.suites.build import MUTANTS, SAMPLE
from iwr_bench.tools.models import Limits
from iwr_bench.tools.pool import PagePool, PoolConfig

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.anyio]
TASKS = {t.id: t for t in load_tasks(SAMPLE).tasks}
CORE = {102, 105, 108, 111, 116}
"""The tasks `make test` proves (about a third of the suite's replays)."""


PAGES = 3
"""Replays at once: a replay mostly waits for pages to settle, so a few overlap well even on 2 cores."""


@pytest.fixture(scope="module")
async def pool() -> PagePool:  # type: ignore[misc]
    limits = Limits(action_timeout=roomy(10.0), load_timeout=roomy(15.0))  # never the limit under test
    async with PagePool(PoolConfig(size=PAGES, limits=limits)) as p:
        yield p  # type: ignore[misc]


@pytest.fixture(scope="module")
def prover() -> OracleProver:
    return OracleProver()


async def _mutant_outcome(pool: PagePool, task_id: int, folder: Path, work: Path) -> str | None:
    """None when mutant ``folder`` fails where its manifest says, else what went wrong."""
    task = TASKS[task_id]
    manifest = json.loads((folder / "mutant.json").read_text())
    page = mutant_page(folder, task.folder / "reference", work / "page")
    executor = Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
    replay = await executor.replay(task, page, work / "evidence")
    failed = [(a.index, a.failure) for a in replay.actions if a.status == "failed"]
    # why the replay stopped, when it did: a page that never loaded runs no step and fails none
    stop = f" ({replay.failure}: {replay.message})" if replay.failure else ""
    expected = manifest["expected_first_failure"]
    if expected is None:
        if failed:
            return f"{folder.name}: must pass every step, failed {failed}{stop}"
        if manifest["kind"] == "layout_changed":
            mutant_initial = (work / "evidence" / "step_0.png").read_bytes()
            if phash_similarity(mutant_initial, task.checkpoints[0].read_bytes()) >= 1.0:
                return f"{folder.name}: the layout change does not show"
        return None
    if failed != [(expected, manifest["expected_reason"])]:
        return f"{folder.name}: expected {(expected, manifest['expected_reason'])}, got {failed}{stop}"
    return None


async def _task_problems(pool: PagePool, prover: OracleProver, task_id: int, work: Path) -> list[str]:
    """What is wrong with task ``task_id``: its oracle's proof, then each mutant's outcome."""
    task = TASKS[task_id]
    problems: list[str] = []
    if task.record.recording_details.random_seed is None:
        problems.append("the task carries no random seed")

    async def prove() -> None:
        # No visual metric: the checkpoints must be pixel-identical (stricter than LVS >= 0.98,
        # which the metric models would only be loaded to compute for a screenshot that differs).
        proof = await prover(task, pool, visual=False)
        problems.extend(proof.problems)
        shots = proof.pixel_identical
        if (
            proof.ifs != 1.0
            or proof.failed_requests
            or len(shots) != len(task.checkpoints)
            or not all(shots.values())
        ):
            problems.append(f"oracle: IFS {proof.ifs}, pixel-identical {shots}, {proof.failed_requests}")

    async def mutant(folder: Path) -> None:
        if (why := await _mutant_outcome(pool, task_id, folder, work / folder.name)) is not None:
            problems.append(why)

    async with anyio.create_task_group() as tg:
        tg.start_soon(prove)
        for folder in sorted((MUTANTS / str(task_id)).iterdir()):
            tg.start_soon(mutant, folder)
    return problems


@pytest.fixture(scope="module")
async def problems(
    pool: PagePool,
    prover: OracleProver,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> dict[int, list[str]]:
    """The problems of every task whose test runs (``-m`` and ``-k`` leave the others out), all
    judged at once: the pool's pages stay busy from one task's replays to the next's, instead of
    waiting for each task's slowest replay."""
    chosen = {
        item.callspec.params["task_id"]
        for item in request.session.items
        if isinstance(item, pytest.Function) and item.module is request.module and hasattr(item, "callspec")
    }
    work = tmp_path_factory.mktemp("suite")
    found: dict[int, list[str]] = {}

    async def judge(task_id: int) -> None:
        try:
            found[task_id] = await _task_problems(pool, prover, task_id, work / str(task_id))
        except Exception as exc:  # one task's crash fails that task's test, not every task's
            found[task_id] = [f"judging the task raised {type(exc).__name__}: {exc}"]

    async with anyio.create_task_group() as tg:
        for task_id in sorted(chosen):
            tg.start_soon(judge, task_id)
    return found


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "task_id", [t if t in CORE else pytest.param(t, marks=pytest.mark.long) for t in sorted(TASKS)]
)
async def test_task_proves_itself_and_its_mutants_fail_where_they_should(
    problems: dict[int, list[str]], task_id: int
) -> None:
    """The task's oracle proves itself (IFS 100, no failed request, every checkpoint pixel-identical:
    every task carries the seed and clock it was recorded with), and each of its mutants fails first
    at the expected step with the expected reason (or passes every step, for harmless ones)."""
    assert problems[task_id] == []
