"""The browser tool surface, declared once.

Two declarations live here; every copy of the browser tools is built from them or checked
against them (``tests/tools/test_tool_surface.py``):

- :class:`PageToolsProtocol`: what judge code (the executor, the replay policies, step judges)
  calls on an open page's tools. :class:`~iwr_bench.tools.tools.PageTools` implements it in
  process and :class:`~iwr_bench.engine.backends.ray_remote.RemoteTools` on a Ray worker's page.
- :data:`TOOLS`: the tools models and MCP clients see, each with its description, its parameters
  and the :class:`PageToolsProtocol` method it calls.
  :func:`~iwr_bench.tools.toolset.build_toolset` (pydantic-ai) and
  :func:`~iwr_bench.tools.mcp_server.build_mcp_server` (MCP) generate their tools from it.

The names and descriptions models read are part of what judge-model answers are kept under and
what prompts name: change them only on purpose.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Protocol

from pydantic import Field

from iwr_bench.tools.models import (
    ActionResult,
    Observation,
    PageState,
    ScrollResult,
    TextSnapshot,
    Viewport,
    VisibleText,
)
from iwr_bench.tools.settle import SettleAfter

Direction = Literal["down", "up", "left", "right"]
"""Where ``scroll`` moves the page."""


class PageTabProtocol(Protocol):
    """The part of a page's tab that judge code reaches through ``tools.tab``: raw input sent as is,
    a script, and the viewport's size."""

    @property
    def viewport(self) -> Viewport:
        """The viewport's size."""
        ...

    async def key(self, kind: str, params: dict[str, Any]) -> None:
        """Send one key event (``keyDown``, ``keyUp``, ``char``, ``rawKeyDown``) with CDP params."""
        ...

    async def mouse(self, kind: str, x: float, y: float, *, button: str = "none", clicks: int = 0) -> None:
        """Send one mouse event (``mouseMoved``, ``mousePressed``, ``mouseReleased``)."""
        ...

    async def evaluate(
        self, expression: str, *, await_promise: bool = False, world: Literal["judge", "page"] = "judge"
    ) -> Any:
        """Evaluate ``expression`` in the page and return its JSON value."""
        ...


class PageToolsProtocol(Protocol):
    """The tools of one open page, as judge code uses them (see
    :class:`~iwr_bench.tools.tools.PageTools` for what each does)."""

    @property
    def tab(self) -> PageTabProtocol:
        """The page's tab, for raw input."""
        ...

    async def wait_settled(self, after: SettleAfter = "load", tick: bool | None = None) -> ActionResult:
        """Wait for the page to settle."""
        ...

    async def observe(self) -> Observation:
        """The interactive elements (indexed) and the visible text."""
        ...

    async def visible_text(self, max_runs: int = 400) -> VisibleText:
        """The text a person sees in the viewport, as runs with their boxes."""
        ...

    async def text_snapshot(self, max_chars: int = 4000) -> TextSnapshot:
        """The visible text as ``[index] role: text`` lines in reading order."""
        ...

    async def click(self, index: int, hit: bool = True) -> ActionResult:
        """Click element ``index``, then settle."""
        ...

    async def type(self, index: int, text: str, hit: bool = True) -> ActionResult:
        """Replace the content of element ``index`` with ``text``, then settle."""
        ...

    async def press(self, key: str) -> ActionResult:
        """Press a key or combination at the focus, then settle."""
        ...

    async def hover(self, index: int) -> ActionResult:
        """Move the mouse over element ``index``, then settle."""
        ...

    async def scroll(
        self, direction: Direction = "down", amount: float | None = None, region: Sequence[str] = ()
    ) -> ScrollResult:
        """Scroll the page or its main scroll container."""
        ...

    async def scroll_window(self) -> ScrollResult:
        """The official scripts' scroll."""
        ...

    async def screenshot(self) -> bytes:
        """PNG of the viewport."""
        ...

    async def page_state(self) -> PageState:
        """Scroll position, URL and what the sandbox recorded."""
        ...


def _async_methods(protocol: type) -> tuple[str, ...]:
    return tuple(name for name, value in vars(protocol).items() if inspect.iscoroutinefunction(value))


PAGE_METHODS: tuple[str, ...] = _async_methods(PageToolsProtocol)
"""The methods of :class:`PageToolsProtocol`, in order."""
TAB_METHODS: tuple[str, ...] = _async_methods(PageTabProtocol)
"""The methods of :class:`PageTabProtocol`, in order."""


@dataclass(frozen=True)
class ToolParam:
    """One parameter of a model-facing tool; the method the tool calls takes it under the same name."""

    name: str
    """Its name."""
    type: Any
    """Its type, as the method declares it."""
    description: str
    """What models read about it."""
    default: Any = inspect.Parameter.empty
    """Its default (``inspect.Parameter.empty``: none, it is required)."""

    def parameter(self, *, described: bool = True) -> inspect.Parameter:
        """As a parameter of a generated tool function; ``described`` puts the description into the
        type (a pydantic ``Field``), where pydantic-ai and MCP read it."""
        kind = Annotated[self.type, Field(description=self.description)] if described else self.type
        return inspect.Parameter(
            self.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=self.default, annotation=kind
        )


@dataclass(frozen=True)
class ToolSpec:
    """One tool models and MCP clients see."""

    name: str
    """What models call it (the pydantic-ai tool's name)."""
    method: str
    """The :class:`PageToolsProtocol` method it calls, with its parameters by name."""
    result: type
    """What that method returns (each surface shows it its own way: see
    :func:`~iwr_bench.tools.toolset.build_toolset` and
    :func:`~iwr_bench.tools.mcp_server.build_mcp_server`)."""
    description: str
    """What models read about it."""
    params: tuple[ToolParam, ...] = ()
    """Its parameters, in order."""
    mcp_name: str | None = None
    """The MCP tool's name where it is not :attr:`name` (``type``: what MCP clients have called the
    ``type_text`` tool from the start)."""
    text_only: bool = False
    """Models read only the result's ``text``; MCP clients get the whole record."""

    @property
    def mcp(self) -> str:
        """The MCP tool's name."""
        return self.mcp_name or self.name

    @property
    def acts(self) -> bool:
        """Whether it acts on the page (its result is an :class:`ActionResult`)."""
        return issubclass(self.result, ActionResult)

    def param(self, name: str) -> ToolParam:
        """The parameter called ``name``."""
        return next(p for p in self.params if p.name == name)

    def function(self, body: Callable[..., Awaitable[Any]], returns: Any) -> Callable[..., Awaitable[Any]]:
        """A tool function for a framework that reads signatures: this tool's name, parameters
        (described) and description, ``returns`` as its return type; it hands its arguments to
        ``body`` by keyword."""
        params = [p.parameter() for p in self.params]
        return tool_function(self.name, self.description, params, returns, body)


def tool_function(
    name: str,
    description: str,
    params: Sequence[inspect.Parameter],
    returns: Any,
    body: Callable[..., Awaitable[Any]],
) -> Callable[..., Awaitable[Any]]:
    """An async function called ``name``, with ``description`` as its docstring and the signature
    ``params -> returns``, that awaits ``body`` with its arguments by keyword (pydantic-ai and MCP
    call tools by keyword)."""

    async def tool(**kwargs: Any) -> Any:
        return await body(**kwargs)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = description
    tool.__annotations__ = {p.name: p.annotation for p in params} | {"return": returns}
    setattr(tool, "__signature__", inspect.Signature(list(params), return_annotation=returns))  # noqa: B010
    return tool


_INDEX = ToolParam("index", int, "Element index from the latest observe.")

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="observe",
        method="observe",
        result=Observation,
        description="List the page's interactive elements (with indices) and its visible text.",
    ),
    ToolSpec(
        name="text_snapshot",
        method="text_snapshot",
        result=TextSnapshot,
        description=(
            "The text a person sees in the viewport, one block per line in reading order:\n"
            "``[index] role: text`` inside interactive elements (indices for click/type/hover), "
            "``role: text``\nelsewhere. Hidden, covered and off-screen text is left out "
            "(scroll to read more)."
        ),
        params=(
            ToolParam("max_chars", int, "Longest snapshot returned; longer ones are cut with a note.", 4000),
        ),
        text_only=True,
    ),
    ToolSpec(
        name="click", method="click", result=ActionResult, description="Click an element.", params=(_INDEX,)
    ),
    ToolSpec(
        name="type_text",
        method="type",
        result=ActionResult,
        description="Replace the content of an input with text, typed key by key.",
        params=(_INDEX, ToolParam("text", str, "Text to type.")),
        mcp_name="type",
    ),
    ToolSpec(
        name="press",
        method="press",
        result=ActionResult,
        description="Press a key or combination at the focused element.",
        params=(ToolParam("key", str, "For example Enter, Escape, Tab, ArrowDown, a, Control+a."),),
    ),
    ToolSpec(
        name="scroll",
        method="scroll",
        result=ScrollResult,
        description=(
            "Scroll the page (or its main scroll container); the result says how many pixels it moved."
        ),
        params=(
            ToolParam("direction", Direction, "up, down, left or right.", "down"),
            ToolParam("amount", float | None, "Pixels; half the viewport when omitted.", None),
        ),
    ),
    ToolSpec(
        name="hover",
        method="hover",
        result=ActionResult,
        description="Move the mouse over an element.",
        params=(_INDEX,),
    ),
    ToolSpec(
        name="screenshot", method="screenshot", result=bytes, description="Take a screenshot of the viewport."
    ),
    ToolSpec(
        name="page_state",
        method="page_state",
        result=PageState,
        description="URL, scroll position and what the sandbox recorded (blocked requests, dialogs, popups).",
    ),
)
"""The tools models and MCP clients see, in the order they are listed."""


def tool_for(method: str) -> ToolSpec:
    """The tool that calls :class:`PageToolsProtocol` method ``method``."""
    return next(t for t in TOOLS if t.method == method)
