"""The app in an 80x24 terminal, and Ctrl-C: the judge panel gets the room, the footer shows every
key that matters, the stop dialog fits whole, and Ctrl-C asks before it stops a run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from conftest import recorded_events, region_text
from textual.geometry import Region
from textual.widgets import Footer, Label

from iwr_bench.engine.bus import EventBus
from iwr_bench.engine.events import RunFinished
from iwr_bench.engine.records import RunOutcome
from iwr_bench.engine.run import Engine
from iwr_bench.tui.app import ConfirmStop, RunApp
from iwr_bench.tui.widgets.confirm import QUESTION
from iwr_bench.tui.widgets.judge_panel import JudgePanel

anyio_mark = pytest.mark.anyio
SCREEN = Region(0, 0, 80, 24)


class _Run:
    """Stands in for the engine of a run in progress: it goes on until it is cancelled."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.bus = EventBus()
        self.cancelled = False
        self._stop: anyio.Event | None = None

    async def run(self) -> RunOutcome:
        self._stop = anyio.Event()
        await self._stop.wait()
        return RunOutcome(
            status="cancelled", run_dir=self.run_dir, wall_s=0.0, overhead_s=0.0, work_s={}, actions=0
        )

    def cancel(self) -> None:
        self.cancelled = True
        if self._stop is not None:
            self._stop.set()


def _footer(app: RunApp) -> str:
    return region_text(app, app.query_one(Footer).region)


async def _until(pilot: Any, check: Any, limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for the app"
        await pilot.pause(0.1)


@pytest.mark.parametrize("running", [True, False], ids=["running", "finished"])
@anyio_mark
async def test_the_footer_shows_the_keys_of_each_view_and_quit_at_80_columns(running: bool) -> None:
    events = recorded_events()
    if running:
        events = [e for e in events if not isinstance(e, RunFinished)]
    app = RunApp(Path("recorded-run"), events=events, clock=lambda: events[-1].time)
    cancel = ["c Cancel"] if running else []
    expected = {
        "j": ["o Overview", "d Detail", "l Board", "a Actions", "s Sort", "/ Filter", *cancel],
        "d": ["o Overview", "j Jobs", "[ ] Action", *cancel],
        "l": ["o Overview", "j Jobs", "d Detail", "a Actions"],
        "a": ["o Overview", "j Jobs", "d Detail", "l Board", "f Next filter", "/ Filter"],
        "o": ["j Jobs", "d Detail", "l Board", "a Actions"],
    }
    async with app.run_test(size=(80, 24)) as pilot:
        for key, keys in expected.items():
            await pilot.press(key)
            await pilot.pause()
            footer = _footer(app)
            for shown in [*keys, "p Pause", "q Quit"]:
                assert shown in footer, (key, footer)
            assert ("c Cancel" in footer) == bool(cancel and key in "jd")


@anyio_mark
async def test_the_judge_panel_gets_most_of_the_detail_view_at_80x24() -> None:
    events = recorded_events()
    app = RunApp(Path("recorded-run"), events=events, clock=lambda: events[-1].time)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("j", "enter")
        await pilot.pause()
        panel = app.query_one(JudgePanel).region
        images = app.query_one("#images").region
        assert panel.height >= 12 and images.height >= 5
        assert panel.height > 24 // 2 and SCREEN.contains_region(panel)
        assert "Packing list: 6 items" in region_text(app, panel)  # its calls, with room to read


@anyio_mark
async def test_ctrl_c_asks_to_stop_the_run_in_a_dialog_that_fits(tmp_path: Path) -> None:
    run = _Run(tmp_path)
    app = RunApp(tmp_path, engine=cast(Engine, run))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+c")
        assert isinstance(app.screen, ConfirmStop)
        label = app.screen.query_one(Label).region
        assert SCREEN.contains_region(label)
        assert region_text(app, label) == QUESTION  # whole, wrapped inside the dialog
        buttons = region_text(app, app.screen.query_one("Horizontal").region)
        assert "Stop and quit (y)" in buttons and "Keep watching (n)" in buttons
        await pilot.press("ctrl+c", "q")  # asked already: still one dialog
        assert len(app.screen_stack) == 2
        await pilot.press("n")
        assert not isinstance(app.screen, ConfirmStop) and not run.cancelled
        await pilot.press("ctrl+c", "y")
        await _until(pilot, lambda: app.outcome is not None)
    assert run.cancelled and app.outcome is not None and app.outcome.status == "cancelled"


@anyio_mark
async def test_ctrl_c_quits_at_once_when_the_run_is_not_the_apps() -> None:
    events = recorded_events()
    app = RunApp(Path("recorded-run"), events=events, clock=lambda: events[-1].time)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0
