"""The driver's side of the Ray workers: a page pool, page tools and a metric that forward to actors.

The executor, its judges and the metric batching and cache run in the engine's process exactly as
in-process; only what they ask of a browser page, or of a metric model, crosses to a worker, and
comes back as data. A worker that dies mid-call raises :class:`WorkerLost` here.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Sequence
from contextlib import asynccontextmanager, suppress
from itertools import count
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import anyio
import anyio.to_thread
import ray
from ray.exceptions import RayActorError

from iwr_bench.engine.backends.base import FreeSlots, WorkerLost
from iwr_bench.engine.backends.content import pack
from iwr_bench.engine.backends.ray_workers import Answer, Shipped, png
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.pair import Pair
from iwr_bench.tools.errors import PageFailure, ToolRetry
from iwr_bench.tools.models import (
    ActionResult,
    Observation,
    PageSpec,
    PageState,
    ScrollResult,
    TextSnapshot,
    Viewport,
    VisibleText,
)
from iwr_bench.tools.settle import SettleAfter
from iwr_bench.tools.surface import Direction, PageToolsProtocol

log = logging.getLogger(__name__)

Actor = Any
"""A Ray actor handle (Ray's handles are untyped)."""


async def ask(ref: Awaitable[Any]) -> Any:
    """Await a worker's answer; its death becomes :class:`WorkerLost`."""
    try:
        return await ref
    except RayActorError as exc:
        raise WorkerLost(str(exc).splitlines()[0]) from exc


def answer_value(answer: Answer) -> Any:
    """The value of a tool call's answer, or the tool error it carries, raised here."""
    if answer.retry is not None:
        raise ToolRetry(answer.retry)
    if answer.failure is not None:
        reason, message = answer.failure
        raise PageFailure(cast("Any", reason), message)
    return answer.value


class Shipper:
    """Puts each page or assets folder into Ray's object store once, named by its content digest."""

    def __init__(self) -> None:
        self._by_path: dict[str, Shipped] = {}

    async def ship(self, path: Path) -> Shipped:
        """The shipped form of ``path`` (packed and put on first use)."""
        key = str(path)
        if key not in self._by_path:
            packed = await anyio.to_thread.run_sync(pack, path)
            ref = await anyio.to_thread.run_sync(ray.put, packed)
            self._by_path[key] = Shipped(packed.digest, packed.entry, [ref])
        return self._by_path[key]


class RemoteTab:
    """The tab of a page open on a replay worker, as judge code reaches it
    (:class:`~iwr_bench.tools.surface.PageTabProtocol`): the three raw calls a replay policy may
    make (a key sent as is, a mouse event, a script) and the viewport's size."""

    def __init__(self, tools: RemoteTools, viewport: Viewport, origin: str = "") -> None:
        self._tools = tools
        self._viewport = viewport
        self.origin = origin
        """The page server's origin on the worker ("" when not known)."""

    @property
    def viewport(self) -> Viewport:
        """The viewport's size (the page spec's)."""
        return self._viewport

    async def key(self, kind: str, params: dict[str, Any]) -> None:
        """Send a raw key event."""
        await self._tools.call("tab.key", kind, params)

    async def mouse(self, kind: str, x: float, y: float, *, button: str = "none", clicks: int = 0) -> None:
        """Send a raw mouse event."""
        await self._tools.call("tab.mouse", kind, x, y, button=button, clicks=clicks)

    async def evaluate(
        self, expression: str, *, await_promise: bool = False, world: Literal["judge", "page"] = "judge"
    ) -> Any:
        """Evaluate a script in the page."""
        return await self._tools.call("tab.evaluate", expression, await_promise=await_promise, world=world)


class RemoteTools:
    """:class:`~iwr_bench.tools.tools.PageTools` of a page open on a replay worker: the same
    methods with the same results (:class:`~iwr_bench.tools.surface.PageToolsProtocol`)."""

    def __init__(
        self,
        actor: Actor,
        handle: int,
        first_shot: bytes | None = None,
        *,
        viewport: Viewport | None = None,
        origin: str = "",
    ) -> None:
        self._actor = actor
        self._handle = handle
        self.tab = RemoteTab(self, viewport or Viewport(), origin)
        """The page's tab (raw input, the viewport's size)."""
        self.shot = first_shot
        """The screenshot the worker took as the last call returned (None once another call came)."""

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """One tool call on the worker."""
        self.shot = None
        answer: Answer = await ask(self._actor.call.remote(self._handle, name, args, kwargs))
        self.shot = answer.shot
        return answer_value(answer)

    async def wait_settled(self, after: SettleAfter = "load", tick: bool | None = None) -> ActionResult:
        """See :meth:`PageTools.wait_settled`."""
        return await self.call("wait_settled", after, tick)

    async def observe(self) -> Observation:
        """See :meth:`PageTools.observe`."""
        return await self.call("observe")

    async def visible_text(self, max_runs: int = 400) -> VisibleText:
        """See :meth:`PageTools.visible_text`."""
        return await self.call("visible_text", max_runs)

    async def text_snapshot(self, max_chars: int = 4000) -> TextSnapshot:
        """See :meth:`PageTools.text_snapshot`."""
        return await self.call("text_snapshot", max_chars)

    async def click(self, index: int, hit: bool = True) -> ActionResult:
        """See :meth:`PageTools.click`."""
        return await self.call("click", index, hit)

    async def type(self, index: int, text: str, hit: bool = True) -> ActionResult:
        """See :meth:`PageTools.type`."""
        return await self.call("type", index, text, hit)

    async def press(self, key: str) -> ActionResult:
        """See :meth:`PageTools.press`."""
        return await self.call("press", key)

    async def hover(self, index: int) -> ActionResult:
        """See :meth:`PageTools.hover`."""
        return await self.call("hover", index)

    async def scroll(
        self, direction: Direction = "down", amount: float | None = None, region: Sequence[str] = ()
    ) -> ScrollResult:
        """See :meth:`PageTools.scroll`."""
        return await self.call("scroll", direction, amount, tuple(region))

    async def scroll_window(self) -> ScrollResult:
        """See :meth:`PageTools.scroll_window`."""
        return await self.call("scroll_window")

    async def screenshot(self) -> bytes:
        """See :meth:`PageTools.screenshot` (the one taken as the previous call returned, if any)."""
        if self.shot is not None:
            shot, self.shot = self.shot, None
            return shot
        return await self.call("screenshot")

    async def page_state(self) -> PageState:
        """See :meth:`PageTools.page_state`."""
        return await self.call("page_state")


class RemotePool:
    """A page pool of one replay worker, as the executor uses one (it only calls :meth:`page`)."""

    def __init__(self, actor: Actor, shipper: Shipper) -> None:
        self.actor = actor
        self._shipper = shipper

    @asynccontextmanager
    async def page(
        self, spec: PageSpec, *, settle_load: bool = True, requests: list[str] | None = None
    ) -> AsyncGenerator[PageToolsProtocol]:
        """Open ``spec`` on the worker (its files shipped by digest) and yield its tools (a
        :class:`RemoteTools`, typed as the protocol the executor takes, so pyright checks it is one).

        Raises:
            PageFailure: the page did not load.
            WorkerLost: the worker died.
        """
        if requests is not None:
            raise ValueError("a remote page does not report its requests")
        page = await self._shipper.ship(Path(spec.page))
        assets = None if spec.assets_dir is None else await self._shipper.ship(Path(spec.assets_dir))
        opened: Answer = await ask(self.actor.open.remote(spec, page, assets, settle_load))
        handle, origin = answer_value(opened)  # the worker's handle for the page, its server's origin
        try:
            yield RemoteTools(
                self.actor, int(handle), opened.shot, viewport=spec.viewport, origin=str(origin)
            )
        finally:
            with anyio.CancelScope(shield=True):
                with suppress(WorkerLost):  # a dead worker has nothing left to close
                    await ask(self.actor.close.remote(handle))


class MetricWorkers:
    """The metric actors: a batch goes to a free one; a dead one is replaced (``start``)."""

    def __init__(self, actors: list[Actor], start: Any, tries: int) -> None:
        self.actors = actors
        self._start = start
        self._tries = tries
        self._slots = FreeSlots(len(actors))
        self._turn = count()
        self.lost = 0

    async def run(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on a free worker; retried on a fresh worker when one dies.

        Raises:
            WorkerLost: every try lost its worker.
        """
        for attempt in range(1, self._tries + 1):
            async with self._slots.hold() as slot:
                try:
                    return await ask(getattr(self.actors[slot], method).remote(*args))
                except WorkerLost as exc:
                    self.lost += 1
                    log.warning("metric worker lost (try %d of %d): %s", attempt, self._tries, exc)
                    if attempt == self._tries:
                        raise
                    self.actors[slot] = await anyio.to_thread.run_sync(self._start)
        raise AssertionError("unreachable")

    def read_text(self, name: str, image: bytes) -> str:
        """The OCR text of one image, from any worker (called from a worker thread)."""
        actor = self.actors[next(self._turn) % len(self.actors)]
        return str(ray.get(actor.read_text.remote(name, image)))


class Workers(Protocol):
    """Where a :class:`RemoteMetric` sends its work."""

    async def run(self, method: str, *args: Any) -> Any:
        """``method(*args)`` on a free worker."""
        ...

    def read_text(self, name: str, image: bytes) -> str:
        """The OCR text of one image."""
        ...


class RemoteMetric:
    """A metric design computed on the metric workers; the driver's cache and batching wrap it."""

    def __init__(self, backend: Backend, name: str, workers: Workers, *, reads_text: bool) -> None:
        self._backend = backend
        self._name = name
        self._workers = workers
        self.read_text = self._read_text if reads_text else None
        """For an OCR design: the text it reads in one image (on a worker), else None."""

    @property
    def backend(self) -> Backend:
        """What computes it (the design's own record)."""
        return self._backend

    async def __call__(self, pairs: Sequence[Pair]) -> list[float]:
        """Similarities of ``pairs``, computed on a metric worker."""
        if not pairs:
            return []
        blobs = await anyio.to_thread.run_sync(lambda: [(png(a), png(b)) for a, b in pairs])
        return list(await self._workers.run("score", self._name, blobs))

    def _read_text(self, image: Any) -> str:
        return self._workers.read_text(self._name, png(image))
