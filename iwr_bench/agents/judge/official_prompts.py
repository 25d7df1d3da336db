"""Judges asking with the authors' own prompts (``--official-code DIR``; :mod:`iwr_bench.official_code`).

Each sends what the official scorer sends, in its order, and reads the free-text answer as it
reads it: the assertion judge the template filled with the assertion, then the screenshots before
and after (the answer's ``result``, "Error" counting as the run's policy says); the rubric judge the
template alone, then the checkpoint and the screenshot (the ``Score: N/100`` found, else 0); the
grounder the click or type template filled with the action's description and the page's elements
(an index, and for Type the text, parsed as the official code parses them).
"""

from __future__ import annotations

from functools import cache

from pydantic_ai import Agent, BinaryContent
from pydantic_ai.messages import UserContent
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from iwr_bench.agents.grounding import Grounding, GroundingRequest
from iwr_bench.agents.grounding_llm import describe_element
from iwr_bench.agents.judge.llm_base import CallReporter, ask, model_label
from iwr_bench.agents.judge.records import AssertionRequest, AssertionVerdict
from iwr_bench.agents.judge.rubric import RubricResult
from iwr_bench.official_code import OfficialCode, official_assertion_result, official_rubric_score
from iwr_bench.registry import register

SETTINGS = ModelSettings(temperature=0.0, max_tokens=4096)
"""What the official scorer sends with each question."""


@cache
def _code(path: str) -> OfficialCode:
    return OfficialCode.load(path)


class _Prompted:
    """What the three designs share: the checkout's templates, a plain-text agent, a name."""

    role = "judge"

    def __init__(self, model: Model, code: OfficialCode, *, retries: int = 2) -> None:
        self.code = code
        self.retries = retries
        self.name = f"official-code:{model_label(model)}"
        self._agent: Agent[None, str] = Agent(model, output_type=str, name=self.role)


class OfficialPromptAssertions(_Prompted):
    """Assertion judge with the official assertion template."""

    role = "assertion-judge"

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        """Ask with the official template; "Error" when the answer says neither Yes nor No."""
        prompt: list[UserContent] = [
            self.code.render("assertion", assertion=request.assertion),
            BinaryContent(data=request.before_png, media_type="image/png"),
            BinaryContent(data=request.after_png, media_type="image/png"),
        ]
        reporter = CallReporter("assertions", "assertion judge (official prompt)", request.assertion)
        asked = await ask(self._agent, prompt, reporter=reporter, retries=self.retries, settings=SETTINGS)
        if asked.output is None:
            return AssertionVerdict(verdict="error", reasoning=asked.error, judge=self.name)
        result, thinking = official_assertion_result(asked.output)
        verdict = {"Yes": "yes", "No": "no"}.get(result, "error")
        reasoning = thinking or asked.output.strip()
        return AssertionVerdict(verdict=verdict, reasoning=reasoning, judge=self.name)  # type: ignore[arg-type]


class OfficialPromptRubric(_Prompted):
    """Rubric (HVS) judge with the official comparison template."""

    role = "rubric-judge"

    async def __call__(self, reference_png: bytes, generated_png: bytes) -> RubricResult:
        """Score as the official scorer does (0 when the answer holds no ``Score: N/100``)."""
        prompt: list[UserContent] = [
            self.code.render("rubric"),
            BinaryContent(data=reference_png, media_type="image/png"),
            BinaryContent(data=generated_png, media_type="image/png"),
        ]
        reporter = CallReporter("rubric", "rubric judge (official prompt)", "score against the reference")
        asked = await ask(self._agent, prompt, reporter=reporter, retries=self.retries, settings=SETTINGS)
        if asked.output is None:
            return RubricResult(score=0.0, reasoning=asked.error, error=True, judge=self.name)
        return RubricResult(
            score=float(official_rubric_score(asked.output)), reasoning=asked.output, judge=self.name
        )


class OfficialPromptGrounder(_Prompted):
    """Grounder with the official click and type templates, over our element list."""

    role = "grounder"
    wants_screenshot = False

    async def __call__(self, request: GroundingRequest) -> Grounding:
        """An element index (and for Type the text), parsed as the official code parses them."""
        elements = request.observation.elements
        tree = "\n".join(describe_element(el) for el in elements)
        state = f"url {request.observation.url}, title {request.observation.title!r}"
        typing = request.action_type == "Type"
        if typing:
            text = self.code.render("type", axtree=tree, state=state, description=request.description)
        else:
            text = self.code.render("click", axtree=tree, state=state, action_desc=request.description)
        reporter = CallReporter("grounder", "grounder (official prompt)", request.description)
        asked = await ask(self._agent, [text], reporter=reporter, retries=self.retries, settings=SETTINGS)
        if asked.output is None:
            return Grounding(index=None, reason=f"judge_error: {asked.error}", grounder=self.name)
        answer = asked.output.strip()
        try:
            if typing:
                head, tail = answer.split(',"', 1)
                index, typed = int(head), tail.rstrip('"')
            else:
                index, typed = int(answer), None
        except ValueError:
            return Grounding(index=None, reason=f"no index in the answer {answer[:80]!r}", grounder=self.name)
        if index not in {el.index for el in elements}:
            return Grounding(index=None, reason=f"index {index} is not on the page", grounder=self.name)
        return Grounding(
            index=index, score=1.0, reason=f"answered {answer[:80]!r}", grounder=self.name, text=typed
        )


@register("assertions", "official-code")
def official_code_assertions(judge_model: Model, code: str, retries: int = 2) -> OfficialPromptAssertions:
    """Assertion judge asking with the official template read from the checkout at ``code``."""
    return OfficialPromptAssertions(judge_model, _code(code), retries=retries)


@register("rubric", "official-code")
def official_code_rubric(judge_model: Model, code: str, retries: int = 2) -> OfficialPromptRubric:
    """Rubric judge asking with the official template read from the checkout at ``code``."""
    return OfficialPromptRubric(judge_model, _code(code), retries=retries)


@register("grounder", "official-code")
def official_code_grounder(judge_model: Model, code: str, retries: int = 2) -> OfficialPromptGrounder:
    """Grounder asking with the official click/type templates read from the checkout at ``code``."""
    return OfficialPromptGrounder(judge_model, _code(code), retries=retries)
