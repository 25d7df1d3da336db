"""``iwr mcp serve``: the browser tools as an MCP server over stdio, on one sandboxed page."""

from __future__ import annotations

import argparse
from pathlib import Path

from iwr_bench.cli._common import Subparsers
from iwr_bench.errors import UserError


def register(sub: Subparsers) -> None:
    """Register ``iwr mcp`` and its ``serve`` sub-command."""
    parser = sub.add_parser("mcp", help="serve the browser tools over MCP")
    inner = parser.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND")
    serve = inner.add_parser("serve", help="serve one page's browser tools over stdio")
    serve.add_argument("--page", required=True, help="HTML file, or a folder holding index.html")
    serve.add_argument("--assets", default=None, help="folder of the task's assets")
    serve.add_argument("--resolution", default="1280x720", help="viewport as WIDTHxHEIGHT (default 1280x720)")
    serve.add_argument("--settle", choices=("stable", "fixed"), default="stable", help="settling mode")
    serve.add_argument("--action-timeout", type=float, default=10.0, help="seconds per tool call")
    serve.set_defaults(func=_serve)

    def usage(_args: argparse.Namespace) -> int:
        parser.print_help()
        return 2

    parser.set_defaults(func=usage)


def _serve(args: argparse.Namespace) -> int:
    from iwr_bench.tools.mcp_server import build_mcp_server
    from iwr_bench.tools.models import Limits, PageSpec, SettleConfig, Viewport
    from iwr_bench.tools.pool import PoolConfig

    page = Path(args.page)
    if not page.exists():
        raise UserError(f"page not found: {page} (pass an HTML file or a folder with index.html)")
    if page.is_dir() and not (page / "index.html").is_file():
        raise UserError(f"{page} has no index.html")
    if args.assets is not None and not Path(args.assets).is_dir():
        raise UserError(f"assets folder not found: {args.assets}")
    try:
        viewport = Viewport.parse(args.resolution)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    spec = PageSpec(page=str(page), assets_dir=args.assets, viewport=viewport)
    config = PoolConfig(
        size=1, settle=SettleConfig(mode=args.settle), limits=Limits(action_timeout=args.action_timeout)
    )
    build_mcp_server(spec, config).run(transport="stdio")
    return 0
