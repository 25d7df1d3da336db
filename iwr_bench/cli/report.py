"""``iwr report``: leaderboard, breakdowns, run comparison and the HTML evidence report."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from iwr_bench.cli._common import Subparsers
from iwr_bench.errors import UserError


def register(sub: Subparsers) -> None:
    """Add ``iwr report``."""
    p = sub.add_parser(
        "report",
        help="leaderboard, breakdowns and an HTML evidence report of a run (two runs: compare them); "
        "also reads a results tree written by the official scripts",
    )
    p.add_argument(
        "runs",
        type=Path,
        nargs="+",
        metavar="RUN_DIR",
        help="one run, or two to compare (A then B); either may be an official results tree "
        "(<id>/<model>/eval.json)",
    )
    p.add_argument(
        "--tasks",
        type=Path,
        help="the dataset (data.jsonl or its folder), for breakdowns of an official results tree",
    )
    p.add_argument(
        "--out", type=Path, help="report folder (default RUN_DIR/report, or RUN_B/compare for two)"
    )
    p.add_argument("--no-html", action="store_true", help="tables and plots only")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    """Write the report files and print the tables."""
    from iwr_bench.report import RunData, build_report, compare_runs
    from iwr_bench.report.official_tree import build_official_report, compare_with_tree, is_official_tree
    from iwr_bench.report.tables import leaderboard

    if len(args.runs) > 2:
        raise UserError("iwr report takes one run folder, or two to compare")
    console = Console()
    trees = [is_official_tree(path) for path in args.runs]
    if len(args.runs) == 1 and trees[0]:
        build_official_report(args.runs[0], args.out or args.runs[0] / "report", console, tasks=args.tasks)
        return 0
    if len(args.runs) == 2 and any(trees):
        if all(trees):
            raise UserError("iwr report compares a results tree with one of our runs, not two trees")
        tree, run = args.runs if trees[0] else args.runs[::-1]
        out = args.out or run / "compare"
        compare_with_tree(tree, leaderboard(RunData.load(run)), run.name, out, console)
        return 0
    if args.tasks is not None:
        raise UserError("--tasks is for an official results tree; a run folder knows its tasks")
    if len(args.runs) == 2:
        out = args.out or args.runs[1] / "compare"
        compare_runs(args.runs[0], args.runs[1], out, console)
    else:
        out = args.out or args.runs[0] / "report"
        build_report(args.runs[0], out, console, html=not args.no_html)
    return 0
