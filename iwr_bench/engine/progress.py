"""Displays of a run: the registered ``display`` role, and the two built in without the TUI.

A display is an event subscriber that also drives the run (:class:`Display`): most subscribe,
run the engine and close (:class:`EventDisplay`); the terminal UI (``tui``, in
:mod:`iwr_bench.tui.display`) runs the engine inside its app. ``iwr run --display NAME`` picks one;
a plugin registers more with ``@register("display", NAME)``.

The two here fold the stream with the same :class:`~iwr_bench.engine.run_state.RunState` as the
TUI, and only format it, so they cost the run next to nothing:

- ``live``: a rich table on a terminal, redrawn a few times a second under a clock that runs on its
  own, with what the engine is doing in its caption (its statuses, the metric stage while images
  are left, judge calls waiting for their model);
- ``plain``: one line per finished job, for logs and pipes, and between them ``[engine] ...`` when
  the engine's status changes (the metrics queue at most every 10 s, a wait for the judge model,
  which no event announces, from a ticker thread every 10 s while it lasts) and ``[metrics] ...``
  (the first, the first with an ETA, then at most every 10 s, and the last at the run's end).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Protocol, TextIO

import anyio
from rich.console import Console
from rich.live import Live
from rich.table import Table

from iwr_bench.engine.events import EngineStatus, Event, JobFinished, MetricProgress, RunFinished
from iwr_bench.engine.metric_text import summary
from iwr_bench.engine.run_state import ModelView, RunState
from iwr_bench.registry import register

if TYPE_CHECKING:
    from iwr_bench.engine.run import Engine, RunOutcome


class Display(Protocol):
    """Shows a run while it runs (the ``display`` role)."""

    def __call__(self, event: Event) -> None:
        """Take one event of the run (on the engine's event loop; must not block)."""
        ...

    def drive(self, engine: Engine) -> RunOutcome:
        """Run the prepared ``engine`` to its end while showing it; how the run ended."""
        ...


class EventDisplay:
    """A display that only listens: :meth:`drive` subscribes it, opens it (``with``), runs the
    engine and closes it. Subclasses implement ``__call__``, and ``__enter__``/``__exit__`` if they
    hold something open."""

    def __call__(self, event: Event) -> None:
        """Take one event."""
        raise NotImplementedError

    def __enter__(self) -> EventDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def drive(self, engine: Engine) -> RunOutcome:
        """Subscribe, open, run the engine, close."""
        unsubscribe = engine.bus.subscribe(self)
        try:
            with self:
                return anyio.run(engine.run)
        finally:
            unsubscribe()


def _mean(view: ModelView, name: str) -> str:
    value = view.mean(name)
    return "-" if value is None else f"{value:.2f}"


def table(state: RunState, now: float) -> Table:
    """The live table of ``state`` at wall time ``now``."""
    elapsed = int(state.clock(now))
    clock = f"{elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}"
    eta = state.eta
    title = f"iwr run {clock}" + ("" if eta is None else f" - ETA {eta:.0f} s")
    out = Table(title=title, caption=state.activity(now) or None)
    for col in ("model", "generated", "judged", "IFS", "VFS", "Final", "failures", "cost"):
        out.add_column(col, justify="left" if col == "model" else "right")
    for name, m in state.models.items():
        out.add_row(
            name,
            f"{m.generated}/{m.total}",
            f"{m.judged}/{m.total}",
            _mean(m, "ifs"),
            _mean(m, "vfs"),
            _mean(m, "final"),
            str(sum(m.failures.values())),
            f"${m.cost_usd:.4f}",
        )
    return out


class LiveProgress(EventDisplay):
    """A live table on a terminal (refreshed a few times a second)."""

    def __init__(self, console: Console | None = None) -> None:
        self.state = RunState()
        self.console = console or Console(stderr=True)
        self.live = Live(
            console=self.console,
            refresh_per_second=4,
            transient=False,
            get_renderable=lambda: table(self.state, time.time()),
        )  # redrawn on every refresh, so its clock runs without events

    def __call__(self, event: Event) -> None:
        """Subscriber."""
        self.state.apply(event)

    def __enter__(self) -> LiveProgress:
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.refresh()
        self.live.stop()


class PlainProgress(EventDisplay):
    """One line per finished job (for logs and pipes), and ``[engine]`` lines between them."""

    QUEUE_EVERY_S = 10.0
    """Seconds between two lines about the metrics queue."""
    WAIT_EVERY_S = 10.0
    """Seconds between two lines about judge calls waiting for their model."""
    METRICS_EVERY_S = 10.0
    """Seconds between two lines about the metric stage's progress."""

    def __init__(self, stream: TextIO | None = None, *, tick_s: float = 1.0) -> None:
        self.state = RunState()
        self.stream = stream or sys.stderr
        self.tick_s = tick_s
        self._said: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()  # events arrive on the loop, ticks on the ticker thread
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._wait_said = -float("inf")
        self._metrics_said: tuple[str, float, bool] | None = None
        """The latest ``[metrics]`` line, when it was said, and whether it had an ETA."""

    def tick(self) -> None:
        """Say that judge calls wait for their model (no event marks a silence, so this polls)."""
        with self._lock:
            now = time.time()
            waiting = self.state.waiting(now)
            if not waiting:
                self._wait_said = -float("inf")  # the next wait is said at once
                return
            if now - self._wait_said < self.WAIT_EVERY_S:
                return
            self._wait_said = now
            calls = f"{len(waiting)} call{'s' if len(waiting) != 1 else ''}"
            longest = now - waiting[0][1].heard
        print(
            f"[engine] waiting for the judge model ({calls}, longest {longest:.0f} s)",
            file=self.stream,
            flush=True,
        )

    def _tick_until_stopped(self) -> None:
        while not self._stop.wait(self.tick_s):
            self.tick()

    def _status(self, event: EngineStatus) -> None:
        text, at = self._said.get(event.key, ("", 0.0))
        now = time.monotonic()
        if event.text == text or (
            event.key == "metrics queue" and not event.done and now - at < self.QUEUE_EVERY_S
        ):
            return
        self._said[event.key] = (event.text, now)
        print(f"[engine] {event.text}", file=self.stream, flush=True)

    def _metrics(self, event: MetricProgress | None, *, last: bool = False) -> None:
        """Say the metric stage's progress: the first line, the first with an ETA, then at most every
        ``METRICS_EVERY_S``; ``last`` (the run ended) says the latest if it was not said."""
        if event is None:
            return
        text, now = summary(event), time.monotonic()
        known = event.eta_s is not None and event.left > 0
        said = self._metrics_said
        if said is not None and text == said[0]:
            return
        if not (said is None or last or (known and not said[2]) or now - said[1] >= self.METRICS_EVERY_S):
            return
        self._metrics_said = (text, now, known or (said is not None and said[2]))
        print(f"[metrics] {text}", file=self.stream, flush=True)

    def _finished(self, event: JobFinished) -> None:
        m = self.state.models.get(event.model) or ModelView(event.model)
        what = "generated" if event.stage == "gen" else "judged"
        line = f"[{event.model}] task {event.task_id} {what}"
        if event.stage == "judge" and event.scores is not None:
            s = event.scores
            line += f": {s.success_steps}/{s.total_steps} actions, Final {100 * s.final:.1f}"
        if event.failure:
            line += f" ({event.failure})"
        line += f"  [{m.judged}/{m.total} judged]"
        print(line, file=self.stream, flush=True)

    def __call__(self, event: Event) -> None:
        """Subscriber."""
        with self._lock:
            self.state.apply(event)
        if isinstance(event, EngineStatus):
            self._status(event)
        if isinstance(event, MetricProgress):
            self._metrics(event)
        if isinstance(event, RunFinished):
            self._metrics(self.state.metrics, last=True)
        if isinstance(event, JobFinished) and event.status != "skipped":
            self._finished(event)

    def __enter__(self) -> PlainProgress:
        self._stop.clear()
        self._ticker = threading.Thread(target=self._tick_until_stopped, name="iwr-progress", daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
            self._ticker = None


@register("display", "plain")
def plain_display() -> PlainProgress:
    """One line per finished job on stderr, and the engine's activity between them (for logs and pipes)."""
    return PlainProgress()


@register("display", "live")
def live_display() -> LiveProgress:
    """A live table on stderr: each model's progress, running means, failures and cost."""
    return LiveProgress()
