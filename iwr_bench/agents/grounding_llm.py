"""The LLM grounder: a model picks the element an action's description means.

It first sees only the indexed list of interactive elements (kind, label, placeholder, nearby
text, position, whether it is on screen) and answers with a structured index (or none) and a
reason, saying whether it is sure. When it is not sure, and the executor supplied a screenshot
(it does for grounders whose ``wants_screenshot`` is true), it is asked again with the screenshot
attached. An index that is not in the list is sent back as a retry; an unusable answer after the
retries is a failed grounding that says so.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from pydantic_ai import Agent, BinaryContent, ModelRetry, RunContext
from pydantic_ai.messages import UserContent
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from iwr_bench.agents.events import FieldValue
from iwr_bench.agents.grounding import (
    Grounder,
    Grounding,
    GroundingRequest,
    accessible_name,
    element_kind,
    element_label,
)
from iwr_bench.agents.judge.llm_base import Asked, CallReporter, ask, model_label
from iwr_bench.registry import register
from iwr_bench.tools.models import Element, stable_origin, url_origin

INSTRUCTIONS = """\
You replay a recorded user session on a web page. Given one action (its type and a description
of its target) and the page's interactive elements, each with an index, choose the element the
description refers to. Answer its index, or null when no element fits. Set "sure" to false when
several elements could fit or none fits well. Give a one-sentence reason. For a Type action, also
answer in "text" the exact text the description asks to type (null for other actions)."""

ELEMENT_LIMIT = 400
"""Elements listed to the model at most (the rest are summarised as a count)."""


class GroundingAnswer(BaseModel):
    """What the model must answer."""

    index: int | None = Field(description="index of the element, or null when none fits")
    sure: bool = Field(description="false if several elements could fit or none fits well")
    reason: str = Field(description="one sentence: why this element (or why none)")
    text: str | None = Field(default=None, description="Type actions: the text to type, from the description")


def describe_element(el: Element) -> str:
    """One line of the element list."""
    bits = [f"[{el.index}]", element_kind(el) or el.tag, repr(element_label(el)[:120])]
    name = accessible_name(el)
    if name and name != element_label(el):
        bits.append(f"name={name[:80]!r}")
    if el.icon:
        bits.append(f"icon={el.icon[:60]!r}")
    if el.placeholder and el.placeholder not in (element_label(el), name):
        bits.append(f"placeholder={el.placeholder[:60]!r}")
    if el.href:
        bits.append(f"href={el.href[:60]!r}")
    bits.append(f"at ({el.box.x:.0f},{el.box.y:.0f})" + ("" if el.in_viewport else " off-screen"))
    if el.hidden:
        bits.append("not drawn (shown on hover or focus?)")
    if el.context:
        bits.append(f"near: {' '.join(el.context.split())[:120]!r}")
    return " ".join(bits)


def grounding_prompt(request: GroundingRequest, with_screenshot: bool) -> list[UserContent]:
    """The user message for one grounding question."""
    elements = request.observation.elements
    origin = url_origin(request.observation.url)  # links read the same whatever the server's port
    lines = [stable_origin(describe_element(el), origin) for el in elements[:ELEMENT_LIMIT]]
    if len(elements) > ELEMENT_LIMIT or request.observation.elements_truncated:
        lines.append(f"(... more elements not listed; {len(elements)} or more in all)")
    parts: list[UserContent] = [
        f"Action: {request.action_type}\nTarget description: {request.description}\n\nElements:\n"
        + "\n".join(lines)
    ]
    if with_screenshot and request.screenshot is not None:
        parts += [
            "Screenshot of the viewport:",
            BinaryContent(data=request.screenshot, media_type="image/png"),
        ]
    return parts


class LLMGrounder:
    """Grounder backed by any pydantic-ai model (see the module doc)."""

    wants_screenshot = True
    """The executor attaches a viewport screenshot to each request."""

    def __init__(self, model: Model, *, retries: int = 2, name: str | None = None) -> None:
        self.model = model
        self.retries = retries
        self.name = name or f"llm:{model_label(model)}"
        agent: Agent[frozenset[int], GroundingAnswer] = Agent(
            model,
            output_type=GroundingAnswer,
            instructions=INSTRUCTIONS,
            deps_type=frozenset[int],
            name="grounder",
        )

        @agent.output_validator
        def _check(ctx: RunContext[frozenset[int]], answer: GroundingAnswer) -> GroundingAnswer:  # pyright: ignore[reportUnusedFunction]
            if answer.index is not None and answer.index not in ctx.deps:
                raise ModelRetry(
                    f"index {answer.index} is not in the element list; answer a listed index or null"
                )
            return answer

        self._agent = agent

    async def __call__(self, request: GroundingRequest) -> Grounding:
        """Ground ``request.description``; look at the screenshot when the list alone is not enough."""
        elements = request.observation.elements
        if not elements:
            return Grounding(index=None, reason="the page has no interactive elements", grounder=self.name)
        known = frozenset(el.index for el in elements)

        by_index = {el.index: el for el in elements}

        def shown(answer: GroundingAnswer) -> dict[str, FieldValue]:
            element = by_index.get(answer.index) if answer.index is not None else None
            label = (
                f"{element_kind(element) or element.tag} {element_label(element)!r}" if element else "none"
            )
            return {"index": answer.index, "element": label, "sure": answer.sure}

        async def question(with_screenshot: bool) -> Asked[GroundingAnswer]:
            prompt = grounding_prompt(request, with_screenshot=with_screenshot)
            who = "grounder, with the screenshot" if with_screenshot else "grounder"
            reporter = CallReporter("grounder", who, f"{request.action_type}: {request.description}")
            settings = ModelSettings(temperature=0.0)
            return await ask(
                self._agent,
                prompt,
                reporter=reporter,
                retries=self.retries,
                settings=settings,
                deps=known,
                shown=shown,
            )

        asked = await question(with_screenshot=False)
        looked = False
        if request.screenshot is not None and (asked.output is None or not asked.output.sure):
            looked = True
            second = await question(with_screenshot=True)
            if second.output is not None or asked.output is None:
                asked = second
        answer = asked.output
        if answer is None:
            return Grounding(index=None, reason=f"judge_error: {asked.error}", grounder=self.name)
        reason = answer.reason + (" (after looking at the screenshot)" if looked else "")
        text = answer.text if request.action_type == "Type" else None
        if answer.index is None or answer.index not in by_index:
            return Grounding(index=None, reason=reason or "no element fits", grounder=self.name, text=text)
        return Grounding(
            index=answer.index,
            score=1.0 if answer.sure else 0.5,
            reason=f"{element_kind(by_index[answer.index]) or 'element'} "
            f"{element_label(by_index[answer.index])!r}: {reason}",
            grounder=self.name,
            text=text,
        )


@register("grounder", "llm")
def llm_grounder(judge_model: Model, retries: int = 2) -> Grounder:
    """LLM grounder on the run's judge model (``[judge] model``); it looks at the screenshot when unsure."""
    return LLMGrounder(judge_model, retries=retries, name=f"llm:{model_label(judge_model)}")
