"""The browser tools as a pydantic-ai ``FunctionToolset``.

Misuse (:class:`~iwr_bench.tools.errors.ToolRetry`) becomes ``ModelRetry`` so the model can try
again; a :class:`~iwr_bench.tools.errors.PageFailure` propagates and ends the run.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

from pydantic_ai import BinaryContent, FunctionToolset, ModelRetry, ToolReturn

from iwr_bench.tools.errors import ToolRetry
from iwr_bench.tools.models import ActionResult, Observation, PageState, ScrollResult
from iwr_bench.tools.tools import Direction, PageTools

T = TypeVar("T")


async def _retryable(call: Awaitable[T]) -> T:
    try:
        return await call
    except ToolRetry as exc:
        raise ModelRetry(str(exc)) from exc


def build_toolset(tools: PageTools, *, screenshot_after_actions: bool = False) -> FunctionToolset[Any]:
    """A toolset with ``observe``, ``text_snapshot``, ``click``, ``type_text``, ``press``, ``scroll``,
    ``hover``, ``screenshot`` and ``page_state`` over ``tools``.

    Args:
        tools: The page to act on.
        screenshot_after_actions: Attach a screenshot to every action's result.
    """
    toolset: FunctionToolset[Any] = FunctionToolset(sequential=True)

    async def with_shot(result: ActionResult) -> ToolReturn | ActionResult:
        if not screenshot_after_actions:
            return result
        png = await _retryable(tools.screenshot())
        return ToolReturn(
            return_value=result.model_dump(), content=[BinaryContent(png, media_type="image/png")]
        )

    @toolset.tool_plain
    async def observe() -> Observation:
        """List the page's interactive elements (with indices) and its visible text."""
        return await _retryable(tools.observe())

    @toolset.tool_plain
    async def text_snapshot(max_chars: int = 4000) -> str:
        """The text a person sees in the viewport, one block per line in reading order:
        ``[index] role: text`` inside interactive elements (indices for click/type/hover), ``role: text``
        elsewhere. Hidden, covered and off-screen text is left out (scroll to read more).

        Args:
            max_chars: Longest snapshot returned; longer ones are cut with a note.
        """
        return (await _retryable(tools.text_snapshot(max_chars))).text

    @toolset.tool_plain
    async def click(index: int) -> ToolReturn | ActionResult:
        """Click an element.

        Args:
            index: Element index from the latest observe.
        """
        return await with_shot(await _retryable(tools.click(index)))

    @toolset.tool_plain
    async def type_text(index: int, text: str) -> ToolReturn | ActionResult:
        """Replace the content of an input with text, typed key by key.

        Args:
            index: Element index from the latest observe.
            text: Text to type.
        """
        return await with_shot(await _retryable(tools.type(index, text)))

    @toolset.tool_plain
    async def press(key: str) -> ToolReturn | ActionResult:
        """Press a key or combination at the focused element.

        Args:
            key: For example Enter, Escape, Tab, ArrowDown, a, Control+a.
        """
        return await with_shot(await _retryable(tools.press(key)))

    @toolset.tool_plain
    async def scroll(direction: Direction = "down", amount: float | None = None) -> ToolReturn | ScrollResult:
        """Scroll the page (or its main scroll container); the result says how many pixels it moved.

        Args:
            direction: up, down, left or right.
            amount: Pixels; half the viewport when omitted.
        """
        result = await _retryable(tools.scroll(direction, amount))
        shot = await with_shot(result)
        return result if isinstance(shot, ActionResult) else shot

    @toolset.tool_plain
    async def hover(index: int) -> ToolReturn | ActionResult:
        """Move the mouse over an element.

        Args:
            index: Element index from the latest observe.
        """
        return await with_shot(await _retryable(tools.hover(index)))

    @toolset.tool_plain
    async def screenshot() -> ToolReturn:
        """Take a screenshot of the viewport."""
        png = await _retryable(tools.screenshot())
        vp = tools.tab.viewport
        return ToolReturn(
            return_value=f"screenshot of the {vp.width}x{vp.height} viewport",
            content=[BinaryContent(png, media_type="image/png")],
        )

    @toolset.tool_plain
    async def page_state() -> PageState:
        """URL, scroll position and what the sandbox recorded (blocked requests, dialogs, popups)."""
        return await _retryable(tools.page_state())

    return toolset
