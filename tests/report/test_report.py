"""Reports of a small finished run: the store's numbers, flagged comparisons, a working HTML page."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import pytest
from PIL import Image

from iwr_bench.cli import main
from iwr_bench.engine.run import run_summary
from iwr_bench.engine.store import RunStore
from iwr_bench.report import build_report, compare_runs
from iwr_bench.tools.models import PageSpec, Viewport
from iwr_bench.tools.pool import PagePool, PoolConfig

pytestmark = pytest.mark.browser

LOAD_ALL_IMAGES = """(async () => {
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  return [imgs.length, imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)];
})()"""
PICK_BLANK = """(() => {
  const s = document.querySelector('select[name=model]');
  s.value = 'blank';
  s.dispatchEvent(new Event('change'));
  return document.getElementById('shown').textContent;
})()"""


@pytest.fixture(scope="module")
def report(finished_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_report(finished_run, tmp_path_factory.mktemp("report") / "r")


def _summary(run: Path) -> dict[str, dict[str, object]]:
    store = RunStore.open_run(run, readonly=True)
    try:
        return run_summary(store)["models"]
    finally:
        store.close()


def test_leaderboard_files_carry_the_stores_numbers(finished_run: Path, report: Path) -> None:
    summary = _summary(finished_run)
    board = json.loads((report / "leaderboard.json").read_text())
    assert [row["model"] for row in board] == ["oracle", "screenshot", "blank"]  # best Final first
    for row in board:
        want = summary[row["model"]]
        for col, key in (
            ("IFS", "ifs"),
            ("VFS", "vfs"),
            ("Final", "final"),
            ("LVS", "lvs"),
            ("IFS micro", "ifs_micro"),
        ):
            assert row[col] == round(float(want[key]), 2), (row["model"], col)  # type: ignore[arg-type]
        assert row["HVS"] is None and row["paper comparable"] is False
        assert "(substitute)" in row["backends"]
        assert row["judged"] == want["judged"] == 1
    with (report / "leaderboard.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [float(r["Final"]) for r in rows] == [row["Final"] for row in board]
    summary_file = json.loads((report / "summary.json").read_text())
    assert summary_file["status"] == "completed" and summary_file["wall_s"] > 0
    markdown = (report / "leaderboard.md").read_text()
    assert "| model |" in markdown and f"{board[0]['Final']:.2f}" in markdown


def test_breakdowns_split_the_same_numbers(finished_run: Path, report: Path) -> None:
    board = {row["model"]: row for row in json.loads((report / "leaderboard.json").read_text())}
    rows = json.loads((report / "breakdowns.json").read_text())
    by_level = [r for r in rows if r["breakdown"] == "interaction level"]
    assert {r["group"] for r in by_level} == {"L1"}  # task 102 is an L1 task
    for r in by_level:
        assert r["Final"] == board[r["model"]]["Final"] and r["IFS"] == board[r["model"]]["IFS"]
    assert {r["group"] for r in rows if r["breakdown"] == "device"} == {"mobile"}
    store = RunStore.open_run(finished_run, readonly=True)
    try:
        for model in ("oracle", "screenshot", "blank"):
            actions = store.actions(f"judge/102/{model}")
            typed = [r for r in rows if r["breakdown"] == "action type" and r["model"] == model]
            assert sum(r["actions"] for r in typed) == len(actions)
            assert sum(r["succeeded"] for r in typed) == sum(a["status"] == "ok" for a in actions)
    finally:
        store.close()
    for name in ("interaction_level", "visual_level", "domain", "device", "action_type"):
        with Image.open(report / "plots" / f"{name}.png") as im:
            assert im.width > 300 and im.height > 200


def test_comparing_runs_flags_different_settings(finished_run: Path, tmp_path: Path) -> None:
    same = json.loads(
        (compare_runs(finished_run, finished_run, tmp_path / "c0") / "comparison.json").read_text()
    )
    assert all(r["comparable"] and r["Final delta"] == 0.0 for r in same)
    other = tmp_path / "other"
    shutil.copytree(finished_run, other)
    store = RunStore.open_run(other)
    try:
        store.set_manifest({"policies": {"judge_error": "pass", "undetermined": "pass"}})
    finally:
        store.close()
    rows = json.loads((compare_runs(finished_run, other, tmp_path / "c1") / "comparison.json").read_text())
    assert all(not r["comparable"] and r["Final delta"] is None and "policies" in r["differs"] for r in rows)
    assert all(r["Final A"] == r["Final B"] for r in rows)  # both numbers shown, never a delta


def test_cli_report_and_bad_input(
    finished_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(finished_run), "--out", str(tmp_path / "r"), "--no-html"]) == 0
    out = capsys.readouterr().out
    assert "oracle" in out and "not paper-comparable" in out
    assert (tmp_path / "r" / "leaderboard.csv").is_file() and not (tmp_path / "r" / "index.html").exists()
    assert main(["report", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


@pytest.mark.anyio
async def test_html_report_loads_offline_without_errors(report: Path, tmp_path: Path) -> None:
    html = (report / "index.html").read_text()
    # each scored action: reference, replay and the diff of the two (an image in the folder)
    diffs = re.findall(
        r'<img src="(img/[^"]+/diff_[^"]+\.jpg)" alt="diff: \d+\.\d% of pixels, \d+ region', html
    )
    assert diffs and all((report / d).is_file() for d in diffs)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//""", html)
    async with PagePool(PoolConfig(size=1)) as pool:
        spec = PageSpec(page=str(report), viewport=Viewport(width=1280, height=900))
        async with pool.page(spec) as tools:
            await tools.wait_settled()
            broken = await tools.tab.evaluate(LOAD_ALL_IMAGES, await_promise=True)
            shown = await tools.tab.evaluate(PICK_BLANK)
            shot = await tools.screenshot()
            state = await tools.page_state()
    (tmp_path / "report.png").write_bytes(shot)
    count, failed = broken
    assert count > 20 and failed == []
    assert shown == "1"  # the model filter works
    assert state.blocked_requests == [] and state.console_errors == [] and state.page_errors == []
