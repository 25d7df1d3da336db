"""``iwr runs show`` (a run's manifest, status and summary) and ``iwr watch``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console

from iwr_bench.cli._common import Subparsers
from iwr_bench.engine.run import run_summary
from iwr_bench.engine.store import RunStore
from iwr_bench.errors import UserError
from iwr_bench.report.run_table import print_summary


def register(sub: Subparsers) -> None:
    """Add ``iwr runs show`` and ``iwr watch``."""
    runs = sub.add_parser("runs", help="inspect run folders")
    runs_sub = runs.add_subparsers(dest="runs_command", required=True, metavar="COMMAND")
    show = runs_sub.add_parser("show", help="manifest, status and summary of a run")
    show.add_argument("run_dir", type=Path)
    show.add_argument("--json", action="store_true", help="everything as JSON")
    show.set_defaults(func=cmd_runs_show)

    watch = sub.add_parser(
        "watch",
        help="follow a run (in progress or finished) in the terminal UI; its actions view (a) is "
        "the log of every action, filtered by verdict, failure or disagreement between designs",
    )
    watch.add_argument("run_dir", type=Path)
    watch.add_argument(
        "--actions",
        metavar="FILTER",
        help="open on the actions view with this filter: all, pass, fail, undetermined, error, failed, "
        "failure:CLASS, disagree, or words from the task, model, design or description (quoted, "
        "several words must all match)",
    )
    watch.set_defaults(func=cmd_watch)


def cmd_runs_show(args: argparse.Namespace) -> int:
    """Print a run's manifest, status and summary."""
    store = RunStore.open_run(args.run_dir, readonly=True)
    try:
        manifest = store.manifest()
        summary = run_summary(store)
        jobs = store.jobs()
    finally:
        store.close()
    counts: dict[str, int] = {}
    for j in jobs:
        counts[f"{j.stage}:{j.status}"] = counts.get(f"{j.stage}:{j.status}", 0) + 1
    if args.json:
        print(
            json.dumps({"manifest": manifest, "summary": summary, "jobs": counts}, indent=2, sort_keys=True)
        )
        return 0
    console = Console()
    console.print(f"[bold]{args.run_dir}[/bold]  status: {summary['status']}")
    console.print("jobs: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for key in (
        "created",
        "tasks_source",
        "task_ids",
        "models",
        "python",
        "os",
        "chromium",
        "policies",
        "judges",
        "sessions",
        "task_features",
    ):
        if key in manifest:
            console.print(f"{key}: {json.dumps(manifest[key])}")
    console.print("packages: " + ", ".join(f"{k} {v}" for k, v in manifest.get("packages", {}).items()))
    for b in manifest.get("metric_backends", []):
        sub = " (substitute)" if b.get("substitute") else ""
        console.print(f"metric {b['metric']}: {b.get('model') or b.get('engine')} on {b.get('device')}{sub}")
    summary["run_dir"] = str(args.run_dir)
    print_summary(summary)
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    """Attach the terminal UI to a run folder; it waits for a run that has not started yet."""
    run_dir: Path = args.run_dir
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"{run_dir} is not a folder")
    from iwr_bench.tui.app import watch

    watch(run_dir, actions_filter=args.actions)
    return 0
