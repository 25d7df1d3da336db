"""The ``iwr`` command line.

Each sub-command lives in its own module exposing ``register(subparsers)``; the module sets
``func`` on its parser to a callable taking the parsed namespace and returning an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from iwr_bench.errors import UserError

# Modules under iwr_bench.cli that contribute sub-commands, in help order.
COMMAND_MODULES: tuple[str, ...] = (
    "tasks",
    "record",
    "demo",
    "run",
    "runs",
    "report",
    "generate",
    "judge",
    "judges",
    "mcp",
)


def build_parser() -> argparse.ArgumentParser:
    """Build the top-level parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="iwr",
        description="IWR-Bench: rebuild interactive web pages from video, judged in a real browser.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"iwr_bench.cli.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``iwr`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return int(func(args))
    except UserError as exc:
        print(f"iwr: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("iwr: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
