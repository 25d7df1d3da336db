"""``iwr judges replay``: the questions an earlier run asked its judges, asked of other designs.

No browser opens: each logged grounder and assertion-judge request (README "Measuring a judge")
is handed to each design, and the answers are compared with the run's. Designs are written as for
``iwr judges eval`` (``--design``), without a step judge (it needs the page).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

from iwr_bench.agents.judge.lab import build_design
from iwr_bench.engine.config import parse_only, plugin_refs
from iwr_bench.errors import UserError
from iwr_bench.lab import designs_from
from iwr_bench.registry import load_plugins
from iwr_bench.report.judge_replay import changed_rows, replay_rows, replay_run
from iwr_bench.report.render import print_rows


def add_replay(judges_sub: Any) -> None:
    """Add ``iwr judges replay`` to the ``iwr judges`` sub-commands."""
    p = judges_sub.add_parser(
        "replay",
        help="ask judge designs the questions an earlier run asked its judges (no browser, seconds)",
    )
    p.add_argument("run", type=Path, help="a run folder (iwr run, iwr judge, or iwr judges eval --out)")
    p.add_argument(
        "--design",
        action="append",
        default=[],
        metavar="SPEC",
        help="a design as for iwr judges eval (no step judge); repeatable (default: heuristic)",
    )
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE_OR_FILE", help="load first")
    p.add_argument("--only", help="comma-separated task ids to keep")
    p.add_argument("--calls", type=int, default=4, metavar="N", help="judge calls at once (default 4)")
    p.add_argument("--json", action="store_true", help="print everything measured as JSON")
    p.set_defaults(func=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> int:
    """Replay the run's logged judge calls with every design; print how the answers compare."""
    if not args.run.is_dir():
        raise UserError(f"{args.run} is not a run folder")
    if args.calls < 1:
        raise UserError("--calls takes a number of at least 1")
    load_plugins(plugin_refs(args.plugin, Path.cwd()))
    built = [build_design(spec) for spec in designs_from(args.design)]
    only = set(parse_only(args.only)) or None
    report = anyio.run(replay_run, args.run, built, only, args.calls)
    if args.json:
        print(report.model_dump_json(indent=2))
        return 0
    console = Console()
    title = f"iwr judges replay: {report.calls} logged calls of {report.jobs} replays"
    print_rows(console, replay_rows(report), title)
    changed = changed_rows(report)
    if changed:
        print_rows(console, changed, "answered otherwise than in the run")
    return 0
