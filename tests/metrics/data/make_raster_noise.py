"""Writes ``raster_noise.json``: real raster noise between replays and their recorded checkpoints.

The sandbox renders with ``--disable-partial-raster`` (``iwr_bench.tools.pool.STEADY_RASTER_FLAGS``),
and with it replays of the built-in suite are byte-identical to their recordings. Without it,
re-rastering part of a tile anti-aliases rounded corners and edges a few levels differently. This
script replays the oracle of the given suite tasks with partial raster on and keeps, for each task,
its noisiest pair as the replay's pixels that differ from the checkpoint (a few KB), so a test can
rebuild the replay screenshot from the checkpoint.

    .venv/bin/python tests/metrics/data/make_raster_noise.py 103 107 115 109
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from PIL import Image

import iwr_bench.tools.pool as pool_module
from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.dataset.layout import REFERENCE_DIR, load_tasks
from iwr_bench.scoring.evaluation import scored_pairs
from iwr_bench.suites.build import SAMPLE
from iwr_bench.tools.pool import PagePool, PoolConfig

OUT = Path(__file__).with_name("raster_noise.json")


def _case(task_id: int, checkpoint: Path, shot: Path) -> dict[str, Any]:
    ref = np.asarray(Image.open(checkpoint).convert("RGB"), dtype=np.int16)
    rep = np.asarray(Image.open(shot).convert("RGB"), dtype=np.int16)
    ys, xs = np.nonzero((ref != rep).any(axis=2))
    return {
        "task": task_id,
        "checkpoint": checkpoint.relative_to(SAMPLE.parent).as_posix(),
        "checkpoint_sha256": hashlib.sha256(checkpoint.read_bytes()).hexdigest(),
        "max_level": int(np.abs(ref - rep).max()),
        "replay_pixels": [[int(x), int(y), *map(int, rep[y, x])] for y, x in zip(ys, xs, strict=True)],
    }


async def main(task_ids: list[int]) -> None:
    pool_module.STEADY_RASTER_FLAGS = tuple(
        f for f in pool_module.STEADY_RASTER_FLAGS if f != "--disable-partial-raster"
    )
    tasks = {t.id: t for t in load_tasks(SAMPLE).tasks}
    cases: list[dict[str, Any]] = []
    async with PagePool(PoolConfig(size=2)) as pool:
        for task_id in task_ids:
            task = tasks[task_id]
            with tempfile.TemporaryDirectory() as tmp:
                executor = Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
                replay = await executor.replay(task, task.folder / REFERENCE_DIR, Path(tmp))
                found = [_case(task_id, cp, Path(tmp) / shot) for _, cp, shot in scored_pairs(task, replay)]
            cases.append(max(found, key=lambda c: (c["max_level"], len(c["replay_pixels"]))))
    lines = ",\n".join(json.dumps(c, separators=(",", ":")) for c in cases)
    OUT.write_text(f"[\n{lines}\n]\n")


if __name__ == "__main__":
    anyio.run(main, [int(a) for a in sys.argv[1:]])
