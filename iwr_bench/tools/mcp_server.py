"""The browser tools as an MCP server, serving one sandboxed page.

Built on ``MCPServer`` from the ``mcp`` SDK (2.x; the FastMCP API under its new name): the installed
``fastmcp-slim`` lacks its ``server`` extra (``uncalled_for``, ``cyclopts``, ``jsonref``, ... are
not installed), while its client side works and drives this server in the tests.

The page is opened when the server starts (its lifespan) and closed when it stops. Misuse and page
failures come back to the client as tool errors with a one-line message.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError as McpToolError

from iwr_bench.tools.errors import PageFailure, ToolRetry
from iwr_bench.tools.models import ActionResult, Observation, PageSpec, PageState, ScrollResult, TextSnapshot
from iwr_bench.tools.pool import PagePool, PoolConfig
from iwr_bench.tools.tools import Direction, PageTools

T = TypeVar("T")


class _Holder:
    tools: PageTools | None = None

    def get(self) -> PageTools:
        if self.tools is None:
            raise McpToolError("the page is not open")
        return self.tools


async def _call(call: Awaitable[T]) -> T:
    try:
        return await call
    except ToolRetry as exc:
        raise McpToolError(str(exc)) from exc
    except PageFailure as exc:
        raise McpToolError(f"page failed ({exc.reason}): {exc}") from exc


def build_mcp_server(spec: PageSpec, config: PoolConfig | None = None) -> MCPServer[Any]:
    """An MCP server exposing the browser tools over the page ``spec``."""
    holder = _Holder()
    pool_config = (config or PoolConfig()).model_copy(update={"size": 1})

    @asynccontextmanager
    async def lifespan(_server: MCPServer[Any]) -> AsyncGenerator[dict[str, Any]]:
        async with PagePool(pool_config) as pool, pool.page(spec) as tools:
            holder.tools = tools
            try:
                yield {}
            finally:
                holder.tools = None

    mcp: MCPServer[Any] = MCPServer(
        "iwr-browser",
        log_level="WARNING",
        instructions="Tools over one sandboxed web page. Call observe first; indices change after actions.",
        lifespan=lifespan,
    )

    @mcp.tool()
    async def observe() -> Observation:
        """List the page's interactive elements (with indices) and its visible text."""
        return await _call(holder.get().observe())

    @mcp.tool()
    async def text_snapshot(max_chars: int = 4000) -> TextSnapshot:
        """The visible text in reading order, one block per line: "[index] role: text" inside interactive
        elements (the index click/type/hover take), "role: text" elsewhere; hidden and off-screen text
        left out, cut at max_chars characters with a note."""
        return await _call(holder.get().text_snapshot(max_chars))

    @mcp.tool()
    async def click(index: int) -> ActionResult:
        """Click the element with this index (from the latest observe)."""
        return await _call(holder.get().click(index))

    @mcp.tool(name="type")
    async def type_text(index: int, text: str) -> ActionResult:
        """Replace the content of the input with this index by typing text."""
        return await _call(holder.get().type(index, text))

    @mcp.tool()
    async def press(key: str) -> ActionResult:
        """Press a key or combination (Enter, Escape, Tab, ArrowDown, Control+a)."""
        return await _call(holder.get().press(key))

    @mcp.tool()
    async def scroll(direction: Direction = "down", amount: float | None = None) -> ScrollResult:
        """Scroll up/down/left/right by amount pixels (half the viewport by default)."""
        return await _call(holder.get().scroll(direction, amount))

    @mcp.tool()
    async def hover(index: int) -> ActionResult:
        """Move the mouse over the element with this index."""
        return await _call(holder.get().hover(index))

    @mcp.tool()
    async def screenshot() -> Image:
        """PNG screenshot of the viewport."""
        return Image(data=await _call(holder.get().screenshot()), format="png")

    @mcp.tool()
    async def page_state() -> PageState:
        """URL, scroll position and what the sandbox recorded (blocked requests, dialogs, popups, errors)."""
        return await _call(holder.get().page_state())

    return mcp
