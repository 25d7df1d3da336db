"""``iwr demo``: the offline main job on the built-in suite.

Today it validates and lists the built-in suite (or, when no recorded suite ships, a
synthetic one it draws). It will run generation and judging in one go once the engine
(``iwr run``) exists; it never prints scores it did not compute.
"""

from __future__ import annotations

import argparse
from importlib import resources
from pathlib import Path

from iwr_bench.cli._common import Subparsers
from iwr_bench.cli.tasks import cmd_list, cmd_validate
from iwr_bench.dataset.synthetic import build_task_set


def builtin_suite() -> Path | None:
    """Path of the built-in suite's ``data.jsonl``, when the package ships one."""
    path = Path(str(resources.files("iwr_bench"))) / "suites" / "sample" / "data.jsonl"
    return path if path.is_file() else None


def register(sub: Subparsers) -> None:
    """Add ``iwr demo``."""
    p = sub.add_parser("demo", help="run the offline main job on the built-in suite")
    p.add_argument("--out", type=Path, default=Path("build/demo"), help="working folder")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    """Validate and list the built-in suite."""
    suite = builtin_suite()
    if suite is None:
        print("No recorded suite ships yet; drawing a synthetic two-task set in the official layout.")
        suite = build_task_set(args.out / "synthetic")
    print(f"Suite: {suite}\n")
    rc = cmd_validate(argparse.Namespace(path=suite, strict=False, quick=False, json=False))
    print()
    cmd_list(argparse.Namespace(path=suite, json=False))
    print(
        "\nThe one-command pipeline (iwr run) is not built yet, so no scores are shown here. To score "
        "pages now: iwr generate --tasks <suite> --model oracle --out build/pages, then "
        "iwr judge --tasks <suite> --pages build/pages --out build/judged (see README)."
    )
    return rc
