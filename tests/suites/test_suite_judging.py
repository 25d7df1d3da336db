"""The offline judges on the built-in suite: every task proves itself, every mutant fails where it should."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.agents.proof import OracleProver
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.metrics.hashing import phash_similarity
from iwr_bench.suites.build import MUTANTS, SAMPLE
from iwr_bench.tools.pool import PagePool, PoolConfig

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.anyio]
TASKS = {t.id: t for t in load_tasks(SAMPLE).tasks}
SCREEN_ONLY: dict[tuple[int, str], str] = {
    # Mutants whose defect only a judge that reads the screen (or the meaning of the assertion) can
    # place at the right step; the heuristic judge matches quoted text and numbers in page text.
    (113, "score-not-reset"): (
        "'the score is reset' names no number, and the later 'the score becomes 4' is met by a 4 tile "
        "on the board; only a judge that reads which box shows the score sees the old score kept"
    ),
    (113, "down-key-ignored"): (
        "the assertion of step 3 names no quoted text or number; the offline judge answers "
        "undetermined, which the default policy passes, so the first failure lands later"
    ),
}


NOT_YET_RERECORDED: dict[int, str] = {
    106: (
        "old recording: its reference page builds image paths (img/p-*.png) in JavaScript, which the "
        "old recorder did not keep, so the oracle gets 404s; re-recording it with the bundle recorder "
        "is open work (issue 14)"
    ),
}


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
    if task_id in NOT_YET_RERECORDED:
        pytest.xfail(NOT_YET_RERECORDED[task_id])
    # Tasks recorded by the current recorder carry their seed and replay pixel-identically, so their
    # checkpoints are proved without running OCR. The older recordings (no stored seed) are not
    # pixel-identical on replay and proving them visually needs OCR of every checkpoint, minutes on
    # 2 cores: here they prove IFS 100 and no failed request; `make suite` re-records and proves all.
    recorded_now = task.record.recording_details.random_seed is not None
    proof = await prover(task, pool, visual=recorded_now)
    assert proof.problems == [], proof.problems
    assert proof.ifs == 1.0 and proof.failed_requests == []
    if recorded_now:
        assert min(proof.checkpoint_scores.values()) >= 0.98


MUTANT_FOLDERS = [
    (task_id, folder.name)
    for task_id in sorted(TASKS)
    for folder in sorted((MUTANTS / str(task_id)).iterdir())
]


@pytest.mark.parametrize(("task_id", "name"), MUTANT_FOLDERS)
async def test_mutant_fails_where_it_should(pool: PagePool, task_id: int, name: str, tmp_path: Path) -> None:
    if (task_id, name) in SCREEN_ONLY:
        pytest.xfail(SCREEN_ONLY[task_id, name])
    task = TASKS[task_id]
    folder = MUTANTS / str(task_id) / name
    manifest = json.loads((folder / "mutant.json").read_text())
    executor = Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
    replay = await executor.replay(task, folder, tmp_path / name)
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
