"""Typed events of a run: published in-process to subscribers and appended to the run's store.

Every event carries a sequence number (assigned by the bus, dense from 1 within a run), a wall
clock time and, for job events, the job id (``gen/<task>/<model>`` or ``judge/<task>/<model>``).
Another process follows a run by reading the ``events`` table from the last sequence it saw.
"""

from __future__ import annotations

import logging
import time
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter

from iwr_bench.agents import events as agent
from iwr_bench.scoring.formulas import Scores

log = logging.getLogger(__name__)

Stage = Literal["gen", "judge"]


class _Event(BaseModel):
    seq: int = 0
    """Position in the run's event log (assigned on publish)."""
    time: float = Field(default_factory=time.time)
    """Unix time of the event."""
    job: str | None = None
    """Job the event belongs to, if any."""


class RunStarted(_Event):
    """A run (or a resumed run) began."""

    kind: Literal["run_started"] = "run_started"
    run_id: str
    """Run id."""
    models: list[str]
    """Model names (results-folder slugs), in order."""
    tasks: list[int]
    """Task ids, in order."""
    model_tasks: dict[str, list[int]] = Field(default_factory=dict[str, list[int]])
    """The models judged on some of these tasks only (a mutant on its own task), with those tasks."""
    resumed: bool = False
    """Whether this continues an earlier, interrupted session."""
    limits: dict[str, int] = Field(default_factory=dict[str, int])
    """Capacity of each named limit."""
    designs: list[str] = Field(default_factory=list[str])
    """The labels of the judge designs compared (``[[judge.designs]]``); empty: one design."""


class RunFinished(_Event):
    """A run session ended."""

    kind: Literal["run_finished"] = "run_finished"
    status: Literal["completed", "cancelled", "failed"]
    """completed, cancelled (Ctrl-C; resumable) or failed (an engine error; resumable)."""
    wall_s: float
    """Wall time of this session."""
    message: str = ""
    """Details."""


class JobQueued(_Event):
    """A job is waiting for its inputs or a limit."""

    kind: Literal["job_queued"] = "job_queued"
    stage: Stage
    task_id: int
    model: str


class JobStarted(_Event):
    """A job began its work."""

    kind: Literal["job_started"] = "job_started"
    stage: Stage
    task_id: int
    model: str


class JobFinished(_Event):
    """A job ended, with a result or a recorded failure."""

    kind: Literal["job_finished"] = "job_finished"
    stage: Stage
    task_id: int
    model: str
    status: Literal["done", "failed", "skipped"]
    """done, failed (a recorded failure: still scored) or skipped (already done before a resume)."""
    failure: str | None = None
    """Failure class, when failed."""
    message: str = ""
    """Details of the failure."""
    scores: Scores | None = None
    """For judging: the page's scores (0-1) and steps."""
    cost_usd: float = 0.0
    """Money paid by this job in this session."""
    seconds: float = 0.0
    """Wall time of the job."""


class GenerationFinished(_Event):
    """A page was generated (or its generation failed)."""

    kind: Literal["generation_finished"] = "generation_finished"
    task_id: int
    model: str
    status: str
    """ok, empty, truncated or failed."""
    cache_hit: bool = False
    """Served from the response cache."""
    attempts: int = 0
    """Model requests made."""
    cost_usd: float | None = None
    """Cost of the answer, when priced."""


class ActionStarted(_Event, agent.ActionStarted):
    """The executor began an action."""


class ActionGrounded(_Event, agent.ActionGrounded):
    """A grounder chose an element (or none)."""


class ActionExecuted(_Event, agent.ActionExecuted):
    """An action finished: ok or failed with a reason."""


class AssertionVerdictEvent(_Event, agent.AssertionVerdictEvent):
    """An assertion judge's verdict on one action."""


class JudgeCallStarted(_Event, agent.JudgeCallStarted):
    """A judge asked its model a question: who asks, the request in one line, the attempt."""


class JudgeDelta(_Event, agent.JudgeDelta):
    """A piece of a judge model's streamed prose (coalesced: see :class:`TextCoalescer`)."""


class JudgeToolCall(_Event, agent.JudgeToolCall):
    """A tool a judge agent called."""


class JudgeRetry(_Event, agent.JudgeRetry):
    """A judge answer was sent back with feedback, or a failed request was retried."""


class JudgeAnswer(_Event, agent.JudgeAnswer):
    """A judge call ended: its structured answer as fields, or why there is none."""


class EngineStatus(_Event):
    """What the engine is busy with while no job event comes (loading models, a queue's size).

    A status is keyed: a later status with the same key replaces it, and one with ``done`` set
    ends it.
    """

    kind: Literal["engine_status"] = "engine_status"
    key: str
    """What the status is about (``metric models``, ``metrics queue``)."""
    text: str
    """What the engine is doing, in words (``loading metric models (dino)``)."""
    done: bool = False
    """The activity ended."""


class MetricComputed(_Event):
    """A visual score of one scored pair."""

    kind: Literal["metric_computed"] = "metric_computed"
    step: int
    metric: str
    """ocr, dino or rubric."""
    value: float | None
    backend: str
    """Backend label; substitutes say so."""


class DesignProgress(BaseModel):
    """One metric design's images in the metric stage of this session (see
    :mod:`iwr_bench.engine.metric_progress` for what counts as an image)."""

    metric: str
    """The role it fills: ocr or dino."""
    done: int = 0
    """Images measured."""
    skipped: int = 0
    """Images that needed no work: cached values, pixel-identical pairs, images already counted."""
    left: int = 0
    """Images waiting for a metric worker or being measured."""
    running: int = 0
    """Of ``left``, the images in batches being measured now."""
    failed: int = 0
    """Images whose batch failed or timed out."""
    rate: float | None = None
    """Images per second over the recent batches (None before one finished)."""
    eta_s: float | None = None
    """Seconds until ``left`` is done at ``rate`` (None while unknown)."""


class MetricProgress(_Event):
    """Images through the metric stage so far: at most one a second, and one at the run's end."""

    kind: Literal["metric_progress"] = "metric_progress"
    designs: list[DesignProgress] = Field(default_factory=list[DesignProgress])
    """Per metric design."""
    eta_s: float | None = None
    """Seconds until every design's ``left`` is done (None while any is unknown)."""

    @property
    def done(self) -> int:
        """Images measured or skipped."""
        return sum(d.done + d.skipped for d in self.designs)

    @property
    def skipped(self) -> int:
        """Images that needed no work."""
        return sum(d.skipped for d in self.designs)

    @property
    def left(self) -> int:
        """Images still to measure."""
        return sum(d.left for d in self.designs)

    @property
    def running(self) -> int:
        """Images being measured now."""
        return sum(d.running for d in self.designs)

    @property
    def failed(self) -> int:
        """Images whose batch failed."""
        return sum(d.failed for d in self.designs)

    @property
    def total(self) -> int:
        """Every image counted: done, left and failed."""
        return self.done + self.left + self.failed


class StageFinished(_Event):
    """One stage of a (task, model) pair ended: generate, replay, metrics, rubric or record."""

    kind: Literal["stage_finished"] = "stage_finished"
    stage: Literal["generate", "replay", "metrics", "rubric", "record"]
    """The stage (replay is the only one that holds a browser page)."""
    started: float
    """Unix time the stage began (its slot, if it has one, already held)."""
    seconds: float
    """How long it took, waiting for a shared limit included (metrics: for the batch)."""


class LimitOccupancy(_Event):
    """How busy a named limit is."""

    kind: Literal["limit_occupancy"] = "limit_occupancy"
    name: str
    in_use: int
    capacity: int
    waiting: int


class FailureEvent(_Event):
    """Something failed (recorded as data; the run goes on)."""

    kind: Literal["failure"] = "failure"
    stage: Stage | Literal["run"]
    failure: str
    message: str


Event = Annotated[
    RunStarted
    | RunFinished
    | JobQueued
    | JobStarted
    | JobFinished
    | GenerationFinished
    | ActionStarted
    | ActionGrounded
    | ActionExecuted
    | JudgeCallStarted
    | JudgeDelta
    | JudgeToolCall
    | JudgeRetry
    | JudgeAnswer
    | AssertionVerdictEvent
    | EngineStatus
    | MetricComputed
    | MetricProgress
    | StageFinished
    | LimitOccupancy
    | FailureEvent,
    Field(discriminator="kind"),
]
"""Any event."""

EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def parse_event(data: str | bytes) -> Event:
    """An event from its JSON form."""
    return EVENT_ADAPTER.validate_json(data)


def _mirrors() -> dict[type[agent.AgentEvent], type[_Event]]:
    """Each agent event type with the run event that carries it (the class below deriving from
    both): found, not kept by hand, so an agent event without one fails at import."""
    found = {
        base: cls for cls in _Event.__subclasses__() for base in cls.__bases__ if base in agent.AGENT_EVENTS
    }
    missing = [t.__name__ for t in agent.AGENT_EVENTS if t not in found]
    if missing:
        raise TypeError(f"agent events with no run event: {', '.join(missing)}")
    return found


_AGENT_EVENTS = _mirrors()
"""Agent event type -> the run event carrying it."""


def from_agent(event: agent.AgentEvent, job: str, **changes: object) -> Event:
    """The run event for an agent's event, in ``job`` (with ``changes`` to its fields).

    Raises:
        TypeError: an event type the engine does not know (a programming error).
    """
    cls = _AGENT_EVENTS.get(type(event))
    if cls is None:
        raise TypeError(f"unknown agent event {type(event).__name__}")
    return cls(**{**event.model_dump(), **changes, "job": job})  # type: ignore[return-value]
