"""The judges of a run, built from its ``[judge]`` settings.

Every role is a registered design (built in, from an entry point or from a plugin file). A
design whose factory takes ``judge_model`` gets its model wrapped in
:class:`~iwr_bench.engine.judge_model.StoredModel`, so its requests count against the
"judge calls" limit and its answers are kept in the run's store.

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
from iwr_bench.agents.judge.replay import ReplayPolicy
from iwr_bench.agents.judge.rubric import RubricJudgeRole, RubricResult
from iwr_bench.agents.judge.step import StepJudge, StepOutcome, StepRequest
from iwr_bench.engine.config import JudgeSettings, RoleSettings
from iwr_bench.engine.deadlines import Background
from iwr_bench.engine.judge_model import Get, Put, SharedCalls, StoredModel
from iwr_bench.engine.limits import Limits
from iwr_bench.errors import UserError
from iwr_bench.registry import build, capability, factory_of, origin_of, parameters


class JudgeSet:
    """Grounder, assertion judge and (optional) rubric judge of a run."""

    def __init__(
        self,
        grounder: Grounder,
        assertions: AssertionJudge,
        rubric: RubricJudgeRole | None = None,
        *,
        models: list[Model] | None = None,
        description: dict[str, Any] | None = None,
        step: StepJudge | None = None,
        replay: ReplayPolicy | None = None,
    ) -> None:
        self.grounder = grounder
        self.assertions = assertions
        self.rubric = rubric
        self.step = step
        """The step judge (``[judge.step]``), which then performs and judges every action."""
        self.replay = replay
        """The replay policy (``[judge.replay]``); None: the protocol's built-in one."""
        self.models = models or []
        self._description = description or {}
        self._stack = AsyncExitStack()

    def describe(self) -> dict[str, Any]:
        """What the manifest records about the judges."""
        return {
            "grounder": getattr(self.grounder, "name", type(self.grounder).__name__),
            "assertions": getattr(self.assertions, "name", type(self.assertions).__name__),
            "rubric": None if self.rubric is None else self.rubric.name,
            **({} if self.step is None else {"step": self.step.name}),
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
            step=None if self.step is None else DeadlineStep(self.step, seconds, background),
            replay=self.replay,
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
    wraps_design = True
    """The design is ``inner`` (see :data:`~iwr_bench.agents.judge.design_calls.WRAPPER_MARK`)."""

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

    def __init__(self, inner: Any, seconds: float, background: Background) -> None:
        super().__init__(inner, seconds, background)
        self.wants_screenshot: bool = bool(capability(inner, Grounder, "wants_screenshot"))
        """Whether the wrapped grounder wants a screenshot with the observation."""

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


class DeadlineStep(_Deadline):
    """A :class:`~iwr_bench.agents.judge.step.StepJudge` whose calls (one whole action) have a deadline."""

    step = "step judge call"

    async def __call__(self, request: StepRequest) -> StepOutcome:
        """Perform and judge within the deadline (raises ``StepTimeout`` past it)."""
        judge: StepJudge = self.inner
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


class CallStores:
    """Where a run's judge models keep their answers: the run's store (``get``/``put``) and, unless
    switched off, the cross-run cache (``shared``)."""

    def __init__(self, get: Get, put: Put, shared: SharedCalls | None = None, label: str = "") -> None:
        self.get = get
        self.put = put
        self.shared = shared
        self.label = label
        """The design whose answers these are (``""``: the run's one design); the store files each
        answer under ``<label>/<role>``, so a design's usage can be read back."""


def _judge_model(
    settings: JudgeSettings, name: str, role: str, limits: Limits, calls: CallStores
) -> StoredModel:
    config = ModelConfig(
        name=name, base_url=settings.base_url or None, api_key_env=settings.api_key_env or None
    )
    return StoredModel(
        build_model(config),
        role=f"{calls.label}/{role}" if calls.label else role,
        limit=limits.judge,
        get=calls.get,
        put=calls.put,
        shared=calls.shared,
        salt=f"repeat {settings.repeat}" if settings.repeat > 1 else "",
    )


def design_record(role: str, chosen: RoleSettings, model: str = "") -> dict[str, Any]:
    """What the manifest keeps about one role: design name, where its code came from, options."""
    record: dict[str, Any] = {
        "name": chosen.name,
        **origin_of(role, chosen.name).model_dump(exclude_none=True),
    }
    record["options"] = dict(chosen.options)
    if model:
        record["model"] = model
    return record


def _build_role(
    role: str, chosen: RoleSettings, settings: JudgeSettings, limits: Limits, calls: CallStores
) -> tuple[Any, Model | None, dict[str, Any]]:
    """One role's design; a judge model only for a design whose factory asks for ``judge_model``."""
    context: dict[str, Any] = {"votes": settings.votes, "retries": settings.retries}
    model: Model | None = None
    model_name = ""
    if "judge_model" in parameters(role, chosen.name) and "judge_model" not in chosen.options:
        model_name = chosen.model or settings.model
        if not model_name:
            raise UserError(
                f"{role} {chosen.name!r} needs a judge model: set [judge] model (or --judge-model)"
            )
        model = _judge_model(settings, model_name, role, limits, calls)
        context["judge_model"] = model
    obj, _ = build(role, chosen.name, chosen.options, context)
    return obj, model, design_record(role, chosen, model_name)


def build_judges(
    settings: JudgeSettings,
    limits: Limits,
    get: Get,
    put: Put,
    shared: SharedCalls | None = None,
    label: str = "",
) -> JudgeSet:
    """The run's judges, each a registered design built with its options.

    A design whose factory takes ``judge_model`` gets the role's judge model (``[judge.<role>]
    model``, else ``[judge] model``) wrapped so its answers are kept through ``get``/``put`` (the
    run store) and ``shared`` (the cross-run cache, when given); ``votes`` and ``retries`` come from
    ``[judge]`` unless its options set them.

    Raises:
        UserError: an unknown design, a bad option, a design with no judge model, a missing API key.
    """
    for role, chosen in settings.roles().items():
        factory_of(role, chosen.name)  # every name is checked before any design is built
    built: dict[str, Any] = {}
    models: list[Model] = []
    designs: dict[str, Any] = {}
    calls = CallStores(get, put, shared, label)
    for role, chosen in settings.roles().items():
        built[role], model, designs[role] = _build_role(role, chosen, settings, limits, calls)
        if model is not None:
            models.append(model)
    description: dict[str, Any] = {"designs": designs}
    if settings.model:
        description["judge_model"] = settings.model
    if settings.rubric is not None:
        description["rubric_model"] = settings.rubric.model or settings.model
    if settings.base_url:
        description["judge_base_url"] = settings.base_url
    description["votes"] = settings.votes
    if settings.repeat > 1:
        description["repeat"] = settings.repeat
    return JudgeSet(
        built["grounder"],
        built["assertions"],
        built.get("rubric"),
        models=models,
        description=description,
        step=built.get("step"),
        replay=built.get("replay"),
    )


def build_judge_sets(
    settings: JudgeSettings, limits: Limits, get: Get, put: Put, shared: SharedCalls | None = None
) -> dict[str, JudgeSet]:
    """One judge set per design label (:meth:`JudgeSettings.labels`; ``""`` when the run has one
    design), each built by :func:`build_judges` from that design's settings.

    Raises:
        UserError: as :func:`build_judges`, naming the design.
    """
    sets: dict[str, JudgeSet] = {}
    for label in settings.labels():
        try:
            sets[label] = build_judges(settings.design(label), limits, get, put, shared, label)
        except UserError as exc:
            if not label:
                raise
            raise UserError(f"[[judge.designs]] {label!r}: {exc}") from exc
    return sets


def describe_sets(sets: dict[str, JudgeSet]) -> dict[str, Any]:
    """What the manifest records about a run's judges: one set's description as it always was; for
    several designs, each by label (``by_label``) and every design's code by ``<label>/<role>``
    (``designs``, which provenance checks compare between sessions). The labels themselves are the
    manifest's ``judge_labels``."""
    if list(sets) == [""]:
        return sets[""].describe()
    by_label = {label: judges.describe() for label, judges in sets.items()}
    designs = {
        f"{label}/{role}": record
        for label, description in by_label.items()
        for role, record in description.get("designs", {}).items()
    }
    return {"designs": designs, "by_label": by_label}
