"""The visual rubric judge (HVS): a vision model scores a replay screenshot against its checkpoint.

protocol.md section 4: the reference image comes first, the generated page second, and the
0-100 score is the sum of five parts: layout (10), elements (15), content and text (40), style
(15) and overall impression (20). The model answers each part as a number within its range;
an answer that still does not fit after the retries scores 0 and is flagged as an error.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field
from pydantic_ai import Agent, BinaryContent
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from iwr_bench.agents.events import FieldValue
from iwr_bench.agents.judge.llm_base import CallReporter, ask, model_label
from iwr_bench.registry import register

RUBRIC_PARTS: dict[str, int] = {"layout": 10, "elements": 15, "content": 40, "style": 15, "overall": 20}
"""Rubric part -> the most points it gives (sums to 100)."""

INSTRUCTIONS = """\
You compare a screenshot of a generated web page with a reference screenshot of the original
page in the same state. The FIRST image is the reference, the SECOND is the generated page.
Score how well the generated page reproduces the reference, part by part:
- layout (0-10): placement and proportions of the main regions;
- elements (0-15): the same components are present (buttons, inputs, images, lists, ...);
- content (0-40): the same text, numbers and data, correctly placed;
- style (0-15): colours, fonts, spacing, borders;
- overall (0-20): how close the whole impression is.
Give integer points for each part and a short reasoning."""


class RubricAnswer(BaseModel):
    """What the model must answer."""

    reasoning: str = Field(description="the main similarities and differences, briefly")
    layout: int = Field(ge=0, le=10, description="0-10")
    elements: int = Field(ge=0, le=15, description="0-15")
    content: int = Field(ge=0, le=40, description="0-40")
    style: int = Field(ge=0, le=15, description="0-15")
    overall: int = Field(ge=0, le=20, description="0-20")

    @property
    def total(self) -> int:
        """The 0-100 rubric score."""
        return self.layout + self.elements + self.content + self.style + self.overall


class RubricResult(BaseModel):
    """One rubric judgement."""

    score: float
    """0-100 (0 when the judge failed)."""
    parts: dict[str, int] = Field(default_factory=dict)
    """Points per rubric part (empty when the judge failed)."""
    reasoning: str = ""
    """The judge's reasoning, or why it failed."""
    error: bool = False
    """The answer was unusable after the retries (scored 0, as protocol.md says)."""
    judge: str
    """Which judge answered."""


class RubricJudgeRole(Protocol):
    """The ``rubric`` role: scores a generated page's screenshot against the reference (HVS)."""

    @property
    def name(self) -> str:
        """Recorded as the rubric judge of each evaluation."""
        ...

    async def __call__(self, reference_png: bytes, generated_png: bytes) -> RubricResult:
        """Score ``generated_png`` against ``reference_png`` (0-100); never raise for a bad answer."""
        ...


class RubricJudge:
    """HVS judge backed by any pydantic-ai model."""

    def __init__(self, model: Model, *, retries: int = 2, name: str | None = None) -> None:
        self.model = model
        self.retries = retries
        self.name = name or f"llm:{model_label(model)}"
        self._agent: Agent[None, RubricAnswer] = Agent(
            model, output_type=RubricAnswer, instructions=INSTRUCTIONS, name="rubric-judge"
        )

    async def __call__(self, reference_png: bytes, generated_png: bytes) -> RubricResult:
        """Score ``generated_png`` against ``reference_png``; never raises for a bad answer."""
        asked = await ask(
            self._agent,
            [
                "Reference (original page):",
                BinaryContent(data=reference_png, media_type="image/png"),
                "Generated page:",
                BinaryContent(data=generated_png, media_type="image/png"),
            ],
            reporter=CallReporter("rubric", "rubric judge", "score the generated page against the reference"),
            retries=self.retries,
            settings=ModelSettings(temperature=0.0),
            shown=_shown,
        )
        answer = asked.output
        if answer is None:
            return RubricResult(score=0.0, reasoning=asked.error, error=True, judge=self.name)
        parts = {name: int(getattr(answer, name)) for name in RUBRIC_PARTS}
        return RubricResult(
            score=float(answer.total), parts=parts, reasoning=answer.reasoning, judge=self.name
        )


def _shown(answer: RubricAnswer) -> dict[str, FieldValue]:
    return {"score": answer.total, **{name: int(getattr(answer, name)) for name in RUBRIC_PARTS}}


@register("rubric", "llm")
def llm_rubric(judge_model: Model, retries: int = 2) -> RubricJudge:
    """Rubric (HVS) judge on the role's judge model (``[judge.rubric] model``, or ``rubric = "MODEL"``)."""
    return RubricJudge(judge_model, retries=retries, name=f"llm:{model_label(judge_model)}")
