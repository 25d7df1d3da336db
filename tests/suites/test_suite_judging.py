"""The offline judges on the built-in suite: references pass, every mutant fails where it should."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.metrics.hashing import phash_similarity
from iwr_bench.suites.build import MUTANTS, SAMPLE
from iwr_bench.tools.pool import PagePool, PoolConfig

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.anyio]
TASKS = {t.id: t for t in load_tasks(SAMPLE).tasks}


@pytest.fixture(scope="module")
async def executor() -> Executor:  # type: ignore[misc]
    async with PagePool(PoolConfig(size=2)) as pool:
        yield Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())  # type: ignore[misc]


@pytest.mark.parametrize("task_id", sorted(TASKS))
async def test_reference_and_mutants(executor: Executor, task_id: int, tmp_path: Path) -> None:
    task = TASKS[task_id]
    assert task.reference_page is not None
    reference = await executor.replay(task, task.reference_page.parent, tmp_path / "ref")
    failures = [(a.index, a.failure, a.message) for a in reference.actions if a.status == "failed"]
    assert reference.success_steps == reference.total_steps, failures
    ref_initial = (tmp_path / "ref" / "step_0.png").read_bytes()
    checkpoint = task.checkpoints[0].read_bytes()
    for folder in sorted((MUTANTS / str(task_id)).iterdir()):
        manifest = json.loads((folder / "mutant.json").read_text())
        replay = await executor.replay(task, folder, tmp_path / folder.name)
        failed = [(a.index, a.failure) for a in replay.actions if a.status == "failed"]
        expected = manifest["expected_first_failure"]
        if expected is None:
            assert failed == [], (folder.name, failed)
            mutant_initial = (tmp_path / folder.name / "step_0.png").read_bytes()
            assert phash_similarity(mutant_initial, checkpoint) < phash_similarity(ref_initial, checkpoint)
        else:
            assert failed == [(expected, manifest["expected_reason"])], (
                folder.name,
                replay.actions[expected],
            )
