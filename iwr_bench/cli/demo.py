"""``iwr demo``: the offline main job on the built-in suite, resumable in one fixed folder.

The demo is ``iwr run`` with no options (baselines oracle, screenshot and blank; offline judges
and metrics) in ``build/demo``. Run again, it continues that run (nothing finished is redone)
and shows its results; ``--fresh`` starts over.
"""

from __future__ import annotations

import argparse
import shutil
from importlib import resources
from pathlib import Path

from iwr_bench.cli._common import Subparsers, add_display
from iwr_bench.engine.store import STORE_NAME


def builtin_suite() -> Path | None:
    """Path of the built-in suite's ``data.jsonl``, when the package ships one."""
    path = Path(str(resources.files("iwr_bench"))) / "suites" / "sample" / "data.jsonl"
    return path if path.is_file() else None


def register(sub: Subparsers) -> None:
    """Add ``iwr demo``."""
    p = sub.add_parser("demo", help="run the offline main job on the built-in suite")
    p.add_argument("--out", type=Path, default=Path("build/demo"), help="run folder (default build/demo)")
    p.add_argument("--fresh", action="store_true", help="delete an earlier demo run and start over")
    p.add_argument("--only", help="comma-separated task ids to keep")
    add_display(p, "watch it in the terminal UI")
    p.set_defaults(func=cmd_demo)


def cmd_demo(args: argparse.Namespace) -> int:
    """Start or continue the demo run."""
    from iwr_bench.cli import main

    out: Path = args.out
    if args.fresh and out.exists():
        shutil.rmtree(out)
    if (out / STORE_NAME).is_file():
        print(f"continuing the demo run in {out} (--fresh starts over)")
        argv = ["run", "--resume", str(out)]
    else:
        argv = ["run", "--out", str(out), *(["--only", args.only] if args.only else [])]
    if args.display:
        argv += ["--display", args.display]
    return main(argv)
