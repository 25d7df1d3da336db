"""The status bar: a clock that runs between events, and what the engine is doing."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from iwr_bench.engine.run_state import RunState
from iwr_bench.tui.widgets.common import duration


class StatusBar(Static):
    """One line under the header, redrawn every second (see :meth:`show`)."""

    def show(self, state: RunState, now: float, *, following: bool = True) -> None:
        """The run's status, its clock at ``now``, and its activity (or a quiet note)."""
        text = Text()
        text.append(f" {state.status} ", style="bold reverse")
        text.append(f"  {duration(state.clock(now))}  ")
        activity = state.activity(now)
        if activity:
            text.append(activity, style="bold")
        elif state.status == "running":
            text.append("working", style="dim")
        elif state.status == "waiting":
            text.append("waiting for the run to start", style="dim")
        if not following:
            text.append("  [paused: p resumes]", style="yellow")
        self.update(text)
