"""Typed events of a run: published in-process to subscribers and appended to the run's store.

Every event carries a sequence number (assigned by the bus, dense from 1 within a run), a wall
clock time and, for job events, the job id (``gen/<task>/<model>`` or ``judge/<task>/<model>``).
Another process follows a run by reading the ``events`` table from the last sequence it saw.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Annotated, Literal, cast

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

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


class FromAgent(_Event):
    """An agent's event (an action, a verdict, a judge model call's progress) in a job: the one
    envelope around every :data:`~iwr_bench.agents.events.AnyAgentEvent`, adding the run's sequence
    number, time and job. Match the agent's event inside it:
    ``case FromAgent(event=ActionStarted() as started)``."""

    kind: Literal["agent"] = "agent"
    event: agent.AnyAgentEvent
    """What the agent reported."""


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
    | FromAgent
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
    """An event from its JSON form (also from runs recorded before agent events had an envelope,
    when each was a run event of its own kind with the agent's fields beside the run's)."""
    try:
        return EVENT_ADAPTER.validate_json(data)
    except ValidationError:
        raw = json.loads(data)
        if not (isinstance(raw, dict) and cast("dict[str, object]", raw).get("kind") in agent.AGENT_KINDS):
            raise
    fields = cast("dict[str, object]", raw)
    envelope = {name: fields.pop(name) for name in _Event.model_fields if name in fields}
    return FromAgent.model_validate({**envelope, "event": fields})


def from_agent(event: agent.AgentEvent, job: str, **changes: object) -> FromAgent:
    """The run event carrying an agent's ``event`` in ``job`` (with ``changes`` to the agent's fields)."""
    inner = type(event).model_validate({**event.model_dump(), **changes}) if changes else event
    return FromAgent(job=job, event=inner)  # pyright: ignore[reportArgumentType]  # an AnyAgentEvent class
