"""``iwr mcp``: browser tools as an MCP server (filled in by the browser-tools work)."""

from __future__ import annotations

from iwr_bench.cli._common import Subparsers


def register(sub: Subparsers) -> None:
    """Register nothing yet; the browser-tools module replaces this file."""
    del sub
