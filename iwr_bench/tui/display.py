"""The terminal UI as a registered display (``iwr run --display tui``, or ``--tui``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iwr_bench.engine.events import Event
from iwr_bench.engine.run_state import RunState
from iwr_bench.registry import register

if TYPE_CHECKING:
    from iwr_bench.engine.run import Engine, RunOutcome


class TuiDisplay:
    """The Textual app: it needs the main thread, so it runs the engine inside itself (in one of its
    workers) and subscribes this display's fold while it does."""

    def __init__(self) -> None:
        self.state = RunState()
        """The fold the app's views read."""

    def __call__(self, event: Event) -> None:
        """Fold one event in."""
        self.state.apply(event)

    def drive(self, engine: Engine) -> RunOutcome:
        """Run ``engine`` inside the app until the user quits."""
        from iwr_bench.tui.app import run_tui  # Textual loads only when this display is used

        return run_tui(engine, self.state)


@register("display", "tui")
def tui_display() -> TuiDisplay:
    """The terminal UI: progress, jobs, each job's trajectory and judge calls, the leaderboard."""
    return TuiDisplay()
