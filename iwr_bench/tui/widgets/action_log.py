"""The actions log: every action of the run's jobs in one table, filtered by verdict, failure or
disagreement between judge designs (the filters are in :mod:`iwr_bench.tui.action_log`).

``f`` cycles through the filters (all, pass, fail, undetermined, error, failed, each failure class
seen, disagree), ``/`` types one, and Enter on a row opens its job's detail at that action.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from iwr_bench.engine.run_state import RunState
from iwr_bench.tui.action_log import ActionRow, action_rows, keeps, next_preset

COLUMNS = ("task", "model", "design", "#", "status", "failure", "verdict", "description")
REBUILD_S = 1.0
"""Least seconds between two rebuilds while events come (a filter change rebuilds at once)."""


class ActionLogView(Vertical):
    """The filtered actions table (see the module doc); posts :class:`ActionLogView.Opened`."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("f", "cycle", "Next filter")]

    class Opened(Message):
        """The user chose an action."""

        def __init__(self, key: str, index: int) -> None:
            super().__init__()
            self.key = key
            """Its job's key."""
            self.index = index
            """Its index."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.filter_text = ""
        self.rows: list[ActionRow] = []
        """Every action, filtered or not, as of the last rebuild."""
        self.shown: list[ActionRow] = []
        """The rows the filter keeps, in the table's order."""
        self._built: tuple[int, float] = (-1, 0.0)
        """The state's event count and the time of the last rebuild."""
        self.state: RunState | None = None
        self._later = False
        """A rebuild is due (see :data:`REBUILD_S`)."""

    def compose(self) -> ComposeResult:
        """What the filter keeps, the filter box and the table."""
        yield Static(id="log-head")
        yield Input(
            placeholder="pass fail undetermined error failed failure:CLASS disagree, or words",
            id="log-filter",
        )
        yield DataTable(id="logtable", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        """Columns."""
        self.table.add_columns(*COLUMNS)

    @property
    def table(self) -> DataTable[str]:
        """The table."""
        return self.query_one("#logtable", DataTable)

    def show(self, state: RunState, *, force: bool = False) -> None:
        """Rebuild from ``state`` if it changed (at most every :data:`REBUILD_S`), or with ``force``."""
        self.state = state
        events, at = self._built
        now = time.monotonic()
        if not force and state.events == events:
            return
        if not force and now - at < REBUILD_S:  # events keep coming: the rest a little later
            if not self._later:
                self._later = True
                self.set_timer(REBUILD_S - (now - at), self._rebuild_later)
            return
        self._built = (state.events, now)
        self.rows = action_rows(state.jobs.values())
        self.shown = [r for r in self.rows if keeps(self.filter_text, r)]
        table = self.table
        current = self.cursor_row()
        table.clear()
        for row in self.shown:
            table.add_row(*row.cells(), key=row.key)
        if current is not None and current.key in {r.key for r in self.shown}:
            table.move_cursor(row=table.get_row_index(current.key), animate=False)
        disagree = sum(r.disagrees for r in self.rows)
        head = f"filter: {self.filter_text or 'all'} · {len(self.shown)} of {len(self.rows)} actions"
        if disagree:
            head += f" · {disagree} where designs disagree"
        self.query_one("#log-head", Static).update(head + " · f next filter, / type one")

    def _rebuild_later(self) -> None:
        self._later = False
        if self.state is not None and self.display:
            self.show(self.state)

    def set_filter(self, text: str) -> None:
        """Filter by ``text`` (see :mod:`iwr_bench.tui.action_log`)."""
        self.filter_text = text.strip().lower()
        if self.state is not None:
            self.show(self.state, force=True)

    def action_cycle(self) -> None:
        """The next preset filter."""
        self.set_filter(next_preset(self.filter_text, self.rows))

    def edit_filter(self) -> None:
        """Show and focus the filter box."""
        box = self.query_one("#log-filter", Input)
        box.value = self.filter_text
        box.add_class("shown")
        box.focus()

    @on(Input.Submitted, "#log-filter")
    def _filter_typed(self, event: Input.Submitted) -> None:
        event.stop()
        event.input.remove_class("shown")
        self.set_filter(event.value)
        self.table.focus()

    def cursor_row(self) -> ActionRow | None:
        """The action under the cursor."""
        table = self.table
        if not self.shown or table.row_count == 0:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return next((r for r in self.shown if r.key == key), None)

    @on(DataTable.RowSelected, "#logtable")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = next((r for r in self.shown if r.key == event.row_key.value), None)
        if row is not None:
            self.post_message(self.Opened(row.job.key, row.action.index))
