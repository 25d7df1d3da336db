"""The overview: per model progress and running means, the run's pace, the metric stage's progress,
the named limits."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from iwr_bench.engine.run_state import RunState
from iwr_bench.tui.widgets.common import bar, counts, duration, pct
from iwr_bench.tui.widgets.metrics import MetricsPanel


class OverviewView(Vertical):
    """Models, pace, metric progress and limits."""

    def compose(self) -> ComposeResult:
        """The run line, the metric stage's progress and two tables."""
        yield Static(id="runline")
        yield MetricsPanel(id="metrics")
        yield DataTable(id="models", cursor_type="row", zebra_stripes=True)
        yield DataTable(id="limits", cursor_type="none")

    def on_mount(self) -> None:
        """Columns."""
        self.query_one("#models", DataTable).add_columns(
            "model", "judged (generated)", "IFS", "VFS", "Final", "failures", "cost $"
        )
        self.query_one("#limits", DataTable).add_columns("limit", "in use", "capacity", "waiting", "")

    def show(self, s: RunState, now: float) -> None:
        """Redraw from the state."""
        judged = sum(m.judged for m in s.models.values())
        total = sum(m.total for m in s.models.values())
        cost = sum(m.cost_usd for m in s.models.values())
        line = (
            f"{s.status}  judged {judged}/{total}  {duration(s.clock(now))}  "
            f"{s.throughput:.1f} pages/min  ETA {duration(s.eta)}  ${cost:.4f}"
        )
        if s.message:
            line += f"\n{s.message}"
        self.query_one("#runline", Static).update(line)
        self.query_one(MetricsPanel).show(s, now)
        models = self.query_one("#models", DataTable)
        models.clear()
        for m in s.models.values():
            models.add_row(
                m.name,
                f"{bar(m.judged, m.total, 8)} {m.judged}/{m.total} ({m.generated})",
                pct(m.mean("ifs")),
                pct(m.mean("vfs")),
                pct(m.mean("final")),
                counts(m.failures),
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
                bar(lim.in_use, lim.capacity, 10),
            )
