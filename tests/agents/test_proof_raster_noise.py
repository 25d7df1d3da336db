"""The oracle proof counts a checkpoint as pixel-identical up to raster noise (the metric cache's bound)."""

from __future__ import annotations

from pathlib import Path

import pytest
from patience import roomy
from PIL import Image, ImageDraw
from raster_noise import NoiseCase, noise_cases, noisy_replay

from iwr_bench.agents.judge.records import Replay
from iwr_bench.agents.proof import OracleProver, _pixel_identical  # pyright: ignore[reportPrivateUsage]
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.dataset.media import load_font
from iwr_bench.suites.build import SAMPLE
from iwr_bench.tools import pool as pool_module
from iwr_bench.tools.models import Limits
from iwr_bench.tools.pool import PagePool, PoolConfig

TASKS = {t.id: t for t in load_tasks(SAMPLE).tasks}


def _state_of(task: Task, checkpoint_path: Path) -> int:
    """The replay state scored against ``checkpoint_path`` (0: initial, k: after action k)."""
    steps = len(task.record.action_sequence)
    return next(
        k
        for k in range(steps + 1)
        if (task.initial_checkpoint if k == 0 else task.checkpoint_after(k - 1)) == checkpoint_path
    )


def _evidence(task: Task, folder: Path, shots: dict[int, Image.Image]) -> Replay:
    """A replay of every step whose screenshots are the checkpoints, except ``shots`` (by state)."""
    steps = len(task.record.action_sequence)
    screenshots: dict[int, str] = {}
    for k in range(steps + 1):
        recorded = task.initial_checkpoint if k == 0 else task.checkpoint_after(k - 1)
        if recorded is None:
            continue
        screenshots[k] = f"step_{k}.png"
        shot = shots.get(k)
        if shot is None:
            (folder / screenshots[k]).write_bytes(recorded.read_bytes())
        else:
            shot.save(folder / screenshots[k])
    return Replay(total_steps=steps, success_steps=steps, actions=[], screenshots=screenshots)


@pytest.mark.parametrize("case", noise_cases()[:3], ids=lambda c: f"task{c.task}")
def test_a_noisy_screenshot_is_pixel_identical_and_a_changed_one_is_not(
    case: NoiseCase, tmp_path: Path
) -> None:
    task = TASKS[case.task]
    noisy = _state_of(task, case.checkpoint)
    replay = _evidence(task, tmp_path, {noisy: noisy_replay(case)})
    identical = _pixel_identical(task, replay, tmp_path)
    assert len(identical) == len(task.checkpoints) and all(identical.values())

    one_more_character = noisy_replay(case)
    background = one_more_character.convert("L").getpixel((40, 40))
    ink = (17, 24, 39) if isinstance(background, int) and background > 128 else (255, 255, 255)
    ImageDraw.Draw(one_more_character).text((40, 40), "8", fill=ink, font=load_font(14))
    one_more_character.save(tmp_path / f"step_{noisy}.png")
    changed = _pixel_identical(task, replay, tmp_path)
    assert [k for k, same in changed.items() if not same] == [noisy]


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.anyio
async def test_oracle_rendered_with_partial_raster_proves_itself_without_a_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Task 103 replayed with partial raster on (its rounded corners come out a few levels off): every
    checkpoint is pixel-identical up to raster noise and scores 1.0, and neither OCR nor the
    embedder runs."""
    flags = tuple(f for f in pool_module.STEADY_RASTER_FLAGS if f != "--disable-partial-raster")
    monkeypatch.setattr(pool_module, "STEADY_RASTER_FLAGS", flags)
    task, prover = TASKS[103], OracleProver()
    limits = Limits(action_timeout=roomy(10.0), load_timeout=roomy(15.0))
    async with PagePool(PoolConfig(size=1, limits=limits)) as pool:
        proof = await prover(task, pool)
    assert proof.problems == [] and proof.ifs == 1.0
    assert len(proof.pixel_identical) == len(task.checkpoints) and all(proof.pixel_identical.values())
    assert set(proof.checkpoint_scores.values()) == {1.0}
    assert prover.ocr.hits == prover.embed.hits == len(task.checkpoints)  # no pair reached a model
    assert prover.ocr.raster_identical > 0, "no raster noise this time: the bound was not exercised"
