"""The Textual app: watch a run live, in-process (``iwr run --tui``) or attached (``iwr watch``).

A status bar (the run's clock, which advances between events, and what the engine is doing) over
four views, switched with keys shown in the footer, each a widget of its own in
:mod:`iwr_bench.tui.widgets`:

- Overview: per model, generated / judged / total with a bar, running mean IFS, VFS and Final,
  failures by class and cost; run throughput and ETA; the metric stage's images done and left,
  rate and ETA; occupancy of every named limit.
- Jobs: every (task, model) pair with status, step i/k, scores and failure; sortable (``s``)
  and filterable (``/``); Enter opens a job.
- Job detail: the trajectory with verdicts; the judge panel (each judge call its own block, its
  prose streaming in, its answer as fields); the latest replay screenshot beside its reference
  checkpoint and the diff of the two (half-block pixels).
- Leaderboard: the paper's columns (LVS, HVS, IFS, VFS, Final) plus failure counts.

Events come from a source: the engine's bus (in-process) or the run's store (attached, through
:class:`~iwr_bench.engine.follow.StoreFollower`). The app folds them into a
:class:`~iwr_bench.tui.state.RunState` and redraws a few times a second from it, only what
changed, so a run with thousands of jobs stays responsive. Styles are in ``app.tcss``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.widgets import ContentSwitcher, DataTable, Footer, Header

from iwr_bench.engine.events import Event
from iwr_bench.engine.follow import StoreFollower
from iwr_bench.tui.state import JobView, RunState
from iwr_bench.tui.widgets.confirm import ConfirmStop
from iwr_bench.tui.widgets.detail import DetailView
from iwr_bench.tui.widgets.jobs import JobsView
from iwr_bench.tui.widgets.judge_panel import JudgePanel
from iwr_bench.tui.widgets.leaderboard import LeaderboardView
from iwr_bench.tui.widgets.metrics import MetricsPanel
from iwr_bench.tui.widgets.overview import OverviewView
from iwr_bench.tui.widgets.status import StatusBar

if TYPE_CHECKING:
    from iwr_bench.engine.run import Engine, RunOutcome

__all__ = ["ConfirmStop", "RunApp", "StoreFollower", "run_tui", "watch"]

VIEWS = ("overview", "jobs", "detail", "leaderboard")
REFRESH_S = 0.25
"""Seconds between redraws."""
POLL_S = 0.5
"""Seconds between reads of the store when attached."""
CLOCK_S = 1.0
"""Seconds between updates of the status bar (its clock runs without events)."""
FOCUS = {"jobs": "#jobtable", "detail": "#actions", "overview": "#models", "leaderboard": "#board"}


class RunApp(App[None]):
    """The run viewer (see the module doc)."""

    TITLE = "iwr-bench"
    CSS_PATH = "app.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "view('overview')", "Overview"),
        Binding("j", "view('jobs')", "Jobs"),
        Binding("d", "view('detail')", "Detail"),
        Binding("l", "view('leaderboard')", "Leaderboard"),
        Binding("enter", "open_job", "Open job"),
        Binding("s", "sort", "Sort"),
        Binding("slash", "filter", "Filter"),
        Binding("p", "toggle_follow", "Pause/Resume"),
        Binding("c", "cancel_job", "Cancel job"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        run_dir: Path,
        *,
        engine: Engine | None = None,
        follower: StoreFollower | None = None,
        events: list[Event] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.engine = engine
        self.follower = follower
        self._initial = events or []
        """Events to show from the start (a recorded stream)."""
        self.clock = clock
        """Wall clock of the status bar (tests fix it)."""
        self.state = RunState()
        self.following = True
        self.selected: str | None = None
        """Job shown in the detail view (None: the most recently active one)."""
        self.outcome: RunOutcome | None = None
        self._drawn_events = -1
        self._unsubscribe: Callable[[], None] | None = None

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Header, status bar, the four views, footer."""
        yield Header()
        yield StatusBar(id="statusbar")
        with ContentSwitcher(initial="overview"):
            yield OverviewView(id="overview")
            yield JobsView(id="jobs")
            yield DetailView(id="detail")
            yield LeaderboardView(id="leaderboard")
        yield Footer()

    def on_mount(self) -> None:
        """The event source, the redraw and clock timers and (in-process) the engine worker."""
        self.sub_title = self.run_dir.name
        self.feed(self._initial)
        if self.engine is not None:
            self._unsubscribe = self.engine.bus.subscribe(self.state.apply)
            self._run_engine()
        if self.follower is not None:
            self._poll()
            self.set_interval(POLL_S, self._poll)
        self.set_interval(REFRESH_S, self.redraw)
        self.set_interval(CLOCK_S, self.tick)
        self.redraw()  # (a view whose children are not composed yet is drawn on the next tick)
        self.call_after_refresh(self.redraw, force=True)
        self.tick()

    # -- event sources ----------------------------------------------------------------------------

    def feed(self, events: list[Event]) -> None:
        """Fold events in (used by the store follower and by tests)."""
        for event in events:
            self.state.apply(event)

    def _poll(self) -> None:
        if self.follower is not None and self.following:
            self.feed(self.follower.poll())

    @work(exclusive=True, group="engine")
    async def _run_engine(self) -> None:
        assert self.engine is not None
        self.outcome = await self.engine.run()
        self.notify(f"run {self.outcome.status} in {self.outcome.wall_s:.0f} s; q quits", timeout=8)
        self.redraw()

    def on_unmount(self) -> None:
        """Stop listening."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self.follower is not None:
            self.follower.close()

    # -- actions ----------------------------------------------------------------------------------

    def action_view(self, name: str) -> None:
        """Switch to a view."""
        self.query_one(ContentSwitcher).current = name
        self.redraw(force=True)
        # Focus the new view's table, so keys never go to a widget of a hidden view.
        self.query_one(FOCUS[name], DataTable).focus()

    @property
    def view(self) -> str:
        """The current view."""
        return self.query_one(ContentSwitcher).current or "overview"

    @property
    def jobs(self) -> JobsView:
        """The jobs view."""
        return self.query_one(JobsView)

    def action_open_job(self) -> None:
        """Open the job under the cursor of the jobs table."""
        if self.view == "jobs":
            self.jobs.open_cursor()

    @on(JobsView.Opened)
    def _opened(self, message: JobsView.Opened) -> None:
        self.selected = message.key
        self.action_view("detail")

    @on(JudgePanel.FollowChanged)
    def _panel_follow(self, message: JudgePanel.FollowChanged) -> None:
        self.notify(
            "judge panel: following" if message.following else "judge panel paused (f follows)", timeout=2
        )

    def action_sort(self) -> None:
        """Sort the jobs table by the next column."""
        self.notify(f"jobs sorted by {self.jobs.next_sort()}", timeout=2)

    def action_filter(self) -> None:
        """Show the filter box of the jobs view."""
        self.action_view("jobs")
        self.jobs.edit_filter()

    def action_toggle_follow(self) -> None:
        """Pause or resume following the run (the run itself goes on)."""
        self.following = not self.following
        self.notify("following paused" if not self.following else "following resumed", timeout=2)
        if self.following:
            self.redraw(force=True)
        self._title()
        self.tick()

    def action_cancel_job(self) -> None:
        """Cancel the selected job (in an attached viewer, by asking the run's process)."""
        job = self._detail_job() if self.view == "detail" else self.jobs.cursor_job()
        if job is None:
            self.notify("no job selected", severity="warning")
            return
        if self.engine is None:
            if self.state.status != "running" or job.status not in ("judging", "generating", "pending"):
                self.notify(f"task {job.task_id} / {job.model} is not in progress", severity="warning")
                return
            from iwr_bench.engine.run import request_cancel

            request_cancel(self.run_dir, job.task_id, job.model)  # the running engine picks it up
            self.notify(f"asked the run to cancel task {job.task_id} / {job.model}", timeout=3)
            return
        if self.engine.cancel_job(job.task_id, job.model):
            self.notify(f"cancelling task {job.task_id} / {job.model}", timeout=3)
        else:
            self.notify(f"task {job.task_id} / {job.model} is not in progress", severity="warning")

    async def action_quit(self) -> None:
        """Quit; while this app's own run is going, ask first whether to stop it."""
        if self.engine is not None and self.outcome is None:

            def answered(stop: bool | None) -> None:
                if stop and self.engine is not None:
                    self.engine.cancel()
                    self.notify("stopping the run...", timeout=5)
                    self._exit_when_done()

            self.push_screen(ConfirmStop(), answered)
            return
        self.exit()

    @work(exclusive=True, group="exit")
    async def _exit_when_done(self) -> None:
        for worker in self.workers:
            if worker.group == "engine":
                await worker.wait()
        self.exit()

    # -- drawing ----------------------------------------------------------------------------------

    def tick(self) -> None:
        """Update the status bar and the metric stage's ETA: they count whether or not events come."""
        now = self.clock()
        bars = self.query(StatusBar)
        if not bars:  # the clock can fire before the screen is composed, on a loaded machine
            return
        bars.first().show(self.state, now, following=self.following)
        if not self.following:
            return
        try:
            if self.view == "overview":
                self.query_one(MetricsPanel).show(self.state, now)
        except NoMatches:  # not composed yet: the next tick draws it
            return

    def redraw(self, force: bool = False) -> None:
        """Redraw the current view if anything changed (always with ``force``)."""
        if not self.following and not force:
            return
        changed = self.state.events != self._drawn_events
        if not changed and not force:
            return
        try:
            self._draw_view()
        except NoMatches:  # a view not composed yet: the next tick draws it
            return
        self._drawn_events = self.state.events

    def _draw_view(self) -> None:
        self._title()
        view = self.view
        if view == "overview":
            self.query_one(OverviewView).show(self.state, self.clock())
        elif view == "jobs":
            self.jobs.show(self.state)
        elif view == "detail":
            job = self._detail_job()
            self.query_one(DetailView).show(job, self.run_dir, following_active=self.selected is None)
        else:
            self.query_one(LeaderboardView).show(self.state)

    def _title(self) -> None:
        s = self.state
        paused = " | paused" if not self.following else ""
        self.title = f"iwr-bench {s.run_id or ''} [{s.status}]{paused}"

    def _detail_job(self) -> JobView | None:
        if self.selected is not None and self.selected in self.state.jobs:
            return self.state.jobs[self.selected]
        return self.state.active_job()


def run_tui(engine: Engine) -> RunOutcome:
    """Run ``engine`` inside the app; returns how the run ended (cancelled if stopped from the app)."""
    from iwr_bench.engine.run import RunOutcome

    app = RunApp(engine.run_dir, engine=engine)
    app.run()
    if app.outcome is not None:
        return app.outcome
    return RunOutcome(
        status="cancelled",
        run_dir=engine.run_dir,
        wall_s=0.0,
        overhead_s=0.0,
        work_s={},
        actions=engine.actions_run,
        message="the app closed before the run ended; resumable",
    )


def watch(run_dir: Path) -> None:
    """Follow the run in ``run_dir`` (in progress, finished, or not started yet) until the user quits."""
    RunApp(run_dir, follower=StoreFollower(run_dir)).run()
