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


COUNTER = """<!doctype html><html><body><h1>Counter</h1><p>Count: <span id="n">0</span></p>
<button onclick="const n = document.getElementById('n'); n.textContent = +n.textContent + 1">Increase</button>
<p style="display: none">Count: 99</p><div style="height: 3000px"></div><p>Footer text</p></body></html>"""


async def test_text_snapshot_tells_an_mcp_client_what_a_click_changed(
    write_page: Callable[..., Path],
) -> None:
    page = write_page(COUNTER)
    transport = StdioTransport(
        sys.executable,
        ["-m", "iwr_bench", "mcp", "serve", "--page", str(page.parent), "--resolution", "640x400"],
        env=dict(os.environ),
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    async with Client(transport, timeout=60) as client:
        before = (await client.call_tool("text_snapshot", {})).structured_content or {}
        lines = before["text"].splitlines()
        assert lines[:2] == ["heading: Counter", "paragraph: Count: 0"]
        button = next(line for line in lines if line.endswith("button: Increase"))
        index = int(button[1 : button.index("]")])  # "[0] button: Increase"
        await client.call_tool("click", {"index": index})

        after = (await client.call_tool("text_snapshot", {})).structured_content or {}
        assert "paragraph: Count: 1" in after["text"].splitlines()
        assert "99" not in after["text"] and "Footer text" not in after["text"]  # hidden, off-screen
        assert after["off_screen"] == 1 and "scroll to read" in after["text"]

        small = (await client.call_tool("text_snapshot", {"max_chars": 20})).structured_content or {}
        assert small["truncated"] and small["text"].startswith("heading: Counter\n[... cut at 20")
