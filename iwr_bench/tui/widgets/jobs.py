"""The jobs table: every (task, model) pair, updated in place, sortable and filterable."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input

from iwr_bench.engine.run_state import JobView, RunState
from iwr_bench.tui.widgets.common import pct

COLUMNS = (
    ("task", "task"),
    ("model", "model"),
    ("status", "status"),
    ("step", "step"),
    ("ifs", "IFS"),
    ("final", "Final"),
    ("failure", "failure"),
)


def job_cells(job: JobView) -> tuple[str, ...]:
    """A job's row."""
    step = f"{job.step}/{job.total}" if job.total else (str(job.step) if job.step else "-")
    ifs, final = (job.scores.ifs, job.scores.final) if job.scores else (None, None)
    return (
        str(job.task_id),
        f"{job.model} · {job.design}" if job.design else job.model,
        job.status,
        step,
        pct(None if ifs is None else 100 * ifs),
        pct(None if final is None else 100 * final),
        job.failure or "",
    )


class JobsView(Vertical):
    """The jobs table with its filter box; posts :class:`JobsView.Opened` when a row is chosen."""

    SORTS: ClassVar[tuple[str, ...]] = ("task", "model", "status", "ifs", "final")

    class Opened(Message):
        """The user chose a job."""

        def __init__(self, key: str) -> None:
            super().__init__()
            self.key = key
            """The job's key (``<task>/<model>``, ``/<design>`` when it has one)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sort_index = 0
        self.filter_text = ""
        self._rows: set[str] = set()
        self.state: RunState | None = None

    def compose(self) -> ComposeResult:
        """Filter box and table."""
        yield Input(placeholder="filter: task id, model, status or failure (Enter to apply)", id="filter")
        yield DataTable(id="jobtable", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        """Columns."""
        table = self.query_one("#jobtable", DataTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)

    @property
    def table(self) -> DataTable[str]:
        """The table."""
        return self.query_one("#jobtable", DataTable)

    def cursor_job(self) -> JobView | None:
        """The job under the cursor."""
        table = self.table
        if table.row_count == 0 or self.state is None:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return self.state.jobs.get(str(key)) if key is not None else None

    def open_cursor(self) -> None:
        """Open the job under the cursor."""
        job = self.cursor_job()
        if job is not None:
            self.post_message(self.Opened(job.key))

    @on(DataTable.RowSelected, "#jobtable")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if event.row_key.value is not None:
            self.post_message(self.Opened(str(event.row_key.value)))

    def next_sort(self) -> str:
        """Sort by the next column; its name."""
        self.sort_index = (self.sort_index + 1) % len(self.SORTS)
        self._sort()
        return self.SORTS[self.sort_index]

    def edit_filter(self) -> None:
        """Show and focus the filter box."""
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Submitted, "#filter")
    def _filter_applied(self, event: Input.Submitted) -> None:
        self.filter_text = event.value.strip().lower()
        if not self.filter_text:
            event.input.remove_class("shown")
        if self.state is not None:
            self.rebuild(self.state)
        self.table.focus()

    def _matches(self, job: JobView) -> bool:
        if not self.filter_text:
            return True
        hay = " ".join((str(job.task_id), job.model, job.design, job.status, job.failure or "")).lower()
        return all(word in hay for word in self.filter_text.split())

    def show(self, state: RunState) -> None:
        """Update the rows of the jobs that changed since the last call (all on the first)."""
        self.state = state
        table = self.table
        dirty, state.dirty = state.dirty, set()
        if not self._rows and state.jobs:
            self.rebuild(state)
            return
        columns = [c.key for c in table.ordered_columns]
        for key in sorted(dirty):
            job = state.jobs.get(key)
            if job is None:  # a pair's row taken over by the row of a design judging it
                if key in self._rows:
                    table.remove_row(key)
                    self._rows.discard(key)
                continue
            cells = job_cells(job)
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
        if dirty:
            self._sort()

    def rebuild(self, state: RunState) -> None:
        """Every row anew (after the filter changed)."""
        self.state = state
        table = self.table
        table.clear()
        self._rows = set()
        state.dirty = set()
        for job in state.jobs.values():
            if self._matches(job):
                table.add_row(*job_cells(job), key=job.key)
                self._rows.add(job.key)
        self._sort()

    def _sort(self) -> None:
        name = self.SORTS[self.sort_index]
        numeric = name in ("task", "ifs", "final")

        def key(value: Any) -> Any:
            if numeric:
                try:
                    return (0, -float(value) if name != "task" else float(value))
                except (TypeError, ValueError):
                    return (1, 0.0)
            return (0, str(value))

        self.table.sort(name, key=key)
