"""The Textual app: watch a run live, in-process (``iwr run --tui``) or attached (``iwr watch``).

Four views, switched with keys shown in the footer:

- Overview: per model, generated / judged / total with a bar, running mean IFS, VFS and Final,
  failures by class and cost; run throughput and ETA; occupancy of every named limit.
- Jobs: every (task, model) pair with status, step i/k, scores and failure; sortable (``s``)
  and filterable (``/``); Enter opens a job.
- Job detail: the trajectory with verdicts; the judge's streamed text and tool calls as they
  arrive; the latest replay screenshot beside its reference checkpoint (half-block pixels); the
  assertion of the latest judged action with its verdict and explanation.
- Leaderboard: the paper's columns (LVS, HVS, IFS, VFS, Final) plus failure counts.

Events come from a source: the engine's bus (in-process) or the run's store (attached). The
app folds them into a :class:`~iwr_bench.tui.state.RunState` and redraws a few times a second
from it, only what changed, so a run with thousands of jobs stays responsive.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, ContentSwitcher, DataTable, Footer, Header, Input, Label, Static

from iwr_bench.engine.events import Event
from iwr_bench.engine.store import STORE_NAME, RunStore, StoreError
from iwr_bench.tui.image import halfblock
from iwr_bench.tui.state import JobView, RunState

if TYPE_CHECKING:
    from iwr_bench.engine.run import Engine, RunOutcome

VIEWS = ("overview", "jobs", "detail", "leaderboard")
REFRESH_S = 0.25
"""Seconds between redraws."""
POLL_S = 0.5
"""Seconds between reads of the store when attached."""


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _bar(done: int, total: int, width: int = 12) -> str:
    filled = 0 if total <= 0 else round(width * min(done, total) / total)
    return "█" * filled + "░" * (width - filled)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "-"


class StoreFollower:
    """Reads a run's events from its store, from where it last stopped (no server needed)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.after = 0
        self._store: RunStore | None = None

    def poll(self, limit: int = 20_000) -> list[Event]:
        """New events since the last poll (none while the run has not created its store yet)."""
        if self._store is None:
            if not (self.run_dir / STORE_NAME).is_file():
                return []
            try:
                self._store = RunStore.open_run(self.run_dir, readonly=True)
            except StoreError:
                return []
        events = self._store.events(after=self.after, limit=limit)
        if events:
            self.after = events[-1].seq
        return events

    def close(self) -> None:
        """Close the store."""
        if self._store is not None:
            self._store.close()
            self._store = None


class ConfirmStop(ModalScreen[bool]):
    """Asked when quitting while the app's own run is still going."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Stop the run"),
        Binding("n,escape", "answer(False)", "Keep watching"),
    ]
    DEFAULT_CSS = """
    ConfirmStop { align: center middle; }
    ConfirmStop > Vertical { width: 60; height: auto; border: thick $warning; background: $surface;
        padding: 1 2; }
    ConfirmStop Horizontal { height: auto; margin-top: 1; }
    ConfirmStop Button { margin-right: 2; }
    """

    def compose(self) -> ComposeResult:
        """A question and two buttons."""
        with Vertical():
            yield Label("The run is still going. Stop it and quit? It stays resumable with iwr run --resume.")
            with Horizontal():
                yield Button("Stop and quit (y)", id="stop", variant="error")
                yield Button("Keep watching (n)", id="keep", variant="primary")

    def action_answer(self, stop: bool) -> None:
        """Close with the answer."""
        self.dismiss(stop)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "stop")


class ImagePane(Static):
    """A screenshot drawn in half blocks, fitted to the pane."""

    def __init__(self, title: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = title
        self.path: Path | None = None

    def show(self, path: Path | None) -> None:
        """Draw ``path`` (or a placeholder)."""
        self.path = path
        self._draw()

    def on_resize(self) -> None:
        """Redraw at the new size."""
        self._draw()

    def _draw(self) -> None:
        width, height = self.content_size.width, self.content_size.height
        if self.path is None or width < 2 or height < 1:
            self.update(Text("(none yet)", style="dim"))
            return
        self.update(halfblock(self.path, width, height))


class RunApp(App[None]):
    """The run viewer (see the module doc)."""

    TITLE = "iwr-bench"
    CSS = """
    #overview, #jobs, #detail, #leaderboard { height: 1fr; }
    #models { height: auto; max-height: 60%; }
    #limits { height: auto; }
    #runline { height: auto; padding: 0 1; }
    #filter { display: none; }
    #filter.shown { display: block; }
    #detail-head { height: auto; padding: 0 1; }
    #detail-body { height: 1fr; }
    #actions { width: 45%; }
    #detail-right { width: 55%; }
    #stream { height: 1fr; border: round $primary; padding: 0 1; }
    #assertion { height: auto; max-height: 6; padding: 0 1; }
    #images { height: 40%; min-height: 5; }
    ImagePane { width: 1fr; height: 1fr; border: round $secondary; }
    #board-notes { height: auto; padding: 0 1; }
    """
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
    SORTS: ClassVar[tuple[str, ...]] = ("task", "model", "status", "ifs", "final")

    def __init__(
        self,
        run_dir: Path,
        *,
        engine: Engine | None = None,
        follower: StoreFollower | None = None,
        events: list[Event] | None = None,
    ) -> None:
        super().__init__()
        self.run_dir = run_dir
        self.engine = engine
        self.follower = follower
        self._initial = events or []
        """Events to show from the start (a recorded stream)."""
        self.state = RunState()
        self.following = True
        self.selected: str | None = None
        """Job shown in the detail view (None: the most recently active one)."""
        self.outcome: RunOutcome | None = None
        self.sort_index = 0
        self.filter_text = ""
        self._drawn_events = -1
        self._rows: set[str] = set()
        self._unsubscribe: Callable[[], None] | None = None

    # -- layout -----------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        """Header, the four views, footer."""
        yield Header()
        with ContentSwitcher(initial="overview"):
            with Vertical(id="overview"):
                yield Static(id="runline")
                yield DataTable(id="models", cursor_type="row", zebra_stripes=True)
                yield DataTable(id="limits", cursor_type="none")
            with Vertical(id="jobs"):
                yield Input(
                    placeholder="filter: task id, model, status or failure (Enter to apply)", id="filter"
                )
                yield DataTable(id="jobtable", cursor_type="row", zebra_stripes=True)
            with Vertical(id="detail"):
                yield Static(id="detail-head")
                with Horizontal(id="detail-body"):
                    yield DataTable(id="actions", cursor_type="row")
                    with Vertical(id="detail-right"):
                        with VerticalScroll(id="stream"):
                            yield Static(id="stream-text")
                        yield Static(id="assertion")
                with Horizontal(id="images"):
                    yield ImagePane("replay (latest)", id="shot")
                    yield ImagePane("reference checkpoint", id="reference")
            with Vertical(id="leaderboard"):
                yield DataTable(id="board", cursor_type="none", zebra_stripes=True)
                yield Static(id="board-notes")
        yield Footer()

    def on_mount(self) -> None:
        """Columns, the event source, the redraw timer and (in-process) the engine worker."""
        self.query_one("#models", DataTable).add_columns(
            "model", "judged (generated)", "IFS", "VFS", "Final", "failures", "cost $"
        )
        self.query_one("#limits", DataTable).add_columns("limit", "in use", "capacity", "waiting", "")
        jobs = self.query_one("#jobtable", DataTable)
        for key, label in (
            ("task", "task"),
            ("model", "model"),
            ("status", "status"),
            ("step", "step"),
            ("ifs", "IFS"),
            ("final", "Final"),
            ("failure", "failure"),
        ):
            jobs.add_column(label, key=key)
        self.query_one("#actions", DataTable).add_columns("#", "type", "status", "verdict", "description")
        self.query_one("#board", DataTable).add_columns(
            "model", "tasks", "LVS", "HVS", "IFS", "VFS", "Final", "failures", "mistakes"
        )
        self.sub_title = self.run_dir.name
        self.feed(self._initial)
        if self.engine is not None:
            self._unsubscribe = self.engine.bus.subscribe(self.state.apply)
            self._run_engine()
        if self.follower is not None:
            self._poll()
            self.set_interval(POLL_S, self._poll)
        self.set_interval(REFRESH_S, self.redraw)
        self.redraw()

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
        focus = {"jobs": "#jobtable", "detail": "#actions", "overview": "#models", "leaderboard": "#board"}
        self.query_one(focus[name], DataTable).focus()

    @property
    def view(self) -> str:
        """The current view."""
        return self.query_one(ContentSwitcher).current or "overview"

    def action_open_job(self) -> None:
        """Open the job under the cursor of the jobs table."""
        table = self.query_one("#jobtable", DataTable)
        if self.view != "jobs" or table.row_count == 0:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        if key is not None:
            self.selected = str(key)
            self.action_view("detail")

    @on(DataTable.RowSelected, "#jobtable")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.selected = str(event.row_key.value)
            self.action_view("detail")

    def action_sort(self) -> None:
        """Sort the jobs table by the next column."""
        self.sort_index = (self.sort_index + 1) % len(self.SORTS)
        self.notify(f"jobs sorted by {self.SORTS[self.sort_index]}", timeout=2)
        self._sort_jobs()

    def action_filter(self) -> None:
        """Show the filter box of the jobs view."""
        self.action_view("jobs")
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Submitted, "#filter")
    def _filter_applied(self, event: Input.Submitted) -> None:
        self.filter_text = event.value.strip().lower()
        if not self.filter_text:
            event.input.remove_class("shown")
        self._rebuild_jobs()
        self.query_one("#jobtable", DataTable).focus()

    def action_toggle_follow(self) -> None:
        """Pause or resume following the run (the run itself goes on)."""
        self.following = not self.following
        self.notify("following paused" if not self.following else "following resumed", timeout=2)
        if self.following:
            self.redraw(force=True)
        self._title()

    def action_cancel_job(self) -> None:
        """Cancel the selected job (in an attached viewer, by asking the run's process)."""
        job = self._detail_job() if self.view == "detail" else self._cursor_job()
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

    def redraw(self, force: bool = False) -> None:
        """Redraw the current view if anything changed (always with ``force``)."""
        if not self.following and not force:
            return
        changed = self.state.events != self._drawn_events
        if not changed and not force:
            return
        self._drawn_events = self.state.events
        self._title()
        view = self.view
        if view == "overview":
            self._draw_overview()
        elif view == "jobs":
            self._draw_jobs()
        elif view == "detail":
            self._draw_detail()
        else:
            self._draw_board()

    def _title(self) -> None:
        s = self.state
        paused = " | paused" if not self.following else ""
        self.title = f"iwr-bench {s.run_id or ''} [{s.status}]{paused}"

    def _draw_overview(self) -> None:
        s = self.state
        judged = sum(m.judged for m in s.models.values())
        total = sum(m.total for m in s.models.values())
        cost = sum(m.cost_usd for m in s.models.values())
        eta = s.eta
        line = (
            f"{s.status}  judged {judged}/{total}  {_duration(s.elapsed)}  "
            f"{s.throughput:.1f} pages/min  ETA {_duration(eta)}  ${cost:.4f}"
        )
        if s.message:
            line += f"\n{s.message}"
        self.query_one("#runline", Static).update(line)
        models = self.query_one("#models", DataTable)
        models.clear()
        for m in s.models.values():
            models.add_row(
                m.name,
                f"{_bar(m.judged, m.total, 8)} {m.judged}/{m.total} ({m.generated})",
                _pct(m.mean("ifs")),
                _pct(m.mean("vfs")),
                _pct(m.mean("final")),
                _counts(m.failures),
                f"{m.cost_usd:.4f}",
                key=m.name,
            )
        limits = self.query_one("#limits", DataTable)
        limits.clear()
        for lim in s.limits.values():
            limits.add_row(
                lim.name,
                str(lim.in_use),
                str(lim.capacity),
                str(lim.waiting),
                _bar(lim.in_use, lim.capacity, 10),
            )

    def _job_cells(self, job: JobView) -> tuple[str, ...]:
        step = f"{job.step}/{job.total}" if job.total else (str(job.step) if job.step else "-")
        ifs = job.scores.get("ifs")
        final = job.scores.get("final")
        return (
            str(job.task_id),
            job.model,
            job.status,
            step,
            _pct(None if ifs is None else 100 * ifs),
            _pct(None if final is None else 100 * final),
            job.failure or "",
        )

    def _matches(self, job: JobView) -> bool:
        if not self.filter_text:
            return True
        hay = " ".join((str(job.task_id), job.model, job.status, job.failure or "")).lower()
        return all(word in hay for word in self.filter_text.split())

    def _draw_jobs(self) -> None:
        table = self.query_one("#jobtable", DataTable)
        dirty, self.state.dirty = self.state.dirty, set()
        if not self._rows and self.state.jobs:
            self._rebuild_jobs()
            return
        columns = [c.key for c in table.ordered_columns]
        added = False
        for key in sorted(dirty):
            job = self.state.jobs.get(key)
            if job is None:
                continue
            cells = self._job_cells(job)
            if key in self._rows:
                if not self._matches(job):
                    table.remove_row(key)
                    self._rows.discard(key)
                    continue
                for column, value in zip(columns, cells, strict=True):
                    table.update_cell(key, column, value)
            elif self._matches(job):
                table.add_row(*cells, key=key)
                self._rows.add(key)
                added = True
        if added or dirty:
            self._sort_jobs()

    def _rebuild_jobs(self) -> None:
        table = self.query_one("#jobtable", DataTable)
        table.clear()
        self._rows = set()
        self.state.dirty = set()
        for job in self.state.jobs.values():
            if self._matches(job):
                table.add_row(*self._job_cells(job), key=job.key)
                self._rows.add(job.key)
        self._sort_jobs()

    def _sort_jobs(self) -> None:
        table = self.query_one("#jobtable", DataTable)
        name = self.SORTS[self.sort_index]
        numeric = name in ("task", "ifs", "final")

        def key(value: Any) -> Any:
            if numeric:
                try:
                    return (0, -float(value) if name != "task" else float(value))
                except (TypeError, ValueError):
                    return (1, 0.0)
            return (0, str(value))

        table.sort(name, key=key)

    def _cursor_job(self) -> JobView | None:
        table = self.query_one("#jobtable", DataTable)
        if table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.state.jobs.get(str(key)) if key is not None else None

    def _detail_job(self) -> JobView | None:
        if self.selected is not None and self.selected in self.state.jobs:
            return self.state.jobs[self.selected]
        return self.state.active_job()

    def _draw_detail(self) -> None:
        job = self._detail_job()
        head = self.query_one("#detail-head", Static)
        actions = self.query_one("#actions", DataTable)
        if job is None:
            head.update("no job yet")
            return
        follow = "" if self.selected else "  (following the active job; open one from Jobs)"
        scores = "  ".join(
            f"{name.upper()} {_pct(None if job.scores.get(name) is None else 100 * (job.scores[name] or 0))}"
            for name in ("ifs", "vfs", "final")
            if name in job.scores
        )
        step = f"step {job.step}/{job.total or '?'}"
        failure = f"  failure: {job.failure}" if job.failure else ""
        head.update(f"task {job.task_id} / {job.model}  [{job.status}]  {step}  {scores}{failure}{follow}")
        actions.clear()
        for a in job.actions:
            verdict = a.verdict or ""
            status = a.status if not a.failure else f"{a.status}: {a.failure}"
            actions.add_row(str(a.index + 1), a.type, status, verdict, a.description)
        if job.actions:
            actions.move_cursor(row=len(job.actions) - 1)
        streamed = job.streamed
        if streamed is None:
            stream = "(no judge model output for this job)"
        else:
            stream = f"judge output, action {streamed.index + 1}:\n{streamed.stream.strip()}"
        log = "\n".join(list(job.log)[-8:])
        grounded = [a for a in job.actions if a.grounding]
        grounding = f"grounded: #{grounded[-1].element} {grounded[-1].grounding}" if grounded else ""
        body = "\n".join(p for p in (grounding, stream, log) if p)
        self.query_one("#stream-text", Static).update(Text(body))
        self.query_one("#stream", VerticalScroll).scroll_end(animate=False)
        judged = [a for a in job.actions if a.verdict is not None]
        assertion = self.query_one("#assertion", Static)
        if judged:
            a = judged[-1]
            votes = f" votes {a.votes}" if len(a.votes) > 1 else ""
            colour = {"yes": "green", "no": "red"}.get(a.verdict or "", "yellow")
            text = Text()
            text.append(f"action {a.index + 1}: {a.assertion}\n")
            text.append(f"{a.verdict}{votes}", style=f"bold {colour}")
            text.append(f": {a.reasoning}")
            assertion.update(text)
        else:
            assertion.update(Text("no assertion judged yet", style="dim"))
        shot = self.run_dir / job.screenshot if job.screenshot else None
        reference = Path(job.checkpoint) if job.checkpoint else None
        self.query_one("#shot", ImagePane).show(shot)
        self.query_one("#reference", ImagePane).show(reference)

    def _draw_board(self) -> None:
        s = self.state
        board = self.query_one("#board", DataTable)
        board.clear()
        rows = sorted(s.models.values(), key=lambda m: -(m.mean("final") or -1.0))
        for m in rows:
            board.add_row(
                m.name,
                f"{m.judged}/{m.total}",
                _pct(m.mean("lvs")),
                _pct(m.mean("hvs")) if m.scores.get("hvs") else "n/a",
                _pct(m.mean("ifs")),
                _pct(m.mean("vfs")),
                _pct(m.mean("final")),
                str(sum(m.failures.values())),
                str(sum(m.mistakes.values())),
            )
        notes: list[str] = ["x100, means over judged tasks"]
        if any(not m.scores.get("hvs") for m in rows if m.judged):
            notes.append("HVS n/a: no rubric judge, so VFS = LVS (not paper-comparable)")
        if s.backends:
            notes.append("backends: " + ", ".join(sorted(s.backends)))
        self.query_one("#board-notes", Static).update("\n".join(notes))


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
    """Follow the run in ``run_dir`` (in progress or finished) until the user quits."""
    RunApp(run_dir, follower=StoreFollower(run_dir)).run()
