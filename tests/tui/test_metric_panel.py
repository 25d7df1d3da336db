"""The metric stage's progress in the terminal UI: the overview's panel and the status line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import recorded_events
from textual.widgets import Static

from iwr_bench.engine.events import DesignProgress, Event, MetricProgress, RunFinished, RunStarted
from iwr_bench.tui.app import RunApp
from iwr_bench.tui.widgets.metrics import MetricsPanel


def _text(app: RunApp, selector: str) -> str:
    return str(app.query_one(selector, Static).content)


def _progress(time: float, ocr_done: int, ocr_left: int, rate: float | None) -> MetricProgress:
    eta = None if rate is None else ocr_left / rate
    ocr = DesignProgress(
        metric="ocr", done=ocr_done, skipped=4, left=ocr_left, running=min(8, ocr_left), rate=rate, eta_s=eta
    )
    dino = DesignProgress(metric="dino", done=12, skipped=4, left=0, rate=12.5, eta_s=0.0)
    return MetricProgress(designs=[ocr, dino], eta_s=eta, time=time)


@pytest.mark.anyio
async def test_the_overview_shows_images_done_left_rate_and_a_counting_eta() -> None:
    now = [1000.0]
    start: list[Event] = [RunStarted(run_id="live", models=["m"], tasks=[1, 2], time=990.0)]
    app = RunApp(Path("live"), events=start, clock=lambda: now[0])
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(MetricsPanel)
        assert not panel.display  # no metric progress yet: no panel

        app.feed([_progress(1000.0, 0, 26, None)])  # nothing measured yet
        app.redraw()
        await pilot.pause()
        assert panel.display
        assert "20/46 images done (8 cached or identical), 26 left (8 running)" in _text(app, "#metrics")
        assert "ETA unknown until a batch finishes" in _text(app, "#metrics")
        assert "ocr   4/30 done · 26 left · rate unknown" in _text(app, "#metrics")

        app.feed([_progress(1000.0, 10, 16, 0.25)])
        app.redraw()
        app.tick()
        await pilot.pause()
        text = _text(app, "#metrics")
        assert "30/46 images done (8 cached or identical), 16 left (8 running) · ETA 0:01:04" in text
        assert "ocr   14/30 done · 16 left · 4.0 s/image" in text
        assert "dino  16/16 done · 0 left · 12.5 images/s" in text
        assert "metrics 30/46 images, ETA 0:01:04" in _text(app, "#statusbar")  # on every view

        now[0] = 1030.0  # no event for 30 s: the ETA counts down with the clock
        app.tick()
        await pilot.pause()
        assert "ETA 0:00:34" in _text(app, "#metrics") and "ETA 0:00:34" in _text(app, "#statusbar")

        app.feed([_progress(1031.0, 26, 0, 0.25), RunFinished(status="completed", wall_s=41.0, time=1031.0)])
        app.redraw()
        app.tick()
        await pilot.pause()
        assert "46/46 images done (8 cached or identical), 0 left" in _text(app, "#metrics")
        assert "ETA" not in _text(app, "#metrics") and "metrics" not in _text(app, "#statusbar")


def test_snapshot_overview_with_metric_progress(snap_compare: Any) -> None:
    # The recorded run, caught in its metric stage (before its end, which would hide the ETA).
    run = [e for e in recorded_events() if not isinstance(e, RunFinished)]
    at = run[-1].time
    app = RunApp(Path("recorded-run"), events=[*run, _progress(at, 10, 16, 0.25)], clock=lambda: at + 4)
    assert snap_compare(app, terminal_size=(80, 24))
