"""A pool of sandboxed pages: N concurrent isolated tabs over Chromium processes started once.

``isolation="context"`` (default) runs every tab in its own browser context of one shared Chromium;
``isolation="browser"`` gives every slot its own Chromium, so that the memory a page makes
Chromium's shared processes hold (WebGL textures in the GPU process, stored data in the browser
process) is charged to that page alone (:mod:`iwr_bench.tools.memory`), at the cost of a Chromium
per slot. A browser that stops answering, or whose tab could not be closed (a hung renderer), is
restarted before its next job.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager, nullcontext
from typing import Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from iwr_bench.tools.browser import Browser, BrowserConfig, Tab, TabSetup
from iwr_bench.tools.chromium import ChromiumBrowser
from iwr_bench.tools.models import Determinism, Limits, PageSpec, SettleConfig
from iwr_bench.tools.server import PageServer
from iwr_bench.tools.tools import PageTools


class PoolConfig(BaseModel):
    """Size, isolation and per-page settings of a :class:`PagePool`."""

    model_config = ConfigDict(frozen=True)

    size: int = Field(default=2, ge=1, le=64)
    """Most pages open at once (the named ``browser pages`` limit)."""
    isolation: Literal["context", "browser"] = "context"
    """One Chromium with a context per page, or one Chromium per slot (each page's memory in the
    shared GPU and browser processes then bounded as its own)."""
    browser: BrowserConfig = BrowserConfig()
    """How to start Chromium."""
    limits: Limits = Limits()
    """Timeouts and size limits per page."""
    settle: SettleConfig = SettleConfig()
    """How to wait for pages to settle."""
    determinism: Determinism = Determinism()
    """Pinned clock, locale, timezone and randomness."""


STEADY_RASTER_FLAGS: tuple[str, ...] = (
    "--run-all-compositor-stages-before-draw",
    "--disable-checker-imaging",
    "--num-raster-threads=1",
    "--disable-partial-raster",
)
"""Chromium flags that make rendering repeatable: without them a page's scaled images come out a
few levels different from one load to the next (timing of decode and raster), and the anti-aliased
edges of rounded boxes differ by a few levels when a tile is re-rastered in part, so a replay of a
recorded page would not be pixel-identical to its recording."""


def page_seed(server: PageServer) -> int:
    """Seed of ``Math.random`` derived from the page's HTML bytes: same page, same sequence."""
    return html_seed((server.root / server.entry).read_bytes())


def html_seed(data: bytes) -> int:
    """Seed derived from an entry page's bytes (the first 4 bytes of their SHA-256)."""
    return int.from_bytes(hashlib.sha256(data).digest()[:4], "big")


def _seed(spec: PageSpec, determinism: Determinism, server: PageServer) -> int:
    """The spec's seed (a task's recorded one), else the pool's fixed seed, else the page's own."""
    if spec.random_seed is not None:
        return spec.random_seed
    return determinism.seed if determinism.seed is not None else page_seed(server)


BrowserFactory = Callable[[BrowserConfig], Browser]
"""Builds a browser from its settings (default :class:`ChromiumBrowser`; tests may pass their own)."""


class PagePool:
    """Hands out :class:`PageTools` over isolated tabs; use as an async context manager."""

    def __init__(
        self, config: PoolConfig | None = None, browser_factory: BrowserFactory = ChromiumBrowser
    ) -> None:
        self.config = config or PoolConfig()
        count = 1 if self.config.isolation == "context" else self.config.size
        self.browsers: list[Browser] = [
            browser_factory(
                self.config.browser.model_copy(
                    update={
                        "js_heap_mb": self.config.limits.js_heap_mb,
                        "memory_mb": self.config.limits.page_memory_mb,
                        "extra_args": (*STEADY_RASTER_FLAGS, *self.config.browser.extra_args),
                    }
                )
            )
            for _ in range(count)
        ]
        self.limiter = anyio.CapacityLimiter(self.config.size)
        self.limiter_name = "browser pages"
        self._free = list(range(count))
        self._lock = anyio.Lock()
        self.restarts = 0

    async def __aenter__(self) -> PagePool:
        for browser in self.browsers:
            await browser.start(launch=False)
        async with anyio.create_task_group() as tg:
            for browser in self.browsers:
                tg.start_soon(browser.launch)
        return self

    async def __aexit__(self, *exc: object) -> None:
        for browser in reversed(self.browsers):  # task groups unwind last-in, first-out
            await browser.aclose()

    def _take(self) -> int:
        # no await between looking and taking (one event loop), so no lock: a lock here made the
        # give-back a checkpoint, where a cancelled page lost its slot for good
        return self._free.pop() if self.config.isolation == "browser" else 0

    def _give(self, slot: int) -> None:
        if self.config.isolation == "browser":
            self._free.append(slot)

    async def _ensure(self, browser: Browser) -> None:
        async with self._lock if self.config.isolation == "context" else nullcontext():
            if not await browser.healthy():
                self.restarts += 1
                await browser.restart()

    @asynccontextmanager
    async def page(
        self, spec: PageSpec, *, settle_load: bool = True, requests: list[str] | None = None
    ) -> AsyncGenerator[PageTools]:
        """Open ``spec`` in a fresh isolated tab and yield its tools; the tab is closed afterwards.

        ``requests``, when given, receives the path of every request the page server answers for
        this page (the recorder keeps what the site loaded this way).

        Raises :class:`~iwr_bench.tools.errors.PageFailure` if the page does not load (it hangs,
        crashes); the pool stays usable.
        """
        async with self.limiter:
            slot = self._take()
            browser = self.browsers[slot]
            try:
                await self._ensure(browser)
                determinism = self.config.determinism
                if spec.clock_start_ms is not None:
                    determinism = determinism.model_copy(update={"epoch_ms": spec.clock_start_ms})
                clock = determinism.epoch_ms if determinism.clock == "fixed_start" else None
                async with PageServer(
                    spec.page,
                    spec.assets_dir,
                    listen=browser.listen,
                    clock_start_ms=clock,
                    file_paths=spec.loading == "file",
                ) as server:
                    if requests is not None:
                        server.requests = requests
                    setup = TabSetup(
                        url=server.url,
                        origin=server.origin,
                        viewport=spec.viewport,
                        determinism=determinism,
                        seed=_seed(spec, determinism, server),
                        clock_step_ms=spec.clock_step_ms or determinism.clock_step_ms,
                        load_timeout=self.config.limits.load_timeout,
                        local_fetch=spec.loading == "http",
                    )
                    tab: Tab | None = None
                    try:
                        tab = await browser.open_tab(setup)
                        tools = PageTools(tab, self.config.settle, self.config.limits)
                        if settle_load:
                            await tools.wait_settled("load")
                        yield tools
                    finally:
                        with anyio.CancelScope(shield=True):
                            await self._close(browser, tab)
            finally:
                self._give(slot)

    async def _close(self, browser: Browser, tab: Tab | None) -> None:
        if tab is not None and await browser.close_tab(tab, self.config.limits.close_timeout):
            return
        if tab is None and await browser.healthy():
            return
        self.restarts += 1
        await browser.restart()
