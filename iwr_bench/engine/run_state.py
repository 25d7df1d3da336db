"""A run as its displays show it, folded from its events: the one fold of the event stream.

The terminal UI and the plain and live progress (:mod:`iwr_bench.engine.progress`) read the same
:class:`RunState`, which applies events one by one (:meth:`RunState.apply`; no Textual here, so it
is easy to test) and keeps only what they need: per-model progress and running means, per-job
rows, the limits' occupancy, the metric stage's progress, and for each job the trajectory with
verdicts and screenshots, the judge's recent streamed text and tool calls, and the latest
screenshot beside its reference checkpoint (the rows are in :mod:`iwr_bench.engine.views`). A pair
judged by several judge designs has a row per design (:meth:`RunState.job`). Everything is
bounded, so a run with thousands of jobs and millions of streamed tokens keeps a small, constant
footprint per job.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from iwr_bench.agents.events import (
    ActionExecuted,
    ActionGrounded,
    ActionStarted,
    AnyAgentEvent,
    AssertionVerdictEvent,
    JudgeAnswer,
    JudgeCallStarted,
    JudgeDelta,
    JudgeRetry,
    JudgeToolCall,
)
from iwr_bench.engine.events import (
    EngineStatus,
    Event,
    FailureEvent,
    FromAgent,
    GenerationFinished,
    JobFinished,
    JobQueued,
    JobStarted,
    LimitOccupancy,
    MetricComputed,
    MetricProgress,
    RunFinished,
    RunStarted,
)
from iwr_bench.engine.metric_text import eta_text
from iwr_bench.engine.views import (
    INFRA,
    ActionView,
    CallEntry,
    CallView,
    JobView,
    LimitView,
    ModelView,
    job_key,
)

__all__ = ["INFRA", "ActionView", "CallEntry", "CallView", "JobView", "LimitView", "ModelView", "RunState"]

WAITING_S = 2.0
"""A judge call with no word from its model for this long is shown as waiting for it."""


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

    designs: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """Per pair (``<task>/<model>``) judged by several designs, the keys of its design rows."""

    def job(self, task_id: int, model: str, design: str = "") -> JobView:
        """The row of a pair, or of one design judging it, created on first sight.

        A pair judged by designs has one row per design: the first takes over the pair's row (the
        generation is shared), and the pair's own events (its generation) go to that row.
        """
        pair = job_key(task_id, model)
        if not design and pair not in self.jobs and pair in self.designs:
            return self.jobs[self.designs[pair][0]]
        key = job_key(task_id, model, design)
        view = self.jobs.get(key)
        if view is None:
            view = self.jobs[key] = JobView(task_id, model, design)
            counted = self.models.setdefault(model, ModelView(model))
            if design:
                self.designs.setdefault(pair, []).append(key)
                shared = self.jobs.get(pair)
                if shared is not None and shared.judge == "pending":
                    del self.jobs[pair]
                    self.dirty.add(pair)
                    view.gen, view.cost_usd, view.failure, view.message = (
                        shared.gen,
                        shared.cost_usd,
                        shared.failure,
                        shared.message,
                    )
                else:
                    counted.total += 1
        return view

    def _job_of(self, event: Event) -> JobView | None:
        if not event.job:
            return None
        parts = event.job.split("/", 3)
        if len(parts) < 3 or not parts[1].isdigit():
            return None
        return self.job(int(parts[1]), parts[2], parts[3] if len(parts) == 4 else "")

    def apply(self, event: Event) -> None:
        """Fold one event in."""
        self.events += 1
        self.last_seq = max(self.last_seq, event.seq)
        self.last_time = event.time
        view = self._job_of(event)
        if view is not None:
            view.seq = event.seq
            self.dirty.add(view.key)
            if isinstance(event, FromAgent):
                if not self._apply_action(view, event.event):
                    self._apply_judge(view, event.event, event.time)
                return
            if self._apply_job(view, event):
                return
        self._apply_run(event)

    def _apply_run(self, event: Event) -> None:
        match event:
            case RunStarted():
                self.run_id = event.run_id
                self.status = "running"
                self.started = self.started or event.time
                for model in event.models:
                    mv = self.models.setdefault(model, ModelView(model))
                    own = event.model_tasks.get(model, event.tasks)
                    for tid in own:  # a row per design from the start, when the run compares several
                        for design in event.designs or [""]:
                            self.dirty.add(self.job(tid, model, design).key)
                    mv.total = sum(max(1, len(self.designs.get(job_key(t, model), ()))) for t in own)
                for name, cap in event.limits.items():
                    self.limits.setdefault(name, LimitView(name, cap))
            case RunFinished():
                self.status, self.message = event.status, event.message
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
            case _:  # stage timings are for the work clock, not the board
                pass

    def _apply_job(self, view: JobView, event: Event) -> bool:
        """Fold in an event of ``view``'s stages; whether it was one."""
        match event:
            case JobQueued() | JobStarted():
                state = "queued" if isinstance(event, JobQueued) else "running"
                setattr(view, event.stage, state)
                if event.stage == "judge" and state == "running":
                    view.actions, view.step, view.screenshot, view.calls = [], 0, None, {}
            case JobFinished():
                self._finished(view, event)
            case GenerationFinished():
                view.cost_usd += event.cost_usd or 0.0
            case FailureEvent():
                view.failure, view.message = event.failure, event.message
            case _:
                return False
        return True

    @staticmethod
    def _apply_action(view: JobView, event: AnyAgentEvent) -> bool:
        """Fold in an agent's event about one of ``view``'s actions; whether it was one."""
        match event:
            case ActionStarted():
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
                    action.trace = event.trace
                    action.executed(event.screenshot, event.checkpoint, _action(view, event.index - 1))
                if event.screenshot:
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
            case _:
                return False
        return True

    @staticmethod
    def _apply_judge(view: JobView, event: AnyAgentEvent, time: float) -> None:
        """Fold in an agent's event about one of ``view``'s judge calls (made at ``time``)."""
        match event:
            case JudgeCallStarted():
                call = view.call(event.call, event.role)
                call.who, call.request, call.started, call.heard = (
                    event.who,
                    event.request,
                    time,
                    time,
                )
                if event.attempt > 1:
                    call.entries.append(CallEntry("retry", f"attempt {event.attempt}"))
            case JudgeDelta():
                if event.call or view.actions:
                    call = view.call(event.call, event.role)
                    if event.call:
                        call.add_prose(event.text)
                    else:
                        call.add_legacy(event.text)
                    call.heard = time
            case JudgeToolCall():
                call = view.call(event.call, event.role)
                call.heard = time
                text = (
                    f"{event.tool} -> {event.result[:120]}"
                    if event.result
                    else f"{event.tool}({event.args[:120]})"
                )
                call.entries.append(CallEntry("tool", text))
                view.log.append(f"{event.role}: {text}")
            case JudgeRetry():
                call = view.call(event.call, event.role)
                what = "request failed, asked again" if event.transport else "answer sent back"
                call.entries.append(
                    CallEntry("retry", f"retry {event.attempt} ({what}): {event.error[:300]}")
                )
                call.heard = time
                view.log.append(f"{event.role}: retry {event.attempt}: {event.error[:160]}")
            case JudgeAnswer():
                call = view.call(event.call, event.role)
                call.fields, call.error, call.done, call.heard = (
                    event.fields or None,
                    event.error,
                    True,
                    time,
                )
            case _:
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
        if event.scores is not None:
            view.scores = event.scores
            view.total = event.scores.total_steps or view.total
            for name in ("ifs", "lvs", "hvs", "vfs", "final"):
                value = getattr(event.scores, name)
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

    def waiting(self, now: float) -> list[tuple[JobView, CallView]]:
        """Judge calls in progress whose model has said nothing for ``WAITING_S`` or more, the
        longest silent first."""
        calls = [
            (job, c)
            for job in self.jobs.values()
            if job.status == "judging"
            for c in job.calls.values()
            if not c.done and c.started and now - c.heard >= WAITING_S
        ]
        return sorted(calls, key=lambda jc: jc[1].heard)

    def activity(self, now: float) -> str:
        """What the engine is doing, for a status line, when events say so (else "")."""
        parts = list(self.statuses.values())
        m = self.metrics
        if m is not None and m.left and self.status == "running":
            parts.append(f"metrics {m.done}/{m.total} images, {eta_text(m, now)}")
        waiting = self.waiting(now)
        if waiting:
            job, c = waiting[0]
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


def _action(view: JobView | None, index: int) -> ActionView | None:
    if view is None:
        return None
    return next((a for a in reversed(view.actions) if a.index == index), None)


def _failed_action(view: JobView) -> str | None:
    return next((a.failure for a in view.actions if a.status == "failed"), None)
