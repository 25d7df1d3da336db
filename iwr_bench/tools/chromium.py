"""The :class:`~iwr_bench.tools.browser.Browser` implementation on Debian's Chromium.

We start Chromium ourselves (:mod:`iwr_bench.tools.process`) inside a jail whose network holds only
loopback and the page servers we open there (:mod:`iwr_bench.tools.jail`), with a memory watchdog
over its renderers (:mod:`iwr_bench.tools.memory`). The sandbox speaks CDP over cdp-use (browser-use's
CDP library), with browser-level auto-attach paused on start, so every new target is held until it
is set up: tabs, their workers and frames (request interception on, then released) and popups
(closed without running).
"""

from __future__ import annotations

import logging
import re
import secrets
import socket
import subprocess
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack, suppress
from functools import cache, partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from anyio.abc import TaskGroup
from cdp_use import CDPClient

from iwr_bench.tools.browser import CHROMIUM_FLAGS, BrowserConfig, TabSetup
from iwr_bench.tools.errors import BrowserStartError, PageFailure
from iwr_bench.tools.jail import Containment, containment_level
from iwr_bench.tools.memory import MemoryWatchdog
from iwr_bench.tools.models import Viewport
from iwr_bench.tools.process import ChromiumProcess
from iwr_bench.tools.scripts import JUDGE_WORLD, SteppedClock, determinism_script, judge_init_script
from iwr_bench.tools.tab import AUTO_ATTACH, CdpTab

logging.getLogger("cdp_use").setLevel(logging.ERROR)  # it logs every connection at INFO

_Handler = Callable[[Mapping[str, Any], str | None], None]


STORAGE_POLL_S = 0.5
"""How often each page's stored data is measured."""
WINDOW_FRAME_PX = 85
"""How much taller a desktop Chrome window is than its page (tab strip and toolbar)."""


def screen_for(vp: Viewport) -> tuple[int, int]:
    """A common desktop screen that holds a window around ``vp`` (1920x1080 when it fits)."""
    for w, h in ((1920, 1080), (2560, 1440), (3840, 2160)):
        if vp.width <= w and vp.height + WINDOW_FRAME_PX <= h:
            return w, h
    return vp.width, vp.height + WINDOW_FRAME_PX


def realm_seed(seed: int, n: int) -> int:
    """The ``Math.random`` seed of the n-th realm a page creates: its own, and the same on every replay."""
    return (seed * 1_000_003 + n * 7_919) % 2**32


@cache
def chromium_version(executable: str) -> str:
    """``<executable> --version`` ("Chromium 156.0.7500.1 built on Debian ..."), or why it is unknown."""
    try:
        done = subprocess.run(
            [executable, "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unknown ({exc})"
    return (done.stdout or done.stderr).strip() or "unknown"


def user_agent(executable: str) -> str | None:
    """The user agent a desktop Chromium of this build sends (headless mode says
    ``HeadlessChrome``); None when the version cannot be read."""
    found = re.search(r"(\d+)\.\d+\.\d+\.\d+", chromium_version(executable))
    if found is None:
        return None
    return (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        f"Chrome/{found.group(1)}.0.0.0 Safari/537.36"
    )


class ChromiumBrowser:
    """One Chromium process with a tab per job, each in its own browser context."""

    def __init__(self, config: BrowserConfig | None = None) -> None:
        self.config = config or BrowserConfig()
        self._process: ChromiumProcess | None = None
        self._client: CDPClient | None = None
        self._watchdog: MemoryWatchdog | None = None
        self._watch_scope: anyio.CancelScope | None = None
        self._stack: AsyncExitStack | None = None
        self._tg: TaskGroup | None = None
        self._tabs: dict[str, CdpTab] = {}
        self._by_target: dict[str, CdpTab] = {}
        self._by_context: dict[str, CdpTab] = {}
        self._pending_contexts: set[str] = set()
        self._attached: dict[str, str] = {}
        self._attach_waiters: dict[str, anyio.Event] = {}
        self._popups: dict[str, CdpTab] = {}
        self._workers: dict[str, CdpTab] = {}
        self.launches = 0

    # ----- lifecycle ---------------------------------------------------------------------------
    async def __aenter__(self) -> ChromiumBrowser:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self, *, launch: bool = True) -> None:
        """Open the background task group (in the calling task) and, unless told not to, launch Chromium.

        :meth:`aclose` must run in the same task as this call.
        """
        if self._stack is None:
            stack = AsyncExitStack()
            self._tg = await stack.enter_async_context(anyio.create_task_group())
            self._stack = stack
        if launch:
            await self.launch()

    async def launch(self) -> None:
        """Launch Chromium (after ``start(launch=False)``)."""
        await self._launch()

    def _spawn(self, func: Callable[[], Awaitable[None]]) -> None:
        if self._tg is not None:
            self._tg.start_soon(func)

    async def _launch(self) -> None:
        if self._tg is None:
            raise BrowserStartError("ChromiumBrowser.start() was not called")
        agent = await anyio.to_thread.run_sync(user_agent, self.config.executable)
        args = [
            *CHROMIUM_FLAGS,
            *([f"--user-agent={agent}"] if agent else []),
            f"--js-flags=--max-old-space-size={self.config.js_heap_mb}",
            *self.config.extra_args,
        ]
        process = await self._start_process(args)
        client = CDPClient(process.ws_url, max_ws_frame_size=256 * 1024 * 1024)
        try:
            with anyio.fail_after(self.config.start_timeout):
                await client.start()
        except (TimeoutError, OSError) as exc:
            await process.stop()
            raise BrowserStartError(f"could not connect to Chromium's DevTools: {exc}") from exc
        self._process, self._client = process, client
        self._register(client)
        await client.send.Target.setDiscoverTargets(params={"discover": True})
        await client.send_raw("Target.setAutoAttach", AUTO_ATTACH)
        self._watchdog = MemoryWatchdog(process.pid, self.config.memory_mb, open_pages=self._open_pages)
        self._watch_scope = anyio.CancelScope()
        self._tg.start_soon(self._watch, self._watchdog, self._watch_scope)
        self.launches += 1

    async def _start_process(self, args: list[str]) -> ChromiumProcess:
        """Start Chromium; a start that crashes (seen rarely under heavy load) is tried twice more."""
        for attempt in range(3):
            process = ChromiumProcess(self.config.executable, args, self.config.start_timeout)
            try:
                await process.start()
            except BrowserStartError:
                if attempt == 2:
                    raise
                continue
            return process
        raise AssertionError("unreachable")

    def _open_pages(self) -> int:
        """Pages open now, those whose context is being set up included (read by the watchdog)."""
        return len(self._tabs) + len(self._pending_contexts)

    async def _watch(self, watchdog: MemoryWatchdog, scope: anyio.CancelScope) -> None:
        with scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watchdog.run)
                tg.start_soon(self._watch_storage, watchdog)

    async def _watch_storage(self, watchdog: MemoryWatchdog) -> None:
        """Charge each page's stored data (IndexedDB, Cache Storage, origin-private files: held by
        the browser process in an off-the-record context) to that page: stored data plus its
        renderer above the limit fails the page as ``page_crashed``. The quota set in
        :meth:`_prepare` keeps the data within the limit between two looks."""
        while True:
            await anyio.sleep(STORAGE_POLL_S)
            tabs = [tab for tab in self._tabs.values() if tab.failure is None]
            alone = len(tabs) == 1
            own = watchdog.renderer_mb(alone=alone)
            measured = "" if alone else "at least "
            for tab in tabs:
                stored = await tab.stored_mb()
                if stored is not None and stored + own > self.config.memory_mb:
                    tab.fail(
                        PageFailure(
                            "page_crashed",
                            f"the page used {stored + own:.0f} MiB > limit {self.config.memory_mb} "
                            f"MiB: {stored:.0f} MiB of stored data (IndexedDB, Cache Storage, "
                            f"origin-private files) and {measured}{own:.0f} MiB in its renderer",
                        )
                    )
                    self._spawn(partial(self._end_target, tab))

    async def _end_target(self, tab: CdpTab) -> None:
        """Close a failed tab's page at once (its renderer's memory goes back; the stored data goes
        when the pool disposes of its context)."""
        with anyio.move_on_after(5), suppress(RuntimeError, ConnectionError):
            await self.client.send.Target.closeTarget(params={"targetId": tab.target_id})

    @property
    def containment(self) -> Containment:
        """What keeps pages in: ``netns`` (a network namespace) or ``intercept-only`` (CDP only)."""
        return self._process.containment if self._process is not None else containment_level()

    @property
    def root(self) -> Path:
        """Temporary folder of the running browser (profile, temporary files); removed when it stops."""
        if self._process is None:
            raise PageFailure("browser_crashed", "Chromium is not running")
        return self._process.root

    @property
    def pid(self) -> int:
        """PID of the running browser process (0 when none)."""
        return self._process.pid if self._process is not None else 0

    async def listen(self) -> socket.socket:
        """A listening socket on 127.0.0.1 that pages of this browser can reach (and nothing else)."""
        if self._process is None:
            raise PageFailure("browser_crashed", "Chromium is not running")
        return await anyio.to_thread.run_sync(self._process.jail.listen)

    async def _shutdown(self) -> None:
        for tab in list(self._tabs.values()):
            tab.fail(PageFailure("browser_crashed", "the browser was restarted"))
        self._tabs.clear()
        self._by_target.clear()
        self._by_context.clear()
        self._pending_contexts.clear()
        self._attached.clear()
        self._attach_waiters.clear()
        self._popups.clear()
        self._workers.clear()
        if self._watch_scope is not None:
            self._watch_scope.cancel()
            self._watch_scope = None
        client, self._client = self._client, None
        if client is not None:
            with anyio.move_on_after(5):
                with suppress(RuntimeError, OSError, ConnectionError):
                    await client.stop()
        process, self._process = self._process, None
        if process is not None:
            await process.stop()

    async def restart(self) -> None:
        """Kill Chromium and start a fresh one."""
        await self._shutdown()
        await self._launch()

    async def healthy(self) -> bool:
        """Whether Chromium answers ``Browser.getVersion`` within 2 s."""
        if self._client is None:
            return False
        with anyio.move_on_after(2):
            try:
                await self._client.send.Browser.getVersion()
            except (RuntimeError, ConnectionError):
                return False
            return True
        return False

    async def aclose(self) -> None:
        """Kill Chromium and stop background tasks."""
        with anyio.CancelScope(shield=True):
            await self._shutdown()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()
        stack, self._stack, self._tg = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    # ----- tabs --------------------------------------------------------------------------------
    @property
    def cdp_url(self) -> str:
        """WebSocket URL of Chromium's DevTools endpoint."""
        return self.client.url

    @property
    def client(self) -> CDPClient:
        """The sandbox's CDP connection."""
        if self._client is None:
            raise PageFailure("browser_crashed", "Chromium is not running")
        return self._client

    async def open_tab(self, setup: TabSetup) -> CdpTab:
        """Open a held tab in a new browser context, pin it down, then load ``setup.url``."""
        client = self.client
        ctx = await client.send.Target.createBrowserContext(params={"disposeOnDetach": True})
        context_id = ctx["browserContextId"]
        self._pending_contexts.add(context_id)
        created = await client.send.Target.createTarget(
            params={"url": "about:blank", "browserContextId": context_id}
        )
        target_id = created["targetId"]
        try:
            session_id = await self._wait_attached(target_id)
        finally:
            self._pending_contexts.discard(context_id)
        tab = CdpTab(client, self._spawn, target_id, session_id, context_id, setup.origin, self.containment)
        tab.local_fetch = setup.local_fetch
        tab.viewport = setup.viewport
        self._tabs[session_id] = tab
        self._by_target[target_id] = tab
        self._by_context[context_id] = tab
        try:
            with anyio.fail_after(setup.load_timeout):
                await self._prepare(tab, setup)
                await tab.send("Runtime.runIfWaitingForDebugger")
                await self._window_sized(tab, setup.viewport)
                reply = await tab.send("Page.navigate", {"url": setup.url})
                if reply.get("errorText"):
                    raise PageFailure("load_failed", f"{setup.url}: {reply['errorText']}")
                await tab.wait_loaded()
        except TimeoutError:
            tab.fail(PageFailure("timeout", f"the page did not load within {setup.load_timeout:g} s"))
        except PageFailure as failure:
            tab.fail(failure)
        tab.first_load_done = True
        if tab.failure is not None:
            failure = tab.failure
            if not await self.close_tab(tab, 5.0):
                await self.restart()
            raise failure
        return tab

    async def close_tab(self, tab: CdpTab, grace: float) -> bool:
        """Close ``tab`` and its context; False if Chromium did not manage it within ``grace``."""
        closed = await tab.close(grace)
        self.forget(tab)
        return closed

    async def _wait_attached(self, target_id: str) -> str:
        if target_id not in self._attached:
            waiter = self._attach_waiters.setdefault(target_id, anyio.Event())
            with anyio.fail_after(10):
                await waiter.wait()
        return self._attached.pop(target_id)

    async def _prepare(self, tab: CdpTab, setup: TabSetup) -> None:
        det = setup.determinism
        for domain in ("Page", "Runtime", "Log"):
            await tab.send(f"{domain}.enable")
        # What the page may store (IndexedDB, Cache Storage, origin-private files) lives in the
        # browser process: capped at the page's memory bound (Chromium's own quota is a share of
        # the disk, 1.3 GiB and more here); :meth:`_watch_storage` charges it to the page
        quota = self.config.memory_mb * 1024 * 1024
        await tab.send("Storage.overrideQuotaForOrigin", {"origin": setup.origin, "quotaSize": quota})
        vp = setup.viewport
        screen = screen_for(vp)
        await tab.send(
            "Emulation.setDeviceMetricsOverride",
            {
                "width": vp.width,
                "height": vp.height,
                "deviceScaleFactor": 1,
                "mobile": False,
                "screenWidth": screen[0],
                "screenHeight": screen[1],
            },
        )
        await self._size_window(tab, vp)
        await tab.send("Emulation.setTimezoneOverride", {"timezoneId": det.timezone})
        await tab.send("Emulation.setLocaleOverride", {"locale": det.locale})
        await tab.send("Emulation.setFocusEmulationEnabled", {"enabled": True})
        if det.hide_scrollbars:
            await tab.send("Emulation.setScrollbarsHidden", {"hidden": True})
        epoch = det.epoch_ms if det.clock == "fixed_start" or setup.clock_step_ms else None
        step = setup.clock_step_ms
        clock = SteppedClock(f"iwr{secrets.token_hex(8)}", step) if step else None
        # WebRTC stays (inert) where the network namespace holds it; interception alone cannot
        no_webrtc = self.containment != "netns"
        outer = (vp.width, vp.height + WINDOW_FRAME_PX)
        first = determinism_script(setup.seed, epoch, no_webrtc, clock, realm_seed(setup.seed, 0), outer)
        await tab.send("Page.addScriptToEvaluateOnNewDocument", {"source": first})
        tab.realm_script = lambda n: determinism_script(realm_seed(setup.seed, n), epoch, no_webrtc)
        await tab.send(
            "Page.addScriptToEvaluateOnNewDocument",
            {"source": judge_init_script(det.hide_caret, clock), "worldName": JUDGE_WORLD},
        )
        await tab.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]})
        await tab.send("Network.enable", {"maxTotalBufferSize": 0, "maxResourceBufferSize": 0})
        await tab.send("Target.setAutoAttach", AUTO_ATTACH)

    async def _size_window(self, tab: CdpTab, vp: Viewport) -> None:
        """Give the tab's window the size of a desktop window around its viewport (the headless
        default is 800x600, whatever the viewport), so the window's outer size fits the page's."""
        client = self._client
        if client is None:
            return
        with suppress(RuntimeError, ConnectionError, KeyError):
            found = await client.send_raw("Browser.getWindowForTarget", {"targetId": tab.target_id})
            bounds = {"width": vp.width, "height": vp.height + WINDOW_FRAME_PX, "left": 0, "top": 0}
            await client.send_raw(
                "Browser.setWindowBounds", {"windowId": found["windowId"], "bounds": bounds}
            )

    async def _window_sized(self, tab: CdpTab, vp: Viewport, patience: float = 3.0) -> None:
        """Wait (on the blank page, before the page's own) until the renderer sees the window size
        :meth:`_size_window` set: it learns of it a moment later, and a page that measured its
        window first (as a loaded machine showed) would find it smaller than the page."""
        with anyio.move_on_after(patience), suppress(RuntimeError, ConnectionError, KeyError, TypeError):
            while True:
                asked = {"expression": "[outerWidth, outerHeight]", "returnByValue": True}
                reply = await tab.send("Runtime.evaluate", asked)
                width, height = reply["result"].get("value") or (0, 0)
                if int(width) >= vp.width and int(height) >= vp.height:
                    return
                await anyio.sleep(0.02)

    def forget(self, tab: CdpTab) -> None:
        """Drop a closed tab from the event routing."""
        self._tabs.pop(tab.session_id, None)
        self._by_target.pop(tab.target_id, None)
        self._by_context.pop(tab.context_id, None)
        for session, owner in list(self._workers.items()):
            if owner is tab:
                del self._workers[session]

    # ----- event routing -----------------------------------------------------------------------
    def _register(self, client: CDPClient) -> None:
        reg = client.register

        def per_tab(handler: Callable[[CdpTab, Mapping[str, Any]], None]) -> _Handler:
            def route(event: Mapping[str, Any], session_id: str | None) -> None:
                tab = self._tabs.get(session_id or "")
                if tab is not None:
                    handler(tab, event)

            return route

        def per_owner(handler: Callable[[CdpTab, Mapping[str, Any]], None]) -> _Handler:
            def route(event: Mapping[str, Any], session_id: str | None) -> None:
                key = session_id or ""
                tab = self._tabs.get(key) or self._workers.get(key)
                if tab is not None:
                    handler(tab, event)

            return route

        reg.Fetch.requestPaused(self._on_request_paused)
        reg.Network.webSocketCreated(per_owner(CdpTab.on_websocket))
        reg.Runtime.executionContextCreated(per_tab(CdpTab.on_context_created))
        reg.Runtime.executionContextDestroyed(per_tab(CdpTab.on_context_destroyed))
        reg.Runtime.executionContextsCleared(per_tab(lambda tab, _event: tab.on_contexts_cleared()))
        reg.Page.javascriptDialogOpening(per_tab(CdpTab.on_dialog))
        reg.Runtime.consoleAPICalled(per_tab(CdpTab.on_console))
        reg.Runtime.exceptionThrown(per_tab(CdpTab.on_exception))
        reg.Log.entryAdded(per_tab(CdpTab.on_log))
        reg.Page.loadEventFired(per_tab(lambda tab, _event: tab.on_load()))
        reg.Debugger.paused(self._on_debugger_paused)
        reg.Target.attachedToTarget(self._on_attached)
        reg.Target.detachedFromTarget(self._on_detached)
        reg.Target.targetCrashed(self._on_crashed)

    def _on_request_paused(self, event: Mapping[str, Any], session_id: str | None) -> None:
        key = session_id or ""
        tab = self._tabs.get(key)
        if tab is not None:
            tab.on_request_paused(event)
            return
        worker_owner = self._workers.get(key)
        if worker_owner is not None:
            worker_owner.on_request_paused(event, key)
            return
        owner = self._popups.get(key)
        if owner is not None:
            owner.on_popup_request(event, key)

    def _on_debugger_paused(self, event: Mapping[str, Any], session_id: str | None) -> None:
        owner = self._workers.get(session_id or "")
        if owner is not None and session_id:
            owner.on_realm_paused(event, session_id)

    def _on_attached(self, event: Mapping[str, Any], session_id: str | None) -> None:
        info = event["targetInfo"]
        target_id, new_session = str(info["targetId"]), str(event["sessionId"])
        context_id = str(info.get("browserContextId") or "")
        owner = self._by_context.get(context_id) or self._by_target.get(str(info.get("openerId") or ""))
        parent = self._tabs.get(session_id or "") or self._workers.get(session_id or "")
        if info.get("type") == "service_worker" and parent is not None:
            # a service worker is attached twice, by the browser's auto-attach and by its page's:
            # the browser's session (always there) is the one kept, intercepting and pinned
            self._release(new_session)
            return
        if info.get("type") != "page" and (parent or owner) is not None:
            tab = parent or owner
            assert tab is not None
            self._workers[new_session] = tab
            tab.on_worker(str(info.get("type", "")), str(info.get("url", "")), new_session)
            return
        if owner is not None:
            self._popups[new_session] = owner
            owner.on_popup(target_id, str(info.get("url", "")), new_session)
            return
        if context_id in self._pending_contexts and info.get("type") == "page":
            self._attached[target_id] = new_session
            waiter = self._attach_waiters.pop(target_id, None)
            if waiter is not None:
                waiter.set()
            return
        self._release(new_session)

    def _release(self, session_id: str) -> None:
        client = self._client
        if client is None:
            return

        async def release() -> None:
            try:
                await client.send_raw("Runtime.runIfWaitingForDebugger", {}, session_id)
                await client.send.Target.detachFromTarget(params={"sessionId": session_id})
            except (RuntimeError, ConnectionError):
                return

        self._spawn(release)

    def _on_detached(self, event: Mapping[str, Any], session_id: str | None) -> None:
        self._popups.pop(str(event.get("sessionId", "")), None)
        self._workers.pop(str(event.get("sessionId", "")), None)
        tab = self._tabs.get(str(event.get("sessionId", "")))
        if tab is not None and tab.failure is None:
            tab.fail(PageFailure("closed", "the tab was detached"))

    def _on_crashed(self, event: Mapping[str, Any], session_id: str | None) -> None:
        tab = self._by_target.get(str(event.get("targetId", "")))
        if tab is not None:
            status = event.get("status", "crashed")
            reason = self._watchdog.claim() if self._watchdog is not None else None
            tab.fail(
                PageFailure(
                    "page_crashed", reason or f"the renderer {status} (error code {event.get('errorCode')})"
                )
            )
