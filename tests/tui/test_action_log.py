"""Any action of a job in detail, and the actions log of a finished run: its filters by verdict,
failure and disagreement between judge designs, read from the run's store as ``iwr watch`` does."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from make_events import Act, evidence, finished_run, judged_job, store_events, write_steps
from textual.widgets import DataTable, Static

from iwr_bench.engine.events import RunStarted
from iwr_bench.engine.follow import StoreFollower
from iwr_bench.engine.run_state import RunState
from iwr_bench.tui.action_log import action_rows, next_preset
from iwr_bench.tui.app import RunApp
from iwr_bench.tui.widgets.detail import DetailView
from iwr_bench.tui.widgets.images import DiffPane, ImagePane
from iwr_bench.tui.widgets.judge_panel import JudgePanel

anyio_mark = pytest.mark.anyio


def _designs() -> list[Any]:
    """Task 7 judged by designs A and B, which disagree on actions 2 and 3; task 8 by one design."""
    return finished_run(
        ["m"],
        [7, 8],
        judged_job(7, "m", [Act(verdict="yes"), Act(verdict="no"), Act("failed", "element_not_found")], "A"),
        judged_job(7, "m", [Act(verdict="yes"), Act(verdict="yes"), Act(verdict="undetermined")], "B"),
        judged_job(8, "m", [Act(verdict="error"), Act("failed", "no_scroll")]),
    )


def _panes(app: RunApp) -> tuple[Path | None, Path | None, tuple[Path, Path] | None]:
    """The before and after panes' screenshots and the pair the diff pane compares."""
    return (
        app.query_one("#before", ImagePane).path,
        app.query_one("#after", ImagePane).path,
        app.query_one("#diff", DiffPane).pair,
    )


def _steps(folder: Path, before: int, after: int) -> tuple[Path, Path, tuple[Path, Path]]:
    """Screenshots ``before`` and ``after`` of ``folder``, and their diff (no checkpoint to compare)."""
    pair = (folder / f"step_{before}.png", folder / f"step_{after}.png")
    return (*pair, pair)


async def _until(pilot: Any, check: Any, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for the app"
        await pilot.pause(0.1)


# -- the state --------------------------------------------------------------------------------------


def test_designs_get_their_own_rows_and_actions_keep_their_screenshots() -> None:
    state = RunState()
    for event in _designs():
        state.apply(event)
    assert set(state.jobs) == {"7/m/A", "7/m/B", "8/m"}  # the pair's own row went to its first design
    a = state.jobs["7/m/A"]
    assert (a.design, a.gen, a.judge, a.label) == ("A", "done", "done", "task 7 / m / A")
    assert state.models["m"].total == state.models["m"].judged == 3
    ok, failed = a.actions[1], a.actions[2]
    shots = evidence(7, "m", "A")
    assert (ok.before, ok.after) == (f"{shots}/step_1.png", f"{shots}/step_2.png")
    assert (failed.before, failed.after) == (f"{shots}/step_2.png", None)  # failed: the state it met
    rows = action_rows(state.jobs.values())
    assert [(r.job.key, r.action.index) for r in rows if r.disagrees] == [
        ("7/m/A", 1),
        ("7/m/A", 2),
        ("7/m/B", 1),
        ("7/m/B", 2),
    ]
    assert next_preset("", rows) == "pass" and next_preset("disagree", rows) == ""
    assert next_preset("failed", rows) == "failure:element_not_found"


def test_a_run_that_names_its_designs_counts_every_design_job_from_the_start() -> None:
    state = RunState()
    state.apply(RunStarted(run_id="r", models=["m"], tasks=[7, 8], designs=["A", "B"]))
    assert set(state.jobs) == {"7/m/A", "7/m/B", "8/m/A", "8/m/B"}
    assert (state.models["m"].total, state.models["m"].judged) == (4, 0)
    state.apply(RunStarted(run_id="r", models=["m"], tasks=[7, 8], designs=["A", "B"], resumed=True))
    assert len(state.jobs) == 4 and state.models["m"].total == 4  # a resume adds nothing


@anyio_mark
async def test_the_jobs_table_swaps_a_pairs_row_for_its_designs_rows() -> None:
    events = _designs()
    first_judging = next(i for i, e in enumerate(events) if e.job and e.job.startswith("judge/"))
    app = RunApp(Path("made-up"), events=events[:first_judging])  # generated, not judged yet
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("j")
        table = app.query_one("#jobtable", DataTable)
        assert [table.get_row_at(i)[1] for i in range(table.row_count)] == ["m", "m"]
        app.feed(events[first_judging:])
        app.redraw()
        await pilot.pause()
        rows = sorted(
            (str(table.get_row_at(i)[0]), str(table.get_row_at(i)[1])) for i in range(table.row_count)
        )
        assert rows == [("7", "m · A"), ("7", "m · B"), ("8", "m")]


# -- the detail view --------------------------------------------------------------------------------


@anyio_mark
async def test_the_detail_view_shows_before_after_and_diff_of_the_chosen_action(tmp_path: Path) -> None:
    events = finished_run(["m"], [5], judged_job(5, "m", [Act(), Act(verdict="yes"), Act()]))
    shots = tmp_path / evidence(5, "m")
    write_steps(tmp_path, evidence(5, "m"), 3)
    app = RunApp(tmp_path, events=events[:-3])  # the run goes on: its last action is running
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("j", "enter")
        await pilot.pause()
        assert _panes(app) == _steps(shots, 1, 2)  # the latest action with screenshots
        await pilot.press("left_square_bracket", "left_square_bracket")  # the first action
        await pilot.pause()
        assert _panes(app) == _steps(shots, 0, 1)
        assert app.query_one(JudgePanel).border_title == "judge calls · action 1"
        assert "action 1 · Click · ok" in str(app.query_one("#assertion", Static).content)
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert _panes(app) == _steps(shots, 1, 2)
        assert "yes: button 2 turns green" in str(app.query_one("#assertion", Static).content)
        app.feed(events[-3:])  # the last action ends (the table is redrawn): the choice stays
        app.redraw()
        await pilot.pause()
        assert app.query_one(DetailView).chosen == 1 and _panes(app) == _steps(shots, 1, 2)
        await pilot.press("down")  # the last row: follow the job again
        await pilot.pause()
        assert app.query_one(DetailView).chosen is None and _panes(app) == _steps(shots, 2, 3)


# -- the actions log of a finished run --------------------------------------------------------------


@anyio_mark
async def test_the_actions_log_of_a_finished_run_filters_and_opens_an_action(tmp_path: Path) -> None:
    run = tmp_path / "run"
    for task, design in ((7, "A"), (7, "B"), (8, "")):
        write_steps(run, evidence(task, "m", design), 3)
    store_events(run, _designs())
    app = RunApp(run, follower=StoreFollower(run))  # as iwr watch reads a finished run
    async with app.run_test(size=(100, 30)) as pilot:
        await _until(pilot, lambda: app.state.status == "completed")
        await pilot.press("a")
        await pilot.pause()
        table = app.query_one("#logtable", DataTable)

        def rows() -> list[tuple[str, ...]]:
            return [tuple(str(c) for c in table.get_row_at(i)[:7]) for i in range(table.row_count)]

        assert len(rows()) == 8
        assert rows()[1] == ("7", "m", "A", "2", "ok", "", "no ≠")
        expected = {
            "pass": [("7", "A", "1"), ("7", "B", "1"), ("7", "B", "2")],
            "fail": [("7", "A", "2")],
            "undetermined": [("7", "B", "3")],
            "error": [("8", "", "1")],
            "failed": [("7", "A", "3"), ("8", "", "2")],
            "failure:element_not_found": [("7", "A", "3")],
            "failure:no_scroll": [("8", "", "2")],
            "disagree": [("7", "A", "2"), ("7", "A", "3"), ("7", "B", "2"), ("7", "B", "3")],
        }
        for name, shown in expected.items():
            await pilot.press("f")  # the next filter
            await pilot.pause()
            head = str(app.query_one("#log-head", Static).content)
            assert head.startswith(f"filter: {name} · {len(shown)} of 8 actions"), head
            assert [(r[0], r[2], r[3]) for r in rows()] == shown, name
        await pilot.press("f")
        await pilot.pause()
        assert len(rows()) == 8  # round to all again
        await pilot.press("slash", *"undetermined disagree", "enter")
        await pilot.pause()
        assert [(r[0], r[2], r[3]) for r in rows()] == [("7", "B", "3")]
        await pilot.press("enter")  # open that job at that action
        await pilot.pause()
        assert app.view == "detail" and app.selected == "7/m/B"
        assert app.query_one(DetailView).chosen == 2
        shots = run / evidence(7, "m", "B")
        assert _panes(app)[:2] == (shots / "step_2.png", shots / "step_3.png")
        assert app.query_one(JudgePanel).border_title == "judge calls · action 3"


@anyio_mark
async def test_watch_can_open_on_the_actions_log_with_a_filter(tmp_path: Path) -> None:
    run = tmp_path / "run"
    store_events(run, _designs())
    app = RunApp(run, follower=StoreFollower(run), view="log", actions_filter="failed")
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(pilot, lambda: app.query_one("#logtable", DataTable).row_count == 2)
        assert app.view == "log" and app.focused is app.query_one("#logtable")
        assert str(app.query_one("#log-head", Static).content).startswith("filter: failed · 2 of 8")


def test_iwr_watch_passes_the_filter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from iwr_bench.cli import main
    from iwr_bench.tui import app

    seen: list[tuple[Path, str | None]] = []
    monkeypatch.setattr(
        app, "watch", lambda run_dir, actions_filter=None: seen.append((run_dir, actions_filter))
    )
    assert main(["watch", str(tmp_path), "--actions", "disagree"]) == 0
    assert main(["watch", str(tmp_path)]) == 0
    assert seen == [(tmp_path, "disagree"), (tmp_path, None)]
