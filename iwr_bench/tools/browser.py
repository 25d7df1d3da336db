"""The browser interface the tools are written against.

:class:`Browser` opens sandboxed :class:`Tab` objects; the only implementation,
:class:`iwr_bench.tools.chromium.ChromiumBrowser`, drives Debian's Chromium over CDP (cdp-use) in a
network and PID namespace of its own.
"""

from __future__ import annotations

import socket
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from iwr_bench.tools.errors import PageFailure
from iwr_bench.tools.models import Determinism, PageState, Viewport

CHROMIUM_FLAGS: tuple[str, ...] = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-smooth-scrolling",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
    "--force-color-profile=srgb",
    "--font-render-hinting=none",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--disable-crash-reporter",
    "--disable-breakpad",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
)
"""Flags every sandbox Chromium starts with (plus the JS heap cap)."""


class BrowserConfig(BaseModel):
    """How to start Chromium."""

    model_config = ConfigDict(frozen=True)

    executable: str = "/usr/bin/chromium"
    """Chromium binary."""
    js_heap_mb: int = Field(default=512, ge=64)
    """V8 old-space cap per renderer, in MiB; a page that exceeds it crashes its renderer."""
    memory_mb: int = Field(default=1024, ge=128)
    """Resident memory a renderer may use before the watchdog kills it, in MiB."""
    extra_args: tuple[str, ...] = ()
    """More Chromium flags."""
    start_timeout: float = Field(default=30.0, gt=0)
    """Seconds Chromium may take to start."""


class TabSetup(BaseModel):
    """What a new tab needs before its page runs."""

    model_config = ConfigDict(frozen=True)

    url: str
    """Page to load."""
    origin: str
    """The only origin the page may reach (``http://127.0.0.1:<port>``)."""
    viewport: Viewport
    """Viewport size."""
    determinism: Determinism
    """Pinned clock, locale, timezone, randomness."""
    seed: int
    """``Math.random`` seed."""
    clock_step_ms: int | None = None
    """Step of a stepped page clock (None: the page clock follows real time)."""
    load_timeout: float
    """Seconds the first load may take."""
    local_fetch: bool = True
    """Whether the page may fetch, XHR or EventSource its own files (False: they fail, as on a
    ``file://`` page)."""


class Tab(Protocol):
    """One sandboxed page: low-level input, evaluation, screenshots and the records of the sandbox."""

    viewport: Viewport

    @property
    def failure(self) -> PageFailure | None:
        """The failure that ended this tab, if any."""
        ...

    def fail(self, failure: PageFailure) -> None:
        """Mark the tab failed (after a timeout, say); later calls raise ``failure``."""
        ...

    async def evaluate(
        self, expression: str, *, await_promise: bool = False, world: Literal["judge", "page"] = "judge"
    ) -> Any:
        """Evaluate ``expression`` and return its JSON value: in the judge's isolated world (default; it
        shares the DOM, the page cannot see it) or in the page's own world."""
        ...

    async def mouse(self, kind: str, x: float, y: float, *, button: str = "none", clicks: int = 0) -> None:
        """Send one mouse event (``mouseMoved``, ``mousePressed``, ``mouseReleased``)."""
        ...

    async def wheel(self, x: float, y: float, dx: float, dy: float) -> None:
        """Send a mouse-wheel event at (x, y)."""
        ...

    async def key(self, kind: str, params: dict[str, Any]) -> None:
        """Send one key event (``keyDown``, ``keyUp``, ``char``, ``rawKeyDown``) with CDP params."""
        ...

    async def insert_text(self, text: str) -> None:
        """Insert text at the focus as an IME commit would."""
        ...

    async def screenshot(self) -> bytes:
        """PNG of the viewport."""
        ...

    def state(self, url: str, x: float, y: float, container_y: float | None) -> PageState:
        """The sandbox records, with the given position fields filled in."""
        ...

    async def close(self, grace: float) -> bool:
        """Close the tab; False if it could not be closed in time."""
        ...


class Browser(Protocol):
    """A running browser that opens sandboxed tabs (what :class:`~iwr_bench.tools.pool.PagePool` drives)."""

    async def start(self, *, launch: bool = True) -> None:
        """Prepare the browser; with ``launch`` also start its process (else :meth:`launch` does)."""
        ...

    async def launch(self) -> None:
        """Start the browser process."""
        ...

    async def restart(self) -> None:
        """Kill the browser process and start a fresh one."""
        ...

    async def healthy(self) -> bool:
        """Whether the browser answers."""
        ...

    async def listen(self) -> socket.socket:
        """A listening socket on 127.0.0.1 that this browser's pages can reach."""
        ...

    async def open_tab(self, setup: TabSetup) -> Tab:
        """Open a tab in a fresh browser context, load ``setup.url`` and return it."""
        ...

    async def close_tab(self, tab: Any, grace: float) -> bool:
        """Close a tab this browser opened; False if it could not be closed in ``grace`` seconds."""
        ...

    async def aclose(self) -> None:
        """Stop the browser."""
        ...
