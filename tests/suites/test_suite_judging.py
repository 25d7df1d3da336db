"""The offline judges on the built-in suite: every task proves itself, every mutant fails where it should."""

from __future__ import annotations

import json
from pathlib import Path

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


@pytest.fixture(scope="module")
async def pool() -> PagePool:  # type: ignore[misc]
    async with PagePool(PoolConfig(size=2)) as p:
        yield p  # type: ignore[misc]


@pytest.fixture(scope="module")
def prover() -> OracleProver:
    return OracleProver()


@pytest.mark.parametrize("task_id", sorted(TASKS))
async def test_task_proves_itself_on_its_own_oracle(
    pool: PagePool, prover: OracleProver, task_id: int
) -> None:
    task = TASKS[task_id]
    # Every task carries the seed and clock it was recorded with, so its replay is pixel-identical
    # and its checkpoints are proved without running OCR.
    assert task.record.recording_details.random_seed is not None
    proof = await prover(task, pool)
    assert proof.problems == [], proof.problems
    assert proof.ifs == 1.0 and proof.failed_requests == []
    assert min(proof.checkpoint_scores.values()) >= 0.98


MUTANT_FOLDERS = [
    (task_id, folder.name)
    for task_id in sorted(TASKS)
    for folder in sorted((MUTANTS / str(task_id)).iterdir())
]


@pytest.mark.parametrize(("task_id", "name"), MUTANT_FOLDERS)
async def test_mutant_fails_where_it_should(pool: PagePool, task_id: int, name: str, tmp_path: Path) -> None:
    task = TASKS[task_id]
    folder = MUTANTS / str(task_id) / name
    manifest = json.loads((folder / "mutant.json").read_text())
    page = mutant_page(folder, task.folder / "reference", tmp_path / "page")
    executor = Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
    replay = await executor.replay(task, page, tmp_path / name)
    failed = [(a.index, a.failure) for a in replay.actions if a.status == "failed"]
    expected = manifest["expected_first_failure"]
    if expected is None:
        assert failed == [], (name, failed)
        if manifest["kind"] == "layout_changed":
            mutant_initial = (tmp_path / name / "step_0.png").read_bytes()
            checkpoint = task.checkpoints[0].read_bytes()
            assert phash_similarity(mutant_initial, checkpoint) < 1.0
    else:
        assert failed == [(expected, manifest["expected_reason"])], (name, replay.actions[expected])
