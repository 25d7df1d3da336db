"""A hostile batch judged in one run (one page pool, the judge's replay) beside ordinary pages.

Every way out is tried at a real listener, memory is eaten, pages hang at load and after a click,
never settle and probe for the judge. The listener sees nothing, the ordinary pages score as usual,
the run finishes, and nothing of Chromium (process or temporary folder) is left afterwards.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import anyio
import pytest
from hostile_corpus import Listener, hostile_pages
from leftovers import processes_with_env

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.agents.judge.records import Replay
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.tools import jail
from iwr_bench.tools.pool import PagePool, PoolConfig

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.anyio]

SAMPLE = Path(__file__).resolve().parents[2] / "iwr_bench" / "suites" / "sample"
TASK = 102


def one_task_dataset(root: Path, task_id: int = TASK) -> Path:
    """A dataset holding only ``task_id`` of the built-in sample suite."""
    line = next(
        raw for raw in (SAMPLE / "data.jsonl").read_text().splitlines() if json.loads(raw)["id"] == task_id
    )
    (root / "data").mkdir(parents=True)
    (root / "data.jsonl").write_text(line + "\n")
    shutil.copytree(SAMPLE / "data" / str(task_id), root / "data" / str(task_id))
    return root


@pytest.mark.skipif(jail.containment_level() != "netns", reason="network namespaces are unavailable")
async def test_hostile_batch_beside_ordinary_pages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = load_tasks(one_task_dataset(tmp_path / "ds")).by_id(TASK)
    private_tmp = Path(tempfile.mkdtemp(prefix="iwrh-", dir="/tmp"))  # short: Chromium puts sockets there
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))
    ordinary = [task.folder / "reference", task.folder / "reference"]
    with Listener(lifetime=280) as listener:
        hostile = hostile_pages(tmp_path / "pages", listener)
        pages = [*hostile.items(), ("ordinary-a", ordinary[0]), ("ordinary-b", ordinary[1])]
        replays: dict[str, Replay] = {}
        async with PagePool(PoolConfig(size=2)) as pool:
            executor = Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())

            async def judge(name: str, page: Path) -> None:
                replays[name] = await executor.replay(task, page, tmp_path / "evidence" / name)

            async with anyio.create_task_group() as tg:
                for name, page in pages:
                    tg.start_soon(judge, name, page)
        await anyio.sleep(1.0)  # anything sent while the tabs closed has arrived by now
        hits = list(listener.hits)
    assert hits == []
    for name in ("ordinary-a", "ordinary-b"):
        assert replays[name].failure is None
        assert replays[name].success_steps == replays[name].total_steps == len(task.record.action_sequence)
    assert all(replays[name].success_steps < replays[name].total_steps for name in hostile)
    assert replays["hang-load"].failure is not None
    # The memory bound stops the eater and says so. (A kill's reason goes to the next page that
    # crashes in that browser: when a neighbour's renderer dies in the same moment it can take it,
    # so the sentence is looked for across the batch; the eater's crash is its own.)
    memory = replays["memory"]
    ended = [memory.failure, *(a.failure for a in memory.actions)]
    assert "page_crashed" in ended or memory.message.startswith("page_crashed"), memory.model_dump_json()
    assert any("MiB > limit" in r.model_dump_json() for r in replays.values()), memory.model_dump_json()
    assert processes_with_env(str(private_tmp)) == []
    ours = ("iwr-chromium-", "browser-use", ".org.chromium.", "org.chromium.")
    left = sorted(p.name for p in private_tmp.iterdir() if p.name.startswith(ours))
    shutil.rmtree(private_tmp)
    assert left == []
