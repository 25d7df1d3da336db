"""The judge lab as a Python API: what ``iwr judges eval`` does, returning what it measured.

::

    from iwr_bench import lab

    measured = lab.evaluate(["heuristic", "assertions=llm,model=openai:gpt-4o,label=llm"], only="101,102")
    for s in measured.scores:
        print(s.design, s.accuracy, s.accuracy_ci, s.strict_accuracy)

:func:`evaluate` is the code path of ``iwr judges eval``: :func:`prepare` turns the designs and a
:class:`LabConfig` into a run of the engine (each case a (task, page) pair: the reference page as the
model ``oracle``, each mutant as a model of its own task; each design, and each repeat of it, a
``[[judge.designs]]`` entry; the looks are not measured), the engine judges, and :func:`finish`
measures the run from its store (:func:`report_run`) into the
:class:`~iwr_bench.report.judge_eval.LabReport` that the command prints or writes (``--json``), so
the two cannot drift. Being a run, an evaluation has the engine's store, resume, limits, deadlines,
TUI and Ray backend, and its judge-model answers are paid once. :func:`report_run` measures an
earlier run folder again; :func:`report` measures results judged before (a saved ``report.json``'s
``results``, say). The report's fields: ``docs/judge-eval-report.md``.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from iwr_bench.agents.judge.lab import (
    Case,
    CaseResult,
    DesignSpec,
    RoleChoice,
    Usage,
    mutant_cases,
    parse_design,
    reference_cases,
    unique_labels,
)
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.engine.config import RunConfig, load_run_config, only_tasks, parse_run_config, plugin_refs
from iwr_bench.engine.layout import RunLayout
from iwr_bench.engine.run import Engine
from iwr_bench.engine.settings import LimitSettings
from iwr_bench.errors import UserError
from iwr_bench.registry import load_plugins
from iwr_bench.report.judge_eval import ActionInfo, LabReport, lab_report, task_actions
from iwr_bench.report.lab_labels import HumanLabel, LabelFile, read_labels
from iwr_bench.report.lab_stats import Bootstrap
from iwr_bench.report.lab_store import PLAN_KEY, LabCase, LabDesign, LabPlan, read_lab_run
from iwr_bench.suites.build import MUTANTS, SAMPLE

__all__ = [
    "Bootstrap",
    "HumanLabel",
    "LabConfig",
    "LabIncomplete",
    "LabReport",
    "LabSession",
    "LabelFile",
    "evaluate",
    "evaluate_async",
    "finish",
    "prepare",
    "report",
    "report_run",
]

DesignInput = str | Path | DesignSpec
"""A design: the ``--design`` syntax, a run file (``.toml``), or a spec."""


class LabConfig(BaseModel):
    """What ``iwr judges eval`` judges and how (every option but the designs)."""

    model_config = ConfigDict(extra="forbid")

    tasks: Path | None = None
    """Dataset root, ``.jsonl`` or task folder (None: the built-in suite)."""
    only: str | None = None
    """Comma-separated task ids to keep (None: all)."""
    cases: list[Path] = Field(default_factory=list[Path])
    """Folders ``<id>/<name>/`` of mutants with ``mutant.json`` (none given, with the built-in suite:
    its mutants)."""
    references: bool = True
    """Judge the tasks' reference pages too."""
    labels: Path | None = None
    """Human labels of single actions (JSON Lines; ``docs/judge-eval-report.md``)."""
    repeat: int = Field(default=1, ge=1)
    """Judge every page this many times per design."""
    pages_at_once: int = Field(default_factory=lambda: LimitSettings().browser_pages, ge=1)
    """Browser pages at once (``[limits] browser_pages``, whose default it has)."""
    case_timeout_s: float = Field(default_factory=lambda: LimitSettings().judge_timeout_s, gt=0)
    """One replay's limit, in seconds (``[limits] judge_timeout_s``, whose default it has)."""
    judge_calls: int = Field(default_factory=lambda: LimitSettings().judge_calls, ge=1)
    """Judge-model requests at once (``[limits] judge_calls``, whose default it has)."""
    judge_cache: bool = True
    """Reuse judge-model answers across runs (``[judge] cache``); repeats are asked again anyway."""
    backend: str = "in-process"
    """Where replays run (``[backend] kind``: ``in-process``, ``ray`` or a plugin's backend)."""
    ray_address: str = ""
    """``HOST:PORT`` of a Ray cluster's head (empty: a local Ray instance)."""
    plugins: list[str] = Field(default_factory=list[str])
    """Plugins to load first (modules or ``.py`` files, relative to the current folder)."""
    out: Path | None = None
    """The run folder: store, pages, evaluations and screenshots, and ``report.json`` (None: a
    temporary folder, removed once measured)."""
    resume: bool = False
    """Continue the run in ``out`` (finished jobs are skipped; answers it kept are not asked again)."""
    retry_failed: bool = False
    """On resume, also judge again the jobs that failed."""
    accept_changed_plugins: bool = False
    """On resume, go on although a design's code changed (recorded in the manifest)."""
    html: Path | None = None
    """Write the HTML report here (images in ``img/`` beside it)."""
    bootstrap: Bootstrap = Field(default_factory=Bootstrap)
    """How the confidence intervals are drawn."""


def _config(config: LabConfig | None, options: Mapping[str, Any]) -> LabConfig:
    data = {**(config or LabConfig()).model_dump(exclude_unset=True), **options}
    try:
        return LabConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        raise UserError(f"lab option {'.'.join(str(p) for p in err['loc'])}: {err['msg']}") from exc


def _from_run_file(path: Path) -> DesignSpec:
    config = load_run_config(path)
    load_plugins(config.plugins)
    judge = config.judge
    roles = {
        role: RoleChoice(name=chosen.name, options=dict(chosen.options))
        for role, chosen in judge.roles().items()
        if role != "rubric"
    }
    model = judge.model or next((c.model for c in judge.roles().values() if c.model), "")
    return DesignSpec(
        label=path.stem,
        grounder=roles["grounder"],
        assertions=roles["assertions"],
        step=roles.get("step"),
        replay=roles.get("replay"),
        model=model,
        base_url=judge.base_url,
        api_key_env=judge.api_key_env,
        votes=judge.votes,
        retries=judge.retries,
        judge_error_policy=judge.judge_error_policy,
        undetermined_policy=judge.undetermined_policy,
        plugins=config.plugins,
    )


def _design(given: DesignInput) -> DesignSpec:
    if isinstance(given, DesignSpec):
        return given
    if isinstance(given, Path) or given.endswith(".toml"):
        return _from_run_file(Path(given))
    return parse_design(given)


def designs_from(designs: DesignInput | Sequence[DesignInput]) -> list[DesignSpec]:
    """The designs (run files read, names checked; none given: ``heuristic``), with unique labels."""
    given = [designs] if isinstance(designs, str | Path | DesignSpec) else list(designs)
    return unique_labels([_design(d) for d in given or ["heuristic"]])


def cases_from(config: LabConfig) -> tuple[dict[int, Task], list[Case]]:
    """The tasks and the cases to judge.

    Raises:
        UserError: unknown task ids, a cases folder that is not one, a bad ``mutant.json``, no case.
    """
    source = config.tasks or SAMPLE
    tasks = only_tasks(load_tasks(source).tasks, config.only, source)
    cases = reference_cases(tasks) if config.references else []
    roots = config.cases or ([MUTANTS] if config.tasks is None else [])
    for root in roots:
        cases.extend(mutant_cases(root, tasks))
    if not cases:
        raise UserError("no page to judge: no reference page and no --cases with mutant.json for these tasks")
    return {t.id: t for t in tasks}, cases


TasksInput = Iterable[Task] | Mapping[int, Sequence[ActionInfo]]
"""Tasks, or their actions by task id (a saved report's ``actions``)."""


def _actions(tasks: TasksInput | None) -> Mapping[int, Sequence[ActionInfo]]:
    if tasks is None:
        return {}
    if isinstance(tasks, Mapping):
        return cast("Mapping[int, Sequence[ActionInfo]]", tasks)
    return task_actions(tasks)


def report(
    results: Sequence[CaseResult],
    designs: Sequence[DesignSpec] | None = None,
    *,
    tasks: TasksInput | None = None,
    labels: Path | LabelFile | Sequence[HumanLabel] | None = None,
    usage: Mapping[str, Usage] | None = None,
    wall_s: Mapping[str, float] | None = None,
    bootstrap: Bootstrap | None = None,
) -> LabReport:
    """Measure cases already judged (what :func:`evaluate` does once the pages are judged).

    Args:
        results: every case judged, per design and repeat.
        designs: the designs (None: one bare spec per design label in ``results``, in order).
        tasks: the tasks, or their actions by id (a saved report's ``actions``): action types,
            descriptions and assertions; None leaves the breakdown by action type out.
        labels: a labels file (path or read), or labels; None measures no agreement with people.
        usage: judge-model usage per design label.
        wall_s: wall time per design label.
        bootstrap: how intervals are drawn (default 2000 resamples, seed 0, 95 %).

    Raises:
        UserError: a labels file that cannot be read (one line naming the file and line).
    """
    if designs is None:
        designs = [DesignSpec(label=name) for name in dict.fromkeys(r.design for r in results)]
    actions = _actions(tasks)
    if isinstance(labels, Path):
        labels = read_labels(labels)
    elif labels is not None and not isinstance(labels, LabelFile):
        labels = LabelFile(labels=list(labels))
    return lab_report(
        designs,
        results,
        dict(usage or {}),
        dict(wall_s or {}),
        actions=actions,
        labels=labels,
        boot=bootstrap,
    )


# -- the front over the engine ------------------------------------------------------------------------

_LABEL_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def engine_labels(specs: Sequence[DesignSpec], repeat: int) -> list[list[str]]:
    """Each design's run labels, one per repeat: the design label made a job name (``heuristic``,
    ``assertions-llm-model-m``), unique, with ``.r2``, ``.r3`` ... for the later repeats."""
    taken: set[str] = set()
    out: list[list[str]] = []
    for spec in specs:
        base = _LABEL_CHARS.sub("-", spec.label).strip("-._")[:32] or "design"
        label, n = base, 1
        while label in taken:
            n += 1
            label = f"{base}-{n}"
        taken.add(label)
        out.append([label] + [f"{label}.r{r}" for r in range(2, repeat + 1)])
    return out


def _design_settings(spec: DesignSpec, label: str, repeat: int) -> dict[str, Any]:
    """The ``[[judge.designs]]`` entry of one judging of ``spec``."""
    entry: dict[str, Any] = {
        "label": label,
        "votes": spec.votes,
        "retries": spec.retries,
        "judge_error_policy": spec.judge_error_policy,
        "undetermined_policy": spec.undetermined_policy,
        "repeat": repeat,
    }
    for role, choice in spec.chosen().items():
        entry[role] = {"name": choice.name, "options": dict(choice.options)}
    for key in ("model", "base_url", "api_key_env"):
        if getattr(spec, key):
            entry[key] = getattr(spec, key)
    return entry


def _model_of(case: Case) -> str:
    """The run model giving a case's page: ``oracle`` (a reference), ``mutants:NAME`` (the built-in
    suite's) or ``mutants:DIR#NAME``."""
    if case.kind == "reference":
        return "oracle"
    root = case.page.parent.parent.resolve()
    return f"mutants:{case.name}" if root == MUTANTS.resolve() else f"mutants:{root}#{case.name}"


def lab_run_config(
    specs: Sequence[DesignSpec], config: LabConfig, tasks: Mapping[int, Task], cases: Sequence[Case]
) -> tuple[RunConfig, LabPlan]:
    """The run that judges every case with every design (and repeat), and the plan its report reads.

    Raises:
        UserError: a setting the run refuses (one line).
    """
    models: dict[str, list[int]] = {}
    for case in cases:
        models.setdefault(_model_of(case), []).append(case.task_id)
    labels = engine_labels(specs, config.repeat)
    designs = [
        _design_settings(spec, label, r)
        for spec, own in zip(specs, labels, strict=True)
        for r, label in enumerate(own, start=1)
    ]
    plugins = list(
        dict.fromkeys([*plugin_refs(config.plugins, Path.cwd()), *(p for s in specs for p in s.plugins)])
    )
    data: dict[str, Any] = {
        "tasks": str(config.tasks.expanduser().resolve()) if config.tasks else "builtin",
        "only": sorted(tasks),
        "plugins": plugins,
        "models": [{"name": name, "tasks": sorted(set(ids))} for name, ids in models.items()],
        "judge": {"cache": config.judge_cache, "designs": designs},
        "metrics": {"measure": False},
        "limits": {
            "browser_pages": config.pages_at_once,
            "judge_calls": config.judge_calls,
            "judge_timeout_s": config.case_timeout_s,
            "metric_workers": 1,
        },
        "backend": {"kind": config.backend, "address": config.ray_address},
    }
    run = parse_run_config(data, "judges eval options")
    slugs = {m.name: m.slug for m in run.models}
    plan = LabPlan(
        tasks=run.tasks,
        only=run.only,
        designs=[LabDesign(spec=spec, labels=own) for spec, own in zip(specs, labels, strict=True)],
        cases=[
            LabCase(
                case=case,
                model=_model_of(case),
                slug=slugs[_model_of(case)],
                actions=[a.parameters.description for a in tasks[case.task_id].record.action_sequence],
            )
            for case in cases
        ],
    )
    return run, plan


@dataclass
class LabSession:
    """A ``judges eval`` run, prepared: the engine to drive, then :func:`finish` to measure."""

    engine: Engine
    """The engine judging every case (drive it: ``await engine.run()``, or the CLI's TUI)."""
    config: LabConfig
    """The options."""
    plan: LabPlan
    """What it judges (also in the run's manifest)."""
    labels: LabelFile | None
    """Human labels, read before any page is judged."""
    tmp: tempfile.TemporaryDirectory[str] | None = None
    """The run folder when ``config.out`` is None (removed by :func:`finish`)."""

    @property
    def out(self) -> Path:
        """The run folder."""
        return self.engine.run_dir


def prepare(
    designs: DesignInput | Sequence[DesignInput] = (), config: LabConfig | None = None, **options: Any
) -> LabSession:
    """Check everything and prepare the engine's run (designs built, store opened, nothing judged).

    Raises:
        UserError: one line: a bad design, option, task id, ``mutant.json`` or labels file, a run
            folder holding another command's run.
    """
    config = _config(config, options)
    if config.resume and config.out is None:
        raise UserError("resuming needs the run folder (--out) of the evaluation to continue")
    load_plugins(plugin_refs(config.plugins, Path.cwd()))
    specs = designs_from(designs)
    tasks, cases = cases_from(config)
    labels = read_labels(config.labels) if config.labels is not None else None
    run, plan = lab_run_config(specs, config, tasks, cases)
    tmp = None if config.out else tempfile.TemporaryDirectory(prefix="iwr-judges-eval-")
    out = config.out or Path(tmp.name if tmp else ".")
    layout = RunLayout(out, front="judges eval", response_cache=None)
    engine = Engine(
        run,
        out,
        resume=config.resume,
        retry_failed=config.retry_failed,
        layout=layout,
        accept_changed_plugins=config.accept_changed_plugins,
        front_manifest={PLAN_KEY: plan.model_dump(mode="json")},
    )
    try:
        engine.prepare()
    except UserError as exc:  # a design the engine refused: named as it was given
        message = str(exc)
        for d in plan.designs:
            message = message.replace(f"[[judge.designs]] {d.labels[0]!r}", f"design {d.spec.label!r}")
        raise UserError(message) from exc
    finally:
        if tmp is not None and engine.prepared is None:
            tmp.cleanup()
    return LabSession(engine=engine, config=config, plan=plan, labels=labels, tmp=tmp)


def _actions_of(plan: LabPlan) -> Mapping[int, Sequence[ActionInfo]]:
    """Each planned task's actions (types, descriptions, assertions); none when the tasks are gone."""
    source = SAMPLE if plan.tasks == "builtin" else Path(plan.tasks)
    try:
        kept = [t for t in load_tasks(source).tasks if not plan.only or t.id in plan.only]
    except UserError:
        return {}
    return task_actions(kept)


def report_run(
    run_dir: Path,
    *,
    labels: Path | LabelFile | Sequence[HumanLabel] | None = None,
    bootstrap: Bootstrap | None = None,
) -> LabReport:
    """Measure a ``judges eval`` run from its store, judging nothing (the report of an earlier or
    interrupted run; a case not judged yet counts as the design's error).

    Raises:
        UserError: no ``judges eval`` run in ``run_dir``, or a labels file that does not read.
    """
    read = read_lab_run(run_dir)
    return report(
        read.results,
        [d.spec for d in read.plan.designs],
        tasks=_actions_of(read.plan),
        labels=labels,
        usage=read.usage,
        wall_s=read.wall_s,
        bootstrap=bootstrap,
    )


def _write(config: LabConfig, out: Path, measured: LabReport) -> None:
    if config.html:
        from iwr_bench.report.judge_eval_html import write_lab_html

        write_lab_html(config.html, measured)  # copies and shrinks the images it shows
    if config.out:
        (out / "report.json").write_text(measured.model_dump_json(indent=2) + "\n", encoding="utf-8")


def finish(session: LabSession) -> LabReport:
    """Measure the session's run from its store, write ``report.json`` (in a kept run folder) and
    the HTML report (when asked), and remove a temporary run folder."""
    try:
        config = session.config
        measured = report_run(session.out, labels=session.labels, bootstrap=config.bootstrap)
        _write(config, session.out, measured)
        return measured
    finally:
        if session.tmp is not None:
            session.tmp.cleanup()


class LabIncomplete(UserError):
    """The evaluation's run stopped before every case was judged (resume it)."""


async def evaluate_async(
    designs: DesignInput | Sequence[DesignInput] = (),
    config: LabConfig | None = None,
    **options: Any,
) -> LabReport:
    """:func:`evaluate` inside a running event loop (anyio, asyncio backend)."""
    session = await anyio.to_thread.run_sync(partial(prepare, designs, config, **options))
    try:
        outcome = await session.engine.run()
    except BaseException:
        if session.tmp is not None:
            session.tmp.cleanup()
        raise
    if outcome.status != "completed":
        if session.tmp is not None:
            session.tmp.cleanup()
        raise LabIncomplete(
            f"the evaluation {outcome.status} ({outcome.message or 'stopped'}); "
            f"continue it with resume=True, out={session.out}"
        )
    return await anyio.to_thread.run_sync(finish, session)


def evaluate(
    designs: DesignInput | Sequence[DesignInput] = (),
    config: LabConfig | None = None,
    **options: Any,
) -> LabReport:
    """Judge every case with every design on the engine, then measure them: ``iwr judges eval`` as a
    function.

    Args:
        designs: ``--design`` texts (``"heuristic"``, ``"assertions=llm,model=M,label=L"``), run files
            (``.toml``) or specs, or one of them; none given: ``heuristic``.
        config: the other options (:class:`LabConfig`).
        **options: :class:`LabConfig` fields, over ``config``'s (``only="102"``, ``repeat=2``, ...).

    Returns:
        The report ``iwr judges eval --json`` prints; also written to ``out/report.json`` and
        ``html`` when set.

    Raises:
        UserError: one line: a bad design, option, task id, ``mutant.json`` or labels file, before any
            page is judged.
        LabIncomplete: the run stopped before its end (``resume=True`` with the same ``out`` goes on).
    """
    return anyio.run(partial(evaluate_async, designs, config, **options))
