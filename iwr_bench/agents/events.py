"""How agents report what they are doing while they do it, without knowing who listens.

The executor (or the engine) installs a sink for the duration of a replay with :func:`emitting`;
anything running inside it, in the same task or in tasks it starts, calls :func:`emit` with one of
the typed events below. With no sink installed, :func:`emit` does nothing, so agents work the same
outside the engine. An event is a pydantic model built where it happens, so a malformed one fails
there (in tests, as an error), not later in a listener.

Events of the executor: :class:`ActionStarted`, :class:`ActionGrounded`, :class:`ActionExecuted`,
:class:`AssertionVerdictEvent`. Events of one judge model call (a grounder's question, one vote of
the assertion judge, a rubric judgement, a step agent's action), all carrying the call's id and
role: :class:`JudgeCallStarted` (who asks, the request in one line, the attempt), then
:class:`JudgeDelta` pieces of prose (the model's text or thinking, and the prose fields of its
structured answer as they stream, never raw JSON), :class:`JudgeToolCall`, :class:`JudgeRetry` (an
answer sent back, with the feedback, or a transport error retried) and :class:`JudgeAnswer` (the
structured answer as fields, or why there is none).
"""

from __future__ import annotations

import itertools
import secrets
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Annotated, Literal, cast, get_args

from pydantic import BaseModel, Field
from pydantic_core import from_json

JudgeRole = Literal["grounder", "assertions", "rubric", "step"]
"""Which judge makes a model call."""

FieldValue = str | int | float | bool | None
"""A value of a structured answer's field, as shown."""


class AgentEvent(BaseModel):
    """Base of the events agents emit."""


class ActionStarted(AgentEvent):
    """The executor began an action."""

    kind: Literal["action_started"] = "action_started"
    index: int
    """Action index (0-based)."""
    total: int = 0
    """Number of actions of the task."""
    type: str
    """Click, Type, Scroll or Press."""
    description: str
    """The action's description of its target."""

    def label(self) -> str:
        """``action 3/8 (Click: Add to cart)``."""
        return f"action {self.index + 1}/{self.total or '?'} ({self.type}: {self.description[:60]})"


class ActionGrounded(AgentEvent):
    """A grounder chose an element (or none)."""

    kind: Literal["action_grounded"] = "action_grounded"
    index: int
    """Action index."""
    element: int | None
    """Chosen element index from ``observe`` (None: no element matched)."""
    score: float = 0.0
    """The grounder's confidence in [0, 1]."""
    reason: str = ""
    """The grounder's reason."""
    grounder: str = ""
    """Which grounder answered."""
    description: str = ""
    """The target description that was grounded."""
    best: str = ""
    """Label of the best candidate, when the grounder scored candidates."""
    best_score: float | None = None
    """Score of the best candidate."""
    threshold: float | None = None
    """The score a candidate needs, when the grounder has one."""

    def sentence(self) -> str:
        """What happened, as a sentence: ``no element matched 'the New Game button' (best: 'Zzz',
        0.05 < 0.45)`` or ``'Add to cart' -> #7: button 'Add to cart' scored 0.98``."""
        target = repr(self.description) if self.description else "the target"
        if self.element is not None:
            return (
                f"{target} -> #{self.element}: {self.reason}"
                if self.reason
                else f"{target} -> #{self.element}"
            )
        if self.best and self.best_score is not None:
            bound = f" < {self.threshold:.2f}" if self.threshold is not None else ""
            return f"no element matched {target} (best: {self.best!r}, {self.best_score:.2f}{bound})"
        return f"no element matched {target}" + (f": {self.reason}" if self.reason else "")


class ActionExecuted(AgentEvent):
    """An action finished: ok or failed with a reason."""

    kind: Literal["action_executed"] = "action_executed"
    index: int
    """Action index."""
    status: str
    """ok or failed."""
    failure: str | None = None
    """Failure class, when failed."""
    message: str = ""
    """Details of the failure."""
    trace: str = ""
    """Traceback of a judge design that raised (failure ``judge_error``)."""
    screenshot: str | None = None
    """Evidence file of the state after the action (the engine makes it relative to the run folder)."""
    checkpoint: str | None = None
    """The task's reference checkpoint for that state (absolute path), when the action is flagged."""


class AssertionVerdictEvent(AgentEvent):
    """An assertion judge's verdict on one action."""

    kind: Literal["assertion_verdict"] = "assertion_verdict"
    index: int
    """Action index."""
    assertion: str = ""
    """The assertion judged."""
    verdict: str
    """yes, no, undetermined or error."""
    reasoning: str
    """The judge's explanation."""
    judge: str
    """Which judge answered."""
    votes: list[str] = Field(default_factory=list[str])
    """Each vote's verdict, when the judge votes."""


class JudgeCallEvent(AgentEvent):
    """Base of the events of one judge model call."""

    call: str = ""
    """Id of the call (unique in the process; empty in runs recorded before calls had ids)."""
    role: str
    """grounder, assertions, rubric or step (:data:`JudgeRole`)."""


class JudgeCallStarted(JudgeCallEvent):
    """A judge asks its model a question."""

    kind: Literal["judge_call_started"] = "judge_call_started"
    who: str
    """Who asks, in words: ``grounder``, ``assertion judge, vote 2 of 3``, ``rubric judge``."""
    vote: int | None = None
    """Vote number (1-based) of a voting assertion judge."""
    request: str
    """The request in one line."""
    attempt: int = 1
    """1, or more when a transport error made the judge ask again."""


class JudgeDelta(JudgeCallEvent):
    """A piece of a judge model's reasoning as it streams (prose: never raw JSON)."""

    kind: Literal["judge_delta"] = "judge_delta"
    text: str
    """The new text."""


class JudgeToolCall(JudgeCallEvent):
    """A tool a judge agent called (and, on a second event, its result)."""

    kind: Literal["judge_tool_call"] = "judge_tool_call"
    tool: str
    """Tool name."""
    args: str = ""
    """Its arguments (JSON)."""
    result: str = ""
    """Set on the second event of a call, when it has returned: a short summary of its result."""


class JudgeRetry(JudgeCallEvent):
    """A judge answer was sent back for another try, or a failed request was retried."""

    kind: Literal["judge_retry"] = "judge_retry"
    attempt: int
    """Number of this retry (1 for the first)."""
    error: str
    """The feedback the model got, or the transport error."""
    transport: bool = False
    """The request failed (a transport error), rather than the answer being unusable."""


class JudgeAnswer(JudgeCallEvent):
    """A judge call ended: its structured answer as fields, or why there is none."""

    kind: Literal["judge_answer"] = "judge_answer"
    fields: dict[str, FieldValue] = Field(default_factory=dict[str, FieldValue])
    """The answer's fields as shown (e.g. index and element, verdict, score), without its prose."""
    error: str = ""
    """Why there is no answer (empty when there is one)."""


AnyAgentEvent = Annotated[
    ActionStarted
    | ActionGrounded
    | ActionExecuted
    | AssertionVerdictEvent
    | JudgeCallStarted
    | JudgeDelta
    | JudgeToolCall
    | JudgeRetry
    | JudgeAnswer,
    Field(discriminator="kind"),
]
"""Any event an agent emits (told apart by ``kind``); the engine carries each in one envelope
(:class:`iwr_bench.engine.events.FromAgent`) that adds the run's sequence number, time and job."""

AGENT_EVENTS: tuple[type[AgentEvent], ...] = get_args(get_args(AnyAgentEvent)[0])
"""The classes of :data:`AnyAgentEvent`."""

AGENT_KINDS: frozenset[str] = frozenset(t.model_fields["kind"].default for t in AGENT_EVENTS)
"""Their ``kind`` values."""

PROSE_FIELDS = ("reasoning", "reason", "explanation", "thinking")
"""Fields of a structured answer that are prose: streamed as text, not shown again as fields."""


def prose_of(args: str) -> str:
    """The prose field of a structured answer's (possibly partial) JSON, so far ("" if none yet)."""
    try:
        data = from_json(args, allow_partial="trailing-strings")
    except ValueError:  # cut inside an escape sequence: wait for the next piece
        return ""
    if not isinstance(data, dict):
        return ""
    fields = cast("dict[str, object]", data)
    return next((v for k in PROSE_FIELDS if isinstance(v := fields.get(k), str)), "")


Emit = Callable[[AgentEvent], None]
"""A sink: ``emit(event)``; it must not block or raise."""


def _discard(event: AgentEvent) -> None:
    del event


_current: ContextVar[Emit] = ContextVar("iwr_emit", default=_discard)
_calls = itertools.count(1)
_PROCESS = secrets.token_hex(3)  # call ids of two processes (a resumed run, workers) never meet


def emit(event: AgentEvent) -> None:
    """Report an event to the sink installed around the caller (no-op when there is none)."""
    _current.get()(event)


def new_call_id(role: str) -> str:
    """A fresh judge call id: ``<role>-<process>.<n>``."""
    return f"{role}-{_PROCESS}.{next(_calls)}"


@contextmanager
def emitting(sink: Emit) -> Generator[None]:
    """Install ``sink`` for the code inside the block (and the tasks it starts)."""
    token = _current.set(sink)
    try:
        yield
    finally:
        _current.reset(token)
