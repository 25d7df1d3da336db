"""The terminal UI: the state it folds, the app over recorded and live runs, attaching, snapshots."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import DATA, recorded_events  # pyright: ignore[reportAttributeAccessIssue]
from scripted_model import (
    Scripted,
    answer_grounding,
    answer_truthfully,
)
from textual.widgets import DataTable, Static

from iwr_bench.agents.events import ActionExecuted, ActionStarted
from iwr_bench.agents.grounding_llm import LLMGrounder
from iwr_bench.agents.judge.llm import LLMAssertionJudge
from iwr_bench.engine.config import parse_run_config
from iwr_bench.engine.events import FromAgent, JobFinished, JobStarted, RunStarted
from iwr_bench.engine.follow import StoreFollower
from iwr_bench.engine.judges import JudgeSet
from iwr_bench.engine.run import Engine, run_summary
from iwr_bench.engine.run_state import JobView, RunState
from iwr_bench.engine.store import RunStore
from iwr_bench.scoring.formulas import Scores
from iwr_bench.tui.app import ConfirmStop, RunApp

anyio_mark = pytest.mark.anyio


def _scores(ifs: float, final: float, vfs: float = 0.0) -> Scores:
    """A judged page's scores (the steps and LVS made up)."""
    return Scores(
        ifs=ifs, lvs=vfs, hvs=None, vfs=vfs, final=final, lvs_only=True, total_steps=10, success_steps=5
    )


def _text(app: RunApp, selector: str) -> str:
    return str(app.query_one(selector, Static).content)


async def _until(pilot: Any, check: Any, limit_s: float = 240.0) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        assert time.monotonic() < deadline, "timed out waiting for the app"
        await pilot.pause(0.2)


# -- the state ------------------------------------------------------------------------------------


@pytest.mark.browser
def test_state_folds_a_run_into_the_stores_numbers(finished_run: Path) -> None:
    follower = StoreFollower(finished_run)
    state = RunState()
    for event in follower.poll():
        state.apply(event)
    follower.close()
    store = RunStore.open_run(finished_run, readonly=True)
    summary = run_summary(store)
    store.close()
    assert state.status == "completed" and state.remaining == 0
    for name, row in summary["models"].items():
        model = state.models[name]
        assert (model.judged, model.total) == (row["judged"], row["tasks"])
        for score in ("ifs", "vfs", "final", "lvs"):
            assert model.mean(score) == pytest.approx(row[score], abs=1e-6)
    oracle = state.jobs["102/oracle"]
    assert oracle.status == "done" and oracle.total == 8 and len(oracle.actions) == 8
    assert all(a.status == "ok" for a in oracle.actions)
    # The screen's text cannot show "a list of six items appears" (the list ends below the fold);
    # the screen is the recording's own, so the second assertion holds on that witness.
    assert [a.verdict for a in oracle.actions if a.verdict] == ["yes", "yes"]
    assert oracle.screenshot and (finished_run / oracle.screenshot).is_file()
    assert state.limits["browser pages"].capacity == 2


def test_state_is_bounded_and_counts_resumed_jobs_once() -> None:
    state = RunState()
    state.apply(RunStarted(run_id="r", models=["m"], tasks=list(range(3000)), seq=1))
    assert len(state.jobs) == 3000 and state.remaining == 3000
    for seq, kind in ((2, "done"), (3, "skipped")):  # a job finished, then skipped on resume
        state.apply(
            JobFinished(
                job="judge/7/m",
                stage="judge",
                task_id=7,
                model="m",
                status=kind,  # type: ignore[arg-type]
                scores=_scores(ifs=0.5, final=0.4),
                seq=seq,
            )
        )
    assert state.models["m"].judged == 1 and state.models["m"].mean("ifs") == pytest.approx(50)
    from iwr_bench.agents.events import ActionStarted, JudgeDelta
    from iwr_bench.engine.events import FromAgent

    def delta(seq: int) -> FromAgent:
        return FromAgent(job="judge/7/m", seq=seq, event=JudgeDelta(role="assertions", text="x" * 10))

    for i in range(5000):
        state.apply(delta(10 + i))
    assert len(state.jobs["7/m"].actions) == 0  # text outside an action has nowhere to go
    started = ActionStarted(index=0, total=1, type="Click", description="x")
    state.apply(FromAgent(job="judge/7/m", seq=9000, event=started))
    for i in range(5000):
        state.apply(delta(9001 + i))
    calls = state.jobs["7/m"].actions[0].calls  # a call without an id (an older run): one per role
    assert len(calls) == 1 and len(calls[0].text) <= 4000 and calls[0].text.endswith("x" * 10)


# -- the app over a finished run ------------------------------------------------------------------


@pytest.mark.browser
@anyio_mark
async def test_navigating_a_finished_run(finished_run: Path) -> None:
    app = RunApp(finished_run, follower=StoreFollower(finished_run))
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app.state.status == "completed")
        assert "completed" in _text(app, "#runline")
        assert re.search(r"(\d+)/\1 images done.*, 0 left", _text(app, "#metrics"))  # the metric stage
        models = app.query_one("#models", DataTable)
        assert models.row_count == 3
        await pilot.press("j")
        jobs = app.query_one("#jobtable", DataTable)
        assert app.view == "jobs" and jobs.row_count == 3
        await pilot.press("s", "s", "s", "s")  # sorted by Final (best first)
        assert jobs.get_row_at(0)[1] == "oracle"
        await pilot.press("enter")
        assert app.view == "detail" and app.selected == "102/oracle"
        assert "task 102 / oracle" in _text(app, "#detail-head")
        actions = app.query_one("#actions", DataTable)
        assert actions.row_count == 8
        assert "recording's screen" in _text(app, "#assertion") and "Packing list" in _text(app, "#assertion")
        await pilot.press("j", "slash")  # the filter is the jobs view's
        await pilot.press(*"blank", "enter")
        assert app.view == "jobs" and jobs.row_count == 1 and jobs.get_row_at(0)[1] == "blank"
        await pilot.press("l")
        board = app.query_one("#board", DataTable)
        assert [board.get_row_at(i)[0] for i in range(3)] == ["oracle", "screenshot", "blank"]
        assert "substitute" in _text(app, "#board-notes")
        await pilot.press("p")
        assert not app.following and "paused" in app.title
        await pilot.press("p", "c")  # cancelling needs the run's own process: a warning, no crash
        for size in ((80, 24), (60, 16), (200, 60)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
        await pilot.press("d", "o", "q")
    assert app.return_code == 0


# -- the app running the engine -------------------------------------------------------------------


@pytest.mark.browser
@anyio_mark
async def test_live_run_with_llm_judges_cancel_and_quit(tmp_path: Path) -> None:
    config = parse_run_config(
        {"only": [101, 102, 103, 104, 105, 106], "limits": {"browser_pages": 1}}, "test"
    )
    judges = JudgeSet(
        LLMGrounder(Scripted(answer_grounding, delay=0.2).model(), name="llm:scripted"),
        LLMAssertionJudge(Scripted(answer_truthfully, delay=0.2).model(), name="llm:scripted"),
    )
    engine = Engine(config, tmp_path / "live", judges=judges)
    engine.prepare()
    app = RunApp(engine.run_dir, engine=engine)
    async with app.run_test(size=(160, 48)) as pilot:
        await _until(pilot, lambda: any(j.judge == "running" for j in app.state.jobs.values()), 120)
        # A pair still waiting for the one browser page: cancel it from the jobs view.
        waiting = next(
            j
            for j in sorted(app.state.jobs.values(), key=lambda j: -j.task_id)
            if j.judge in ("pending", "queued")
        )
        await pilot.press("j")
        table = app.query_one("#jobtable", DataTable)
        table.move_cursor(row=table.get_row_index(waiting.key))
        await pilot.press("c")
        await _until(pilot, lambda: app.state.jobs[waiting.key].failure == "cancelled", 60)

        # The judge's answer, as it streamed, in the detail view of a job it judged.
        def judged(job: JobView) -> bool:
            return job.streamed is not None and any("[assertions]" in a.stream for a in job.actions)

        await _until(pilot, lambda: any(judged(j) for j in app.state.jobs.values()), 120)
        streamed = next(j for j in app.state.jobs.values() if judged(j))
        app.selected = streamed.key
        await pilot.press("d")
        await pilot.pause(0.5)
        panel = _text(app, "#stream-text")
        assert "▌ grounder · " in panel and "▌ assertion judge · " in panel and "→ verdict: " in panel
        assert '{"' not in panel  # prose and fields, never the raw JSON of an answer
        assert f"task {streamed.task_id} / {streamed.model}" in _text(app, "#detail-head")
        await pilot.press("q")
        assert isinstance(app.screen, ConfirmStop)
        await pilot.press("n")
        assert not isinstance(app.screen, ConfirmStop) and app.outcome is None
        await pilot.press("q", "y")
        await _until(pilot, lambda: app.outcome is not None, 120)
    assert app.outcome is not None and app.outcome.status in ("cancelled", "completed")
    store = RunStore.open_run(engine.run_dir, readonly=True)
    jobs = {j.id: j for j in store.jobs()}
    store.close()
    stage = "judge" if f"judge/{waiting.key}" in jobs else "gen"
    assert jobs[f"{stage}/{waiting.key}"].failure == "cancelled"


# -- attaching ------------------------------------------------------------------------------------


@pytest.mark.browser
@anyio_mark
async def test_watch_follows_a_run_in_another_process(tmp_path: Path) -> None:
    """``iwr watch``: attach before the store exists, see jobs finish, cancel one through the run folder."""
    run = tmp_path / "other"
    log = tmp_path / "run.log"
    argv = ["run", "--only", "101,102,103", "--pages-at-once", "1", "--out", str(run), "--quiet"]
    with log.open("wb") as sink:
        proc = subprocess.Popen(  # noqa: ASYNC220 - a plain child process the test waits on
            [sys.executable, "-m", "iwr_bench", *argv],
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=sink,
            stderr=sink,
        )
    try:
        app = RunApp(run, follower=StoreFollower(run))  # started before the run has a store
        async with app.run_test(size=(100, 30)) as pilot:

            def queued() -> JobView | None:
                if app.state.status != "running":
                    return None
                return next(
                    (j for j in app.state.jobs.values() if j.judge == "queued" and j.task_id == 103), None
                )

            await _until(pilot, lambda: queued() is not None)
            victim = queued()
            assert victim is not None
            await pilot.press("j")
            table = app.query_one("#jobtable", DataTable)
            table.move_cursor(row=table.get_row_index(victim.key))
            await pilot.press("c")
            await _until(pilot, lambda: app.state.jobs[victim.key].failure == "cancelled", 60)
            await _until(pilot, lambda: app.state.status == "completed")
            await pilot.pause(0.6)
            statuses = [table.get_row_at(i)[2] for i in range(table.row_count)]
            assert table.row_count == 9 and statuses.count("failed") == 1 and statuses.count("done") == 8
        assert proc.wait(60) == 0, log.read_text()
        assert not list((run / "control").glob("cancel-*.json"))  # the request was taken
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- snapshots ------------------------------------------------------------------------------------


def _snapshot_app() -> RunApp:
    events = recorded_events()
    return RunApp(Path("recorded-run"), events=events, clock=lambda: events[-1].time)


@pytest.mark.parametrize("size", [(80, 24), (180, 50)], ids=["80x24", "180x50"])
@pytest.mark.parametrize(
    "keys",
    [("o",), ("j",), ("j", "enter"), ("j", "enter", "up", "up", "up"), ("l",), ("a",)],
    ids=["overview", "jobs", "detail", "detail-action", "leaderboard", "actions"],
)
def test_snapshots(snap_compare: Any, size: tuple[int, int], keys: tuple[str, ...]) -> None:
    assert snap_compare(_snapshot_app(), press=keys, terminal_size=size)


def test_recorded_stream_is_a_finished_run() -> None:
    events = recorded_events()
    assert isinstance(events[0], RunStarted)
    assert sum(isinstance(e, JobStarted) and e.stage == "judge" for e in events) == 3
    shots = [
        e.event.screenshot for e in events if isinstance(e, FromAgent) and isinstance(e.event, ActionExecuted)
    ]
    assert shots and all(Path(s).is_file() for s in shots if s)
    # the stream was recorded before agent events had an envelope: its flat records come back in one
    raw = (DATA / "events.jsonl").read_text()
    assert '"kind":"action_started"' in raw and '"kind":"agent"' not in raw
    started = [e for e in events if isinstance(e, FromAgent) and isinstance(e.event, ActionStarted)]
    assert started and all(e.job and e.seq and e.time for e in started)
    state = RunState()
    for event in events:
        state.apply(event)
    assert state.status == "completed" and any(j.streamed for j in state.jobs.values())
    # recorded before judge calls had ids: the raw JSON answer still reads as prose, then fields
    calls = [c for j in state.jobs.values() for c in j.calls.values()]
    assert calls and all(c.fields and c.fields["verdict"] == "yes" and "{" not in c.text for c in calls)
    assert any(c.text.startswith("looked for ['Packing list: 6 items']") for c in calls)


@anyio_mark
async def test_thousands_of_jobs_stay_responsive() -> None:
    events: list[Any] = [RunStarted(run_id="big", models=["a", "b"], tasks=list(range(1500)), seq=1)]
    for i in range(1000):
        model = "a" if i % 2 else "b"
        events.append(
            JobFinished(
                job=f"judge/{i}/{model}",
                stage="judge",
                task_id=i,
                model=model,
                status="done",
                scores=_scores(ifs=(i % 10) / 10, vfs=0.5, final=0.3),
                seq=2 + i,
            )
        )
    app = RunApp(Path("big"), events=events)
    async with app.run_test(size=(80, 24)) as pilot:
        started = time.perf_counter()
        await pilot.press("j")
        jobs = app.query_one("#jobtable", DataTable)
        assert jobs.row_count == 3000
        await pilot.press("s", "s", "s", "s")  # by Final
        await pilot.press("slash", *"done", "enter")
        assert jobs.row_count == 1000
        more = JobFinished(
            job="judge/1400/a", stage="judge", task_id=1400, model="a", status="done", scores=None, seq=5000
        )
        app.feed([more])
        app.redraw()
        assert jobs.row_count == 1001  # a new match is added in place, without a rebuild
        await pilot.resize_terminal(200, 60)
        await pilot.press("o", "l", "d")
        assert time.perf_counter() - started < 30
    assert app.state.models["a"].judged == 501
