"""The leaderboard: the paper's columns per model, best Final first, with notes."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from iwr_bench.engine.run_state import RunState
from iwr_bench.tui.widgets.common import pct


class LeaderboardView(Vertical):
    """LVS, HVS, IFS, VFS, Final, failures and mistakes per model."""

    def compose(self) -> ComposeResult:
        """The board and its notes."""
        yield DataTable(id="board", cursor_type="none", zebra_stripes=True)
        yield Static(id="board-notes")

    def on_mount(self) -> None:
        """Columns."""
        self.query_one("#board", DataTable).add_columns(
            "model", "tasks", "LVS", "HVS", "IFS", "VFS", "Final", "failures", "mistakes"
        )

    def show(self, s: RunState) -> None:
        """Redraw from the state."""
        board = self.query_one("#board", DataTable)
        board.clear()
        rows = sorted(s.models.values(), key=lambda m: -(m.mean("final") or -1.0))
        for m in rows:
            board.add_row(
                m.name,
                f"{m.judged}/{m.total}",
                pct(m.mean("lvs")),
                pct(m.mean("hvs")) if m.scores.get("hvs") else "n/a",
                pct(m.mean("ifs")),
                pct(m.mean("vfs")),
                pct(m.mean("final")),
                str(sum(m.failures.values())),
                str(sum(m.mistakes.values())),
            )
        notes: list[str] = ["x100, means over judged tasks"]
        if any(not m.scores.get("hvs") for m in rows if m.judged):
            notes.append("HVS n/a: no rubric judge, so VFS = LVS (not paper-comparable)")
        if s.backends:
            notes.append("backends: " + ", ".join(sorted(s.backends)))
        self.query_one("#board-notes", Static).update("\n".join(notes))
