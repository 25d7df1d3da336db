"""``iwr tasks``: validate, list, fetch and prepare task sets in the official layout."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from iwr_bench.cli._common import Subparsers
from iwr_bench.cli.prepare import add_metric_options, cmd_prepare
from iwr_bench.dataset.fetch import DEFAULT_REPO, fetch_dataset
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.dataset.summary import SuiteTotals, TaskSummary
from iwr_bench.dataset.validate import validate


def register(sub: Subparsers) -> None:
    """Add ``iwr tasks validate|list|fetch|prepare``."""
    tasks = sub.add_parser("tasks", help="validate, list or download task sets")
    tsub = tasks.add_subparsers(dest="tasks_command", metavar="ACTION", required=True)

    p = tsub.add_parser("validate", help="check every task and print every problem")
    p.add_argument("path", type=Path, help="dataset root, .jsonl file or one task folder")
    p.add_argument("--strict", action="store_true", help="treat warnings as errors")
    p.add_argument("--quick", action="store_true", help="skip decoding videos and images")
    p.add_argument("--json", action="store_true", help="print problems as JSON lines")
    p.add_argument("--replay", action="store_true", help="also judge each reference page: it must pass")
    p.set_defaults(func=cmd_validate)

    p = tsub.add_parser("list", help="table of tasks with counts and taxonomy, plus totals")
    p.add_argument("path", type=Path, help="dataset root, .jsonl file or one task folder")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_list)

    p = tsub.add_parser("fetch", help="download the official dataset (needs internet)")
    p.add_argument("--dest", type=Path, default=Path("data/iwr-bench"), help="where to put it")
    p.add_argument("--repo", default=DEFAULT_REPO, help=f"hub dataset id (default {DEFAULT_REPO})")
    p.add_argument("--revision", default=None, help="branch, tag or commit")
    p.set_defaults(func=cmd_fetch)

    p = tsub.add_parser(
        "prepare", help="compute each checkpoint's OCR text and embedding once and store them with the task"
    )
    p.add_argument(
        "dataset", help="dataset root, .jsonl file or one task folder; `builtin`: the built-in suite"
    )
    add_metric_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_prepare)


def cmd_validate(args: argparse.Namespace) -> int:
    """Print every problem; exit 0 only when there is no error (and no warning with --strict)."""
    task_set = load_tasks(args.path)
    problems = validate(task_set, check_media=not args.quick)
    errors = sum(p.severity == "error" for p in problems)
    warnings = len(problems) - errors
    if args.json:
        for p in problems:
            print(p.model_dump_json())
    else:
        for p in problems:
            print(p.format())
        bad = {p.task_id for p in problems if p.severity == "error"}
        n = len(task_set.tasks)
        print(
            f"{task_set.source}: {n} task(s) read, {n - len(bad & {t.id for t in task_set.tasks})} valid; "
            f"{errors} error(s), {warnings} warning(s)"
        )
    if args.replay:
        from iwr_bench.cli.record import print_proofs  # loads the judges only when asked

        errors += print_proofs(task_set)
    return 1 if errors or (args.strict and warnings) else 0


def cmd_list(args: argparse.Namespace) -> int:
    """Print the task table and totals."""
    task_set = load_tasks(args.path)
    rows = [TaskSummary.of(t) for t in task_set.tasks]
    totals = SuiteTotals.of(rows)
    if args.json:
        print(json.dumps({"tasks": [r.model_dump() for r in rows], "totals": totals.model_dump()}, indent=2))
        return 0
    console = Console(width=None if sys.stdout.isatty() else 120)
    table = Table(title=f"{task_set.source}", show_footer=True)
    columns = ["id", "level", "visual", "domain", "resolution", "actions", "flagged", "assertions", "types"]
    footer = [f"{totals.tasks} tasks", "", "", "", f"{totals.mobile} mobile", str(totals.actions)]
    footer += [str(totals.flagged), str(totals.assertions), ""]
    for name, foot in zip(columns, footer, strict=True):
        numeric = name in ("id", "actions", "flagged", "assertions")
        table.add_column(name, footer=foot, justify="right" if numeric else "left")
    for r in rows:
        types = " ".join(f"{k}:{v}" for k, v in sorted(r.action_types.items()))
        res = r.resolution + (" m" if r.environment == "mobile" else "")
        table.add_row(
            str(r.id),
            r.level,
            r.visual_level,
            r.domain,
            res,
            str(r.actions),
            str(r.flagged),
            str(r.assertions),
            types,
        )
    console.print(table)
    share = (lambda k: f"{100 * k / totals.actions:.0f}%") if totals.actions else (lambda k: "-")
    console.print(
        f"actions: {totals.actions} ({', '.join(f'{k} {v}' for k, v in totals.action_types.items())}); "
        f"visually flagged {totals.flagged} ({share(totals.flagged)}); "
        f"with assertions {totals.assertions} ({share(totals.assertions)})"
    )
    console.print(
        "levels: "
        + ", ".join(f"{k} {v}" for k, v in totals.levels.items())
        + "; visual: "
        + ", ".join(f"{k} {v}" for k, v in totals.visual_levels.items())
        + "; domains: "
        + ", ".join(f"{k} {v}" for k, v in totals.domains.items())
    )
    if task_set.problems:
        console.print(
            f"[yellow]{len(task_set.problems)} record(s) could not be read; run `iwr tasks validate`[/]"
        )
    return 0


def cmd_fetch(args: argparse.Namespace) -> int:
    """Download the official dataset."""
    root = fetch_dataset(args.dest, repo=args.repo, revision=args.revision)
    print(f"dataset ready at {root}; try: iwr tasks validate {root}")
    return 0
