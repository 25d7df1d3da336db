"""The job detail: trajectory with verdicts, the judge panel, and for one action the screenshots
before and after it and the diff.

The actions table's cursor chooses the action (up/down, ``[`` and ``]``, or a click): the panes
show its screenshots, the judge panel its judge calls and the line under the table its outcome and
assertion. On the last row the view follows the job: the judge panel shows every call as it
streams, the panes the latest screenshots and the line the latest assertion judged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from iwr_bench.engine.run_state import ActionView, JobView
from iwr_bench.tui.widgets.common import pct
from iwr_bench.tui.widgets.images import DiffPane, ImagePane
from iwr_bench.tui.widgets.judge_panel import JudgePanel

ACTION = Binding.Group("Action")


def _head(job: JobView, following_active: bool) -> Text:
    follow = "  (following the active job; open one from Jobs)" if following_active else ""
    got = job.scores
    scores = (
        ""
        if got is None
        else f"IFS {pct(100 * got.ifs)}  VFS {pct(100 * got.vfs)}  FINAL {pct(100 * got.final)}"
    )
    step = f"step {job.step}/{job.total or '?'}"
    failure = f"  failure: {job.failure}" if job.failure else ""
    return Text(f"{job.label}  [{job.status}]  {step}  {scores}{failure}{follow}")  # not markup


def _verdict(a: ActionView, text: Text) -> None:
    votes = f" votes {a.votes}" if len(a.votes) > 1 else ""
    colour = {"yes": "green", "no": "red"}.get(a.verdict or "", "yellow")
    text.append(f"action {a.index + 1}: {a.assertion}\n")
    text.append(f"{a.verdict}{votes}", style=f"bold {colour}")
    text.append(f": {a.reasoning}")


def action_text(job: JobView, chosen: ActionView | None) -> Text:
    """The chosen action's outcome, description and verdict on its assertion; following (None),
    the latest assertion judged."""
    text = Text()
    if chosen is None:
        judged = [a for a in job.actions if a.verdict is not None]
        if not judged:
            return Text("no assertion judged yet", style="dim")
        _verdict(judged[-1], text)
        return text
    outcome = chosen.status if not chosen.failure else f"{chosen.status}: {chosen.failure}"
    text.append(f"action {chosen.index + 1} · {chosen.type} · ", style="bold")
    text.append(outcome, style="bold red" if chosen.status == "failed" else "bold")
    if chosen.message:
        text.append(f" ({chosen.message})", style="red")
    text.append(f"\n{chosen.description}\n")
    if chosen.trace:  # a judge design raised: where, in its own code
        text.append("\n".join(chosen.trace.rstrip().splitlines()[-8:]) + "\n", style="red")
    if chosen.verdict is None:
        text.append("no assertion judged", style="dim")
        return text
    votes = f" votes {chosen.votes}" if len(chosen.votes) > 1 else ""
    colour = {"yes": "green", "no": "red"}.get(chosen.verdict, "yellow")
    text.append(f"{chosen.verdict}{votes}", style=f"bold {colour}")
    text.append(f": {chosen.assertion}\n")
    text.append(chosen.reasoning, style="dim")
    return text


def shown_action(job: JobView, chosen: int | None) -> ActionView | None:
    """The action whose screenshots are shown: the chosen one, else the latest with a screenshot."""
    if chosen is not None:
        return next((a for a in job.actions if a.index == chosen), None)
    return next((a for a in reversed(job.actions) if a.before or a.after), None)


class DetailView(Vertical):
    """One job in detail (see the module doc)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left_square_bracket", "step(-1)", "Previous action", group=ACTION),
        Binding("right_square_bracket", "step(1)", "Next action", group=ACTION),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job: JobView | None = None
        """The job shown."""
        self.key: str | None = None
        """Its key, which :attr:`chosen` belongs to."""
        self.chosen: int | None = None
        """Index of the action chosen (None: follow the latest)."""
        self.run_dir = Path()
        self._rows: list[tuple[str, ...]] = []

    def compose(self) -> ComposeResult:
        """Head; actions, the chosen action and the judge panel; the images."""
        yield Static(id="detail-head")
        with Horizontal(id="detail-body"):
            with Vertical(id="detail-left"):
                yield DataTable(id="actions", cursor_type="row")
                yield Static(id="assertion")
            yield JudgePanel(id="stream")
        with Horizontal(id="images"):
            yield ImagePane("before", id="before")
            yield ImagePane("after", id="after")
            yield DiffPane(id="diff")

    def on_mount(self) -> None:
        """Columns."""
        self.table.add_columns("#", "type", "status", "verdict", "description")

    @property
    def table(self) -> DataTable[str]:
        """The actions table."""
        return self.query_one("#actions", DataTable)

    def choose(self, key: str | None, index: int | None) -> None:
        """Show job ``key`` at action ``index`` (None: follow its latest) from the next redraw."""
        self.key, self.chosen, self._rows = key, index, []

    def show(self, job: JobView | None, run_dir: Path, *, following_active: bool) -> None:
        """Redraw for ``job`` (None: no job yet)."""
        head = self.query_one("#detail-head", Static)
        self.run_dir = run_dir
        self.job = job
        if job is None:
            head.update("no job yet")
            self.query_one(JudgePanel).show(None)
            return
        if job.key != self.key:  # another job: follow its latest action
            self.choose(job.key, None)
        head.update(_head(job, following_active))
        self._fill_table(job)
        self._draw_action()

    def _fill_table(self, job: JobView) -> None:
        rows = [
            (
                str(a.index + 1),
                a.type,
                a.status if not a.failure else f"{a.status}: {a.failure}",
                a.verdict or "",
                a.description,
            )
            for a in job.actions
        ]
        if rows == self._rows:
            return
        self._rows = rows
        indices = [a.index for a in job.actions]
        if self.chosen not in indices:  # (its job was judged again)
            self.chosen = None
        table = self.table
        with table.prevent(DataTable.RowHighlighted):  # only the user's moves choose an action
            table.clear()
            for cells in rows:
                table.add_row(*cells)
            if rows:
                row = len(rows) - 1 if self.chosen is None else indices.index(self.chosen)
                table.move_cursor(row=row, animate=False)

    def _draw_action(self) -> None:
        job = self.job
        if job is None:
            return
        chosen = next((a for a in job.actions if a.index == self.chosen), None)
        self.query_one(JudgePanel).show(job, action=self.chosen)
        self.query_one("#assertion", Static).update(action_text(job, chosen))
        action = shown_action(job, self.chosen)
        before, after, reference = (
            (self._path(action.before), self._path(action.after), self._path(action.checkpoint))
            if action is not None
            else (None, None, None)
        )
        number = f" action {action.index + 1}" if action is not None else ""
        self.query_one("#before", ImagePane).show(before, f"before{number}")
        self.query_one("#after", ImagePane).show(after, f"after{number}")
        diff = self.query_one("#diff", DiffPane)
        if reference is not None and after is not None:
            diff.show(reference, after, "diff vs reference")
        else:
            diff.show(before, after, "diff before→after")

    def _path(self, name: str | None) -> Path | None:
        return self.run_dir / name if name else None

    @on(DataTable.RowHighlighted, "#actions")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if self.job is None or not self.job.actions:
            return
        row = min(event.cursor_row, len(self.job.actions) - 1)
        last = row == event.data_table.row_count - 1
        chosen = None if last else self.job.actions[row].index
        if chosen != self.chosen:
            self.chosen = chosen
            self._draw_action()

    def action_step(self, delta: int) -> None:
        """Choose the previous or next action."""
        table = self.table
        if table.row_count:
            table.move_cursor(row=max(0, min(table.row_count - 1, table.cursor_row + delta)))
