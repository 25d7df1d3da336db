"""The browser tools as a pydantic-ai ``FunctionToolset``.

Misuse (:class:`~iwr_bench.tools.errors.ToolRetry`) becomes ``ModelRetry`` so the model can try
again; a :class:`~iwr_bench.tools.errors.PageFailure` propagates and ends the run.

What the model reads is the same on every run of the same page: the page server's origin (a new
port each time) reads as :data:`~iwr_bench.tools.models.PAGE_ORIGIN`, and how long an action took
to settle is left out. Two runs, or a run and its resume, then ask the same questions, so answers
kept by request serve the second (nothing is paid twice).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_ai import BinaryContent, FunctionToolset, ModelRetry, ToolReturn

from iwr_bench.tools.errors import ToolRetry
from iwr_bench.tools.models import ActionResult, Observation, PageState, ScrollResult, stable_origin
from iwr_bench.tools.tools import Direction, PageTools

T = TypeVar("T")

_TIMINGS = frozenset({"settle_seconds"})
"""Fields that say how long something took: left out of what the model reads."""


def model_view(result: BaseModel, origin: str) -> dict[str, Any]:
    """A tool result as the model reads it (see the module doc)."""
    data = result.model_dump(mode="json", exclude=set(_TIMINGS & type(result).model_fields.keys()))
    return stable_origin(data, origin)


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

    origin = str(getattr(tools.tab, "origin", ""))  # the page server's (a remote tab may not say)

    def seen(result: BaseModel) -> dict[str, Any]:
        return model_view(result, origin)

    async def with_shot(result: ActionResult) -> ToolReturn | dict[str, Any]:
        if not screenshot_after_actions:
            return seen(result)
        png = await _retryable(tools.screenshot())
        return ToolReturn(return_value=seen(result), content=[BinaryContent(png, media_type="image/png")])

    @toolset.tool_plain
    async def observe() -> Observation:
        """List the page's interactive elements (with indices) and its visible text."""
        observation = await _retryable(tools.observe())
        return Observation.model_validate(seen(observation))

    @toolset.tool_plain
    async def text_snapshot(max_chars: int = 4000) -> str:
        """The text a person sees in the viewport, one block per line in reading order:
        ``[index] role: text`` inside interactive elements (indices for click/type/hover), ``role: text``
        elsewhere. Hidden, covered and off-screen text is left out (scroll to read more).

        Args:
            max_chars: Longest snapshot returned; longer ones are cut with a note.
        """
        snapshot = (await _retryable(tools.text_snapshot(max_chars))).text
        return stable_origin(snapshot, origin)

    @toolset.tool_plain
    async def click(index: int) -> ToolReturn | dict[str, Any]:
        """Click an element.

        Args:
            index: Element index from the latest observe.
        """
        return await with_shot(await _retryable(tools.click(index)))

    @toolset.tool_plain
    async def type_text(index: int, text: str) -> ToolReturn | dict[str, Any]:
        """Replace the content of an input with text, typed key by key.

        Args:
            index: Element index from the latest observe.
            text: Text to type.
        """
        return await with_shot(await _retryable(tools.type(index, text)))

    @toolset.tool_plain
    async def press(key: str) -> ToolReturn | dict[str, Any]:
        """Press a key or combination at the focused element.

        Args:
            key: For example Enter, Escape, Tab, ArrowDown, a, Control+a.
        """
        return await with_shot(await _retryable(tools.press(key)))

    @toolset.tool_plain
    async def scroll(
        direction: Direction = "down", amount: float | None = None
    ) -> ToolReturn | dict[str, Any]:
        """Scroll the page (or its main scroll container); the result says how many pixels it moved.

        Args:
            direction: up, down, left or right.
            amount: Pixels; half the viewport when omitted.
        """
        result: ScrollResult = await _retryable(tools.scroll(direction, amount))
        return await with_shot(result)

    @toolset.tool_plain
    async def hover(index: int) -> ToolReturn | dict[str, Any]:
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
        return PageState.model_validate(seen(await _retryable(tools.page_state())))

    return toolset
