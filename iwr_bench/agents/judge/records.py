"""Judge roles and the records a replay produces."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, Field, PrivateAttr

from iwr_bench.agents.grounding import Grounding
from iwr_bench.tools.models import BoundingBox, VisibleText

if TYPE_CHECKING:
    from iwr_bench.dataset.models import Action

FailureClass = Literal[
    "element_not_found",
    "action_error",
    "timeout",
    "page_crashed",
    "no_scroll",
    "assertion_failed",
    "judge_error",
    "page_load_failed",
    "no_page",
    "worker_lost",
]
"""Why an action (and so the rest of the trajectory) failed."""

Verdict = Literal["yes", "no", "undetermined", "error"]


class AssertionRequest(BaseModel):
    """What an assertion judge sees for one action."""

    assertion: str
    """The logical assertion, e.g. "the cart badge shows 2"."""
    before_png: bytes
    """Viewport before the action."""
    after_png: bytes
    """Viewport after the action (settled)."""
    before_text: str | None = None
    """Visible page text before, when the judge has it."""
    after_text: str | None = None
    """Visible page text after."""
    before_visible: VisibleText | None = None
    """Text a person could see before the action (``visible_text``: hidden and covered text left out)."""
    after_visible: VisibleText | None = None
    """Text a person can see after the action."""
    first_visible: VisibleText | None = None
    """Text a person could see when the page had just loaded, before the first action (what
    "goes back to its starting tiles" compares with)."""
    acted_box: BoundingBox | None = None
    """Where the element the action clicked or typed into stood before it (None: a key press or
    scroll, or unknown)."""
    recorded_png: bytes | None = None
    """The task's checkpoint of the state after this action, when it has one: the screen of the
    recording, on which the assertion held."""


class AssertionVerdict(BaseModel):
    """An assertion judge's answer."""

    verdict: Verdict
    """yes, no, undetermined (cannot tell) or error (the judge failed)."""
    reasoning: str
    """Why."""
    judge: str
    """Which judge answered."""
    votes: list[Verdict] = Field(default_factory=list)
    """Individual votes when several were taken."""


class AssertionJudge(Protocol):
    """Decides whether an assertion holds after an action."""

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        """Judge one assertion."""
        ...


class StepBudget(BaseModel):
    """The bounds a tool-using judge had for one action, and what it used of them."""

    max_steps: int
    """Tool calls it was allowed."""
    max_tokens: int | None = None
    """Model tokens (input plus output) it was allowed; None: no token bound."""
    steps: int = 0
    """Tool calls it made."""
    tokens: int = 0
    """Model tokens it used."""
    requests: int = 0
    """Model requests it made."""
    exhausted: Literal["steps", "tokens"] | None = None
    """Which bound ended the run before it answered, if one did."""


class ActionRecord(BaseModel):
    """Evidence and outcome of one replayed action."""

    index: int
    """0-based action index."""
    type: str
    """Click, Type, Scroll or Press."""
    description: str
    """The action's description."""
    status: Literal["ok", "failed", "not_run"]
    """ok, failed (this action ended the prefix) or not_run (after a failure)."""
    failure: FailureClass | None = None
    """Why it failed."""
    message: str = ""
    """Details of the failure."""
    trace: str = ""
    """The traceback of a judge design that raised (failure ``judge_error``); empty otherwise."""
    grounding: Grounding | None = None
    """The grounder's answer, for actions that target an element."""
    tool_calls: list[str] = Field(default_factory=list)
    """Tool calls made, in order."""
    before: str | None = None
    """Evidence file of the state before (relative to the evidence folder)."""
    after: str | None = None
    """Evidence file of the state after."""
    scroll_moved_px: float | None = None
    """For scrolls, how far the page moved."""
    assertion: AssertionVerdict | None = None
    """The assertion verdict, when the action has one."""
    seconds: float = 0.0
    """Wall time of the action, settling and judging."""
    budget: StepBudget | None = None
    """For a tool-using step judge (``[judge.step]``), its bounds and what it used of them."""
    unseen: str | None = None
    """Why no person could have done this action: the control acted on was drawn as nothing even
    when hovered, or lay under another element. Only a replay policy with ``acts_unseen`` (the
    official protocol's) acts then; any other fails the action instead."""
    _acted_box: BoundingBox | None = PrivateAttr(default=None)
    """Where the grounded element stood before the action (handed to the assertion judge, not stored)."""

    @classmethod
    def not_run(cls, index: int, action: Action) -> ActionRecord:
        """The record of an action that was never attempted."""
        return cls(index=index, type=action.type, description=action.parameters.description, status="not_run")


class Replay(BaseModel):
    """One page's replay of a task's actions."""

    total_steps: int
    """Number of actions."""
    success_steps: int
    """Length of the successful prefix."""
    actions: list[ActionRecord]
    """Per-action records, in order."""
    screenshots: dict[int, str] = Field(default_factory=dict)
    """Step (0 = initial, k = after action k) -> evidence file, for the scored states."""
    failure: FailureClass | None = None
    """Failure of the whole page (no page, failed load), if any."""
    message: str = ""
    """Details of a page failure."""
    blocked_requests: int = 0
    """Requests the sandbox refused."""
    console_errors: list[str] = Field(default_factory=list)
    """Console and page errors."""
    judge_errors: int = 0
    """Assertion judgements that failed (handled by the run's policy)."""
    undetermined: int = 0
    """Assertion judgements that could not decide (handled by the run's policy)."""

    @classmethod
    def nothing_run(cls, actions: Sequence[Action], failure: FailureClass, message: str) -> Replay:
        """A replay that never reached its first action (no page, a failed load, a lost worker)."""
        return cls(
            total_steps=len(actions),
            success_steps=0,
            actions=[ActionRecord.not_run(i, a) for i, a in enumerate(actions)],
            failure=failure,
            message=message,
        )

    def unseen_steps(self) -> int:
        """Successful steps that acted on a control no person could see or reach (see
        ``ActionRecord.unseen``): the page's score rests on them."""
        return sum(1 for a in self.actions if a.status == "ok" and a.unseen)

    def undetermined_rate(self) -> float | None:
        """Share (0-1) of the judged assertions the judge could not decide; None when none was judged."""
        return undetermined_rate(a.assertion.verdict if a.assertion else None for a in self.actions)


def undetermined_rate(verdicts: Iterable[str | None]) -> float | None:
    """Share (0-1) of ``undetermined`` among the verdicts given (None: not judged); None if none was."""
    judged = [v for v in verdicts if v is not None]
    return None if not judged else sum(v == "undetermined" for v in judged) / len(judged)
