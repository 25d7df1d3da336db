"""The offline judges on the built-in suite: every task proves itself, every mutant fails where it should."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.agents.proof import OracleProver
from iwr_bench.dataset.bundle import mutant_page
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.metrics.hashing import phash_similarity
from iwr_bench.suites.build import MUTANTS, SAMPLE
from iwr_bench.tools.pool import PagePool, PoolConfig

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.anyio]
TASKS = {t.id: t for t in load_tasks(SAMPLE).tasks}


PAGES = 3
"""Replays at once: a replay mostly waits for pages to settle, so a few overlap well even on 2 cores."""


@pytest.fixture(scope="module")
async def pool() -> PagePool:  # type: ignore[misc]
    async with PagePool(PoolConfig(size=PAGES)) as p:
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
    expected = manifest["expected_first_failure"]
    if expected is None:
        if failed:
            return f"{folder.name}: must pass every step, failed {failed}"
        if manifest["kind"] == "layout_changed":
            mutant_initial = (work / "evidence" / "step_0.png").read_bytes()
            if phash_similarity(mutant_initial, task.checkpoints[0].read_bytes()) >= 1.0:
                return f"{folder.name}: the layout change does not show"
        return None
    if failed != [(expected, manifest["expected_reason"])]:
        return f"{folder.name}: expected {(expected, manifest['expected_reason'])}, got {failed}"
    return None


@pytest.mark.timeout(900)
@pytest.mark.parametrize("task_id", sorted(TASKS))
async def test_task_proves_itself_and_its_mutants_fail_where_they_should(
    pool: PagePool, prover: OracleProver, task_id: int, tmp_path: Path
) -> None:
    """The task's oracle proves itself (IFS 100, no failed request, checkpoints pixel-identical:
    every task carries the seed and clock it was recorded with), and each of its mutants fails first
    at the expected step with the expected reason (or passes every step, for harmless ones)."""
    task = TASKS[task_id]
    assert task.record.recording_details.random_seed is not None
    folders = sorted((MUTANTS / str(task_id)).iterdir())
    problems: list[str] = []

    async def prove() -> None:
        proof = await prover(task, pool)
        problems.extend(proof.problems)
        if proof.ifs != 1.0 or proof.failed_requests or min(proof.checkpoint_scores.values()) < 0.98:
            problems.append(f"oracle: IFS {proof.ifs}, {proof.checkpoint_scores}, {proof.failed_requests}")

    async def mutant(folder: Path) -> None:
        if (why := await _mutant_outcome(pool, task_id, folder, tmp_path / folder.name)) is not None:
            problems.append(why)

    async with anyio.create_task_group() as tg:
        tg.start_soon(prove)
        for folder in folders:
            tg.start_soon(mutant, folder)
    assert problems == []
