"""An MCP client drives ``iwr mcp serve`` over stdio, end to end."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport
from mcp.types import ImageContent

pytestmark = [pytest.mark.browser, pytest.mark.anyio]

PAGE = """<html><body><h1 id="t">Before</h1>
<button onclick="document.getElementById('t').textContent = 'After'">Change</button>
<img src="__PLACEHOLDER_ASSETS_BASE_DIR__/dot.svg" alt="dot">
<script>fetch('https://example.org/track').catch(() => {});</script>
<div style="height: 2000px"></div></body></html>"""

DOT = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'


async def test_stdio_server_end_to_end(write_page: Callable[..., Path], tmp_path: Path) -> None:
    page = write_page(PAGE)
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "dot.svg").write_text(DOT, encoding="utf-8")
    transport = StdioTransport(
        sys.executable,
        [
            "-m",
            "iwr_bench",
            "mcp",
            "serve",
            "--page",
            str(page.parent),
            "--assets",
            str(assets),
            "--resolution",
            "800x600",
        ],
        env=dict(os.environ),
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    async with Client(transport, timeout=60) as client:
        names = {tool.name for tool in await client.list_tools()}
        assert {"observe", "click", "type", "press", "scroll", "hover", "screenshot", "page_state"} <= names

        obs = await client.call_tool("observe", {})
        elements = obs.structured_content["elements"] if obs.structured_content else []
        button = next(e for e in elements if e["tag"] == "button")
        await client.call_tool("click", {"index": button["index"]})
        assert "After" in (await client.call_tool("observe", {})).structured_content["text"]  # type: ignore[index]

        moved = await client.call_tool("scroll", {"direction": "down"})
        assert moved.structured_content is not None and moved.structured_content["moved_px"] == 300

        shot = await client.call_tool("screenshot", {})
        images = [c for c in shot.content if isinstance(c, ImageContent)]
        assert images and images[0].mime_type == "image/png"

        state = (await client.call_tool("page_state", {})).structured_content or {}
        assert any("example.org" in b["url"] for b in state["blocked_requests"])
        assert not any("dot.svg" in b["url"] for b in state["blocked_requests"])

        bad = await client.call_tool("click", {"index": 999}, raise_on_error=False)
        assert bad.is_error and "out of range" in str(bad.content[0])
