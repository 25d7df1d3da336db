"""The ``agent`` step judge: a tool-using pydantic-ai agent performs each action and judges it.

For every recorded action the agent gets the step (type, description, the statement to check,
the page before as a screenshot) and the browser tools: ``observe``, ``text_snapshot``,
``screenshot``, ``hover`` and ``scroll`` to look around, and exactly one action tool, the one the
step needs (``click(index)``, ``type_text(index)``, ``press()`` or, for a Scroll, ``scroll()``).
A Scroll or a Press is performed by the run's replay policy, so it counts as the protocol says.
The agent performs the action, inspects the page as it needs and answers whether it performed
it and the verdict (``yes``/``no``/``undetermined``) with its reasoning.

Whether the action was performed, and on which element, comes from the tool log, not from the
answer. The screenshot of the state after the action is taken right after the action tool ran.
Each action is bounded by ``max_steps`` tool calls and ``max_tokens`` model tokens (pydantic-ai
``UsageLimits``), both recorded with the action with what was used: a run that hits a bound
before acting fails the action as ``judge_error`` naming the bound; after acting, the verdict is
``undetermined`` (the run's ``undetermined`` policy counts it). Every tool call and its result is
a ``judge_tool_call`` event and a line of the action's ``tool_calls``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterable, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field
from pydantic_ai import Agent, BinaryContent, FunctionToolset, ModelRetry, RunContext
from pydantic_ai.exceptions import AgentRunError, ModelAPIError, RunCancelled, UsageLimitExceeded
from pydantic_ai.messages import (
    AgentStreamEvent,
    FunctionToolCallEvent,
    FunctionToolResultEvent,
    ToolCallPart,
    UserContent,
)
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RunUsage, UsageLimits

from iwr_bench.agents.grounding import Grounding, element_label
from iwr_bench.agents.judge.llm_base import CallReporter, answer_fields, model_label
from iwr_bench.agents.judge.records import AssertionVerdict, FailureClass, StepBudget
from iwr_bench.agents.judge.replay import ReplayPolicy
from iwr_bench.agents.judge.step import StepJudge, StepOutcome, StepRequest
from iwr_bench.dataset.models import text_to_type
from iwr_bench.registry import capability, register
from iwr_bench.tools.errors import ToolRetry
from iwr_bench.tools.models import ActionResult, Observation, ScrollResult
from iwr_bench.tools.surface import tool_for, tool_function
from iwr_bench.tools.toolset import build_toolset

ROLE = "step"
"""The role name events carry."""

INSTRUCTIONS = """\
You replay one recorded step of a user session on a web page, then check it. Tools:
observe (interactive elements with indices), text_snapshot (the visible text, "[index] role: text"
for interactive elements), screenshot, hover and scroll (to look around), and ONE action tool for
this step. Find the element the description names, perform the action once with the action tool
(if it fails, observe again and retry), then check the statement against the page AFTER the action:
read the text snapshot, scroll to find the element the statement is about if it is out of view,
take a screenshot when the statement is about looks. Answer performed=false only if you could not
perform the action (say why). Verdict: "yes" if the page shows the statement holds, "no" if it is
contradicted or the expected change did not happen, "undetermined" only if the page gives no way
to tell. With no statement to check, answer "yes". Reasoning: short, naming what you saw."""

_INSPECT = frozenset(tool_for(m).name for m in ("observe", "text_snapshot", "screenshot", "hover", "scroll"))
"""The surface's tools the agent looks around with."""
_ACTION_TOOLS = {
    kind: tool_for(method).name
    for kind, method in (("Click", "click"), ("Type", "type"), ("Press", "press"), ("Scroll", "scroll"))
}
"""The action tool of each action type, named as the surface's tool that calls the same method."""
_SNAPSHOT = tool_for("text_snapshot").name
"""The tool whose result lists ``[index] role: text`` lines (the labels of acted-on elements)."""


class StepAnswer(BaseModel):
    """What the agent answers once it is done."""

    reasoning: str = Field(description="what you did and saw that supports the verdict, briefly")
    performed: bool = Field(description="whether you performed the action with its tool")
    verdict: Literal["yes", "no", "undetermined"] = Field(
        description="whether the statement holds after the action (yes when there is none)"
    )


@dataclass
class _Step:
    """One action's run: what the tools did (the source of truth for the outcome)."""

    request: StepRequest
    labels: dict[int, str] = field(default_factory=dict[int, str])
    calls: list[str] = field(default_factory=list[str])
    pending: dict[str, str] = field(default_factory=dict[str, str])
    performed: bool = False
    failure: FailureClass | None = None
    message: str = ""
    element: int | None = None
    moved_px: float | None = None
    after_png: bytes | None = None
    usage: RunUsage = field(default_factory=RunUsage)
    reporter: CallReporter | None = None
    """Reports the step's judge call."""


def _summary(content: Any) -> str:
    """A short line for a tool's result (what the record and the events keep)."""
    if isinstance(content, Observation):
        return f"{len(content.elements)} elements, {len(content.text)} chars of text"
    if isinstance(content, ScrollResult):
        return f"moved {content.moved_px:g} px ({content.target})"
    if isinstance(content, ActionResult):
        return f"ok: {content.detail}"
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    text = " | ".join(line for line in text.splitlines() if line.strip())
    return text[:160] + ("..." if len(text) > 160 else "")


def _call_text(part: ToolCallPart) -> str:
    """``click(index=3)``: a tool call as the action record keeps it."""
    try:
        args = ", ".join(f"{k}={v!r}" for k, v in part.args_as_dict().items())
    except ValueError:  # arguments that are not a JSON object: kept as sent (the call is retried)
        args = part.args_as_json_str()[:120]
    return f"{part.tool_name}({args})"


def _labels_from_snapshot(text: str) -> dict[int, str]:
    found: dict[int, str] = {}
    for line in text.splitlines():
        if line.startswith("[") and "]" in line:
            head, _, rest = line[1:].partition("] ")
            if head.isdigit():
                found[int(head)] = rest
    return found


async def _record(ctx: RunContext[_Step], events: AsyncIterable[AgentStreamEvent]) -> None:
    """Report every event and log each tool call with its result in the action's ``tool_calls``."""
    step = ctx.deps
    step.usage = ctx.usage
    async for event in events:
        result = ""
        if isinstance(event, FunctionToolCallEvent):
            step.pending[event.tool_call_id] = _call_text(event.part)
        elif isinstance(event, FunctionToolResultEvent):
            part = event.part
            retried = part.outcome != "success"
            result = ("retry: " if retried else "") + _summary(part.content)
            call = step.pending.pop(event.tool_call_id, f"{part.tool_name}()")
            step.calls.append(f"{call} -> {result}")
            if part.tool_name == _SNAPSHOT and isinstance(part.content, str):
                step.labels.update(_labels_from_snapshot(part.content))
            elif isinstance(part.content, Observation):
                step.labels.update(
                    {e.index: f"{e.role or e.tag}: {element_label(e)}" for e in part.content.elements}
                )
        if step.reporter is not None:
            step.reporter.event(event, result)


def _action_toolset(step: _Step, text: str | None) -> FunctionToolset[_Step]:
    """The one action tool this step allows (performing it twice is refused)."""
    request = step.request
    tools, action = request.tools, request.action
    toolset: FunctionToolset[_Step] = FunctionToolset(sequential=True)

    def check() -> None:
        once = action.type in ("Press", "Scroll") and step.failure is not None  # the policy counted it
        if step.performed or once:
            raise ModelRetry("the action was already performed (once only): inspect the page and answer")

    async def done(element: int | None) -> None:
        step.performed, step.element, step.failure, step.message = True, element, None, ""
        step.after_png = await tools.screenshot()

    async def act(index: int, typing: str | None) -> ActionResult:
        check()
        try:
            result = await (tools.click(index) if typing is None else tools.type(index, typing))
        except ToolRetry as exc:
            step.failure, step.message = "action_error", str(exc)
            raise ModelRetry(str(exc)) from exc
        await done(index)
        return result

    async def by_policy() -> str:
        check()
        outcome = await request.policy(tools, action)
        step.moved_px = outcome.scroll_moved_px
        if not outcome.ok:
            step.failure, step.message = outcome.failure or "action_error", outcome.message
            return f"the action failed ({step.failure}): {outcome.message}. Answer now."
        await done(None)
        moved = f", the page moved {outcome.scroll_moved_px:g} px" if outcome.scroll_moved_px else ""
        return f"done: {', '.join(outcome.tool_calls)}{moved}"

    def add(
        method: str,
        description: str,
        params: tuple[str, ...],
        returns: Any,
        body: Callable[..., Awaitable[Any]],
    ) -> None:
        # the surface's tool that calls ``method``: its name and these of its parameters (the
        # step's own description, no parameter descriptions)
        spec = tool_for(method)
        parameters = [spec.param(name).parameter(described=False) for name in params]
        function = tool_function(spec.name, description, parameters, returns, body)
        toolset.add_function(function, takes_ctx=False, name=spec.name)

    async def click(index: int) -> ActionResult:
        return await act(index, None)

    async def type_recorded(index: int) -> ActionResult:
        return await act(index, text)

    async def type_text(index: int, text: str) -> ActionResult:
        return await act(index, text)

    if action.type == "Click":
        what = "Perform this step: click the element with this index (from observe or text_snapshot)."
        add("click", what, ("index",), ActionResult, click)
    elif action.type == "Type" and text is not None:
        what = "Perform this step: type the recorded text into the input with this index."
        add("type", what, ("index",), ActionResult, type_recorded)
    elif action.type == "Type":
        what = "Perform this step: type text (read it from the step's description) into the input."
        add("type", what, ("index", "text"), ActionResult, type_text)
    elif action.type == "Press":
        what = "Perform this step: press the recorded key at the focused element."
        add("press", what, (), str, by_policy)
    else:
        what = "Perform this step: the recorded scroll (the result says how far the page moved)."
        add("scroll", what, (), str, by_policy)

    return toolset


class AgentStepJudge:
    """The ``agent`` design (see the module doc)."""

    def __init__(
        self,
        model: Model,
        *,
        max_steps: int = 12,
        max_tokens: int | None = 60_000,
        retries: int = 2,
        before_screenshot: bool = True,
        name: str | None = None,
    ) -> None:
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError("max_tokens must be at least 1 (or None for no token bound)")
        self.model = model
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.retries = retries
        self.before_screenshot = before_screenshot
        self.name = name or f"agent:{model_label(model)}"
        self._agent: Agent[_Step, StepAnswer] = Agent(
            model, output_type=StepAnswer, instructions=INSTRUCTIONS, deps_type=_Step, name="step-judge"
        )

    def _prompt(self, request: StepRequest, text: str | None) -> list[UserContent]:
        action = request.action
        tool = _ACTION_TOOLS[action.type]
        lines = [
            f"Step {request.index + 1}: {action.type}",
            f"Description: {action.parameters.description}",
        ]
        if action.type == "Type":
            lines.append(
                f"Text to type: {text!r}"
                if text is not None
                else "Text to type: read it from the description"
            )
        lines.append(
            f"Statement to check after the action: {action.logical_assertion}"
            if action.has_assertion
            else "Statement to check: none (perform the action and answer yes)"
        )
        lines.append(f"Your action tool: {tool}. You have at most {self.max_steps} tool calls.")
        prompt: list[UserContent] = ["\n".join(lines)]
        if self.before_screenshot:
            prompt += [
                "The page before the action:",
                BinaryContent(request.before_png, media_type="image/png"),
            ]
        return prompt

    def _budget(self, usage: RunUsage, exhausted: Literal["steps", "tokens"] | None) -> StepBudget:
        return StepBudget(
            max_steps=self.max_steps,
            max_tokens=self.max_tokens,
            steps=usage.tool_calls,
            tokens=usage.input_tokens + usage.output_tokens,
            requests=usage.requests,
            exhausted=exhausted,
        )

    async def __call__(self, request: StepRequest) -> StepOutcome:
        """Perform and judge one action; model failures and exhausted budgets become the outcome."""
        action = request.action
        from_grounder = capability(request.policy, ReplayPolicy, "text_from_grounder")
        text = text_to_type(action, from_grounder) if action.type == "Type" else None
        if action.type == "Type" and not from_grounder and text is None:
            return StepOutcome(
                performed=False, failure="action_error", message="the Type action gives no text to type"
            )
        step = _Step(request)
        step.reporter = CallReporter("step", "step agent", f"{action.type}: {action.parameters.description}")
        step.reporter.started()
        inspect = build_toolset(request.tools).filtered(
            lambda _ctx, tool: (
                tool.name in _INSPECT and not (action.type == "Scroll" and tool.name == "scroll")
            )
        )
        limits = UsageLimits(
            tool_calls_limit=self.max_steps,
            total_tokens_limit=self.max_tokens,
            request_limit=self.max_steps + 4,
        )
        answer: StepAnswer | None = None
        error, exhausted = "", None
        try:
            result = await self._agent.run(
                self._prompt(request, text),
                deps=step,
                toolsets=[inspect, _action_toolset(step, text)],
                usage_limits=limits,
                model_settings=ModelSettings(temperature=0.0),
                retries={"output": self.retries, "tools": 3},
                event_stream_handler=_record,
            )
            answer, step.usage = result.output, result.usage
        except RunCancelled:
            raise
        except UsageLimitExceeded as exc:
            exhausted = "tokens" if "token" in str(exc) else "steps"
            error = self._exhausted(exhausted, step.usage)
        except (AgentRunError, ModelAPIError, TimeoutError, OSError) as exc:
            error = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        step.reporter.answered(answer_fields(answer) if answer is not None else {}, error)
        return self._outcome(step, answer, error, self._budget(step.usage, exhausted))

    def _exhausted(self, which: Literal["steps", "tokens"], usage: RunUsage) -> str:
        if which == "tokens":
            used = usage.input_tokens + usage.output_tokens
            return f"token budget exhausted: {used} tokens (max_tokens={self.max_tokens})"
        used = f"{usage.tool_calls} tool calls, {usage.requests} requests"
        return f"step budget exhausted: {used} (max_steps={self.max_steps})"

    def _outcome(self, step: _Step, answer: StepAnswer | None, error: str, budget: StepBudget) -> StepOutcome:
        action = step.request.action
        grounding = None
        if step.element is not None:
            label = step.labels.get(step.element, f"element {step.element}")
            grounding = Grounding(
                index=step.element, score=1.0, reason=f"acted on [{step.element}] {label}", grounder=self.name
            )
        common: dict[str, Any] = {
            "tool_calls": step.calls,
            "grounding": grounding,
            "scroll_moved_px": step.moved_px,
            "budget": budget,
        }
        if not step.performed:
            if step.failure in ("no_scroll", "action_error") and action.type in ("Press", "Scroll"):
                return StepOutcome(performed=False, failure=step.failure, message=step.message, **common)
            if answer is None:
                return StepOutcome(
                    performed=False,
                    failure="judge_error",
                    message=f"{error} before the action was performed",
                    **common,
                )
            why = f"{step.message}; " if step.message else ""
            failure: FailureClass = (
                "element_not_found" if action.type in ("Click", "Type") else "action_error"
            )
            return StepOutcome(performed=False, failure=failure, message=f"{why}{answer.reasoning}", **common)
        verdict = None
        if action.has_assertion:
            if answer is None:
                unsure: Literal["undetermined", "error"] = "undetermined" if budget.exhausted else "error"
                verdict = AssertionVerdict(verdict=unsure, reasoning=error, judge=self.name)
            else:
                verdict = AssertionVerdict(
                    verdict=answer.verdict, reasoning=answer.reasoning, judge=self.name
                )
        return StepOutcome(performed=True, after_png=step.after_png, verdict=verdict, **common)


@register("step", "agent")
def agent(
    judge_model: Model,
    max_steps: int = 12,
    max_tokens: int | None = 60_000,
    retries: int = 2,
    before_screenshot: bool = True,
) -> StepJudge:
    """Tool-using agent on the judge model: finds, acts and judges each step; bounded per action."""
    return AgentStepJudge(
        judge_model,
        max_steps=max_steps,
        max_tokens=max_tokens,
        retries=retries,
        before_screenshot=before_screenshot,
    )
