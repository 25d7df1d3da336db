"""Helpers shared by the sub-command modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TypeAlias, cast

import anyio

from iwr_bench import registry
from iwr_bench.engine.progress import Display
from iwr_bench.engine.run import Engine, RunOutcome
from iwr_bench.registry import load_plugins

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # pyright: ignore[reportPrivateUsage]
"""The object ``add_subparsers`` returns; each command module's ``register`` receives it."""


def add_skip_invalid(parser: argparse.ArgumentParser) -> None:
    """``--skip-invalid``, shared by the commands that read a task set (run, generate, judge)."""
    parser.add_argument(
        "--skip-invalid",
        action="store_true",
        help="go on without task records that cannot be read (they are counted); default: stop",
    )


def add_accept_changed(parser: argparse.ArgumentParser) -> None:
    """``--accept-changed-plugins`` (a resume goes on with a judge design whose code changed)."""
    parser.add_argument(
        "--accept-changed-plugins",
        action="store_true",
        help="on resume, go on although a judge design's code changed since the last session "
        "(the change is recorded in the manifest); default: refuse, naming the file",
    )


def add_session_flags(parser: argparse.ArgumentParser) -> None:
    """``--resume``, ``--retry-failed``, ``--tui`` and ``--quiet`` of ``iwr judge`` and ``iwr generate``."""
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the session stored in --out (finished pairs are skipped); default: start over",
    )
    parser.add_argument("--retry-failed", action="store_true", help="on resume, also redo pairs that failed")
    add_accept_changed(parser)
    add_display(parser, "watch the work in the terminal UI")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def add_display(parser: argparse.ArgumentParser, tui_help: str) -> None:
    """``--display NAME`` (a registered display) and its shorthand ``--tui``."""
    parser.add_argument(
        "--display",
        metavar="NAME",
        help="how to show the work: a registered display (built in: live, plain, tui; "
        "default: live on a terminal, plain otherwise)",
    )
    parser.add_argument(
        "--tui", dest="display", action="store_const", const="tui", help=f"{tui_help} (--display tui)"
    )


def pick_display(name: str | None, *, quiet: bool = False, plugins: Sequence[str] = ()) -> Display | None:
    """The display named ``name`` (None: the live table on a terminal, plain lines otherwise; no
    display with ``quiet``), built before the run folder is touched, ``plugins`` loaded first so a
    plugin's display can be named.

    Raises:
        UserError: one line: no display of that name, or one that cannot play the role.
    """
    if name is None and quiet:
        return None
    load_plugins(plugins)
    shown, _ = registry.build("display", name or ("live" if sys.stderr.isatty() else "plain"))
    return cast("Display", shown)


def drive(engine: Engine, display: Display | None) -> RunOutcome:
    """Run a prepared engine to its end under ``display`` (None: nothing shown)."""
    return anyio.run(engine.run) if display is None else display.drive(engine)


def session_end(outcome: RunOutcome, command: str, out: Path) -> int:
    """The exit status of a judge or generate session (0: completed), with a line on stderr otherwise."""
    if outcome.status == "completed":
        return 0
    how = "stopped" if outcome.status == "cancelled" else f"failed ({outcome.message})"
    print(f"{command} {how}; continue it with: iwr {command} ... --out {out} --resume", file=sys.stderr)
    return 130 if outcome.status == "cancelled" else 1


OFFICIAL_CODE_HELP = (
    "a checkout of the authors' code: its prompts, read at run time (with --protocol official)"
)
"""Help of ``--official-code`` (``iwr run``, ``iwr generate``, ``iwr judge``)."""
