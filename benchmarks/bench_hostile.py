"""Benchmark: judging the hostile corpus vs the same number of ordinary pages, in one invocation.

Replays task 102 of the built-in sample suite (8 actions, offline heuristic judges) on every page of
the hostile corpus of ``tests/tools/hostile_corpus.py`` (exfiltration by every channel at a real
listener, unbounded memory, hangs at load and after a click, a page that never settles, judge
detection, string floods), then on as many copies of the task's reference page, through one page
pool with the default limits. Prints the wall time of each batch, the ratio (target: hostile at
most 2x ordinary), and what the listener received (must be nothing).

Usage: ``.venv/bin/python benchmarks/bench_hostile.py [--pages-at-once 2]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import anyio

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.tools.jail import containment_level
from iwr_bench.tools.pool import PagePool, PoolConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "tools"))
from hostile_corpus import Listener, hostile_pages  # noqa: E402

SAMPLE = ROOT / "iwr_bench" / "suites" / "sample"
TASK = 102


def _task(root: Path) -> Task:
    line = next(r for r in (SAMPLE / "data.jsonl").read_text().splitlines() if json.loads(r)["id"] == TASK)
    (root / "data").mkdir(parents=True)
    (root / "data.jsonl").write_text(line + "\n")
    shutil.copytree(SAMPLE / "data" / str(TASK), root / "data" / str(TASK))
    return load_tasks(root).by_id(TASK)


async def _judge(
    executor: Executor, task: Task, pages: list[Path], evidence: Path
) -> tuple[float, list[str]]:
    outcomes: list[str] = []
    start = time.perf_counter()

    async def one(page: Path) -> None:
        replay = await executor.replay(task, page, evidence / page.name)
        outcomes.append(f"{page.name}: {replay.success_steps}/{replay.total_steps} {replay.failure or ''}")

    async with anyio.create_task_group() as tg:
        for page in pages:
            tg.start_soon(one, page)
    return time.perf_counter() - start, sorted(outcomes)


async def main(pages_at_once: int) -> None:
    with tempfile.TemporaryDirectory(prefix="iwr-bench-hostile-") as tmp, Listener(lifetime=600) as listener:
        root = Path(tmp)
        task = _task(root / "ds")
        hostile = list(hostile_pages(root / "hostile", listener).values())
        ordinary = []
        for k in range(len(hostile)):
            shutil.copytree(task.folder / "reference", root / "ordinary" / f"ordinary-{k}")
            ordinary.append(root / "ordinary" / f"ordinary-{k}")
        async with PagePool(PoolConfig(size=pages_at_once)) as pool:
            executor = Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())
            await executor.replay(task, ordinary[0], root / "warm")  # first page pays cold start-up
            hostile_s, hostile_out = await _judge(executor, task, hostile, root / "ev-h")
            ordinary_s, _ = await _judge(executor, task, ordinary, root / "ev-o")
            restarts = pool.restarts
        await anyio.sleep(1.0)  # beacons sent while tabs closed would have arrived by now
        print(f"containment: {containment_level()}, pages at once: {pages_at_once}, restarts: {restarts}")
        for line in hostile_out:
            print(f"  {line}")
        print(f"hostile  ({len(hostile)} pages): {hostile_s:7.2f} s")
        print(f"ordinary ({len(ordinary)} pages): {ordinary_s:7.2f} s")
        print(f"ratio hostile/ordinary: {hostile_s / ordinary_s:.2f}x (target <= 2x)")
        print(f"listener received: {listener.hits or 'nothing'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="judge the hostile corpus vs as many ordinary pages")
    parser.add_argument("--pages-at-once", type=int, default=2)
    anyio.run(main, parser.parse_args().pages_at_once)
