"""The Ray backend's workers: plain classes that :mod:`~iwr_bench.engine.backends.ray_backend` turns
into Ray actors (``ray.remote(cls)``), so this module imports no Ray at the top and its classes can
be tested in one process.

A :class:`ReplayWorker` owns a :class:`~iwr_bench.tools.pool.PagePool` (Chromium in its jail) on
its node. The driver's executor opens a page on it and sends it the executor's tool calls one by
one (observe, click, screenshot, ...); what comes back is data (pydantic records, PNG bytes). A
:class:`MetricWorker` computes one metric design's similarities for a batch of image pairs that
the driver's batching and cache have already chosen, on the worker's GPU when it has one.

Both run their async work on an event loop of their own (an anyio blocking portal in a thread):
a page stays open across many calls, and its context manager is entered and left in one task
there, whatever Ray thread asks.
"""

from __future__ import annotations

import io
import os
import socket
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, NamedTuple

from anyio.from_thread import BlockingPortal, start_blocking_portal
from PIL import Image

from iwr_bench.engine.backends.content import Packed, local_path, unpack
from iwr_bench.metrics.pair import Pair, PairMetric
from iwr_bench.registry import build, load_plugins
from iwr_bench.tools.errors import PageFailure, ToolRetry
from iwr_bench.tools.models import PageSpec
from iwr_bench.tools.pool import PagePool, PoolConfig
from iwr_bench.tools.surface import PAGE_METHODS, TAB_METHODS
from iwr_bench.tools.tools import PageTools

TOOL_CALLS = frozenset((*PAGE_METHODS, *(f"tab.{name}" for name in TAB_METHODS)))
"""What a driver may call on an open page: the methods of
:class:`~iwr_bench.tools.surface.PageToolsProtocol` and of its tab's
(:class:`~iwr_bench.tools.surface.PageTabProtocol`)."""

ACTS = frozenset({"wait_settled", "click", "type", "press", "hover", "scroll", "scroll_window"})
"""Calls after which the worker takes a screenshot at once and sends it with the answer: the executor
screenshots the state an action left, and in-process that happens the moment the action settled,
not a network round trip later (a page with a timed effect would otherwise look different)."""


class Answer(NamedTuple):
    """A tool call's outcome as data: its value, or the tool error it raised."""

    value: Any = None
    retry: str | None = None
    """A :class:`ToolRetry`'s message (the agent may correct itself)."""
    failure: tuple[str, str] | None = None
    """A :class:`PageFailure`'s reason and message (the page is no longer usable)."""
    shot: bytes | None = None
    """After a page opened or an action: a screenshot taken the moment it returned."""


class Shipped(NamedTuple):
    """A content-addressed folder as the driver sends it: digest, entry, and the packed files in
    Ray's object store (wrapped in a list, so Ray hands over the reference, not the bytes)."""

    digest: str
    entry: str
    ref: list[Any]


def node_name() -> str:
    """The worker's host name and process id (shown in logs and in the manifest)."""
    return f"{socket.gethostname()}:{os.getpid()}"


class _Loop:
    """An event loop in a thread of this process, for the worker's async work."""

    def __init__(self) -> None:
        self._cm = start_blocking_portal()
        self.portal: BlockingPortal = self._cm.__enter__()

    def close(self) -> None:
        self._cm.__exit__(None, None, None)


class ReplayWorker:
    """Pages on this node: opened from shipped folders, driven by tool calls, closed by the driver."""

    def __init__(self, pool: PoolConfig, cache_dir: str, fetch: Callable[[Any], Packed]) -> None:
        self._loop = _Loop()
        self._pool_cm = self._loop.portal.wrap_async_context_manager(PagePool(pool))
        self._pool = self._pool_cm.__enter__()
        self._cache = Path(cache_dir)
        self._fetch = fetch
        self._pages: dict[int, tuple[AbstractContextManager[PageTools], PageTools]] = {}
        self._opened = 0

    def ready(self) -> str:
        """Where this worker runs (the driver waits on it before handing out pages)."""
        return node_name()

    def _local(self, shipped: Shipped) -> Path:
        path = local_path(self._cache, shipped.digest, shipped.entry)
        if not (self._cache / shipped.digest).is_dir():
            path = unpack(self._fetch(shipped.ref[0]), self._cache)
        return path

    def open(self, spec: PageSpec, page: Shipped, assets: Shipped | None, settle_load: bool) -> Answer:
        """Open a page (its files fetched once per node); the answer's value is the page's handle
        and its server's origin (what the driver's toolset writes as the stable page origin)."""
        local = spec.model_copy(
            update={
                "page": str(self._local(page)),
                "assets_dir": None if assets is None else str(self._local(assets)),
            }
        )
        cm = self._loop.portal.wrap_async_context_manager(self._pool.page(local, settle_load=settle_load))
        try:
            tools = cm.__enter__()
        except PageFailure as exc:
            return Answer(failure=(exc.reason, _message(exc)))
        self._opened += 1
        self._pages[self._opened] = (cm, tools)
        origin = str(getattr(tools.tab, "origin", ""))
        return Answer(value=(self._opened, origin), shot=self._shot(tools))

    def call(self, handle: int, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Answer:
        """Run one tool call on an open page."""
        if name not in TOOL_CALLS:
            raise ValueError(f"{name!r} is not a page tool")
        tools = self._pages[handle][1]
        target: Any = tools.tab if name.startswith("tab.") else tools
        method = getattr(target, name.removeprefix("tab."))
        try:
            value = self._loop.portal.call(lambda: method(*args, **kwargs))
            return Answer(value=value, shot=self._shot(tools) if name in ACTS else None)
        except ToolRetry as exc:
            return Answer(retry=str(exc))
        except PageFailure as exc:
            return Answer(failure=(exc.reason, _message(exc)))

    def _shot(self, tools: PageTools) -> bytes | None:
        try:
            return self._loop.portal.call(tools.screenshot)
        except (ToolRetry, PageFailure):
            return None  # the executor's own screenshot call then meets the error, as in-process

    def close(self, handle: int) -> None:
        """Close a page (its tab; a hung one restarts its browser)."""
        cm, _ = self._pages.pop(handle)
        cm.__exit__(None, None, None)

    def restarts(self) -> int:
        """Browser restarts so far."""
        return self._pool.restarts

    def shutdown(self) -> None:
        """Close every page and the browsers (the driver calls it at the end of a run)."""
        for handle in list(self._pages):
            self.close(handle)
        self._pool_cm.__exit__(None, None, None)
        self._loop.close()


def _message(exc: PageFailure) -> str:
    return str(exc).removeprefix(f"{exc.reason}: ")


def png(image: Image.Image) -> bytes:
    """An image as PNG bytes (lossless and quick to write: the pixels arrive unchanged)."""
    out = io.BytesIO()
    image.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def from_png(data: bytes) -> Image.Image:
    """The image of PNG bytes, loaded."""
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


class MetricWorker:
    """Metric designs on this node, built on first use (models load lazily, once per worker)."""

    def __init__(self, designs: dict[str, tuple[str, dict[str, Any]]], plugins: list[str]) -> None:
        load_plugins(plugins)
        self._designs = designs
        self._built: dict[str, PairMetric] = {}
        self._loop = _Loop()

    def ready(self) -> str:
        """Where this worker runs."""
        return node_name()

    def _metric(self, name: str) -> PairMetric:
        if name not in self._built:
            design, context = self._designs[name]
            metric, _ = build("metric", design, context=context)
            self._built[name] = metric
        return self._built[name]

    def score(self, name: str, pairs: list[tuple[bytes, bytes]]) -> list[float]:
        """The design's similarity of each (reference, candidate) PNG pair, in order."""
        metric = self._metric(name)
        images: list[Pair] = [(from_png(a), from_png(b)) for a, b in pairs]
        return self._loop.portal.call(lambda: metric(images))

    def read_text(self, name: str, image: bytes) -> str:
        """The text an OCR design reads in one PNG image."""
        reader: Callable[[Image.Image], str] | None = getattr(self._metric(name), "read_text", None)
        if reader is None:
            raise ValueError(f"metric {name!r} reads no text")
        return reader(from_png(image))
