"""The judges of a run, built from its ``[judge]`` settings.

Offline judges come from the registry. LLM judges get their model wrapped in
:class:`~iwr_bench.engine.judge_model.StoredModel`, so their requests count against the
"judge calls" limit and their answers are kept in the run's store.

The engine wraps every role in a deadline (:meth:`JudgeSet.with_deadlines`): a grounder,
assertion-judge or rubric call that takes longer than ``[limits] judge_call_timeout_s`` (waiting
for a judge-call slot included) raises :class:`~iwr_bench.engine.deadlines.StepTimeout`, and
the job fails as ``timeout``. The call runs in a background task, so a judge stuck in a worker
thread (OCR, CLIP) cannot hold its job past the deadline.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from types import TracebackType
from typing import Any

from pydantic_ai.models import Model

from iwr_bench.agents.generation import ModelConfig, build_model
from iwr_bench.agents.grounding import Grounder, Grounding, GroundingRequest
from iwr_bench.agents.judge.records import AssertionJudge, AssertionRequest, AssertionVerdict
from iwr_bench.agents.judge.rubric import RubricResult
from iwr_bench.engine.config import JudgeSettings
from iwr_bench.engine.deadlines import Background
from iwr_bench.engine.judge_model import Get, Put, StoredModel
from iwr_bench.engine.limits import Limits
from iwr_bench.errors import UserError
from iwr_bench.registry import create, names


class JudgeSet:
    """Grounder, assertion judge and (optional) rubric judge of a run."""

    def __init__(
        self,
        grounder: Grounder,
        assertions: AssertionJudge,
        rubric: Any = None,
        *,
        models: list[Model] | None = None,
        description: dict[str, Any] | None = None,
    ) -> None:
        self.grounder = grounder
        self.assertions = assertions
        self.rubric = rubric
        self.models = models or []
        self._description = description or {}
        self._stack = AsyncExitStack()

    def describe(self) -> dict[str, Any]:
        """What the manifest records about the judges."""
        return {
            "grounder": getattr(self.grounder, "name", type(self.grounder).__name__),
            "assertions": getattr(self.assertions, "name", type(self.assertions).__name__),
            "rubric": None
            if self.rubric is None
            else getattr(self.rubric, "name", type(self.rubric).__name__),
            **self._description,
        }

    def with_deadlines(self, seconds: float, background: Background) -> JudgeSet:
        """The same judges, each call bounded by ``seconds`` (run in ``background``'s tasks)."""
        rubric = None if self.rubric is None else DeadlineRubric(self.rubric, seconds, background)
        return JudgeSet(
            DeadlineGrounder(self.grounder, seconds, background),
            DeadlineAssertions(self.assertions, seconds, background),
            rubric,
            models=self.models,
            description=self._description,
        )

    async def __aenter__(self) -> JudgeSet:
        for model in self.models:
            await self._stack.enter_async_context(model)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._stack.aclose()


class _Deadline:
    """Shared part of the deadline wrappers: the inner judge, its name, the bound."""

    step = "judge call"

    def __init__(self, inner: Any, seconds: float, background: Background) -> None:
        self.inner = inner
        self.seconds = seconds
        self.background = background

    @property
    def name(self) -> str:
        """The wrapped judge's name."""
        return str(getattr(self.inner, "name", type(self.inner).__name__))


class DeadlineGrounder(_Deadline):
    """A :class:`~iwr_bench.agents.grounding.Grounder` whose calls have a deadline."""

    step = "grounder call"

    @property
    def wants_screenshot(self) -> bool:
        """Whether the wrapped grounder wants a screenshot with the observation."""
        return bool(getattr(self.inner, "wants_screenshot", False))

    async def __call__(self, request: GroundingRequest) -> Grounding:
        """Ground within the deadline (raises ``StepTimeout`` past it)."""
        grounder: Grounder = self.inner
        return await self.background.call(self.step, self.seconds, lambda: grounder(request))


class DeadlineAssertions(_Deadline):
    """An :class:`~iwr_bench.agents.judge.records.AssertionJudge` whose calls have a deadline."""

    step = "assertion judge call"

    async def __call__(self, request: AssertionRequest) -> AssertionVerdict:
        """Judge within the deadline (raises ``StepTimeout`` past it)."""
        judge: AssertionJudge = self.inner
        return await self.background.call(self.step, self.seconds, lambda: judge(request))


class DeadlineRubric(_Deadline):
    """A rubric judge whose calls have a deadline."""

    step = "rubric call"

    async def __call__(self, reference_png: bytes, generated_png: bytes) -> RubricResult:
        """Score within the deadline (raises ``StepTimeout`` past it)."""
        judge = self.inner
        return await self.background.call(
            self.step, self.seconds, lambda: judge(reference_png, generated_png)
        )


def _judge_model(
    settings: JudgeSettings, name: str, role: str, limits: Limits, get: Get, put: Put
) -> StoredModel:
    config = ModelConfig(
        name=name, base_url=settings.base_url or None, api_key_env=settings.api_key_env or None
    )
    return StoredModel(build_model(config), role=role, limit=limits.judge, get=get, put=put)


def build_judges(settings: JudgeSettings, limits: Limits, get: Get, put: Put) -> JudgeSet:
    """The run's judges; LLM judges keep their answers through ``get``/``put`` (the run store).

    Raises:
        UserError: an unknown judge, an llm judge with no model, or a missing API key.
    """
    needs_model = "llm" in (settings.grounder, settings.assertions)
    if needs_model and not settings.model:
        raise UserError(
            "an llm grounder or assertion judge needs a judge model: set [judge] model (or --judge-model)"
        )
    for role, name in (("grounder", settings.grounder), ("assertions", settings.assertions)):
        if name not in names(role):
            raise UserError(f"unknown {role} {name!r} (known: {', '.join(names(role))})")
    models: list[Model] = []
    description: dict[str, Any] = {}
    if settings.grounder == "llm":
        from iwr_bench.agents.grounding_llm import LLMGrounder

        model = _judge_model(settings, settings.model, "grounder", limits, get, put)
        models.append(model)
        grounder: Grounder = LLMGrounder(model, retries=settings.retries, name=f"llm:{settings.model}")
    else:
        grounder, _ = create("grounder", settings.grounder, **settings.grounder_options)
    if settings.assertions == "llm":
        from iwr_bench.agents.judge.llm import LLMAssertionJudge

        model = _judge_model(settings, settings.model, "assertions", limits, get, put)
        models.append(model)
        assertions: AssertionJudge = LLMAssertionJudge(
            model, votes=settings.votes, retries=settings.retries, name=f"llm:{settings.model}"
        )
    else:
        assertions, _ = create("assertions", settings.assertions)
    rubric: Any = None
    if settings.rubric:
        from iwr_bench.agents.judge.rubric import RubricJudge

        model = _judge_model(settings, settings.rubric, "rubric", limits, get, put)
        models.append(model)
        rubric = RubricJudge(model, retries=settings.retries, name=f"llm:{settings.rubric}")
    if settings.model:
        description["judge_model"] = settings.model
    if settings.rubric:
        description["rubric_model"] = settings.rubric
    if settings.base_url:
        description["judge_base_url"] = settings.base_url
    description["votes"] = settings.votes
    return JudgeSet(grounder, assertions, rubric, models=models, description=description)
