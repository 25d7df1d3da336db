"""The LLM assertion judge: a vision model compares the states before and after an action.

The model gets the assertion, the two viewport screenshots (before first) and, when the
executor has it, the visible page text of both states, and answers with a structured
``yes``/``no`` plus its reasoning. With ``votes=k`` it is asked k times (sampled with different
seeds, in parallel) and the majority decides; a tie is ``undetermined``. An answer that cannot
be used after the retries is ``error``, which the run's ``judge_error`` policy then counts.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

import anyio
from pydantic import BaseModel, Field
from pydantic_ai import Agent, BinaryContent
from pydantic_ai.messages import UserContent
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from iwr_bench.agents.judge.llm_base import Asked, CallReporter, ask, model_label
from iwr_bench.agents.judge.records import AssertionJudge, AssertionRequest, AssertionVerdict, Verdict
from iwr_bench.registry import register

INSTRUCTIONS = """\
You check one step of a replayed user session on a web page. You see the page before the
user's action and after it, and a statement that should be true after the action if the page
behaves like the original. Decide from the AFTER state (compared with BEFORE) whether the
statement holds. Answer "yes" only if the evidence shows it; "no" if it is contradicted or the
expected change did not happen. Give a short reasoning that names what you saw."""

PAGE_TEXT_LIMIT = 4000
"""Characters of visible page text sent per state."""


class AssertionAnswer(BaseModel):
    """What the model must answer."""

    reasoning: str = Field(description="what in the screenshots supports the verdict, briefly")
    verdict: Literal["yes", "no"] = Field(description="whether the statement holds after the action")


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= PAGE_TEXT_LIMIT else text[:PAGE_TEXT_LIMIT] + " [...]"


def assertion_prompt(request: AssertionRequest) -> list[UserContent]:
    """The user message: statement, before/after screenshots, and page text when known."""
    parts: list[UserContent] = [
        f"Statement to check: {request.assertion}",
        "BEFORE the action:",
        BinaryContent(data=request.before_png, media_type="image/png"),
        "AFTER the action:",
        BinaryContent(data=request.after_png, media_type="image/png"),
    ]
    if request.before_text is not None and request.after_text is not None:
        parts.append(f"Visible text BEFORE: {_clip(request.before_text)}")
        parts.append(f"Visible text AFTER: {_clip(request.after_text)}")
    return parts


class LLMAssertionJudge:
    """Assertion judge backed by any pydantic-ai model (see the module doc)."""

    def __init__(self, model: Model, *, votes: int = 1, retries: int = 2, name: str | None = None) -> None:
        if votes < 1:
            raise ValueError("votes must be at least 1")
        self.model = model
        self.votes = votes
        self.retries = retries
        self.name = name or f"llm:{model_label(model)}"
        self._agent: Agent[None, AssertionAnswer] = Agent(
            model, output_type=AssertionAnswer, instructions=INSTRUCTIONS, name="assertion-judge"
        )

    def _settings(self, vote: int) -> ModelSettings:
        # One vote is asked deterministically; several are sampled, each with its own seed (which
        # also keeps their stored answers apart).
        if self.votes == 1:
            return ModelSettings(temperature=0.0)
        return ModelSettings(temperature=1.0, seed=vote)

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        """Judge ``request.assertion``; never raises for a bad or missing answer."""
        prompt = assertion_prompt(request)
        answers: list[Asked[AssertionAnswer]] = [Asked(None, "not asked")] * self.votes

        async def one(i: int) -> None:
            who = f"assertion judge, vote {i + 1} of {self.votes}" if self.votes > 1 else "assertion judge"
            vote = i + 1 if self.votes > 1 else None
            reporter = CallReporter("assertions", who, request.assertion, vote=vote)
            answers[i] = await ask(
                self._agent, prompt, reporter=reporter, retries=self.retries, settings=self._settings(i)
            )

        async with anyio.create_task_group() as tg:
            for i in range(self.votes):
                tg.start_soon(one, i)
        return self._combine(answers)

    def _combine(self, answers: list[Asked[AssertionAnswer]]) -> AssertionVerdict:
        votes: list[Verdict] = [a.output.verdict if a.output else "error" for a in answers]
        decided = [a for a in answers if a.output is not None]
        if not decided:
            return AssertionVerdict(
                verdict="error", reasoning=answers[0].error or "no answer", judge=self.name, votes=votes
            )
        counts = Counter(a.output.verdict for a in decided if a.output)
        yes, no = counts["yes"], counts["no"]
        verdict: Verdict = "yes" if yes > no else "no" if no > yes else "undetermined"
        first = next((a for a in decided if a.output and a.output.verdict == verdict), decided[0])
        assert first.output is not None
        reasoning = first.output.reasoning
        if self.votes > 1:
            errors = len(answers) - len(decided)
            tally = f"{yes} yes, {no} no" + (f", {errors} failed" if errors else "")
            reasoning = (
                f"[{tally}] {reasoning}" if verdict != "undetermined" else f"[tie: {tally}] {reasoning}"
            )
        return AssertionVerdict(verdict=verdict, reasoning=reasoning, judge=self.name, votes=votes)


@register("assertions", "llm")
def llm_assertions(judge_model: Model, votes: int = 1, retries: int = 2) -> AssertionJudge:
    """LLM assertion judge on the run's judge model (``[judge] model``), k-vote majority over ``votes``."""
    name = f"llm:{model_label(judge_model)}"
    return LLMAssertionJudge(judge_model, votes=votes, retries=retries, name=name)
