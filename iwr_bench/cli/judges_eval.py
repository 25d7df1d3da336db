"""``iwr judges eval``: judge pages whose first failure is known with one or more designs, and measure them.

Designs (``--design``, repeatable; README "Measuring a judge"): a bare name (``heuristic``,
``llm``), ``grounder=NAME,assertions=NAME`` with ``grounder.OPTION=VALUE`` options and
``model=``/``votes=``/``label=``, or a run file (``.toml``) whose ``plugins`` and ``[judge]``
make the design. Every design is built before any page is opened, so a bad name or option is one
line and nothing else.

The evaluation is a run of the engine (:mod:`iwr_bench.lab`): ``--out`` is its run folder (store,
pages, evaluations, ``report.json``), so it resumes (``--resume``), shows in the TUI (``--tui``),
keeps to the limits and deadlines, and runs on Ray (``--backend ray``); ``--report`` measures a
run folder again without judging. This module parses the options into a
:class:`~iwr_bench.lab.LabConfig` and prints; preparing, judging and measuring are
:func:`iwr_bench.lab.prepare` and :func:`iwr_bench.lab.finish`, the Python API's own steps, so both
give one report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from iwr_bench.cli._common import add_accept_changed, add_display, drive, pick_display, session_end
from iwr_bench.cli.options import add_judge_calls, add_pages_at_once, defaults
from iwr_bench.errors import UserError
from iwr_bench.lab import LabConfig, finish, prepare, report_run
from iwr_bench.report.judge_eval import LabReport
from iwr_bench.report.lab_rows import (
    action_type_rows,
    agreement_rows,
    human_rows,
    kind_rows,
    mcnemar_rows,
    method_note,
    score_rows,
    undetermined_rows,
    wrong_rows,
)
from iwr_bench.report.lab_stats import Bootstrap
from iwr_bench.report.render import print_rows


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
    add_pages_at_once(p, "--jobs")
    p.add_argument(
        "--case-timeout",
        type=float,
        metavar="S",
        help=f"one replay's limit (default {defaults().limits.judge_timeout_s:g} s, a run's)",
    )
    add_judge_calls(p)
    p.add_argument(
        "--no-judge-cache", action="store_true", help="do not reuse judge-model answers across runs"
    )
    p.add_argument(
        "--backend",
        default="in-process",
        metavar="NAME",
        help="where replays run: in-process (default), ray, or a backend a plugin registers",
    )
    p.add_argument("--ray-address", default="", metavar="HOST:PORT", help="a Ray cluster's head")
    p.add_argument(
        "--out",
        type=Path,
        help="the evaluation's run folder: store, pages, evaluations, screenshots, report.json "
        "(default: a temporary folder, removed)",
    )
    p.add_argument("--resume", action="store_true", help="continue the evaluation stored in --out")
    p.add_argument("--retry-failed", action="store_true", help="on resume, also judge failed jobs again")
    add_accept_changed(p)
    p.add_argument(
        "--report", action="store_true", help="measure the evaluation in --out again; judge nothing"
    )
    add_display(p, "watch the judging in the terminal UI")
    p.add_argument(
        "--html", type=Path, metavar="FILE", help="write the HTML report (images in img/ beside it)"
    )
    _add_measure_options(p)
    p.add_argument("--json", action="store_true", help="print everything measured as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.set_defaults(func=cmd_eval)


def _add_measure_options(p: argparse.ArgumentParser) -> None:
    """The options of the measurement: human labels and the bootstrap intervals."""
    p.add_argument(
        "--labels",
        type=Path,
        metavar="FILE",
        help="human labels of single actions (JSON Lines: task_id, case, index, label pass|fail); "
        "reports each design's agreement and kappa with them",
    )
    p.add_argument(
        "--resamples",
        type=int,
        default=2000,
        metavar="N",
        help="bootstrap resamples per interval (default 2000)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap intervals (default 0)")


def _print(report: LabReport) -> None:
    console = Console()
    print_rows(console, score_rows(report), "iwr judges eval: per design")
    print_rows(console, undetermined_rows(report), "undetermined answers: as judged, as wrong, left out")
    print_rows(console, kind_rows(report), "accuracy by case kind")
    if any(s.by_action_type for s in report.scores):
        print_rows(console, action_type_rows(report), "per-action accuracy by action type")
    if report.agreements:
        print_rows(console, mcnemar_rows(report), "McNemar's exact test on case accuracy (cases both judged)")
        print_rows(console, agreement_rows(report), "agreement between designs (actions both executed)")
    if report.labels is not None:
        src = report.labels
        title = (
            f"agreement with human labels ({src.file}: {src.labels} labels, "
            f"{src.without_case} on no judged action)"
        )
        print_rows(console, human_rows(report), title)
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
    console.print(method_note(report), markup=False)


def config_from(args: argparse.Namespace) -> LabConfig:
    """The :class:`LabConfig` of the command's options (the limits not given: those of a run)."""
    limits = defaults().limits
    pages = limits.browser_pages if args.pages_at_once is None else args.pages_at_once
    judge_calls = limits.judge_calls if args.judge_calls is None else args.judge_calls
    if args.repeat < 1 or pages < 1 or judge_calls < 1:
        raise UserError("--repeat, --pages-at-once and --judge-calls take a number of at least 1")
    if args.resamples < 100 or args.seed < 0:
        raise UserError("--resamples takes a number of at least 100, --seed one of at least 0")
    if args.ray_address and args.backend != "ray":
        raise UserError("--ray-address joins a Ray cluster: add --backend ray")
    given = {"case_timeout_s": args.case_timeout} if args.case_timeout is not None else {}
    return LabConfig(
        **given,
        tasks=args.tasks,
        only=args.only,
        cases=args.cases,
        references=not args.no_references,
        labels=args.labels,
        repeat=args.repeat,
        pages_at_once=pages,
        judge_calls=judge_calls,
        judge_cache=not args.no_judge_cache,
        backend=args.backend,
        ray_address=args.ray_address,
        plugins=args.plugin,
        out=args.out,
        resume=args.resume,
        retry_failed=args.retry_failed,
        accept_changed_plugins=args.accept_changed_plugins,
        html=args.html,
        bootstrap=Bootstrap(resamples=args.resamples, seed=args.seed),
    )


def _measured(args: argparse.Namespace) -> LabReport | int:
    """The report: of the run in ``--out`` (``--report``), or of a new (or resumed) evaluation;
    an exit status when the run stopped before its end."""
    config = config_from(args)
    if args.report:
        if args.out is None:
            raise UserError("--report measures the evaluation in --out: give --out")
        return report_run(args.out, labels=config.labels, bootstrap=config.bootstrap)
    display = pick_display(args.display, quiet=args.quiet, plugins=config.plugins)
    session = prepare(args.design, config)
    outcome = drive(session.engine, display)
    if outcome.status != "completed":
        if session.tmp is not None:
            session.tmp.cleanup()
            print("(an evaluation without --out cannot be resumed)", file=sys.stderr)
        return session_end(outcome, "judges eval", session.out)
    return finish(session)


def cmd_eval(args: argparse.Namespace) -> int:
    """Judge every case with every design, then print (and write) the measurement."""
    measured = _measured(args)
    if isinstance(measured, int):
        return measured
    if args.json:
        print(measured.model_dump_json(indent=2))
    else:
        _print(measured)
        if args.html:
            print(f"HTML report: {args.html}")
        if args.out:
            print(f"run folder: {args.out} (iwr judges eval --out {args.out} --report measures it again)")
    return 0
