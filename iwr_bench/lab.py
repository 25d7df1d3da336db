"""The judge lab as a Python API: what ``iwr judges eval`` does, returning what it measured.

::

    from iwr_bench import lab

    measured = lab.evaluate(["heuristic", "assertions=llm,model=openai:gpt-4o,label=llm"], only="101,102")
    for s in measured.scores:
        print(s.design, s.accuracy, s.accuracy_ci, s.strict_accuracy)

:func:`evaluate` is the code path of ``iwr judges eval``: the command parses its options into a
:class:`LabConfig` and calls :func:`evaluate_async`, and prints or writes (``--json``) the
:class:`~iwr_bench.report.judge_eval.LabReport` it returns, so the two cannot drift. :func:`report`
measures results judged before (a saved ``report.json``'s ``results``, say), without a browser.
The report's fields: ``docs/judge-eval-report.md``.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from iwr_bench.agents.judge.lab import (
    BuiltDesign,
    Case,
    CaseResult,
    DesignSpec,
    LabRun,
    RoleChoice,
    Usage,
    build_design,
    judge_cases,
    mutant_cases,
    parse_design,
    reference_cases,
    unique_labels,
)
from iwr_bench.dataset.layout import Task, load_tasks
from iwr_bench.engine.config import load_run_config, only_tasks, plugin_refs
from iwr_bench.errors import UserError
from iwr_bench.registry import load_plugins
from iwr_bench.report.judge_eval import ActionInfo, LabReport, lab_report, task_actions
from iwr_bench.report.lab_labels import HumanLabel, LabelFile, read_labels
from iwr_bench.report.lab_stats import Bootstrap
from iwr_bench.suites.build import MUTANTS, SAMPLE
from iwr_bench.tools.pool import PagePool, PoolConfig

__all__ = [
    "Bootstrap",
    "HumanLabel",
    "LabConfig",
    "LabReport",
    "LabelFile",
    "evaluate",
    "evaluate_async",
    "report",
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
    pages_at_once: int = Field(default=2, ge=1)
    """Browser pages at once."""
    case_timeout_s: float = Field(default=900.0, gt=0)
    """One replay's limit, in seconds."""
    plugins: list[str] = Field(default_factory=list[str])
    """Plugins to load first (modules or ``.py`` files, relative to the current folder)."""
    out: Path | None = None
    """Keep screenshots (``evidence/``) and ``report.json`` here (None: screenshots are discarded)."""
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


async def _judge_all(
    config: LabConfig,
    built: list[BuiltDesign],
    tasks: dict[int, Task],
    cases: list[Case],
    evidence: Path,
    on_result: Callable[[CaseResult], None] | None,
) -> tuple[list[CaseResult], dict[str, Usage], dict[str, float]]:
    results: list[CaseResult] = []
    usage: dict[str, Usage] = {}
    wall: dict[str, float] = {}
    run = LabRun(evidence=evidence, case_timeout_s=config.case_timeout_s)
    async with PagePool(PoolConfig(size=config.pages_at_once)) as pool:
        for design in built:
            start = time.perf_counter()
            async with design:
                for repeat in range(1, config.repeat + 1):
                    results += await judge_cases(design, repeat, cases, tasks, pool, run, on_result)
            wall[design.spec.label] = round(time.perf_counter() - start, 3)
            usage[design.spec.label] = design.usage()
    return results, usage, wall


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


async def evaluate_async(
    designs: DesignInput | Sequence[DesignInput] = (),
    config: LabConfig | None = None,
    *,
    on_result: Callable[[CaseResult], None] | None = None,
    **options: Any,
) -> LabReport:
    """:func:`evaluate` inside a running event loop (anyio, asyncio backend)."""
    config = _config(config, options)
    load_plugins(plugin_refs(config.plugins, Path.cwd()))
    specs = designs_from(designs)
    built = [build_design(spec) for spec in specs]  # every design is built before any page opens
    tasks, cases = cases_from(config)
    labels = read_labels(config.labels) if config.labels is not None else None
    with tempfile.TemporaryDirectory(prefix="iwr-judges-eval-") as tmp:
        evidence = config.out / "evidence" if config.out else Path(tmp)
        results, usage, wall = await _judge_all(config, built, tasks, cases, evidence, on_result)
        measure = partial(
            report,
            results,
            specs,
            tasks=tasks.values(),
            labels=labels,
            usage=usage,
            wall_s=wall,
            bootstrap=config.bootstrap,
        )
        measured = await anyio.to_thread.run_sync(measure)
        if config.html:
            from iwr_bench.report.judge_eval_html import write_lab_html

            await anyio.to_thread.run_sync(write_lab_html, config.html, measured)  # copies and shrinks images
    if config.out:
        config.out.mkdir(parents=True, exist_ok=True)
        (config.out / "report.json").write_text(measured.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return measured


def evaluate(
    designs: DesignInput | Sequence[DesignInput] = (),
    config: LabConfig | None = None,
    *,
    on_result: Callable[[CaseResult], None] | None = None,
    **options: Any,
) -> LabReport:
    """Judge every case with every design, then measure them: ``iwr judges eval`` as a function.

    Args:
        designs: ``--design`` texts (``"heuristic"``, ``"assertions=llm,model=M,label=L"``), run files
            (``.toml``) or specs, or one of them; none given: ``heuristic``.
        config: the other options (:class:`LabConfig`).
        on_result: called with every case once judged (progress).
        **options: :class:`LabConfig` fields, over ``config``'s (``only="102"``, ``repeat=2``, ...).

    Returns:
        The report ``iwr judges eval --json`` prints; also written to ``out/report.json`` and
        ``html`` when set.

    Raises:
        UserError: one line: a bad design, option, task id, ``mutant.json`` or labels file, before any
            page is judged.
    """
    return anyio.run(partial(evaluate_async, designs, config, on_result=on_result, **options))
