"""The executor and scoring end to end: record a small task, then judge pages against it."""

from __future__ import annotations

import json
from pathlib import Path

import anyio.to_thread
import pytest
import yaml

from iwr_bench.agents.grounding import HeuristicGrounder
from iwr_bench.agents.judge.assertions import HeuristicAssertionJudge, decide, evidence_tokens
from iwr_bench.agents.judge.evaluate import VisualMetrics, evaluate
from iwr_bench.agents.judge.executor import Executor
from iwr_bench.cli import main
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.dataset.recorder import record
from iwr_bench.dataset.script import load_script
from iwr_bench.registry import create
from iwr_bench.tools.pool import PagePool, PoolConfig

SITE = """<!doctype html><html><head><style>
body { font-family: "DejaVu Sans", sans-serif; margin: 0 } main { padding: 16px; height: 1200px }
header { background: #234; color: #fff; padding: 12px; font-size: 20px }
</style></head><body><header>Tally</header><main>
<p id="count">Count: 0</p><button class="btn" id="inc">Add one</button>
<button class="btn" id="reset">Reset</button>
<input id="name" placeholder="Your name"><p id="hello"></p></main>
<script>
let n = 0; const count = document.getElementById('count');
const inc = document.getElementById('inc');
inc.addEventListener('click', () => { n += 1; count.textContent = 'Count: ' + n; });
document.getElementById('reset').addEventListener('click', () => { n = 0; count.textContent = 'Count: 0'; });
document.getElementById('name').addEventListener('keydown', (e) => {
  if (e.key === 'Enter') document.getElementById('hello').textContent = 'Hello, ' + e.target.value + '!';
});
</script></body></html>"""

SCRIPT = {
    "id": 3,
    "classification": {"interaction_complexity": "L2", "visual_complexity": "V1", "domain": "Demo"},
    "recording_details": {"resolution": "640x400"},
    "actions": [
        {
            "type": "Click",
            "parameters": {"description": "the 'Add one' button"},
            "visual_evaluation_flag": True,
            "record": {"selector": "#inc"},
        },
        {
            "type": "Click",
            "parameters": {"description": "the 'Add one' button"},
            "visual_evaluation_flag": True,
            "logical_assertion": "the count changes to 'Count: 2'",
            "record": {"selector": "#inc", "expect_text": "Count: 2"},
        },
        {
            "type": "Type",
            "parameters": {"description": "the 'Your name' box", "text": "Ada"},
            "record": {"selector": "#name"},
        },
        {
            "type": "Press",
            "parameters": {"description": "press Enter to greet", "key": "Enter"},
            "visual_evaluation_flag": True,
            "logical_assertion": "a greeting 'Hello, Ada!' appears",
            "record": {"expect_text": "Hello, Ada!"},
        },
        {
            "type": "Scroll",
            "parameters": {"description": "scroll down the page"},
            "visual_evaluation_flag": True,
        },
    ],
}

MUTANTS = {
    "off_by_one": ("n += 1;", "n += n === 1 ? 2 : 1;", 1, "assertion_failed"),
    "label_changed": (">Add one<", ">Zzz<", 0, "element_not_found"),
    "short_page": ("height: 1200px", "height: 100px", 4, "no_scroll"),
    "recoloured": ("#234", "#a33", None, None),
}

pytestmark = [pytest.mark.browser, pytest.mark.anyio]


@pytest.fixture(scope="module")
async def pool() -> PagePool:  # type: ignore[misc]
    async with PagePool(PoolConfig(size=2)) as p:
        yield p  # type: ignore[misc]


@pytest.fixture(scope="module")
async def task(pool: PagePool, tmp_path_factory: pytest.TempPathFactory) -> Task:
    root = tmp_path_factory.mktemp("judge")
    (root / "site").mkdir()
    (root / "site" / "index.html").write_text(SITE)
    (root / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
    await record(root / "site", load_script(root / "script.yaml"), root / "ds", pool=pool)
    return load_tasks(root / "ds").by_id(3)


@pytest.fixture(scope="module")
def executor(pool: PagePool) -> Executor:
    return Executor(pool, HeuristicGrounder(), HeuristicAssertionJudge())


def _page(folder: Path, html: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "index.html").write_text(html)
    return folder


async def test_reference_page_passes_everything(task: Task, executor: Executor, tmp_path: Path) -> None:
    assert task.reference_page is not None
    replay = await executor.replay(task, task.reference_page.parent, tmp_path / "ev")
    assert (replay.success_steps, replay.total_steps) == (5, 5), replay.actions
    assert [a.assertion.verdict for a in replay.actions if a.assertion] == ["yes", "yes"]
    assert sorted(replay.screenshots) == [0, 1, 2, 4, 5]
    assert all((tmp_path / "ev" / name).is_file() for name in replay.screenshots.values())


@pytest.mark.parametrize("name", sorted(MUTANTS))
async def test_each_mutant_fails_where_expected(
    task: Task, executor: Executor, tmp_path: Path, name: str
) -> None:
    old, new, first_failure, reason = MUTANTS[name]
    assert SITE.count(old) == 1
    page = _page(tmp_path / name, SITE.replace(old, new))
    replay = await executor.replay(task, page, tmp_path / "ev")
    failed = [a for a in replay.actions if a.status == "failed"]
    if first_failure is None:
        assert failed == [] and replay.success_steps == 5
    else:
        assert [(a.index, a.failure) for a in failed] == [(first_failure, reason)]
        assert replay.success_steps == first_failure
        assert all(a.status == "not_run" for a in replay.actions[first_failure + 1 :])


async def test_missing_and_blank_pages_score_zero(task: Task, executor: Executor, tmp_path: Path) -> None:
    missing = await executor.replay(task, None, tmp_path / "ev0")
    assert (missing.failure, missing.success_steps) == ("no_page", 0)
    blank = await executor.replay(task, _page(tmp_path / "blank", ""), tmp_path / "ev1")
    assert blank.success_steps == 0 and blank.actions[0].failure == "element_not_found"


async def test_judging_twice_gives_identical_scores(task: Task, executor: Executor, tmp_path: Path) -> None:
    ocr, _ = create("metric", "phash")  # cheap stand-ins: identical inputs must give identical numbers
    dino, _ = create("metric", "effnet-lite0", device="cpu")
    metrics = VisualMetrics(ocr=ocr, dino=dino)
    page = _page(tmp_path / "recoloured", SITE.replace("#234", "#a33"))
    runs = []
    for k in range(2):
        replay = await executor.replay(task, page, tmp_path / f"ev{k}")
        runs.append(await evaluate(task, "m", replay, tmp_path / f"ev{k}", tmp_path / f"out{k}", metrics))
    a, b = runs
    assert (a.ifs, a.all_ocr_scores, a.all_dino_scores, a.final) == (
        b.ifs,
        b.all_ocr_scores,
        b.all_dino_scores,
        b.final,
    )
    assert a.ifs == 1.0 and a.vfs < 1.0 and a.lvs_only
    saved = json.loads((tmp_path / "out0" / "eval.json").read_text())
    assert saved["total_step"] == 5 and saved["success_step"] == 5
    assert list(saved["screenshots"].values()) == [f"evalpoints/{k}.png" for k in (0, 1, 2, 4, 5)]
    assert all((tmp_path / "out0" / p).is_file() for p in saved["screenshots"].values())


@pytest.mark.slow
async def test_cli_judges_a_results_tree(task: Task, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert task.reference_page is not None
    pages = tmp_path / "pages" / "3"
    _page(pages / "oracle", task.reference_page.read_text())
    _page(pages / "blank", "")
    root = task.folder.parent.parent
    argv = ["judge", "--tasks", str(root), "--pages", str(tmp_path / "pages"), "--out", str(tmp_path / "o")]
    assert await anyio.to_thread.run_sync(main, argv) == 0  # the CLI runs its own event loop
    oracle = json.loads((tmp_path / "o" / "3" / "oracle" / "eval.json").read_text())
    blank = json.loads((tmp_path / "o" / "3" / "blank" / "eval.json").read_text())
    assert oracle["ifs"] == 1.0 and blank["ifs"] == 0.0
    assert oracle["final"] > blank["final"]
    assert any(b["substitute"] for b in oracle["backends"])


def test_assertion_rules() -> None:
    assert evidence_tokens("the total changes to '$23.50' for 2 items") == ["$23.50"]  # quotes win
    assert evidence_tokens("its count goes from 12 to 13 likes") == ["13"]  # "from" names the old state
    assert evidence_tokens("the button changes from 'Cart (0)' to 'Cart (1)'") == ["Cart (1)"]
    mixed = "the name error disappears and the summary reads 'Fix 1 error'"
    assert decide(mixed, "Name needed. Fix 2 errors", "Fix 1 error", changed=True).verdict == "yes"
    assert decide("a message 'Saved' appears", "x", "Saved!", changed=True).verdict == "yes"
    assert decide("a message 'Saved' appears", "x", "nothing", changed=True).verdict == "no"
    assert (
        decide("the counter shows 1", "Count 0 of $1.50", "Count 0 of $1.50", changed=False).verdict == "no"
    )
    assert decide("the counter shows 1", "Count 0", "Count 1", changed=True).verdict == "yes"
    assert decide("the banner 'Sale' disappears", "Sale now", "now", changed=True).verdict == "yes"
    assert decide("the banner 'Sale' disappears", "Sale now", "Sale now", changed=True).verdict == "no"
    assert decide("the menu opens", "a", "b", changed=True).verdict == "undetermined"
    assert decide("the menu opens", "a", "a", changed=False).verdict == "no"
