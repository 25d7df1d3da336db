"""The rows of a run as its displays show it (:class:`~iwr_bench.engine.run_state.RunState` keeps
them): a model's progress (:class:`ModelView`), a limit's occupancy (:class:`LimitView`), and a job
with its trajectory, judge calls and screenshots.

:class:`JobView` is a (task, model) pair, or a (task, model, design) triple when the run judges
the same page with several judge designs (job ids ``judge/<task>/<model>/<design>``). Its
actions (:class:`ActionView`) keep their status, verdict, judge calls and the screenshots before
and after them; the judge calls (:class:`CallView`) keep their streamed prose, bounded.
"""

from __future__ import annotations

import json
import re
from collections import deque
from dataclasses import dataclass, field
from statistics import fmean
from typing import cast

from iwr_bench.agents.events import PROSE_FIELDS, prose_of
from iwr_bench.scoring.formulas import Scores

STREAM_CHARS = 4000
"""Characters of one judge call's streamed prose kept (the most recent)."""
CALLS = 60
"""Judge calls kept per job (the most recent)."""
_STEP = re.compile(r"step_(\d+)(\.\w+)$")
"""The replay's name of the screenshot after action ``i - 1`` (``step_<i>.png``)."""
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
    trace: str = ""
    """Traceback of a judge design that raised on this action."""
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
    before: str | None = None
    """Screenshot of the state the action met (relative to the run folder, or absolute)."""
    after: str | None = None
    """Screenshot of the state after it (None when it failed before one was taken)."""
    checkpoint: str | None = None
    """The reference checkpoint of the state after it, when it is scored."""

    def executed(self, screenshot: str | None, checkpoint: str | None, previous: ActionView | None) -> None:
        """Keep the screenshots of its ``action_executed`` event.

        The event names one screenshot: the state after the action, or for an action that failed
        before one was taken the state it met. The replay saves the state after action ``i`` as
        ``step_<i+1>.png`` (``step_0.png``: the page as loaded), so the state before action ``i``
        is ``step_<i>.png`` beside it; for other names, the previous action's after.
        """
        self.checkpoint = checkpoint
        step = _STEP.search(screenshot or "")
        if screenshot is None or step is None:
            self.before, self.after = previous.after if previous else None, screenshot
            return
        self.before = f"{screenshot[: step.start(1)]}{self.index}{step.group(2)}"
        self.after = None if int(step.group(1)) == self.index else screenshot

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
    """One (task, model) pair, or one judge design's judging of it: its generation and its judging."""

    task_id: int
    model: str
    design: str = ""
    """The judge design, when several judge the same pages (the job id's fourth part; else "")."""
    gen: str = "pending"
    """pending, queued, running, done, failed or skipped."""
    judge: str = "pending"
    step: int = 0
    """Actions started so far."""
    total: int = 0
    """Actions of the task (known once replay starts)."""
    scores: Scores | None = None
    """The page's scores, once judged."""
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
        """Row key: ``<task>/<model>``, or ``<task>/<model>/<design>``."""
        return job_key(self.task_id, self.model, self.design)

    @property
    def label(self) -> str:
        """``task 7 / model`` (``/ design`` when judged by several)."""
        design = f" / {self.design}" if self.design else ""
        return f"task {self.task_id} / {self.model}{design}"

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


def _shown(value: object) -> str | int | float | bool | None:
    return value if isinstance(value, str | int | float | bool) or value is None else str(value)


def job_key(task_id: int, model: str, design: str = "") -> str:
    """The key of a job's row: ``<task>/<model>``, with ``/<design>`` when it has one."""
    return f"{task_id}/{model}/{design}" if design else f"{task_id}/{model}"


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
