"""``iwr record``: make a task in the official layout from a site and an action script."""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from iwr_bench.cli._common import Subparsers
from iwr_bench.dataset.layout import load_tasks
from iwr_bench.dataset.recorder import RecordConfig, record
from iwr_bench.dataset.script import load_script
from iwr_bench.dataset.validate import validate_task


def register(sub: Subparsers) -> None:
    """Add ``iwr record``."""
    p = sub.add_parser("record", help="record a reference site + action script as a task")
    p.add_argument("site", type=Path, help="folder with the site's index.html and files")
    p.add_argument("script", type=Path, help="action script (YAML or JSON)")
    p.add_argument("--out", type=Path, required=True, help="dataset root to write into")
    p.add_argument("--stem", default="data", help="name of the jsonl file and task folder (default data)")
    p.add_argument("--fps", type=int, default=10, help="video frame rate (default 10)")
    p.set_defaults(func=cmd_record)


def cmd_record(args: argparse.Namespace) -> int:
    """Record one task, then validate it."""
    script = load_script(args.script)
    folder = anyio.run(
        lambda: record(args.site, script, args.out, stem=args.stem, config=RecordConfig(fps=args.fps))
    )
    task = load_tasks(folder).by_id(script.id)
    problems = validate_task(task)
    for p in problems:
        print(p.format())
    counts = f"{len(task.checkpoints)} checkpoints, {len(task.asset_files)} assets"
    print(f"recorded task {script.id} into {folder}: {counts}")
    return 1 if any(p.severity == "error" for p in problems) else 0
