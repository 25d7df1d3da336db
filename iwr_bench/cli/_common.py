"""Helpers shared by the sub-command modules."""

from __future__ import annotations

import argparse
from typing import TypeAlias

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # pyright: ignore[reportPrivateUsage]
"""The object ``add_subparsers`` returns; each command module's ``register`` receives it."""


def add_skip_invalid(parser: argparse.ArgumentParser) -> None:
    """``--skip-invalid``, shared by the commands that read a task set (run, generate, judge)."""
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="go on without task records that cannot be read (they are counted); default: stop",
    )
