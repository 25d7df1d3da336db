"""The browser tool surface is declared once (:mod:`iwr_bench.tools.surface`) and every copy agrees
with it: the pydantic-ai toolset, the MCP server, :class:`PageTools` and the Ray proxy
(:class:`RemoteTools`, :class:`RemoteTab`).

Every test here fails when a tool or a method is added to one surface only: a tool the toolset or
the MCP server gets by hand (not from ``TOOLS``), a public method on ``PageTools`` or
``RemoteTools`` the protocol does not declare (or the other lacks), a protocol method either of
them lacks, or a tool in ``TOOLS`` whose method or parameters do not exist. The same for a
parameter's name, type or default, and for a result's type. No browser and no Ray are needed.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any, get_type_hints

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ImageContent
from pydantic import BaseModel, TypeAdapter
from pydantic_ai import ToolReturn
from pydantic_ai.tools import Tool

from iwr_bench.engine.backends.ray_remote import RemoteTab, RemoteTools
from iwr_bench.engine.backends.ray_workers import TOOL_CALLS, Answer
from iwr_bench.tools.browser import Tab
from iwr_bench.tools.mcp_server import add_page_tools, build_mcp_server
from iwr_bench.tools.models import (
    PAGE_ORIGIN,
    ActionResult,
    Observation,
    PageSpec,
    PageState,
    ScrollResult,
    TextSnapshot,
    Viewport,
)
from iwr_bench.tools.surface import (
    PAGE_METHODS,
    TAB_METHODS,
    TOOLS,
    Direction,
    PageTabProtocol,
    PageToolsProtocol,
    ToolSpec,
)
from iwr_bench.tools.tools import PageTools
from iwr_bench.tools.toolset import build_toolset

ORIGIN = "http://127.0.0.1:4321"
"""The page server's origin in the fakes (the toolset writes it as ``PAGE_ORIGIN``)."""
VIEWPORT = Viewport(width=640, height=400)

REMOTE_PLUMBING = frozenset({"call"})
"""Public coroutine methods of ``RemoteTools`` that are not tools (the call to the worker)."""

ARGUMENTS: dict[Any, Any] = {int: 3, str: "hello", Direction: "up", float | None: 12.5}
"""A value of each parameter type the tools take (none of them a default)."""

RESULTS: dict[Any, Any] = {
    Observation: Observation(url=f"{ORIGIN}/", title="t", elements=[], text=f"go to {ORIGIN}/a"),
    TextSnapshot: TextSnapshot(url=f"{ORIGIN}/", title="t", text=f"[0] link: {ORIGIN}/a", lines=1),
    ActionResult: ActionResult(action="click", detail="a#0", settle_seconds=0.25, settled=True),
    ScrollResult: ScrollResult(
        action="scroll",
        settle_seconds=0.25,
        settled=True,
        moved_px=200,
        target="document",
        scroll_x=0,
        scroll_y=200,
    ),
    bytes: b"\x89PNG fake",
    PageState: PageState(url=f"{ORIGIN}/", scroll_x=0, scroll_y=0, viewport=VIEWPORT),
}
"""What a fake page answers, by the method's result type."""


def _shape(fn: Callable[..., Any]) -> tuple[list[tuple[str, Any, Any, Any]], Any]:
    """Parameters (name, kind, default, type; ``self`` left out) and the result type of a method."""
    sig = inspect.signature(fn, eval_str=True)
    params = [(p.name, p.kind, p.default, p.annotation) for p in list(sig.parameters.values())[1:]]
    return params, sig.return_annotation


def _public_coroutines(cls: type) -> set[str]:
    return {n for n, v in inspect.getmembers(cls, inspect.iscoroutinefunction) if not n.startswith("_")}


def _arguments(spec: ToolSpec) -> dict[str, Any]:
    missing = [p.name for p in spec.params if p.type not in ARGUMENTS]
    assert not missing, f"add a value for the type of {missing} of {spec.name} to ARGUMENTS"
    return {p.name: ARGUMENTS[p.type] for p in spec.params}


def _toolset_returns(spec: ToolSpec) -> Any:
    """What the model reads of each result (see ``iwr_bench.tools.toolset``): an action's result
    as a dict (with a screenshot when asked for), a screenshot as a line with the image, the
    snapshot as its text, any other record as is."""
    if spec.text_only:
        return str
    if spec.result in (ActionResult, ScrollResult):
        return ToolReturn | dict[str, Any]
    if spec.result is bytes:
        return ToolReturn
    return spec.result


def _return_schema(kind: Any) -> dict[str, Any]:
    """The return schema pydantic-ai gives a tool function that returns ``kind``."""

    async def reference() -> None: ...

    reference.__annotations__ = {"return": kind}
    return dict(Tool(reference).tool_def.return_schema or {})


def _value_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter's JSON schema without what describes it (title, description, default)."""
    return {k: v for k, v in schema.items() if k not in ("title", "description", "default")}


class FakePage:
    """Answers every protocol method with a sample of its result type and records the calls."""

    def __init__(self) -> None:
        self.tab = SimpleNamespace(origin=ORIGIN, viewport=VIEWPORT)
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        if name not in PAGE_METHODS:
            raise AttributeError(name)

        async def method(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, args, kwargs))
            return RESULTS[get_type_hints(getattr(PageToolsProtocol, name))["return"]]

        return method


class FakeActor:
    """A replay worker that answers every tool call with a sample and records what it was sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.call = SimpleNamespace(remote=self._call)

    def _call(
        self, handle: int, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Awaitable[Answer]:
        self.sent.append((name, args, kwargs))
        method = getattr(PageToolsProtocol, name) if "." not in name else None
        value = RESULTS[get_type_hints(method)["return"]] if method is not None else None

        async def answer() -> Answer:
            return Answer(value=value)

        return answer()


def _assert_parameters(spec: ToolSpec, schema: dict[str, Any]) -> None:
    """A tool's input schema (the toolset's or the MCP server's) holds exactly the list's parameters,
    in order, with their defaults, descriptions and types, and requires those without a default."""
    properties: dict[str, Any] = schema.get("properties", {})
    assert list(properties) == [p.name for p in spec.params], spec.name
    assert schema.get("required", []) == [p.name for p in spec.params if p.default is inspect.Parameter.empty]
    for p in spec.params:
        prop = properties[p.name]
        assert prop.get("default", inspect.Parameter.empty) == p.default, f"{spec.name}({p.name})"
        assert prop["description"] == p.description, f"{spec.name}({p.name})"
        assert _value_schema(prop) == TypeAdapter(p.type).json_schema(), f"{spec.name}({p.name})"


def test_page_tools_and_the_ray_proxy_have_the_protocol_s_methods() -> None:
    """``PageTools`` and ``RemoteTools`` have exactly the protocol's methods (no public coroutine
    more or less), each with the protocol's parameters (names, kinds, types, defaults) and result
    type; a pyright check of the same lives in the code (``RemotePool.page`` yields the proxy as
    the protocol, the executor takes ``PageTools`` as it)."""
    assert set(PAGE_METHODS) == _public_coroutines(PageTools)
    assert set(PAGE_METHODS) == _public_coroutines(RemoteTools) - REMOTE_PLUMBING
    for name in PAGE_METHODS:
        declared = _shape(getattr(PageToolsProtocol, name))
        assert _shape(getattr(PageTools, name)) == declared, f"PageTools.{name}"
        assert _shape(getattr(RemoteTools, name)) == declared, f"RemoteTools.{name}"


def test_the_ray_tab_has_the_protocol_s_tab_methods() -> None:
    """``RemoteTab`` and the browser's ``Tab`` take what the protocol's tab takes, and the proxy's
    tab says the viewport's size (the toolset's screenshot names it)."""
    assert set(TAB_METHODS) == _public_coroutines(RemoteTab)
    for name in TAB_METHODS:
        declared = _shape(getattr(PageTabProtocol, name))
        assert _shape(getattr(RemoteTab, name)) == declared, f"RemoteTab.{name}"
        assert _shape(getattr(Tab, name)) == declared, f"Tab.{name}"
    remote = RemoteTools(FakeActor(), 1, viewport=VIEWPORT, origin=ORIGIN)
    assert remote.tab.viewport == VIEWPORT and remote.tab.origin == ORIGIN


def test_the_worker_serves_every_protocol_call() -> None:
    assert frozenset(PAGE_METHODS) | {f"tab.{name}" for name in TAB_METHODS} == TOOL_CALLS


def test_every_tool_calls_a_protocol_method_with_its_parameters() -> None:
    """Each tool of the list calls a protocol method that takes its parameters (same name, type and
    default) and returns its result type; names are unique on both surfaces."""
    assert len({t.name for t in TOOLS}) == len({t.mcp for t in TOOLS}) == len(TOOLS)
    for spec in TOOLS:
        assert spec.method in PAGE_METHODS, spec.name
        params, returns = _shape(getattr(PageToolsProtocol, spec.method))
        assert returns is spec.result, spec.name
        taken = {name: (default, kind) for name, _, default, kind in params}
        for p in spec.params:
            assert taken.get(p.name) == (p.default, p.type), f"{spec.name}({p.name})"
        required = {name for name, _, default, _ in params if default is inspect.Parameter.empty}
        assert required <= {p.name for p in spec.params}, spec.name


def test_the_toolset_is_the_list() -> None:
    """The pydantic-ai toolset has exactly the list's tools, in its order, with their names,
    descriptions, parameters (names, order, types, defaults, descriptions) and result types."""
    toolset = build_toolset(FakePage())  # type: ignore[arg-type]
    assert list(toolset.tools) == [t.name for t in TOOLS]
    for spec in TOOLS:
        definition = toolset.tools[spec.name].tool_def
        assert definition.description == spec.description, spec.name
        _assert_parameters(spec, definition.parameters_json_schema)
        assert definition.return_schema == _return_schema(_toolset_returns(spec)), spec.name


@pytest.mark.anyio
async def test_the_mcp_server_is_the_list() -> None:
    """The MCP server lists exactly the list's tools (by their MCP names), in its order, with their
    descriptions, parameters and result types (a record's schema as the output schema; a
    screenshot is an image, with none)."""
    server = build_mcp_server(PageSpec(page="/nowhere"))  # listing tools opens no page
    listed = await server.list_tools()
    assert [t.name for t in listed] == [t.mcp for t in TOOLS]
    for spec, tool in zip(TOOLS, listed, strict=True):
        assert tool.description == spec.description, spec.name
        _assert_parameters(spec, tool.input_schema)
        if spec.result is bytes:
            assert tool.output_schema is None, spec.name
        else:
            assert issubclass(spec.result, BaseModel)
            assert tool.output_schema == spec.result.model_json_schema(mode="serialization"), spec.name


@pytest.mark.anyio
@pytest.mark.parametrize("spec", TOOLS, ids=[t.name for t in TOOLS])
async def test_every_surface_makes_the_same_call(spec: ToolSpec) -> None:
    """One call of each tool, with a value for every parameter, reaches the same method with the
    same arguments through the toolset, the MCP server and the Ray proxy (whose worker then calls
    ``PageTools``, which binds them the same way); each surface shows the result its way."""
    args = _arguments(spec)
    expected = (spec.method, (), args)

    page = FakePage()
    toolset = build_toolset(page, screenshot_after_actions=True)  # type: ignore[arg-type]
    shown = await toolset.tools[spec.name].function(**args)  # type: ignore[call-arg]
    assert page.calls[0] == expected
    sample = RESULTS[spec.result]
    if spec.text_only:
        assert shown == sample.text.replace(ORIGIN, PAGE_ORIGIN)
    elif spec.acts:
        assert isinstance(shown, ToolReturn) and "settle_seconds" not in shown.return_value
        assert page.calls[1][0] == "screenshot"
    elif spec.result is bytes:
        assert isinstance(shown, ToolReturn) and shown.return_value == "screenshot of the 640x400 viewport"
    else:
        assert isinstance(shown, spec.result) and ORIGIN not in shown.model_dump_json()

    page = FakePage()
    server: MCPServer[Any] = MCPServer("surface-test")
    add_page_tools(server, lambda: page)  # type: ignore[arg-type, return-value]
    answer = await server.call_tool(spec.mcp, args)
    assert isinstance(answer, CallToolResult) and not answer.is_error
    assert page.calls == [expected]
    if spec.result is bytes:
        assert isinstance(answer.content[0], ImageContent)
    else:
        assert answer.structured_content == sample.model_dump(mode="json")

    actor = FakeActor()
    remote = RemoteTools(actor, 1, viewport=VIEWPORT)
    method: Callable[..., Awaitable[Any]] = getattr(remote, spec.method)
    assert await method(**args) == sample
    (name, sent_args, sent_kwargs), *_ = actor.sent
    assert name == spec.method and name in TOOL_CALLS
    bound = inspect.signature(getattr(PageTools, name)).bind(None, *sent_args, **sent_kwargs)
    assert {k: v for k, v in bound.arguments.items() if k in args} == args
