"""The judge lab's results read back from a run's store: what ``iwr judges eval`` measures.

``iwr judges eval`` runs on the engine (:mod:`iwr_bench.lab`): each case is a (task, page) pair,
the task's reference page as the model ``oracle`` and each mutant as a model of its own task
(``mutants:NAME`` or ``mutants:DIR#NAME``); each design (and each repeat of it) is a judge design
of the run, ``[[judge.designs]]``. The front records its plan in the manifest under ``lab``: the
cases with their expectations and model, the designs with their engine labels. This module turns
a run folder back into :class:`~iwr_bench.agents.judge.lab.CaseResult` rows (one per case,
design and repeat, from each judging job's ``eval.json``, or the job's failure when it wrote
none), with every design's judge-model usage read from the answers the store kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelResponse

from iwr_bench.agents.judge.lab import Case, CaseResult, DesignSpec, Usage, case_result, not_judged, usage_of
from iwr_bench.engine.store import RunStore, job_id, judged_name
from iwr_bench.engine.store_schema import JobRow
from iwr_bench.errors import UserError
from iwr_bench.scoring.evaluation import Evaluation

PLAN_KEY = "lab"
"""The manifest key of the plan."""


class LabDesign(BaseModel):
    """One design under test, judged ``repeat`` times: each judging is a design of the run."""

    spec: DesignSpec
    """The design as given."""
    labels: list[str]
    """The run's design label of each repeat (``labels[0]`` for the first judging)."""


class LabCase(BaseModel):
    """A case and the run model whose page it is."""

    case: Case
    """The page and what a correct judge finds on it."""
    model: str
    """The run's model giving this page (``oracle``, ``mutants:NAME``, ``mutants:DIR#NAME``)."""
    slug: str
    """That model's slug (job ids and folders)."""
    actions: list[str]
    """The task's action descriptions (what a case not judged lists as not run)."""


class LabPlan(BaseModel):
    """What a ``judges eval`` run judges: the manifest's ``lab``."""

    tasks: str
    """The tasks' source (``builtin`` or a path)."""
    only: list[int] = Field(default_factory=list[int])
    """Task ids kept (empty: all)."""
    designs: list[LabDesign]
    """The designs, in the order given."""
    cases: list[LabCase]
    """The cases, references first."""


class LabResults(BaseModel):
    """A ``judges eval`` run read back."""

    plan: LabPlan
    """What the run judges."""
    results: list[CaseResult]
    """Every case judged, per design and repeat (in plan order)."""
    usage: dict[str, Usage]
    """Judge-model usage per design label (the answers the store kept, repeats together)."""
    wall_s: dict[str, float]
    """Judging time per design label: its jobs' seconds added up (they ran side by side)."""
    missing: int = 0
    """Cases the run has not judged yet (an interrupted run: resume it)."""


def read_plan(store: RunStore, run_dir: Path) -> LabPlan:
    """The plan a ``judges eval`` run recorded.

    Raises:
        UserError: the folder holds another command's run, or a plan that does not read.
    """
    data = store.manifest().get(PLAN_KEY)
    if data is None:
        raise UserError(f"{run_dir} holds no `iwr judges eval` run (its manifest has no {PLAN_KEY!r})")
    try:
        return LabPlan.model_validate(data)
    except ValidationError as exc:
        raise UserError(
            f"{run_dir}: the judges eval plan does not read ({exc.error_count()} problems)"
        ) from exc


def _result(
    run_dir: Path, design: DesignSpec, repeat: int, c: LabCase, job: JobRow | None, eval_path: str | None
) -> CaseResult:
    case = c.case
    if eval_path is not None:
        path = run_dir / eval_path
        try:
            evaluation = Evaluation.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as exc:
            why = f"its eval.json does not read ({path}: {type(exc).__name__})"
            return not_judged(design.label, repeat, case, c.actions, why)
        result = case_result(design.label, repeat, case, evaluation.replay, path.parent / "evidence")
    elif job is None or job.finished is None:
        return not_judged(
            design.label, repeat, case, c.actions, "not judged yet (the run was stopped: resume it)"
        )
    else:
        why = f"{job.failure or 'failed'}: {job.message}".strip()
        result = not_judged(design.label, repeat, case, c.actions, why)
    result.seconds = round(job.seconds or 0.0, 3) if job is not None else 0.0
    return result


def _usage(store: RunStore, designs: Sequence[LabDesign]) -> dict[str, Usage]:
    owner = {label: d.spec.label for d in designs for label in d.labels}
    usage = {d.spec.label: Usage() for d in designs}
    for role, answer in store.calls():
        label = role.split("/", 1)[0] if "/" in role else ""
        if label not in owner:
            continue
        message = ModelMessagesTypeAdapter.validate_json(answer)[0]
        if isinstance(message, ModelResponse):
            usage[owner[label]] = usage[owner[label]].add(usage_of(message))
    return usage


def read_lab_run(run_dir: Path) -> LabResults:
    """Every case of a ``judges eval`` run, judged or not, with usage and time per design.

    Raises:
        UserError: no run there, or another command's.
    """
    if not (run_dir / "run.sqlite").exists():
        raise UserError(f"{run_dir} holds no run (no run.sqlite)")
    store = RunStore.open_run(run_dir, readonly=True)
    try:
        plan = read_plan(store, run_dir)
        jobs = {row.id: row for row in store.jobs("judge")}
        evals = {row.job: row.eval_path for row in store.scores()}
        results: list[CaseResult] = []
        wall = {d.spec.label: 0.0 for d in plan.designs}
        missing = 0
        for design in plan.designs:
            for repeat, label in enumerate(design.labels, start=1):
                for c in plan.cases:
                    jid = job_id("judge", c.case.task_id, judged_name(c.slug, label))
                    job = jobs.get(jid)
                    result = _result(run_dir, design.spec, repeat, c, job, evals.get(jid))
                    missing += job is None or job.finished is None
                    wall[design.spec.label] += result.seconds
                    results.append(result)
        usage = _usage(store, plan.designs)
    finally:
        store.close()
    wall = {label: round(seconds, 3) for label, seconds in wall.items()}
    return LabResults(plan=plan, results=results, usage=usage, wall_s=wall, missing=missing)
