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
        help="leaderboard, breakdowns and an HTML evidence report of a run (two runs: compare them)",
    )
    p.add_argument(
        "runs", type=Path, nargs="+", metavar="RUN_DIR", help="one run, or two to compare (A then B)"
    )
    p.add_argument(
        "--out", type=Path, help="report folder (default RUN_DIR/report, or RUN_B/compare for two)"
    )
    p.add_argument("--no-html", action="store_true", help="tables and plots only")
    p.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    """Write the report files and print the tables."""
    from iwr_bench.report import build_report, compare_runs

    if len(args.runs) > 2:
        raise UserError("iwr report takes one run folder, or two to compare")
    console = Console()
    if len(args.runs) == 2:
        out = args.out or args.runs[1] / "compare"
        compare_runs(args.runs[0], args.runs[1], out, console)
    else:
        out = args.out or args.runs[0] / "report"
        build_report(args.runs[0], out, console, html=not args.no_html)
    return 0
