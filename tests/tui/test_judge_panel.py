"""The judge panel, the clock and the status line, driven by the real judges on a scripted model."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA  # pyright: ignore[reportAttributeAccessIssue]
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo
from scripted_model import Scripted, answer_grounding, last_prompt, truthful_verdict
from textual.widgets import Static

from iwr_bench.agents.events import (
    ActionGrounded,
    ActionStarted,
    AgentEvent,
    JudgeCallStarted,
    JudgeDelta,
    emitting,
)
from iwr_bench.agents.grounding import GroundingRequest
from iwr_bench.agents.grounding_llm import LLMGrounder
from iwr_bench.agents.judge.llm import LLMAssertionJudge
from iwr_bench.agents.judge.records import AssertionRequest
from iwr_bench.agents.judge.rubric import RubricJudge
from iwr_bench.engine.bus import EventBus
from iwr_bench.engine.events import EngineStatus, Event, FromAgent, JobStarted, RunStarted, from_agent
from iwr_bench.engine.status import StatusReporter
from iwr_bench.metrics import models
from iwr_bench.tools.models import BoundingBox, Element, Observation
from iwr_bench.tui.app import RunApp

JOB = "judge/7/m"
PNG = (DATA / "oracle-step_1.png").read_bytes()


def _start() -> list[Event]:
    return [
        RunStarted(run_id="live", models=["m"], tasks=[7], time=1000.0),
        JobStarted(job=JOB, stage="judge", task_id=7, model="m", time=1000.0),
        FromAgent(
            job=JOB,
            time=1001.0,
            event=ActionStarted(index=0, total=2, type="Click", description="the 'New Game' button"),
        ),
    ]


def _request() -> GroundingRequest:
    box = BoundingBox(x=0, y=0, width=10, height=10)
    elements = [
        Element(index=i, tag="button", text=label, box=box, in_viewport=True)
        for i, label in enumerate(["Zzz", "New Game", "Quit"])
    ]
    observation = Observation(url="http://127.0.0.1/", title="game", elements=elements, text="")
    return GroundingRequest(description="the 'New Game' button", action_type="Click", observation=observation)


def _panel(app: RunApp) -> str:
    return str(app.query_one("#stream-text", Static).content)


class _Live:
    """Agent events into the app as the engine would publish them."""

    def __init__(self, app: RunApp) -> None:
        self.bus = EventBus()
        self.bus.subscribe(app.state.apply)

    def __call__(self, event: AgentEvent) -> None:
        self.bus.publish(from_agent(event, JOB))


@pytest.mark.anyio
async def test_panel_shows_prose_then_fields_for_grounder_votes_and_rubric() -> None:
    def rubric(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        del messages, info
        reasoning = "same layout, the title colour differs"
        return {
            "reasoning": reasoning,
            "layout": 9,
            "elements": 14,
            "content": 35,
            "style": 10,
            "overall": 17,
        }

    def by_seed(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        seed = int((info.model_settings or {}).get("seed", 0))
        answer = truthful_verdict(last_prompt(messages))
        return {**answer, "reasoning": f"vote {seed + 1} looked at the page", "verdict": "yes"}

    app = RunApp(Path("live"), events=_start())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("d")
        with emitting(_Live(app)):
            grounding = await LLMGrounder(Scripted(answer_grounding).model(), name="llm:s")(_request())
            request = AssertionRequest(assertion="a new game starts", before_png=PNG, after_png=PNG)
            await LLMAssertionJudge(Scripted(by_seed).model(), votes=3)(request)
        app.feed([from_agent(ActionGrounded(index=0, element=grounding.index, reason=grounding.reason), JOB)])
        with emitting(_Live(app)):
            await RubricJudge(Scripted(rubric).model())(PNG, PNG)
        app.redraw(force=True)
        await pilot.pause()
        text = _panel(app)
    assert "{" not in text and '"reason' not in text  # prose, never raw JSON
    grounder = text.index("▌ grounder · Click: the 'New Game' button")
    assert text.index("its label is 'New Game'", grounder) < text.index(
        "→ index: 1 · element: button 'New Game'"
    )
    for vote in (1, 2, 3):
        block = text.index(f"▌ assertion judge, vote {vote} of 3 · a new game starts")
        assert text.index(f"vote {vote} looked at the page", block) < text.index("→ verdict: yes", block)
    after = text.index("after the replay")
    assert (
        after
        < text.index("▌ rubric judge")
        < text.index("the title colour differs")
        < text.index("→ score: 85")
    )


@pytest.mark.anyio
async def test_a_retry_is_shown_as_a_retry_with_its_feedback() -> None:
    def wrong_first(messages: list[ModelMessage], info: AgentInfo) -> dict[str, Any]:
        answer = answer_grounding(messages, info)
        return {**answer, "index": 999} if last_prompt(messages).attempt == 1 else answer

    app = RunApp(Path("live"), events=_start())
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("d")
        with emitting(_Live(app)):
            await LLMGrounder(Scripted(wrong_first).model())(_request())
        app.redraw(force=True)
        await pilot.pause()
        text = _panel(app)
    retry = text.index("↻ retry 1 (answer sent back): index 999 is not in the element list")
    assert text.index("▌ grounder") < retry < text.index("→ index: 1")


def test_a_failed_grounding_reads_as_a_sentence() -> None:
    event = ActionGrounded(
        index=0,
        element=None,
        description="the New Game button",
        best="Zzz",
        best_score=0.05,
        threshold=0.45,
    )
    assert event.sentence() == "no element matched 'the New Game button' (best: 'Zzz', 0.05 < 0.45)"
    llm = ActionGrounded(index=0, element=None, description="the X", reason="nothing with that label")
    assert llm.sentence() == "no element matched 'the X': nothing with that label"


@pytest.mark.anyio
async def test_clock_advances_with_no_events_and_status_says_what_the_engine_does() -> None:
    now = [1010.0]
    app = RunApp(Path("live"), events=_start(), clock=lambda: now[0])
    async with app.run_test(size=(120, 30)) as pilot:
        bar = app.query_one("#statusbar", Static)
        app.tick()
        assert "0:00:10" in str(bar.content)
        now[0] = 1075.0  # a minute later, no event came
        deadline = time.monotonic() + 30  # the status bar's own timer (once a second; later under load)
        while "0:01:15" not in str(bar.content) and time.monotonic() < deadline:
            await pilot.pause(0.2)
        assert "0:01:15" in str(bar.content)
        # a slow model load, reported by the metric models' registry from its loading thread
        reporter = StatusReporter(app.state.apply)
        reporter.start()
        loaded = anyio_event()
        try:

            def slow_load() -> str:
                loaded.wait(10)
                return "model"

            import anyio.to_thread

            async def load() -> None:
                await anyio.to_thread.run_sync(models.shared, ("SlowModel", "cpu"), slow_load)

            async with anyio_group() as tg:
                tg.start_soon(load)
                for _ in range(300):  # the first load also imports torch
                    await pilot.pause(0.1)
                    app.tick()
                    if "loading" in str(bar.content):
                        break
                assert "loading metric models (SlowModel cpu)" in str(bar.content)
                loaded.set()
            app.tick()
            assert "loading metric models" not in str(bar.content)
        finally:
            reporter.stop()
            models.forget()
        # a judge call that has heard nothing from its model for a while
        app.feed(
            [
                FromAgent(
                    job=JOB,
                    time=1070.0,
                    event=JudgeCallStarted(call="g-1", role="grounder", who="grounder", request="x"),
                )
            ]
        )
        app.tick()
        assert "waiting for the judge model: grounder, task 7 / m, 5 s" in str(bar.content)
        app.feed([EngineStatus(key="metrics queue", text="3 pairs queued for metrics", time=1075.0)])
        app.tick()
        assert "3 pairs queued for metrics" in str(bar.content)


def anyio_event() -> Any:
    import threading

    return threading.Event()


def anyio_group() -> Any:
    import anyio

    return anyio.create_task_group()


def _mid_stream() -> list[Event]:
    events = _start()
    events += [
        from_agent(
            JudgeCallStarted(
                call="g-1", role="grounder", who="grounder", request="Click: the 'New Game' button"
            ),
            JOB,
        ),
        from_agent(
            JudgeDelta(call="g-1", role="grounder", text="Two buttons mention a game; the one labelled"), JOB
        ),
    ]
    return events


def test_snapshot_judge_panel_mid_stream(snap_compare: Any) -> None:
    assert snap_compare(
        RunApp(Path("live"), events=_mid_stream(), clock=lambda: 1030.0),
        press=("d",),
        terminal_size=(120, 36),
    )


def test_plain_progress_says_what_the_engine_does() -> None:
    import io

    from iwr_bench.engine.progress import PlainProgress

    out = io.StringIO()
    progress = PlainProgress(out)
    progress(EngineStatus(key="metric models", text="loading metric models (dino)"))
    progress(EngineStatus(key="metrics queue", text="1 pair queued for metrics"))
    progress(
        EngineStatus(key="metrics queue", text="2 pairs queued for metrics")
    )  # within 10 s: not repeated
    progress(EngineStatus(key="metric models", text="metric models loaded", done=True))
    lines = out.getvalue().splitlines()
    assert lines == [
        "[engine] loading metric models (dino)",
        "[engine] 1 pair queued for metrics",
        "[engine] metric models loaded",
    ]


def test_the_metrics_queue_says_when_it_is_empty() -> None:
    from iwr_bench.engine.status import StatusReporter

    seen: list[EngineStatus] = []
    reporter = StatusReporter(lambda e: seen.append(e) if isinstance(e, EngineStatus) else None)
    reporter.metrics_queue(+1)
    reporter.metrics_queue(+1)
    reporter.metrics_queue(-1)
    reporter.metrics_queue(-1)
    assert [(e.text, e.done) for e in seen] == [
        ("1 pair queued for metrics", False),
        ("2 pairs queued for metrics", False),
        ("1 pair queued for metrics", False),
        ("metrics queue empty", True),
    ]


@pytest.mark.anyio
async def test_long_streams_scroll_and_the_user_can_pause_following() -> None:
    from iwr_bench.tui.widgets.judge_panel import JudgePanel

    app = RunApp(Path("live"), events=_mid_stream())
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("d")
        panel = app.query_one(JudgePanel)

        def stream(lines: int, start: int) -> None:
            for i in range(start, start + lines):
                app.feed(
                    [
                        from_agent(
                            JudgeDelta(call="g-1", role="grounder", text=f"line {i} of the reasoning\n"), JOB
                        )
                    ]
                )
            app.redraw(force=True)

        async def settled() -> None:  # the panel scrolls once the new text is laid out
            for _ in range(20):
                await pilot.pause(0.05)

        stream(80, 0)
        await settled()
        assert panel.max_scroll_y > 0 and panel.scroll_y == panel.max_scroll_y  # follows the newest text
        panel.focus()
        await pilot.press("pageup")
        assert not panel.following and "paused" in str(panel.border_subtitle)
        held = panel.scroll_y
        stream(40, 80)
        await settled()
        assert panel.scroll_y == held < panel.max_scroll_y  # new text does not move the reader
        await pilot.press("f")
        stream(1, 120)
        await settled()
        assert panel.following and panel.scroll_y == panel.max_scroll_y
        assert "line 120 of the reasoning" in _panel(app)


def test_live_progress_clock_runs_without_events() -> None:
    """The live table folds the stream with the TUI's RunState: the same clock and activity words."""
    import time

    from iwr_bench.engine.progress import LiveProgress, table

    live = LiveProgress()
    now = time.time()
    for event in [
        RunStarted(run_id="r", models=["m"], tasks=[7], time=now - 65),  # a minute without an event
        JobStarted(job=JOB, stage="judge", task_id=7, model="m", time=now - 60),
        EngineStatus(key="metric models", text="loading metric models (dino)", time=now - 60),
        FromAgent(  # its model silent for 12 s
            job=JOB,
            time=now - 12,
            event=JudgeCallStarted(call="g-1", role="grounder", who="grounder", request="x"),
        ),
    ]:
        live(event)
    shown = table(live.state, now)
    assert "0:01:05" in str(shown.title)
    assert shown.caption == (
        "loading metric models (dino); waiting for the judge model: grounder, task 7 / m, 12 s"
    )


@pytest.mark.anyio
async def test_watch_waits_for_a_run_folder_that_does_not_exist_yet(tmp_path: Path) -> None:
    from iwr_bench.engine.follow import StoreFollower

    later = tmp_path / "not-yet"
    app = RunApp(later, follower=StoreFollower(later))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.6)  # a poll or two of a folder that is not there
        assert "waiting for the run to start" in str(app.query_one("#statusbar", Static).content)
        assert app.is_running and not app.follower.found  # type: ignore[union-attr]


def test_watch_on_a_file_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from iwr_bench.cli import main

    file = tmp_path / "run.txt"
    file.write_text("not a run")
    assert main(["watch", str(file)]) == 2
    assert capsys.readouterr().err.strip() == f"iwr: error: {file} is not a folder"


def test_plain_progress_says_when_the_judge_model_keeps_a_call_waiting() -> None:
    """No event marks a silent judge model: the plain lines' ticker says it, then every 10 s."""
    import io
    import time

    from iwr_bench.engine.progress import PlainProgress

    out = io.StringIO()
    with PlainProgress(out, tick_s=0.05) as progress:
        progress(RunStarted(run_id="r", models=["m"], tasks=[7]))
        progress(JobStarted(job=JOB, stage="judge", task_id=7, model="m"))
        progress(from_agent(JudgeCallStarted(call="g-1", role="grounder", who="grounder", request="x"), JOB))
        time.sleep(0.3)
        assert "waiting" not in out.getvalue()  # heard from 0.3 s ago: not waiting yet
        with progress._lock:  # pyright: ignore[reportPrivateUsage]
            progress.state.jobs["7/m"].calls["g-1"].heard -= 12  # its model silent for 12 s
        deadline = time.monotonic() + 5
        while "waiting" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)  # more ticks: still one line, the next is due 10 s later
    lines = [line for line in out.getvalue().splitlines() if "waiting" in line]
    assert len(lines) == 1
    assert re.fullmatch(r"\[engine\] waiting for the judge model \(1 call, longest 1[23] s\)", lines[0])
