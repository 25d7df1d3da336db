"""What the engine is busy with between job events, published as :class:`EngineStatus` events.

A run can go minutes without a job event: metric models load, pairs wait for a metric worker.
:class:`StatusReporter` says so on the bus, so the TUI's status line and the plain progress
output can tell a busy run from a hung one. Model loads are reported from the loading thread
(:func:`iwr_bench.metrics.models.on_loading`) and handed to the event loop.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

import anyio.from_thread
import anyio.lowlevel

from iwr_bench.engine.events import EngineStatus, Event
from iwr_bench.metrics import models

MODELS = "metric models"
"""Status key of model loading."""
METRICS_QUEUE = "metrics queue"
"""Status key of the pairs in the metrics stage."""


class StatusReporter:
    """Publishes the engine's activities (see the module doc)."""

    def __init__(self, publish: Callable[[Event], object]) -> None:
        self.publish = publish
        self.loading: list[str] = []
        """Models being loaded now."""
        self.in_metrics = 0
        """Pairs in the metrics stage (queued for a metric worker or measured)."""
        self._token: anyio.lowlevel.EventLoopToken | None = None
        self._loop_thread = 0
        self._remove: Callable[[], None] | None = None

    def start(self) -> None:
        """Listen for model loads (call on the event loop)."""
        self._token = anyio.lowlevel.current_token()
        self._loop_thread = threading.get_ident()
        self._remove = models.on_loading(self._loading)

    def stop(self) -> None:
        """Stop listening."""
        if self._remove is not None:
            self._remove()
            self._remove = None

    def _loading(self, key: Hashable, started: bool) -> None:
        if threading.get_ident() == self._loop_thread or self._token is None:
            self._model(key, started)
        else:
            try:
                anyio.from_thread.run_sync(self._model, key, started, token=self._token)
            except RuntimeError:  # the run's event loop has ended: nobody to tell
                return

    def _model(self, key: Hashable, started: bool) -> None:
        name = _model_name(key)
        if started:
            self.loading.append(name)
        elif name in self.loading:
            self.loading.remove(name)
        if self.loading:
            self.publish(EngineStatus(key=MODELS, text=f"loading metric models ({', '.join(self.loading)})"))
        else:
            self.publish(EngineStatus(key=MODELS, text="metric models loaded", done=True))

    def metrics_queue(self, change: int) -> None:
        """A pair entered (+1) or left (-1) the metrics stage."""
        self.in_metrics = max(0, self.in_metrics + change)
        n = self.in_metrics
        text = f"{n} pair{'s' if n != 1 else ''} queued for metrics" if n else "metrics queue empty"
        self.publish(EngineStatus(key=METRICS_QUEUE, text=text, done=n == 0))


def _model_name(key: Hashable) -> str:
    """A model's key in words (keys are names or tuples that start with one)."""
    if isinstance(key, tuple):
        parts = [str(p) for p in key if isinstance(p, str | int | float)]  # pyright: ignore[reportUnknownVariableType]
        return " ".join(parts[:2]) or "model"
    return str(key)
