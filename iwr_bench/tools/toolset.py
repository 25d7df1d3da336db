"""The browser tools as a pydantic-ai ``FunctionToolset``, generated from
:data:`~iwr_bench.tools.surface.TOOLS`.

Misuse (:class:`~iwr_bench.tools.errors.ToolRetry`) becomes ``ModelRetry`` so the model can try
again; a :class:`~iwr_bench.tools.errors.PageFailure` propagates and ends the run.

What the model reads is the same on every run of the same page: the page server's origin (a new
port each time) reads as :data:`~iwr_bench.tools.models.PAGE_ORIGIN`, and how long an action took
to settle is left out. Two runs, or a run and its resume, then ask the same questions, so answers
kept by request serve the second (nothing is paid twice).

How the model reads a result: an action's (click, type_text, press, scroll, hover) as a dict, with
a screenshot of the page after it when asked for; a screenshot as a line naming the viewport's size
with the PNG; ``text_snapshot``'s as its text alone; any other record as the record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic_ai import BinaryContent, FunctionToolset, ModelRetry, ToolReturn

from iwr_bench.tools.errors import ToolRetry
from iwr_bench.tools.models import ActionResult, TextSnapshot, stable_origin
from iwr_bench.tools.surface import TOOLS, PageToolsProtocol, ToolSpec

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


def model_returns(spec: ToolSpec) -> Any:
    """The return type of ``spec``'s tool in the toolset (what the model reads, see the module doc)."""
    if spec.text_only:
        return str
    if spec.acts:
        return ToolReturn | dict[str, Any]
    if spec.result is bytes:
        return ToolReturn
    if issubclass(spec.result, BaseModel):
        return spec.result
    raise TypeError(f"the toolset cannot show a {spec.result.__name__} result (tool {spec.name!r})")


def build_toolset(
    tools: PageToolsProtocol, *, screenshot_after_actions: bool = False
) -> FunctionToolset[Any]:
    """A toolset with every tool of :data:`~iwr_bench.tools.surface.TOOLS` (``observe``,
    ``text_snapshot``, ``click``, ``type_text``, ``press``, ``scroll``, ``hover``, ``screenshot``
    and ``page_state``) over ``tools``.

    Args:
        tools: The page to act on.
        screenshot_after_actions: Attach a screenshot to every action's result.
    """
    toolset: FunctionToolset[Any] = FunctionToolset(sequential=True)

    # the page server's, where the tab says (the Tab protocol does not promise it)
    origin = str(getattr(tools.tab, "origin", ""))

    def seen(result: BaseModel) -> dict[str, Any]:
        return model_view(result, origin)

    async def with_shot(result: ActionResult) -> ToolReturn | dict[str, Any]:
        if not screenshot_after_actions:
            return seen(result)
        png = await _retryable(tools.screenshot())
        return ToolReturn(return_value=seen(result), content=[BinaryContent(png, media_type="image/png")])

    async def shown(spec: ToolSpec, result: Any) -> Any:
        if spec.text_only:
            assert isinstance(result, TextSnapshot)
            return stable_origin(result.text, origin)
        if isinstance(result, ActionResult):
            return await with_shot(result)
        if isinstance(result, bytes):
            vp = tools.tab.viewport
            return ToolReturn(
                return_value=f"screenshot of the {vp.width}x{vp.height} viewport",
                content=[BinaryContent(result, media_type="image/png")],
            )
        assert isinstance(result, BaseModel)
        return type(result).model_validate(seen(result))

    def bind(spec: ToolSpec) -> Callable[..., Awaitable[Any]]:
        async def body(**kwargs: Any) -> Any:
            method: Callable[..., Awaitable[Any]] = getattr(tools, spec.method)
            return await shown(spec, await _retryable(method(**kwargs)))

        return body

    for spec in TOOLS:
        toolset.add_function(spec.function(bind(spec), model_returns(spec)), takes_ctx=False, name=spec.name)
    return toolset
