"""The ``step`` role: one judge that performs an action and judges its assertion, with the page's tools.

The fixed designs split a step in two: a grounder picks an element from a list, the executor acts,
an assertion judge compares two states. A step judge (:class:`StepJudge`) gets the live page
instead (:class:`StepRequest`): it finds the target, performs the recorded action itself, looks
at the page as it needs and answers :class:`StepOutcome`. When a run sets ``[judge.step]``, the
executor hands it every action; the grounder and assertion roles then go unused. The executor
still takes the evidence screenshots, applies the run's verdict policies and records everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from iwr_bench.agents.grounding import Grounding
from iwr_bench.agents.judge.records import AssertionVerdict, FailureClass, StepBudget
from iwr_bench.agents.judge.replay import ReplayPolicy
from iwr_bench.dataset.models import Action
from iwr_bench.tools.surface import PageToolsProtocol


@dataclass
class StepRequest:
    """What a step judge gets for one action."""

    action: Action
    """The recorded action (type, description, parameters, logical assertion)."""
    index: int
    """0-based index of the action in the task."""
    tools: PageToolsProtocol
    """The page, in the state the previous actions left it."""
    policy: ReplayPolicy
    """The run's replay policy: how a Scroll or Press is performed and counted, which text a Type
    enters, whether an unsure verdict passes."""
    before_png: bytes
    """Screenshot of the viewport before the action."""


class StepOutcome(BaseModel):
    """A step judge's answer for one action."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    performed: bool
    """Whether the action was performed (and succeeded by the replay policy's rules)."""
    failure: FailureClass | None = None
    """Why it was not (``element_not_found``, ``action_error``, ``no_scroll``, ``judge_error``)."""
    message: str = ""
    """Details of the failure."""
    grounding: Grounding | None = None
    """The element acted on (Click and Type), with the judge's reason."""
    tool_calls: list[str] = Field(default_factory=list[str])
    """Every tool call made, in order."""
    scroll_moved_px: float | None = None
    """For a Scroll, how far the page moved."""
    after_png: bytes | None = Field(default=None, exclude=True)
    """Screenshot taken right after the action (before any further looking around); None: the
    executor takes one."""
    verdict: AssertionVerdict | None = None
    """The assertion verdict, when the action has an assertion and was performed."""
    budget: StepBudget | None = None
    """The judge's bounds and what it used of them."""


class StepJudge(Protocol):
    """Performs one recorded action on the live page and judges its assertion."""

    @property
    def name(self) -> str:
        """Recorded as the judge of each verdict and grounding."""
        ...

    async def __call__(self, request: StepRequest) -> StepOutcome:
        """Perform and judge one action; never raise for a model failure (answer it as an outcome)."""
        ...
