"""The browser tools as an MCP server, serving one sandboxed page.

Built on ``MCPServer`` from the ``mcp`` SDK (2.x; the FastMCP API under its new name): the installed
``fastmcp-slim`` lacks its ``server`` extra (``uncalled_for``, ``cyclopts``, ``jsonref``, ... are
not installed), while its client side works and drives this server in the tests.

The tools are generated from :data:`~iwr_bench.tools.surface.TOOLS` (the ``type_text`` tool is
called ``type`` here). Each answers the record its page-tools method returns, with its JSON schema
as the tool's output schema; ``screenshot`` answers a PNG image.

The page is opened when the server starts (its lifespan) and closed when it stops. Misuse and page
failures come back to the client as tool errors with a one-line message.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError as McpToolError

from iwr_bench.tools.errors import PageFailure, ToolRetry
from iwr_bench.tools.models import PageSpec
from iwr_bench.tools.pool import PagePool, PoolConfig
from iwr_bench.tools.surface import TOOLS, PageToolsProtocol, ToolSpec

T = TypeVar("T")


class _Holder:
    tools: PageToolsProtocol | None = None

    def get(self) -> PageToolsProtocol:
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


def mcp_returns(spec: ToolSpec) -> Any:
    """The return type of ``spec``'s MCP tool: its method's record, or an image for a screenshot."""
    return Image if spec.result is bytes else spec.result


def _bind(page: Callable[[], PageToolsProtocol], spec: ToolSpec) -> Callable[..., Awaitable[Any]]:
    async def body(**kwargs: Any) -> Any:
        method: Callable[..., Awaitable[Any]] = getattr(page(), spec.method)
        result = await _call(method(**kwargs))
        return Image(data=result, format="png") if isinstance(result, bytes) else result

    return body


def add_page_tools(mcp: MCPServer[Any], page: Callable[[], PageToolsProtocol]) -> None:
    """Add every tool of :data:`~iwr_bench.tools.surface.TOOLS` to ``mcp``, each calling its method
    on ``page()``: the open page's tools (it raises :class:`McpToolError` while none is open)."""
    for tool in TOOLS:
        function = tool.function(_bind(page, tool), mcp_returns(tool))
        mcp.add_tool(function, name=tool.mcp, description=tool.description)


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
    add_page_tools(mcp, holder.get)
    return mcp
