"""``iwr judges eval``: judge pages whose first failure is known with one or more designs, and measure them.

Designs (``--design``, repeatable; README "Measuring a judge"): a bare name (``heuristic``,
``llm``), ``grounder=NAME,assertions=NAME`` with ``grounder.OPTION=VALUE`` options and
``model=``/``votes=``/``label=``, or a run file (``.toml``) whose ``plugins`` and ``[judge]``
make the design. Every design is built before any page is opened, so a bad name or option is one
line and nothing else.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

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
from iwr_bench.report.judge_eval import LabReport, agreement_rows, lab_report, score_rows, wrong_rows
from iwr_bench.report.render import print_rows
from iwr_bench.suites.build import MUTANTS, SAMPLE
from iwr_bench.tools.pool import PagePool, PoolConfig


def add_eval(judges_sub: Any) -> None:
    """Add ``iwr judges eval`` to the ``iwr judges`` sub-commands."""
    p = judges_sub.add_parser(
        "eval",
        help="measure judge designs on pages whose first failure is known (the suite and its mutants)",
    )
    p.add_argument(
        "--design",
        action="append",
        default=[],
        metavar="SPEC",
        help="a design: NAME, 'grounder=NAME,assertions=NAME,grounder.OPT=V,model=M,label=L', "
        "or a run file .toml; repeatable (default: heuristic)",
    )
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE", help="load first")
    p.add_argument(
        "--tasks", type=Path, help="dataset root, .jsonl or task folder (default: the built-in suite)"
    )
    p.add_argument("--only", help="comma-separated task ids to keep")
    p.add_argument(
        "--cases",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="pages DIR/<id>/<name>/index.html with mutant.json expectations; repeatable "
        "(default with the built-in suite: its mutants)",
    )
    p.add_argument("--no-references", action="store_true", help="leave out the tasks' reference pages")
    p.add_argument("--repeat", type=int, default=1, metavar="N", help="judge every page N times per design")
    p.add_argument(
        "--pages-at-once",
        "--jobs",
        type=int,
        default=2,
        metavar="N",
        help="browser pages at once (default 2)",
    )
    p.add_argument("--case-timeout", type=float, default=900.0, metavar="S", help="one replay's limit (s)")
    p.add_argument("--out", type=Path, help="keep screenshots and report.json here (default: discarded)")
    p.add_argument(
        "--html", type=Path, metavar="FILE", help="write the HTML report (images in img/ beside it)"
    )
    p.add_argument("--json", action="store_true", help="print everything measured as JSON")
    p.add_argument("--quiet", action="store_true", help="no line per judged page")
    p.set_defaults(func=cmd_eval)


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


def designs_from(texts: list[str]) -> list[DesignSpec]:
    """The designs of ``--design`` options (run files read, names checked), with unique labels."""
    specs = [
        _from_run_file(Path(t)) if t.endswith(".toml") else parse_design(t) for t in texts or ["heuristic"]
    ]
    return unique_labels(specs)


def cases_from(args: argparse.Namespace) -> tuple[dict[int, Task], list[Case]]:
    """The tasks and the cases to judge.

    Raises:
        UserError: unknown task ids, a cases folder that is not one, a bad ``mutant.json``, no case.
    """
    source = args.tasks or SAMPLE
    tasks = only_tasks(load_tasks(source).tasks, args.only, source)
    cases = [] if args.no_references else reference_cases(tasks)
    roots = args.cases or ([MUTANTS] if args.tasks is None else [])
    for root in roots:
        cases.extend(mutant_cases(root, tasks))
    if not cases:
        raise UserError("no page to judge: no reference page and no --cases with mutant.json for these tasks")
    return {t.id: t for t in tasks}, cases


def _progress(result: CaseResult) -> None:
    found = result.error or (
        "IFS 100" if result.first_failure is None else f"step {result.first_failure} {result.reason}"
    )
    mark = "right" if result.correct else "WRONG"
    print(
        f"{result.design} #{result.repeat} task {result.task_id} {result.case}: {found} ({mark})",
        file=sys.stderr,
        flush=True,
    )


async def _judge_all(
    args: argparse.Namespace,
    built: list[BuiltDesign],
    tasks: dict[int, Task],
    cases: list[Case],
    evidence: Path,
) -> tuple[list[CaseResult], dict[str, Usage], dict[str, float]]:
    results: list[CaseResult] = []
    usage: dict[str, Usage] = {}
    wall: dict[str, float] = {}
    run = LabRun(evidence=evidence, case_timeout_s=args.case_timeout)
    on_result = None if args.quiet else _progress
    async with PagePool(PoolConfig(size=args.pages_at_once)) as pool:
        for design in built:
            start = time.perf_counter()
            async with design:
                for repeat in range(1, args.repeat + 1):
                    results += await judge_cases(design, repeat, cases, tasks, pool, run, on_result)
            wall[design.spec.label] = round(time.perf_counter() - start, 3)
            usage[design.spec.label] = design.usage()
    return results, usage, wall


def _print(report: LabReport) -> None:
    console = Console()
    print_rows(console, score_rows(report), "iwr judges eval: per design")
    if report.agreements:
        print_rows(console, agreement_rows(report), "agreement between designs (actions both executed)")
    wrong = wrong_rows(report)
    if wrong:
        print_rows(console, wrong, "cases judged wrong (first judging)")
    for pair in report.agreements:
        for d in pair.disagreements[:20]:
            console.print(
                f"{pair.a} vs {pair.b}: task {d.task_id} {d.case} action {d.index}: "
                f"{d.a.label()} vs {d.b.label()}",
                markup=False,
            )


def cmd_eval(args: argparse.Namespace) -> int:
    """Judge every case with every design, then print (and write) the measurement."""
    if args.repeat < 1 or args.pages_at_once < 1:
        raise UserError("--repeat and --pages-at-once take a number of at least 1")
    load_plugins(plugin_refs(args.plugin, Path.cwd()))
    specs = designs_from(args.design)
    built = [build_design(spec) for spec in specs]
    tasks, cases = cases_from(args)
    with tempfile.TemporaryDirectory(prefix="iwr-judges-eval-") as tmp:
        evidence = args.out / "evidence" if args.out else Path(tmp)
        results, usage, wall = anyio.run(_judge_all, args, built, tasks, cases, evidence)
        report = lab_report(specs, results, usage, wall)
        if args.html:
            from iwr_bench.report.judge_eval_html import write_lab_html

            write_lab_html(args.html, report)
    if args.out:
        (args.out / "report.json").write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        _print(report)
        if args.html:
            print(f"HTML report: {args.html}")
    return 0
