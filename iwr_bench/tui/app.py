"""The Textual app: watch a run live, in-process (``iwr run --tui``) or attached (``iwr watch``).

A status bar (the run's clock, which advances between events, and what the engine is doing) over
five views, switched with keys shown in the footer (which shows the keys that apply to the view
shown), each a widget of its own in :mod:`iwr_bench.tui.widgets`:

- Overview: per model, generated / judged / total with a bar, running mean IFS, VFS and Final,
  failures by class and cost; run throughput and ETA; the metric stage's images done and left,
  rate and ETA; occupancy of every named limit.
- Jobs: every (task, model) pair with status, step i/k, scores and failure; sortable (``s``)
  and filterable (``/``); Enter opens a job.
- Job detail: the trajectory with verdicts; the judge panel (each judge call its own block, its
  prose streaming in, its answer as fields); for the action under the cursor (up/down, ``[``
  and ``]``; the last row follows the job) the screenshots before and after it and their diff
  (half-block pixels).
- Leaderboard: the paper's columns (LVS, HVS, IFS, VFS, Final) plus failure counts.
- Actions: every action of every job, filtered by verdict, failure or disagreement between judge
  designs (``f`` cycles, ``/`` types a filter); Enter opens the job at that action. Over a
  finished run (``iwr watch``) this is its log viewer.

``q`` and Ctrl-C quit; while the app's own run is going they ask first whether to stop it.

Events come from a source: the engine's bus (in-process) or the run's store (attached, through
:class:`~iwr_bench.engine.follow.StoreFollower`). The app folds them into a
:class:`~iwr_bench.engine.run_state.RunState` and redraws a few times a second from it, only what
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
from iwr_bench.engine.run_state import JobView, RunState
from iwr_bench.tui.widgets.action_log import ActionLogView
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

VIEWS = ("overview", "jobs", "detail", "leaderboard", "log")
REFRESH_S = 0.25
"""Seconds between redraws."""
POLL_S = 0.5
"""Seconds between reads of the store when attached."""
CLOCK_S = 1.0
"""Seconds between updates of the status bar (its clock runs without events)."""
FOCUS = {
    "jobs": "#jobtable",
    "detail": "#actions",
    "overview": "#models",
    "leaderboard": "#board",
    "log": "#logtable",
}


class RunApp(App[None]):
    """The run viewer (see the module doc)."""

    TITLE = "iwr-bench"
    CSS_PATH = "app.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "view('overview')", "Overview"),
        Binding("j", "view('jobs')", "Jobs"),
        Binding("d", "view('detail')", "Detail"),
        Binding("l", "view('leaderboard')", "Board"),
        Binding("a", "view('log')", "Actions"),
        Binding("enter", "open_job", "Open job", show=False),
        Binding("s", "sort", "Sort"),
        Binding("slash", "filter", "Filter"),
        Binding("p", "toggle_follow", "Pause"),
        Binding("c", "cancel_job", "Cancel"),
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(
        self,
        run_dir: Path,
        *,
        engine: Engine | None = None,
        follower: StoreFollower | None = None,
        events: list[Event] | None = None,
        clock: Callable[[], float] = time.time,
        view: str = "overview",
        actions_filter: str = "",
        state: RunState | None = None,
    ) -> None:
        super().__init__()
        self._start = (view, actions_filter)
        """The view shown first, and the actions log's filter."""
        self.run_dir = run_dir
        self.engine = engine
        self.follower = follower
        self._initial = events or []
        """Events to show from the start (a recorded stream)."""
        self.clock = clock
        """Wall clock of the status bar (tests fix it)."""
        self.state = state or RunState()
        """The fold of the run's events that the views read."""
        self.following = True
        self.selected: str | None = None
        """Job shown in the detail view (None: the most recently active one)."""
        self.outcome: RunOutcome | None = None
        self._drawn_events = -1
        self._bound_status = ""
        """The run status the footer's keys were last checked for."""
        self._unsubscribe: Callable[[], None] | None = None

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Header, status bar, the four views, footer."""
        yield Header()
        yield StatusBar(id="statusbar")
        with ContentSwitcher(initial=self._start[0]):
            yield OverviewView(id="overview")
            yield JobsView(id="jobs")
            yield DetailView(id="detail")
            yield LeaderboardView(id="leaderboard")
            yield ActionLogView(id="log")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        """The event source, the redraw and clock timers and (in-process) the engine worker."""
        self.sub_title = self.run_dir.name
        self.query_one(ActionLogView).filter_text = self._start[1].strip().lower()
        self.query_one(FOCUS[self._start[0]], DataTable).focus()
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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Which keys apply now (the footer shows only those): not the shown view's own key, sorting
        in the jobs view, filtering in the jobs view and the actions log, cancelling a job in the
        jobs and detail views while the run goes on."""
        try:
            view = self.view
        except NoMatches:  # not composed yet, or a dialog is shown
            return True
        if action == "view":
            return parameters[0] != view
        if action == "sort":
            return view == "jobs"
        if action == "filter":
            return view in ("jobs", "log")
        if action == "cancel_job":
            return view in ("jobs", "detail") and self.state.status == "running"
        return True

    def _keys_for_status(self) -> None:
        """Have the footer check the keys again when the run's status changed."""
        if self.state.status != self._bound_status:
            self._bound_status = self.state.status
            self.refresh_bindings()

    def action_view(self, name: str) -> None:
        """Switch to a view."""
        self.query_one(ContentSwitcher).current = name
        self.refresh_bindings()
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
        self.query_one(DetailView).choose(message.key, None)
        self.action_view("detail")

    @on(ActionLogView.Opened)
    def _action_opened(self, message: ActionLogView.Opened) -> None:
        self.selected = message.key
        self.query_one(DetailView).choose(message.key, message.index)
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
        """Show the filter box of the view (jobs or actions log)."""
        if self.view == "log":
            self.query_one(ActionLogView).edit_filter()
        else:
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
        """Quit (``q``, Ctrl-C); while this app's own run is going, ask first whether to stop it."""
        if isinstance(self.screen, ConfirmStop):  # asked already
            return
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
        self._keys_for_status()
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
        self._keys_for_status()
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
        elif view == "log":
            self.query_one(ActionLogView).show(self.state)
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


def run_tui(engine: Engine, state: RunState | None = None) -> RunOutcome:
    """Run ``engine`` inside the app, folding its events into ``state`` (a new one if None); returns
    how the run ended (cancelled if stopped from the app)."""
    from iwr_bench.engine.run import RunOutcome

    app = RunApp(engine.run_dir, engine=engine, state=state)
    app.run()
    if app.outcome is not None:
        return app.outcome
    return RunOutcome(
        status="cancelled",
        run_dir=engine.run_dir,
        wall_s=0.0,
        overhead_s=0.0,
        work_s={},
        actions=engine.reporters.actions_run,
        message="the app closed before the run ended; resumable",
    )


def watch(run_dir: Path, actions_filter: str | None = None) -> None:
    """Follow the run in ``run_dir`` (in progress, finished, or not started yet) until the user quits;
    with ``actions_filter``, open on the actions log filtered by it ("" for all)."""
    view = "overview" if actions_filter is None else "log"
    RunApp(run_dir, follower=StoreFollower(run_dir), view=view, actions_filter=actions_filter or "").run()
