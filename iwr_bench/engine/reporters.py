"""What a run reports besides its jobs' ends: agents' events, streamed judge text, the limits'
occupancy, the engine's status and the metric stage's progress, all onto the run's event bus."""

from __future__ import annotations

import anyio

from iwr_bench.agents.events import ActionExecuted, AgentEvent, Emit, JudgeDelta
from iwr_bench.engine.bus import EventBus, TextCoalescer
from iwr_bench.engine.events import from_agent
from iwr_bench.engine.limits import NamedLimit, OccupancyReporter
from iwr_bench.engine.metric_progress import MetricProgressReporter
from iwr_bench.engine.status import StatusReporter
from iwr_bench.engine.task_features import TaskFeatureUse
from iwr_bench.engine.watch import Watchdog


class RunReporters:
    """The run's reporters, each publishing on ``bus``."""

    def __init__(self, bus: EventBus, watchdog: Watchdog) -> None:
        self.bus = bus
        self.watchdog = watchdog
        """Told of every agent event (a job that goes silent is stopped)."""
        self.occupancy = OccupancyReporter(bus.publish)
        """Occupancy of the limits that changed, published every half second."""
        self.text = TextCoalescer(bus.publish)
        """Streamed judge text, published every 100 ms or 1 KB per job instead of per token."""
        self.status = StatusReporter(bus.publish)
        """What the engine is busy with between job events (model loads, the metrics queue)."""
        self.metric_progress = MetricProgressReporter(bus.publish)
        """Images through the metric stage, their rate and ETA (an event a second at most)."""
        self.task_features = TaskFeatureUse()
        """Reference images the tasks' stored features offered and served (the manifest records it)."""
        self.actions_run = 0
        """Actions executed in this session."""

    def agent_sink(self, jid: str, evidence: str) -> Emit:
        """Where the agents of judging job ``jid`` report (screenshots are under ``evidence``)."""

        def sink(event: AgentEvent) -> None:
            self.watchdog.beat(jid, event)
            if isinstance(event, JudgeDelta):
                self.text.add(jid, event.role, event.text, event.call)
                return
            changes: dict[str, object] = {}
            if isinstance(event, ActionExecuted):
                self.actions_run += 1
                if event.screenshot:
                    changes["screenshot"] = f"{evidence}/{event.screenshot}"
            self.text.flush(jid)  # the job's streamed text comes before its next event
            self.bus.publish(from_agent(event, jid, **changes))

        return sink

    async def tick(self, limits: list[NamedLimit]) -> None:
        """Publish what is due, every 0.1 s (the limits' occupancy every 0.5 s), until cancelled."""
        ticks = 0
        while True:
            await anyio.sleep(0.1)
            self.text.flush_due()
            self.metric_progress.flush_due()
            ticks += 1
            if ticks % 5 == 0:
                self.occupancy.flush(limits)

    def flush(self, limits: list[NamedLimit]) -> None:
        """Publish everything held (at the run's end)."""
        self.text.flush()
        self.metric_progress.flush()
        self.occupancy.flush(limits)
