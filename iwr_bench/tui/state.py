"""What the terminal UI shows, folded from a run's events (no Textual here, so it is easy to test).

:class:`RunState` applies events one by one (:meth:`RunState.apply`) and keeps only what the
views need: per-model progress and running means, per-job rows, the limits' occupancy, the
metric stage's progress, and for each job the trajectory with verdicts, the judge's recent
streamed text and tool calls, and the latest screenshot beside its reference checkpoint.
Everything is bounded, so a run with thousands of jobs and millions of streamed tokens keeps a
small, constant footprint per job.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass, field
from statistics import fmean
from typing import cast

from iwr_bench.agents.events import PROSE_FIELDS, prose_of
from iwr_bench.engine.events import (
    ActionExecuted,
    ActionGrounded,
    ActionStarted,
    AssertionVerdictEvent,
    EngineStatus,
    Event,
    FailureEvent,
    GenerationFinished,
    JobFinished,
    JobQueued,
    JobStarted,
    JudgeAnswer,
    JudgeCallStarted,
    JudgeDelta,
    JudgeRetry,
    JudgeToolCall,
    LimitOccupancy,
    MetricComputed,
    MetricProgress,
    RunFinished,
    RunStarted,
    StageFinished,
)
from iwr_bench.engine.metric_progress import eta_text

STREAM_CHARS = 4000
"""Characters of one judge call's streamed prose kept (the most recent)."""
CALLS = 60
"""Judge calls kept per job (the most recent)."""
WAITING_S = 2.0
"""A judge call with no word from its model for this long is shown as waiting for it."""
LOG_LINES = 200
"""Tool calls and retries kept per job."""
INFRA = frozenset(
    {
        "generation_error",
        "no_page",
        "page_load_failed",
        "page_crashed",
        "timeout",
        "stalled",
        "judge_error",
        "engine_error",
        "cancelled",
    }
)
"""Failure classes that are not the model's mistake."""


@dataclass
class ActionView:
    """One action of a job's trajectory."""

    index: int
    type: str
    description: str
    status: str = "running"
    """running, ok or failed."""
    failure: str | None = None
    message: str = ""
    element: int | None = None
    """Grounded element index."""
    grounding: str = ""
    """The grounder's reason."""
    assertion: str = ""
    """The action's logical assertion, once judged."""
    verdict: str | None = None
    """Assertion verdict (yes, no, undetermined, error), when the action has one."""
    reasoning: str = ""
    """The assertion judge's explanation."""
    votes: list[str] = field(default_factory=list[str])
    calls: list[CallView] = field(default_factory=lambda: list[CallView]())
    """The judge calls made for this action, in order."""

    @property
    def stream(self) -> str:
        """The judges' streamed prose for this action, each call's part headed ``[role]``."""
        return "\n".join(f"[{c.role}] {c.text}" for c in self.calls if c.text)


@dataclass
class CallEntry:
    """One piece of a judge call's block, in order: prose, a retry with its feedback, a tool call."""

    kind: str
    """prose, retry or tool."""
    text: str


@dataclass
class CallView:
    """One judge model call: who asks, the request, the prose as it streams, retries, the answer."""

    call: str
    role: str
    who: str = ""
    request: str = ""
    action: int | None = None
    """Index of the action it was made for (None: after the replay, e.g. the rubric)."""
    entries: list[CallEntry] = field(default_factory=list[CallEntry])
    fields: dict[str, str | int | float | bool | None] | None = None
    """The structured answer, once complete."""
    error: str = ""
    """Why there is no answer."""
    done: bool = False
    started: float = 0.0
    """Event time it started."""
    heard: float = 0.0
    """Event time of the latest word from its model."""
    raw: str = ""
    """A call from a run recorded before calls had ids: its streamed text as it came (raw JSON for a
    structured answer), read into prose and fields as the current format would show them."""

    @property
    def text(self) -> str:
        """All its prose."""
        return "".join(e.text for e in self.entries if e.kind == "prose")

    def add_legacy(self, text: str) -> None:
        """Streamed text of a call without an id (see :attr:`raw`)."""
        self.raw = (self.raw + text)[-4 * STREAM_CHARS :]
        if not self.raw.lstrip().startswith("{"):
            self.entries = [CallEntry("prose", self.raw[-STREAM_CHARS:])]
            return
        self.entries = [CallEntry("prose", prose_of(self.raw)[-STREAM_CHARS:])]
        try:
            answer = json.loads(self.raw)
        except ValueError:  # not complete yet
            return
        if isinstance(answer, dict):
            fields = cast("dict[str, object]", answer)
            self.fields = {k: _shown(v) for k, v in fields.items() if k not in PROSE_FIELDS}
            self.done = True

    def add_prose(self, text: str) -> None:
        """Append streamed prose (bounded to :data:`STREAM_CHARS`)."""
        if self.entries and self.entries[-1].kind == "prose":
            self.entries[-1].text = (self.entries[-1].text + text)[-STREAM_CHARS:]
        else:
            self.entries.append(CallEntry("prose", text[-STREAM_CHARS:]))
        del self.entries[:-12]


@dataclass
class JobView:
    """One (task, model) pair: its generation and its judging."""

    task_id: int
    model: str
    gen: str = "pending"
    """pending, queued, running, done, failed or skipped."""
    judge: str = "pending"
    step: int = 0
    """Actions started so far."""
    total: int = 0
    """Actions of the task (known once replay starts)."""
    scores: dict[str, float | None] = field(default_factory=dict[str, float | None])
    failure: str | None = None
    message: str = ""
    cost_usd: float = 0.0
    actions: list[ActionView] = field(default_factory=list[ActionView])
    log: deque[str] = field(default_factory=lambda: deque[str](maxlen=LOG_LINES))
    """Tool calls and retries, newest last."""
    screenshot: str | None = None
    """Latest replay screenshot, relative to the run folder."""
    checkpoint: str | None = None
    """The reference checkpoint of that state, when it is scored."""
    seq: int = 0
    """Sequence of the job's latest event (for 'most recently active')."""
    calls: dict[str, CallView] = field(default_factory=dict[str, CallView])
    """Its judge calls by id, oldest first (bounded to :data:`CALLS`)."""

    @property
    def key(self) -> str:
        """Row key: ``<task>/<model>``."""
        return f"{self.task_id}/{self.model}"

    @property
    def streamed(self) -> ActionView | None:
        """The latest action a judge model streamed text for."""
        return next((a for a in reversed(self.actions) if a.stream), None)

    def call(self, call: str, role: str) -> CallView:
        """The judge call ``call`` (a call without an id, from an older run: one per role and action)."""
        key = call or f"{role}@{self.actions[-1].index if self.actions else -1}"
        view = self.calls.get(key)
        if view is None:
            # The rubric scores the replay's screenshots after it: its calls belong to no action.
            action = self.actions[-1] if self.actions and role != "rubric" else None
            view = self.calls[key] = CallView(key, role, who=role, action=action.index if action else None)
            if action is not None:
                action.calls.append(view)
            while len(self.calls) > CALLS:
                del self.calls[next(iter(self.calls))]
        return view

    @property
    def after_replay(self) -> list[CallView]:
        """Judge calls made after the replay (the rubric)."""
        return [c for c in self.calls.values() if c.action is None]

    @property
    def status(self) -> str:
        """One word for the pair."""
        if self.judge in ("done", "failed", "skipped"):
            return "failed" if self.failure in INFRA else self.judge
        if self.gen == "failed" and self.failure == "cancelled":
            return "failed"
        if self.judge in ("running", "queued"):
            return "judging"
        if self.gen in ("running", "queued"):
            return "generating"
        return "pending"


@dataclass
class ModelView:
    """Progress and running means of one model."""

    name: str
    total: int = 0
    generated: int = 0
    judged: int = 0
    cost_usd: float = 0.0
    scores: dict[str, list[float]] = field(default_factory=dict[str, list[float]])
    """Per score name, the values of the judged tasks (0-1)."""
    failures: dict[str, int] = field(default_factory=dict[str, int])
    """Infrastructure failures by class."""
    mistakes: dict[str, int] = field(default_factory=dict[str, int])
    """The model's own failures (element_not_found, assertion_failed, ...)."""

    def mean(self, name: str) -> float | None:
        """Mean of a score over judged tasks (x100), or None."""
        values = self.scores.get(name)
        return 100 * fmean(values) if values else None


@dataclass
class LimitView:
    """Occupancy of a named limit."""

    name: str
    capacity: int
    in_use: int = 0
    waiting: int = 0


@dataclass
class RunState:
    """Everything the UI shows; see the module doc."""

    run_id: str = ""
    models: dict[str, ModelView] = field(default_factory=dict[str, ModelView])
    jobs: dict[str, JobView] = field(default_factory=dict[str, JobView])
    limits: dict[str, LimitView] = field(default_factory=dict[str, LimitView])
    status: str = "waiting"
    """waiting, running, completed, cancelled or failed."""
    message: str = ""
    started: float | None = None
    """Event time of the first run_started."""
    last_time: float | None = None
    """Event time of the latest event."""
    judged_times: list[float] = field(default_factory=list[float])
    """Event times of judge jobs finishing in this view (for throughput)."""
    last_seq: int = 0
    events: int = 0
    backends: set[str] = field(default_factory=set[str])
    """Metric backend labels seen."""
    statuses: dict[str, str] = field(default_factory=dict[str, str])
    """What the engine is busy with, by key (loading metric models, the metrics queue)."""
    dirty: set[str] = field(default_factory=set[str])
    """Keys of jobs changed since the UI last looked (it clears this)."""
    metrics: MetricProgress | None = None
    """The metric stage's latest progress (images done and left, rates, ETA)."""

    def job(self, task_id: int, model: str) -> JobView:
        """The pair's row, created on first sight."""
        key = f"{task_id}/{model}"
        view = self.jobs.get(key)
        if view is None:
            view = self.jobs[key] = JobView(task_id, model)
            self.models.setdefault(model, ModelView(model))
        return view

    def _job_of(self, event: Event) -> JobView | None:
        if not event.job:
            return None
        parts = event.job.split("/", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            return None
        return self.job(int(parts[1]), parts[2])

    def apply(self, event: Event) -> None:
        """Fold one event in."""
        self.events += 1
        self.last_seq = max(self.last_seq, event.seq)
        self.last_time = event.time
        view = self._job_of(event)
        if view is not None:
            view.seq = event.seq
            self.dirty.add(view.key)
        match event:
            case RunStarted():
                self.run_id = event.run_id
                self.status = "running"
                self.started = self.started or event.time
                for model in event.models:
                    mv = self.models.setdefault(model, ModelView(model))
                    own = event.model_tasks.get(model, event.tasks)
                    mv.total = len(own)
                    for tid in own:
                        self.dirty.add(self.job(tid, model).key)
                for name, cap in event.limits.items():
                    self.limits.setdefault(name, LimitView(name, cap))
            case RunFinished():
                self.status, self.message = event.status, event.message
            case JobQueued() | JobStarted():
                if view is not None:
                    state = "queued" if isinstance(event, JobQueued) else "running"
                    setattr(view, event.stage, state)
                    if event.stage == "judge" and state == "running":
                        view.actions, view.step, view.screenshot, view.calls = [], 0, None, {}
            case JobFinished():
                if view is not None:
                    self._finished(view, event)
            case GenerationFinished():
                if view is not None and event.cost_usd:
                    view.cost_usd += event.cost_usd
            case ActionStarted():
                if view is not None:
                    view.step, view.total = event.index + 1, event.total or view.total
                    view.actions = [a for a in view.actions if a.index < event.index]
                    view.actions.append(ActionView(event.index, event.type, event.description))
            case ActionGrounded():
                action = _action(view, event.index)
                if action is not None:
                    action.element, action.grounding = event.element, event.sentence()
            case ActionExecuted():
                action = _action(view, event.index)
                if action is not None:
                    action.status, action.failure, action.message = event.status, event.failure, event.message
                if view is not None and event.screenshot:
                    view.screenshot, view.checkpoint = event.screenshot, event.checkpoint
            case AssertionVerdictEvent():
                action = _action(view, event.index)
                if action is not None:
                    action.verdict, action.reasoning, action.votes = (
                        event.verdict,
                        event.reasoning,
                        event.votes,
                    )
                    action.assertion = event.assertion
            case JudgeCallStarted():
                if view is not None:
                    call = view.call(event.call, event.role)
                    call.who, call.request, call.started, call.heard = (
                        event.who,
                        event.request,
                        event.time,
                        event.time,
                    )
                    if event.attempt > 1:
                        call.entries.append(CallEntry("retry", f"attempt {event.attempt}"))
            case JudgeDelta():
                if view is not None and (event.call or view.actions):
                    call = view.call(event.call, event.role)
                    if event.call:
                        call.add_prose(event.text)
                    else:
                        call.add_legacy(event.text)
                    call.heard = event.time
            case JudgeToolCall():
                if view is not None:
                    call = view.call(event.call, event.role)
                    call.heard = event.time
                    text = (
                        f"{event.tool} -> {event.result[:120]}"
                        if event.result
                        else f"{event.tool}({event.args[:120]})"
                    )
                    call.entries.append(CallEntry("tool", text))
                    view.log.append(f"{event.role}: {text}")
            case JudgeRetry():
                if view is not None:
                    call = view.call(event.call, event.role)
                    what = "request failed, asked again" if event.transport else "answer sent back"
                    call.entries.append(
                        CallEntry("retry", f"retry {event.attempt} ({what}): {event.error[:300]}")
                    )
                    call.heard = event.time
                    view.log.append(f"{event.role}: retry {event.attempt}: {event.error[:160]}")
            case JudgeAnswer():
                if view is not None:
                    call = view.call(event.call, event.role)
                    call.fields, call.error, call.done, call.heard = (
                        event.fields or None,
                        event.error,
                        True,
                        event.time,
                    )
            case EngineStatus():
                if event.done:
                    self.statuses.pop(event.key, None)
                else:
                    self.statuses[event.key] = event.text
            case LimitOccupancy():
                limit = self.limits.setdefault(event.name, LimitView(event.name, event.capacity))
                limit.capacity, limit.in_use, limit.waiting = event.capacity, event.in_use, event.waiting
            case MetricComputed():
                self.backends.add(event.backend)
            case MetricProgress():
                self.metrics = event
            case FailureEvent():
                if view is not None:
                    view.failure, view.message = event.failure, event.message
            case StageFinished():  # stage timings are for the work clock, not the board
                pass

    def _finished(self, view: JobView, event: JobFinished) -> None:
        model = self.models.setdefault(view.model, ModelView(view.model))
        previous = getattr(view, event.stage)
        setattr(view, event.stage, event.status)
        view.cost_usd += event.cost_usd
        model.cost_usd += event.cost_usd
        if event.failure:
            view.failure, view.message = event.failure, event.message
        counted = previous not in ("done", "failed", "skipped")
        if event.stage == "gen":
            model.generated += counted
            if event.status == "failed" and event.failure and counted:
                model.failures[event.failure] = model.failures.get(event.failure, 0) + 1
            return
        if not counted:
            return
        model.judged += 1
        if event.status != "skipped":
            self.judged_times.append(event.time)
        if event.scores:
            view.scores = dict(event.scores)
            total = event.scores.get("total_steps")
            view.total = int(total) if total else view.total
            for name in ("ifs", "lvs", "hvs", "vfs", "final"):
                value = event.scores.get(name)
                if value is not None:
                    model.scores.setdefault(name, []).append(value)
        failure = event.failure or _failed_action(view)
        if failure and failure != "generation_error":
            bucket = model.failures if failure in INFRA else model.mistakes
            bucket[failure] = bucket.get(failure, 0) + 1

    # -- derived figures ---------------------------------------------------------------------------

    @property
    def elapsed(self) -> float:
        """Seconds between the first run_started and the latest event."""
        if self.started is None or self.last_time is None:
            return 0.0
        return max(0.0, self.last_time - self.started)

    def clock(self, now: float) -> float:
        """Seconds since the run started: up to ``now`` while it runs (a clock that advances with
        no events), up to its last event once it ended."""
        if self.started is None:
            return 0.0
        end = now if self.status == "running" else (self.last_time or self.started)
        return max(0.0, end - self.started)

    def activity(self, now: float) -> str:
        """What the engine is doing, for the status line, when events say so (else "")."""
        parts = list(self.statuses.values())
        m = self.metrics
        if m is not None and m.left and self.status == "running":
            parts.append(f"metrics {m.done}/{m.total} images, {eta_text(m, now)}")
        waiting = [
            (job, c)
            for job in self.jobs.values()
            if job.status == "judging"
            for c in job.calls.values()
            if not c.done and c.started and now - c.heard >= WAITING_S
        ]
        if waiting:
            job, c = min(waiting, key=lambda jc: jc[1].heard)
            more = f" (+{len(waiting) - 1} more)" if len(waiting) > 1 else ""
            parts.append(
                f"waiting for the judge model: {c.who or c.role}, task {job.task_id} / {job.model}, "
                f"{now - c.heard:.0f} s{more}"
            )
        return "; ".join(parts)

    @property
    def throughput(self) -> float:
        """Judged pages per minute over this view's window."""
        if len(self.judged_times) < 2:
            return 0.0
        span = self.judged_times[-1] - self.judged_times[0]
        return 60 * (len(self.judged_times) - 1) / span if span > 0 else 0.0

    @property
    def remaining(self) -> int:
        """Pairs not judged yet."""
        return sum(m.total - m.judged for m in self.models.values())

    @property
    def eta(self) -> float | None:
        """Seconds left at the current throughput, or None when unknown."""
        rate = self.throughput
        if self.status != "running" or rate <= 0:
            return None
        return 60 * self.remaining / rate

    def active_job(self) -> JobView | None:
        """The most recently active job that is still in progress, else the most recent one."""
        running = [j for j in self.jobs.values() if j.status in ("judging", "generating")]
        pool = running or list(self.jobs.values())
        return max(pool, key=lambda j: j.seq, default=None)


def _shown(value: object) -> str | int | float | bool | None:
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def _action(view: JobView | None, index: int) -> ActionView | None:
    if view is None:
        return None
    return next((a for a in reversed(view.actions) if a.index == index), None)


def _failed_action(view: JobView) -> str | None:
    return next((a.failure for a in view.actions if a.status == "failed"), None)
