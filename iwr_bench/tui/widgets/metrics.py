"""The metric stage's progress: images done and left, each design's rate, and the ETA."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from iwr_bench.engine.metric_text import counts_text, eta_text, rate_text
from iwr_bench.engine.run_state import RunState
from iwr_bench.tui.widgets.common import bar


class MetricsPanel(Static):
    """A few lines in the overview, shown once the run reports metric progress.

    The headline has a bar, the images done (cached or identical ones among them) and left, and
    while the run goes on the ETA, counted down between events; under it one line per design
    with its own counts and rate (``3.9 s/image`` or ``12.1 images/s``).
    """

    def show(self, state: RunState, now: float) -> None:
        """Redraw from the state (hidden before any metric progress)."""
        m = state.metrics
        self.display = m is not None
        if m is None:
            return
        text = Text()
        text.append("metrics ", style="bold")
        text.append(f"{bar(m.done, m.total, 12)} {counts_text(m)}")
        if m.left and state.status == "running":
            text.append(f" · {eta_text(m, now)}", style="bold")
        for d in m.designs:
            total = d.done + d.skipped + d.left + d.failed
            if not total:
                continue
            text.append(f"\n  {d.metric:<5} {d.done + d.skipped}/{total} done · {d.left} left")
            if d.failed:
                text.append(f" · {d.failed} failed")
            text.append(f" · {rate_text(d.rate)}")
        self.update(text)
