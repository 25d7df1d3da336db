"""``iwr judges list``: every design that can be used, with its role, origin and options."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from iwr_bench.cli._common import Subparsers
from iwr_bench.engine.config import plugin_refs
from iwr_bench.errors import UserError
from iwr_bench.registry import Design, Option, designs, load_plugins, roles


def register(sub: Subparsers) -> None:
    """Add ``iwr judges``."""
    p = sub.add_parser("judges", help="the judge (and generator, metric, backend) designs that can be used")
    judges_sub = p.add_subparsers(dest="judges_command", required=True, metavar="COMMAND")
    ls = judges_sub.add_parser("list", help="every registered design: role, origin, options")
    ls.add_argument("--role", help=f"only this role ({', '.join(roles())})")
    ls.add_argument(
        "--plugin",
        action="append",
        default=[],
        metavar="MODULE_OR_FILE",
        help="import this module or .py file first; repeatable",
    )
    ls.add_argument("--json", action="store_true", help="as JSON")
    ls.set_defaults(func=cmd_list)
    from iwr_bench.cli.judges_eval import add_eval
    from iwr_bench.cli.judges_replay import add_replay

    add_eval(judges_sub)
    add_replay(judges_sub)


def _option(opt: Option) -> str:
    return f"{opt.name}: {opt.annotation}" + ("" if opt.required else f" = {opt.default!r}")


def _row(design: Design) -> tuple[str, str, str, str, str]:
    options = ", ".join(_option(o) for o in design.options) or "-"
    receives = ", ".join(design.receives) or "-"
    return design.role, design.name, design.origin.label(), options, receives


def cmd_list(args: argparse.Namespace) -> int:
    """Print the designs (entry points and ``--plugin`` loaded first)."""
    load_plugins(plugin_refs(args.plugin, Path.cwd()))
    if args.role and args.role not in roles():
        raise UserError(f"unknown role {args.role!r} (known: {', '.join(roles())})")
    found = designs(args.role)
    if args.json:
        print(json.dumps([d.model_dump(mode="json") for d in found], indent=2, default=repr))
        return 0
    table = Table(title="iwr judges list")
    for col in ("role", "name", "origin", "options", "receives"):
        table.add_column(col, overflow="fold")
    for design in found:
        table.add_row(*_row(design))
    Console(width=160).print(table)
    return 0
