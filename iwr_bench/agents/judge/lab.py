"""The judge lab: judge pages whose first failure is known with one or more judge designs.

A *design* (:class:`DesignSpec`) is a grounder and an assertion judge, each a registered design
with its options, plus the judge model and policies they run with. A *case* (:class:`Case`) is a
page of a task with the expected outcome: a task's reference page must pass every action (IFS
100); a mutant must fail first at ``expected_first_failure`` (0-based action index) with
``expected_reason``, or pass everything when that is null (``mutant.json``).

:func:`judge_cases` replays every case with one built design and returns a :class:`CaseResult`
per case, with each action's outcome, verdict, reasoning and screenshot. A design that raises or
runs past its time is recorded as the case's ``error``, never raised. The measurement itself
(accuracy, agreement, kappa, verdicts that changed on repeat) is
:mod:`iwr_bench.report.judge_eval`.

Design syntax (``iwr judges eval --design SPEC``): comma-separated parts, each either a bare
design name (it plays every judging role that has a design of that name: ``heuristic``, ``llm``)
or ``key=value``: ``grounder=NAME``, ``assertions=NAME``, ``grounder.OPTION=VALUE``,
``assertions.OPTION=VALUE`` (VALUE is read as a TOML value, else kept as text), ``model=``,
``base_url=``, ``api_key_env=``, ``votes=``, ``retries=``, ``undetermined_policy=``,
``judge_error_policy=`` and ``label=``. Roles not named stay ``heuristic``.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import AsyncGenerator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError
from pydantic_ai._run_context import RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from iwr_bench.agents.generation import ModelConfig, build_model
from iwr_bench.agents.judge.records import ActionRecord, FailureClass, Replay, Verdict
from iwr_bench.dataset.layout import REFERENCE_DIR, Task
from iwr_bench.errors import UserError
from iwr_bench.registry import build, factory_of, names, parameters

JUDGING_ROLES = ("grounder", "assertions")
"""The roles every design fills (the rubric judge plays no part in replay)."""
OPTIONAL_ROLES = ("step", "replay")
"""Roles a design may fill: a step judge (acts and judges each action itself, e.g. ``agent``) and
the replay policy (how a Scroll or Press is performed); unset, the executor's own are used."""
ROLES = JUDGING_ROLES + OPTIONAL_ROLES

Policy = Literal["pass", "fail"]


class RoleChoice(BaseModel):
    """One role of a design: a registered name and its options."""

    name: str = "heuristic"
    """Registered design (``iwr judges list``)."""
    options: dict[str, Any] = Field(default_factory=dict[str, Any])
    """Arguments of its factory."""


class DesignSpec(BaseModel):
    """A judge design under test: both judging roles and what they run with."""

    label: str
    """Name shown in tables (unique within one evaluation)."""
    grounder: RoleChoice = RoleChoice()
    """The grounder."""
    assertions: RoleChoice = RoleChoice()
    """The assertion judge."""
    step: RoleChoice | None = None
    """A step judge that performs and judges each action (it replaces the two above), if any."""
    replay: RoleChoice | None = None
    """The replay policy, if not the protocol's own."""
    model: str = ""
    """Judge model given to designs whose factory takes ``judge_model``."""
    base_url: str = ""
    """OpenAI-compatible server of the judge model."""
    api_key_env: str = ""
    """Environment variable with the judge model's key."""
    votes: int = Field(default=1, ge=1, le=9)
    """Given to designs that take ``votes`` (unless an option sets it)."""
    retries: int = Field(default=2, ge=0, le=10)
    """Given to designs that take ``retries`` (unless an option sets it)."""
    judge_error_policy: Policy = "fail"
    """What an assertion answered ``error`` counts as."""
    undetermined_policy: Policy = "pass"
    """What an assertion answered ``undetermined`` counts as."""
    plugins: list[str] = Field(default_factory=list[str])
    """Plugins this design came with (a run file's ``plugins``), already loaded."""

    def role(self, role: str) -> RoleChoice | None:
        """The choice for a role of :data:`ROLES` (None: an optional role left unset)."""
        choice: RoleChoice | None = getattr(self, role)
        return choice

    def chosen(self) -> dict[str, RoleChoice]:
        """Every role this design sets, by role."""
        return {role: choice for role in ROLES if (choice := self.role(role)) is not None}


_TEXT_KEYS = ("model", "base_url", "api_key_env", "label", "undetermined_policy", "judge_error_policy")


def _value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _bare(data: dict[str, Any], name: str, text: str) -> None:
    """A bare design name: it plays every judging role that has a design of that name."""
    played = [role for role in ROLES if name in names(role)]
    if not played:
        known = sorted({n for role in ROLES for n in names(role)})
        raise UserError(
            f"design {text!r}: no grounder or assertion judge is named {name!r} (known: {', '.join(known)})"
        )
    for role in played:
        data.setdefault(role, {})["name"] = name


def _part(data: dict[str, Any], part: str, text: str) -> None:
    key, _, value = (s.strip() for s in part.partition("="))
    role, dot, option = key.partition(".")
    if role in ROLES and dot:
        data.setdefault(role, {}).setdefault("options", {})[option] = _value(value)
    elif key in ROLES:
        data.setdefault(key, {})["name"] = value
    elif key in _TEXT_KEYS:
        data[key] = value
    elif key in ("votes", "retries"):
        data[key] = _value(value)
    else:
        raise UserError(
            f"design {text!r}: unknown key {key!r} (use a design name, grounder=, assertions=, step=, "
            f"replay=, ROLE.OPTION=, model=, votes=, label=, ...)"
        )


def parse_design(text: str) -> DesignSpec:
    """A :class:`DesignSpec` from the ``--design`` syntax (module doc); names are checked.

    Raises:
        UserError: one line naming the design: an unknown name or key, or a bad value.
    """
    data: dict[str, Any] = {}
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise UserError("an empty --design")
    for part in parts:
        if "=" in part:
            _part(data, part, text)
        else:
            _bare(data, part, text)
    data.setdefault("label", parts[0] if len(parts) == 1 and "=" not in parts[0] else text)
    try:
        spec = DesignSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        raise UserError(f"design {text!r}: {where}: {err['msg']}") from exc
    for role, choice in spec.chosen().items():
        try:
            factory_of(role, choice.name)
        except UserError as exc:
            raise UserError(f"design {text!r}: {exc}") from exc
    return spec


def unique_labels(specs: Sequence[DesignSpec]) -> list[DesignSpec]:
    """The designs with labels made unique (``label #2`` for the second of a name)."""
    seen: dict[str, int] = {}
    out: list[DesignSpec] = []
    for spec in specs:
        seen[spec.label] = seen.get(spec.label, 0) + 1
        n = seen[spec.label]
        out.append(spec if n == 1 else spec.model_copy(update={"label": f"{spec.label} #{n}"}))
    return out


# -- judge models: usage and cost ----------------------------------------------------------------


class Usage(BaseModel):
    """What a design's judge models used."""

    requests: int = 0
    """Model requests made."""
    input_tokens: int = 0
    """Prompt tokens."""
    output_tokens: int = 0
    """Completion tokens."""
    cost_usd: float = 0.0
    """Price of the priced requests (genai-prices)."""
    unpriced: int = 0
    """Requests whose price is not known (a local server, a model genai-prices lacks)."""

    def add(self, other: Usage) -> Usage:
        """The sum of two usages."""
        return Usage(**{k: getattr(self, k) + getattr(other, k) for k in Usage.model_fields})


def usage_of(response: ModelResponse) -> Usage:
    """One answer's usage: a request, its tokens, and its price when genai-prices knows it."""
    usage = Usage(
        requests=1, input_tokens=response.usage.input_tokens, output_tokens=response.usage.output_tokens
    )
    try:
        usage.cost_usd = float(response.cost().total_price)
    except (LookupError, ValueError, AssertionError):  # unknown model or price, no usage given
        usage.unpriced = 1
    return usage


class MeteredModel(WrapperModel):
    """A judge model that adds up tokens and cost of every answer (``iwr judges replay``'s designs,
    which ask outside any run; nothing is kept)."""

    def __init__(self, wrapped: Model) -> None:
        super().__init__(wrapped)
        self.usage = Usage()

    def _count(self, response: ModelResponse) -> None:
        self.usage = self.usage.add(usage_of(response))

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        """Ask the wrapped model and count the answer."""
        response = await self.wrapped.request(messages, model_settings, model_request_parameters)
        self._count(response)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: RunContext[Any] | None = None,
    ) -> AsyncGenerator[StreamedResponse]:
        """Stream from the wrapped model; the answer is counted once complete."""
        async with self.wrapped.request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as stream:
            yield stream
        self._count(stream.get())


class BuiltDesign:
    """A design's built roles (grounder, assertion judge, step judge and replay policy when set),
    with the judge models they were given."""

    def __init__(self, spec: DesignSpec, built: dict[str, Any], models: list[MeteredModel]) -> None:
        self.spec = spec
        self.grounder = built["grounder"]
        self.assertions = built["assertions"]
        self.step = built.get("step")
        self.replay = built.get("replay")
        self.models = models
        self._stack = AsyncExitStack()

    def usage(self) -> Usage:
        """Usage of every judge model so far."""
        total = Usage()
        for model in self.models:
            total = total.add(model.usage)
        return total

    async def __aenter__(self) -> BuiltDesign:
        for model in self.models:
            await self._stack.enter_async_context(model)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()


def build_design(spec: DesignSpec) -> BuiltDesign:
    """Build every role of ``spec``; a factory taking ``judge_model`` gets ``spec.model``, metered.

    Raises:
        UserError: one line naming the design: an unknown name, a bad option, no judge model or key.
    """
    built: dict[str, Any] = {}
    models: list[MeteredModel] = []
    for role, choice in spec.chosen().items():
        context: dict[str, Any] = {"votes": spec.votes, "retries": spec.retries}
        if "judge_model" in parameters(role, choice.name) and "judge_model" not in choice.options:
            if not spec.model:
                raise UserError(
                    f"design {spec.label!r}: {role} {choice.name!r} needs a judge model (model=...)"
                )
            config = ModelConfig(
                name=spec.model, base_url=spec.base_url or None, api_key_env=spec.api_key_env or None
            )
            model = MeteredModel(build_model(config))
            models.append(model)
            context["judge_model"] = model
        try:
            built[role], _ = build(role, choice.name, choice.options, context)
        except UserError as exc:
            raise UserError(f"design {spec.label!r}: {exc}") from exc
    return BuiltDesign(spec, built, models)


# -- cases ----------------------------------------------------------------------------------------


class Case(BaseModel):
    """A page whose first failure under a correct judge is known."""

    task_id: int
    """Task it belongs to."""
    name: str
    """``reference`` or the mutant's name."""
    kind: str
    """``reference``, or the mutant's kind (``label_changed``, ``handler_removed``, ...)."""
    page: Path
    """The page (``index.html`` or its folder); for a mutant, its folder of edited files."""
    bundle: Path | None = None
    """For a mutant: the task's reference bundle its edited files go over (see ``mutant_page``)."""
    expected_first_failure: int | None
    """0-based index of the first action that must fail; None: every action must pass (IFS 100)."""
    expected_reason: FailureClass | None
    """Failure class that action must fail with."""


def reference_cases(tasks: Sequence[Task]) -> list[Case]:
    """Each task's reference page (those that ship one), expected to pass every action."""
    return [
        Case(
            task_id=t.id,
            name="reference",
            kind="reference",
            page=t.reference_page,
            expected_first_failure=None,
            expected_reason=None,
        )
        for t in tasks
        if t.reference_page is not None
    ]


def _mutant(folder: Path, task: Task) -> Case:
    meta = folder / "mutant.json"
    reference = task.folder / REFERENCE_DIR
    try:
        data: dict[str, Any] = json.loads(meta.read_text(encoding="utf-8"))
        return Case(
            task_id=task.id,
            name=folder.name,
            kind=str(data.get("kind") or "mutant"),
            page=folder,
            bundle=reference if reference.is_dir() else None,
            expected_first_failure=data["expected_first_failure"],
            expected_reason=data.get("expected_reason"),
        )
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
        why = f"no key {exc}" if isinstance(exc, KeyError) else str(exc).strip().splitlines()[0]
        raise UserError(f"{meta}: not a usable expectation ({why})") from exc


def mutant_cases(root: Path, tasks: Sequence[Task]) -> list[Case]:
    """Cases ``<root>/<task id>/<name>/`` holding ``mutant.json`` and the mutant's files, for the given
    tasks. A mutant is the task's reference bundle with its files put over it (a folder holding a
    whole page works too).

    Raises:
        UserError: when ``root`` is not a folder, or a ``mutant.json`` lacks its expectation.
    """
    if not root.is_dir():
        raise UserError(f"{root} is not a folder of <task id>/<name>/index.html + mutant.json")
    cases: list[Case] = []
    for task in tasks:
        folder = root / str(task.id)
        if not folder.is_dir():
            continue
        for sub in sorted(folder.iterdir()):
            has_page = (sub / "index.html").is_file() or (task.folder / REFERENCE_DIR).is_dir()
            if has_page and (sub / "mutant.json").is_file():
                cases.append(_mutant(sub, task))
    return cases


# -- judging ----------------------------------------------------------------------------------------


class ActionOutcome(BaseModel):
    """One action's outcome under one design."""

    index: int
    """0-based action index."""
    description: str
    """The action's description."""
    status: Literal["ok", "failed", "not_run"]
    """Passed, failed (ended the prefix) or not run."""
    failure: FailureClass | None = None
    """Why it failed."""
    verdict: Verdict | None = None
    """The assertion verdict, when the action has an assertion and got that far."""
    reasoning: str = ""
    """The judge's reasoning: the assertion's, else the grounder's, with any failure message."""
    screenshot: str | None = None
    """The state after the action (or the state a failed action met), an absolute path."""
    seconds: float = 0.0
    """Wall time of the action, settling and judging included."""

    def label(self) -> str:
        """The whole verdict as one word: outcome, failure class and assertion verdict."""
        return ":".join(x for x in (self.status, self.failure or "", self.verdict or "") if x)


class CaseResult(BaseModel):
    """One case judged once by one design."""

    design: str
    """Design label."""
    repeat: int
    """1 for the first judging, 2 for the second, ..."""
    task_id: int
    """Task."""
    case: str
    """``reference`` or the mutant's name."""
    kind: str
    """Kind of case."""
    expected_first_failure: int | None
    """What a correct judge finds (None: IFS 100)."""
    expected_reason: FailureClass | None
    """Failure class a correct judge gives."""
    total_steps: int
    """Number of actions."""
    first_failure: int | None = None
    """Index of the first failed action (0 for a page that did not load); None: all passed."""
    reason: FailureClass | None = None
    """Its failure class."""
    actions: list[ActionOutcome] = Field(default_factory=list[ActionOutcome])
    """Per-action outcomes."""
    error: str = ""
    """The design raised or ran out of time on this case (then no failure is claimed)."""
    seconds: float = 0.0
    """Wall time of the replay."""

    @property
    def expected_steps(self) -> int:
        """Length of the successful prefix a correct judge finds."""
        return self.total_steps if self.expected_first_failure is None else self.expected_first_failure

    @property
    def steps(self) -> int:
        """Length of the successful prefix this design found."""
        return self.total_steps if self.first_failure is None else self.first_failure

    @property
    def correct(self) -> bool:
        """Failed first where expected, for the expected reason (or passed all, when expected)."""
        return (
            not self.error
            and self.first_failure == self.expected_first_failure
            and self.reason == self.expected_reason
        )


def _reasoning(record: ActionRecord) -> str:
    parts: list[str] = []
    if record.grounding is not None:
        g = record.grounding
        parts.append(f"grounded {'none' if g.index is None else '#' + str(g.index)}: {g.reason}")
    if record.assertion is not None:
        parts.append(f"assertion {record.assertion.verdict}: {record.assertion.reasoning}")
    if record.message and record.assertion is None:
        parts.append(record.message)
    return " | ".join(parts)


def _outcome(record: ActionRecord, evidence: Path) -> ActionOutcome:
    shot = record.after or (record.before if record.status == "failed" else None)
    return ActionOutcome(
        index=record.index,
        description=record.description,
        status=record.status,
        failure=record.failure,
        verdict=record.assertion.verdict if record.assertion else None,
        reasoning=_reasoning(record),
        screenshot=str(evidence / shot) if shot else None,
        seconds=record.seconds,
    )


def _result(design: str, repeat: int, case: Case, **judged: Any) -> CaseResult:
    """A result of ``case``: its expectation, with what ``design`` found (``judged``)."""
    return CaseResult(
        design=design,
        repeat=repeat,
        task_id=case.task_id,
        case=case.name,
        kind=case.kind,
        expected_first_failure=case.expected_first_failure,
        expected_reason=case.expected_reason,
        **judged,
    )


def case_result(design: str, repeat: int, case: Case, replay: Replay, evidence: Path) -> CaseResult:
    """What one replay says about one case."""
    failed = [a for a in replay.actions if a.status == "failed"]
    first, reason = (failed[0].index, failed[0].failure) if failed else (None, None)
    if replay.failure is not None:  # the page itself failed (no page, did not load)
        first, reason = 0, replay.failure
    return _result(
        design,
        repeat,
        case,
        total_steps=replay.total_steps,
        first_failure=first,
        reason=reason,
        actions=[_outcome(a, evidence) for a in replay.actions],
    )


def not_judged(design: str, repeat: int, case: Case, actions: Sequence[str], error: str) -> CaseResult:
    """The result of a case its design did not judge (its job failed or never ran): no failure is
    claimed, every action is ``not_run``, and ``error`` says why."""
    outcomes = [ActionOutcome(index=i, description=d, status="not_run") for i, d in enumerate(actions)]
    return _result(design, repeat, case, total_steps=len(outcomes), actions=outcomes, error=error)
