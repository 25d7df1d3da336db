"""Progress of a run without the TUI: a live rich table on a terminal, plain lines otherwise.

Both are event subscribers; they only count and format, so they cost the run next to nothing.
Both say what the engine is doing between job events (``EngineStatus``: loading metric models, the
metrics queue) and when judge calls wait for their model: the live table in its caption, under a
clock that runs on its own; the plain lines as ``[engine] ...`` when it changes (the metrics queue
at most every 10 s; a wait for the judge model, which no event announces, from a ticker thread
every 10 s while it lasts). Both show the metric stage's progress (``MetricProgress``: images done
and left, each design's rate, the ETA): the live table in its caption while images are left, the
plain lines as ``[metrics] ...`` (the first, the first with an ETA, then at most every 10 s, and
the last at the run's end).
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from statistics import fmean
from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.table import Table

from iwr_bench.engine.events import (
    EngineStatus,
    Event,
    FailureEvent,
    JobFinished,
    JudgeAnswer,
    JudgeCallStarted,
    JudgeDelta,
    JudgeRetry,
    JudgeToolCall,
    MetricProgress,
    RunFinished,
    RunStarted,
)
from iwr_bench.engine.metric_text import summary

WAITING_S = 2.0
"""A judge call with no word from its model for this long counts as waiting for it."""


@dataclass
class ModelProgress:
    """Counters of one model."""

    total: int = 0
    generated: int = 0
    judged: int = 0
    failures: int = 0
    cost_usd: float = 0.0
    ifs: list[float] = field(default_factory=list[float])
    vfs: list[float] = field(default_factory=list[float])
    final: list[float] = field(default_factory=list[float])


class ProgressState:
    """What the progress views show, folded from events."""

    def __init__(self) -> None:
        self.models: dict[str, ModelProgress] = {}
        self.started = time.monotonic()
        self.skipped = 0
        self.statuses: dict[str, str] = {}
        """What the engine is busy with, by key."""
        self.calls: dict[str, float] = {}
        """Open judge calls: monotonic time of the latest word from their model."""
        self.metrics: MetricProgress | None = None
        """The metric stage's latest progress."""

    def apply(self, event: Event) -> None:
        """Fold one event in."""
        if isinstance(event, RunStarted):
            self.started = time.monotonic()
            for m in event.models:
                self.models.setdefault(m, ModelProgress()).total = len(event.model_tasks.get(m, event.tasks))
        elif isinstance(event, JobFinished):
            p = self.models.setdefault(event.model, ModelProgress())
            if event.status == "skipped":
                self.skipped += 1
            if event.stage == "gen":
                p.generated += 1
                p.cost_usd += event.cost_usd
            else:
                p.judged += 1
                if event.scores is not None:
                    p.ifs.append(event.scores.ifs)
                    p.vfs.append(event.scores.vfs)
                    p.final.append(event.scores.final)
        elif isinstance(event, JudgeCallStarted | JudgeDelta | JudgeRetry | JudgeToolCall):
            self.calls[f"{event.job}/{event.call}"] = time.monotonic()
        elif isinstance(event, JudgeAnswer):
            self.calls.pop(f"{event.job}/{event.call}", None)
        elif isinstance(event, EngineStatus):
            if event.done:
                self.statuses.pop(event.key, None)
            else:
                self.statuses[event.key] = event.text
        elif isinstance(event, MetricProgress):
            self.metrics = event
        elif isinstance(event, FailureEvent) and event.job:
            model = event.job.split("/")[-1]
            self.models.setdefault(model, ModelProgress()).failures += 1

    def eta_s(self) -> float | None:
        """Seconds left at the judging rate so far (None before the first judged page)."""
        done = sum(p.judged for p in self.models.values()) - self.skipped // 2
        total = sum(p.total for p in self.models.values())
        left = total - sum(p.judged for p in self.models.values())
        if done <= 0 or left <= 0:
            return None if left > 0 else 0.0
        return (time.monotonic() - self.started) / done * left

    def waiting(self) -> str | None:
        """Judge calls whose model has said nothing for ``WAITING_S`` or more, in words (None: none)."""
        now = time.monotonic()
        waits = [now - heard for heard in list(self.calls.values()) if now - heard >= WAITING_S]
        if not waits:
            return None
        calls = f"{len(waits)} call{'s' if len(waits) != 1 else ''}"
        return f"waiting for the judge model ({calls}, longest {max(waits):.0f} s)"

    def activity(self) -> list[str]:
        """What the engine is doing: its statuses, the metric stage while images are left, and
        judge calls waiting for their model."""
        waiting = self.waiting()
        m = self.metrics
        metrics = [f"metrics: {summary(m, time.time())}"] if m is not None and m.left else []
        return [*self.statuses.values(), *metrics, *([waiting] if waiting else [])]

    def table(self) -> Table:
        """The rich table."""
        eta = self.eta_s()
        elapsed = int(time.monotonic() - self.started)
        clock = f"{elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}"
        title = f"iwr run {clock}" + ("" if eta is None else f" - ETA {eta:.0f} s")
        table = Table(title=title, caption="; ".join(self.activity()) or None)
        for col in ("model", "generated", "judged", "IFS", "VFS", "Final", "failures", "cost"):
            table.add_column(col, justify="left" if col == "model" else "right")
        for name, p in self.models.items():
            table.add_row(
                name,
                f"{p.generated}/{p.total}",
                f"{p.judged}/{p.total}",
                _mean(p.ifs),
                _mean(p.vfs),
                _mean(p.final),
                str(p.failures),
                f"${p.cost_usd:.4f}",
            )
        return table


def _mean(values: list[float]) -> str:
    return f"{100 * fmean(values):.2f}" if values else "-"


class LiveProgress:
    """A live table on a terminal (refreshed a few times a second)."""

    def __init__(self, console: Console | None = None) -> None:
        self.state = ProgressState()
        self.console = console or Console(stderr=True)
        self.live = Live(
            console=self.console, refresh_per_second=4, transient=False, get_renderable=self.state.table
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


class PlainProgress:
    """One line per finished job (for logs and pipes), and ``[engine]`` lines between them."""

    QUEUE_EVERY_S = 10.0
    """Seconds between two lines about the metrics queue."""
    WAIT_EVERY_S = 10.0
    """Seconds between two lines about judge calls waiting for their model."""
    METRICS_EVERY_S = 10.0
    """Seconds between two lines about the metric stage's progress."""

    def __init__(self, stream: TextIO | None = None, *, tick_s: float = 1.0) -> None:
        self.state = ProgressState()
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
            waiting = self.state.waiting()
            now = time.monotonic()
            if waiting is None:
                self._wait_said = -float("inf")  # the next wait is said at once
                return
            if now - self._wait_said < self.WAIT_EVERY_S:
                return
            self._wait_said = now
        print(f"[engine] {waiting}", file=self.stream, flush=True)

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
            p = self.state.models.get(event.model, ModelProgress())
            what = "generated" if event.stage == "gen" else "judged"
            line = f"[{event.model}] task {event.task_id} {what}"
            if event.stage == "judge" and event.scores is not None:
                s = event.scores
                line += f": {s.success_steps}/{s.total_steps} actions, Final {100 * s.final:.1f}"
            if event.failure:
                line += f" ({event.failure})"
            line += f"  [{p.judged}/{p.total} judged]"
            print(line, file=self.stream, flush=True)

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
