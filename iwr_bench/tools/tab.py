"""A sandboxed Chromium tab driven over raw CDP (cdp-use, browser-use's CDP layer)."""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping
from contextlib import suppress
from functools import partial
from typing import Any, Literal

import anyio
from cdp_use import CDPClient

from iwr_bench.tools.errors import PageFailure, ToolRetry
from iwr_bench.tools.jail import Containment
from iwr_bench.tools.models import (
    BlockedRequest,
    ConsoleRecord,
    DialogRecord,
    NavigationRecord,
    PageState,
    PopupRecord,
    Viewport,
)
from iwr_bench.tools.scripts import JUDGE_WORLD

_MAX_RECORDS = 200
_MAX_URL = 300
_NAVIGATED = (
    "Inspected target navigated or closed",
    "Cannot find context",
    "Execution context was destroyed",
)

AUTO_ATTACH = {"autoAttach": True, "waitForDebuggerOnStart": True, "flatten": True}
"""``Target.setAutoAttach``: every new target (frame, worker, popup) waits, paused, for its set-up."""
_NETWORK = {"maxTotalBufferSize": 0, "maxResourceBufferSize": 0}
_SCRIPTED_FETCH = frozenset({"Fetch", "XHR", "EventSource"})
_REALM_KINDS = ("iframe", "worker", "shared_worker", "service_worker")
"""Realm kinds that get the pinned clock and seeded randomness (their order names their seeds)."""
_FILE_FETCH = "local file read by fetch/XHR (refused on file:// pages)"

World = Literal["judge", "page"]
"""Where :meth:`CdpTab.evaluate` runs: the judge's isolated world or the page's own."""

Spawn = Callable[[Callable[[], Awaitable[None]]], None]
"""Runs a coroutine function in the background (the browser's task group)."""


def _literal(url: str) -> str:
    """``url`` as a Fetch URL pattern that matches it alone (``*``, ``?`` and ``\\`` escaped)."""
    return url.replace("\\", "\\\\").replace("*", "\\*").replace("?", "\\?")


def _short(text: str, limit: int = _MAX_URL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


class CdpTab:
    """One page target in its own browser context, with everything the sandbox records about it."""

    def __init__(
        self,
        client: CDPClient,
        spawn: Spawn,
        target_id: str,
        session_id: str,
        context_id: str,
        origin: str,
        containment: Containment = "netns",
    ) -> None:
        self.client = client
        self.containment: Containment = containment
        self.target_id = target_id
        self.session_id = session_id
        self.context_id = context_id
        self.origin = origin
        self.viewport = Viewport()
        self.local_fetch = True
        """False: fetch, XHR and EventSource of the page's own files fail (a ``file://`` page)."""
        self._spawn = spawn
        self._failure: PageFailure | None = None
        self._dead = anyio.Event()
        self.loaded = anyio.Event()
        self.first_load_done = False
        self.blocked: list[BlockedRequest] = []
        self.dialogs: list[DialogRecord] = []
        self.popups: list[PopupRecord] = []
        self.navigations: list[NavigationRecord] = []
        self.console_errors: list[ConsoleRecord] = []
        self.page_errors: list[ConsoleRecord] = []
        self._popup_records: dict[str, PopupRecord] = {}
        self._popup_named: dict[str, anyio.Event] = {}
        self._worker_kinds: dict[str, str] = {}
        self.realm_script: Callable[[int], str] | None = None
        """The determinism script for the n-th realm the page creates besides its own document (a
        dedicated worker, an out-of-process frame), each with a seed of its own; set by the browser."""
        self._realms: dict[str, int] = {}
        """Realms attached so far, by kind (each kind numbered on its own, see :meth:`_pinned`)."""
        self._held_scripts: dict[str, str] = {}
        self._worker_scripts: dict[str, str] = {}
        """Service worker session -> the determinism script to put before its own script."""
        self._judge_context: str | None = None
        self._judge_ready = anyio.Event()

    # ----- failure -----------------------------------------------------------------------------
    @property
    def failure(self) -> PageFailure | None:
        """The failure that ended this tab, if any."""
        return self._failure

    def fail(self, failure: PageFailure) -> None:
        """Mark the tab failed; pending and later calls raise ``failure``."""
        if self._failure is None:
            self._failure = failure
        self._dead.set()

    async def wait_loaded(self) -> None:
        """Wait until the page's load event, or until the tab fails (a renderer killed while the
        page loads ends the wait at once, not at the load deadline)."""
        async with anyio.create_task_group() as tg:

            async def first(event: anyio.Event) -> None:
                await event.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(first, self.loaded)
            tg.start_soon(first, self._dead)

    # ----- CDP calls ---------------------------------------------------------------------------
    async def send(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send a CDP command to this tab; fails fast with the tab's failure if it dies meanwhile."""
        if self._failure is not None:
            raise self._failure
        result: dict[str, Any] = {}
        error: BaseException | None = None

        async def call() -> None:
            nonlocal result, error
            try:
                result = await self.client.send_raw(method, dict(params or {}), self.session_id)
            except (RuntimeError, ConnectionError) as exc:
                error = exc
            tg.cancel_scope.cancel()

        async def watch() -> None:
            await self._dead.wait()
            tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            tg.start_soon(watch)
        if self._failure is not None:
            raise self._failure
        if error is not None:
            raise self._translate(method, error)
        return result

    def _translate(self, method: str, error: BaseException) -> Exception:
        if isinstance(error, ConnectionError):
            failure = PageFailure("browser_crashed", f"connection to Chromium lost during {method}")
            self.fail(failure)
            return failure
        text = str(error)
        if any(marker in text for marker in _NAVIGATED):
            return ToolRetry(f"the page navigated during {method}; observe again")
        if "Session with given id not found" in text or "No target with given id" in text:
            failure = PageFailure("closed", f"the tab went away during {method}")
            self.fail(failure)
            return failure
        return PageFailure("closed", f"{method} failed: {_short(text)}")

    async def stored_mb(self) -> float | None:
        """MiB the page's origin has stored (IndexedDB, Cache Storage, origin-private files,
        service workers), as Chromium's quota system counts it; None if it cannot say."""
        with anyio.move_on_after(2), suppress(RuntimeError, ConnectionError, KeyError, TypeError, ValueError):
            reply = await self.client.send_raw(
                "Storage.getUsageAndQuota", {"origin": self.origin}, self.session_id
            )
            return float(reply["usage"]) / (1024 * 1024)
        return None

    async def evaluate(self, expression: str, *, await_promise: bool = False, world: World = "judge") -> Any:
        """Evaluate ``expression`` and return its JSON value.

        ``world="judge"`` (default) runs it in the judge's isolated world: it sees the DOM but not the
        page's JavaScript globals, and the page cannot see it. ``world="page"`` runs it in the page's
        own world (tests and diagnostics only).
        """
        params: dict[str, Any] = {
            "expression": expression,
            "returnByValue": True,
            "awaitPromise": await_promise,
        }
        if world == "judge":
            params["uniqueContextId"] = await self._judge_world()
        reply = await self.send("Runtime.evaluate", params)
        details = reply.get("exceptionDetails")
        if details:
            desc = details.get("exception", {}).get("description") or details.get("text", "")
            raise ToolRetry(f"page script failed: {_short(str(desc), 200)}")
        return reply.get("result", {}).get("value")

    async def _judge_world(self) -> str:
        """The unique id of the judge's world in the current main-frame document."""
        if self._judge_context is None:
            # Normally known from Runtime.executionContextCreated; ask for it when it is not yet.
            reply = await self.send(
                "Page.createIsolatedWorld", {"frameId": self.target_id, "worldName": JUDGE_WORLD}
            )
            wanted = int(reply["executionContextId"])
            with anyio.move_on_after(1.0):
                await self._judge_ready.wait()
            if self._judge_context is None:
                raise ToolRetry(f"the judge's world (context {wanted}) is not ready; observe again")
        return self._judge_context

    def on_context_created(self, event: Mapping[str, Any]) -> None:
        """Runtime.executionContextCreated: remember the judge's world of the main frame."""
        ctx = event.get("context", {})
        aux = ctx.get("auxData", {})
        if ctx.get("name") == JUDGE_WORLD and aux.get("frameId") == self.target_id:
            self._judge_context = str(ctx.get("uniqueId"))
            self._judge_ready.set()

    def on_context_destroyed(self, event: Mapping[str, Any]) -> None:
        """Runtime.executionContextDestroyed: forget the judge's world if it went."""
        if str(event.get("executionContextUniqueId")) == self._judge_context:
            self.on_contexts_cleared()

    def on_contexts_cleared(self) -> None:
        """Runtime.executionContextsCleared: the document went away."""
        self._judge_context = None
        self._judge_ready = anyio.Event()

    async def mouse(self, kind: str, x: float, y: float, *, button: str = "none", clicks: int = 0) -> None:
        """Send one ``Input.dispatchMouseEvent``."""
        params: dict[str, Any] = {"type": kind, "x": x, "y": y, "button": button, "clickCount": clicks}
        if kind == "mouseMoved" and button == "none":
            params.pop("clickCount")
        await self.send("Input.dispatchMouseEvent", params)

    async def wheel(self, x: float, y: float, dx: float, dy: float) -> None:
        """Send a mouse-wheel event."""
        await self.send(
            "Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y, "deltaX": dx, "deltaY": dy}
        )

    async def key(self, kind: str, params: dict[str, Any]) -> None:
        """Send one ``Input.dispatchKeyEvent``."""
        await self.send("Input.dispatchKeyEvent", {"type": kind, **params})

    async def insert_text(self, text: str) -> None:
        """``Input.insertText``."""
        await self.send("Input.insertText", {"text": text})

    async def screenshot(self) -> bytes:
        """PNG of the viewport only."""
        reply = await self.send(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False, "fromSurface": True}
        )
        return base64.b64decode(reply["data"])

    def state(self, url: str, x: float, y: float, container_y: float | None) -> PageState:
        """The sandbox records plus the given position."""
        return PageState(
            url=url,
            scroll_x=x,
            scroll_y=y,
            container_scroll_y=container_y,
            viewport=self.viewport,
            blocked_requests=list(self.blocked),
            dialogs=list(self.dialogs),
            popups=list(self.popups),
            navigations=list(self.navigations),
            console_errors=list(self.console_errors),
            page_errors=list(self.page_errors),
            failure=str(self._failure) if self._failure else None,
            containment=self.containment,
        )

    async def close(self, grace: float) -> bool:
        """Close the target and dispose of its browser context; False if that did not finish in time."""
        self.fail(PageFailure("closed", "the tab was closed"))
        with anyio.move_on_after(grace) as scope:
            try:
                await self.client.send.Target.disposeBrowserContext(
                    params={"browserContextId": self.context_id}
                )
            except RuntimeError:
                try:
                    await self.client.send.Target.closeTarget(params={"targetId": self.target_id})
                except RuntimeError:
                    return True
            except ConnectionError:
                return False
        return not scope.cancelled_caught

    # ----- events (called from the CDP message loop; must not block) ---------------------------
    def _add(self, records: list[Any], item: Any) -> None:
        if len(records) < _MAX_RECORDS:
            records.append(item)

    def _same_origin(self, url: str) -> bool:
        return url == self.origin or url.startswith(self.origin + "/")

    def _refusal(self, url: str) -> str:
        return "other origin" if url.startswith(("http:", "https:", "ws:", "wss:")) else "scheme not allowed"

    def on_request_paused(self, event: Mapping[str, Any], session_id: str | None = None) -> None:
        """Fetch.requestPaused (of the tab, or of one of its workers or frames when ``session_id`` is
        given): let own-origin requests through, refuse the rest."""
        request_id = str(event["requestId"])
        url = str(event["request"]["url"])
        kind = str(event.get("resourceType", "Other"))
        session = session_id or self.session_id
        if "responseStatusCode" in event or "responseErrorReason" in event:
            self._spawn(partial(self._prefix_script, event, session))
            return
        main_frame = session_id is None and event.get("frameId") == self.target_id and kind == "Document"
        if self._same_origin(url) and not self.local_fetch and kind in _SCRIPTED_FETCH:
            self._add(self.blocked, BlockedRequest(url=_short(url), resource_type=kind, reason=_FILE_FETCH))
            denied = {"requestId": request_id, "errorReason": "AccessDenied"}
            self._reply("Fetch.failRequest", denied, session)
            return
        if self._same_origin(url):
            if main_frame and self.first_load_done:
                self._add(self.navigations, NavigationRecord(url=_short(url), blocked=False))
            self._reply("Fetch.continueRequest", {"requestId": request_id}, session)
            return
        source = "page" if session_id is None else self._worker_source(session_id)
        self._add(
            self.blocked,
            BlockedRequest(url=_short(url), resource_type=kind, reason=self._refusal(url), source=source),
        )
        if main_frame:
            # A 204 answer cancels the navigation and keeps the current document.
            self._add(self.navigations, NavigationRecord(url=_short(url), blocked=True))
            self._reply("Fetch.fulfillRequest", {"requestId": request_id, "responseCode": 204, "body": ""})
        else:
            params = {"requestId": request_id, "errorReason": "BlockedByClient"}
            self._reply("Fetch.failRequest", params, session)

    async def _prefix_script(self, event: Mapping[str, Any], session_id: str) -> None:
        """A service worker's own script has arrived: answer it with the determinism script first."""
        request_id = str(event["requestId"])
        source = self._worker_scripts.get(session_id)
        with suppress(RuntimeError, ConnectionError):
            status = int(event.get("responseStatusCode") or 0)
            if source is None or not 200 <= status < 300:
                await self.client.send_raw("Fetch.continueRequest", {"requestId": request_id}, session_id)
                return
            got = await self.client.send_raw("Fetch.getResponseBody", {"requestId": request_id}, session_id)
            body = base64.b64decode(got["body"]) if got.get("base64Encoded") else str(got["body"]).encode()
            headers = [
                h for h in event.get("responseHeaders") or [] if h.get("name", "").lower() != "content-length"
            ]
            fulfil = {
                "requestId": request_id,
                "responseCode": status,
                "responseHeaders": headers,
                "body": base64.b64encode(source.encode() + b"\n" + body).decode(),
            }
            await self.client.send_raw("Fetch.fulfillRequest", fulfil, session_id)

    def _worker_source(self, session_id: str) -> Literal["worker", "frame"]:
        return "frame" if self._worker_kinds.get(session_id) == "iframe" else "worker"

    def on_worker(self, kind: str, url: str, session_id: str) -> None:
        """A worker or out-of-process frame of this page (held at start): intercept its requests, then
        let it run. A worker script from another origin is refused by the interception itself."""
        self._worker_kinds[session_id] = kind
        pinned = self._pinned(kind, session_id, url)
        patterns: list[dict[str, str]] = [{"urlPattern": "*"}]
        if session_id in self._worker_scripts:  # its own script, to rewrite once it has arrived
            patterns.append({"urlPattern": _literal(url), "requestStage": "Response"})

        async def setup() -> None:
            for method, params in (
                ("Fetch.enable", {"patterns": patterns}),
                # (Network.enable on a service worker's session keeps its registration pending)
                *(() if kind == "service_worker" else (("Network.enable", _NETWORK),)),
                ("Target.setAutoAttach", AUTO_ATTACH),
                *pinned,
            ):
                try:
                    await self.client.send_raw(method, params, session_id)
                except RuntimeError:
                    continue  # a target kind without that domain
                except ConnectionError:
                    return
            try:
                await self.client.send_raw("Runtime.runIfWaitingForDebugger", {}, session_id)
            except (RuntimeError, ConnectionError):
                return

        self._spawn(setup)

    def _pinned(self, kind: str, session_id: str, url: str) -> list[tuple[str, dict[str, Any]]]:
        """The CDP calls that put the page's pinned clock and seeded randomness into a new realm held
        at start, before it runs. A frame in a process of its own gets it in each document it loads
        (frames in the page's process, sandboxed ones included, get the page's own script, and a
        window the page opens gets it from ``window.open`` itself). A dedicated worker is stopped
        before its first script (an instrumentation breakpoint: evaluating in a worker held at
        start would wait for it to run), the script is evaluated there (:meth:`on_realm_paused`),
        and the worker goes on. Realms are numbered in the order they attach, per kind, each with a
        seed of its own. A shared worker is held the same way. A service worker's breakpoint never fires
        (the worker stays pending), so its script is rewritten instead: the determinism script goes
        before it when it arrives (:meth:`on_request_paused`, at the response stage)."""
        if self.realm_script is None or kind not in _REALM_KINDS:
            return []
        # numbered per kind: workers of different kinds attach in any order, and a realm's seed
        # must not depend on that (the n-th dedicated worker draws the same numbers on every load)
        count = self._realms[kind] = self._realms.get(kind, 0) + 1
        source = self.realm_script(_REALM_KINDS.index(kind) * 100_000 + count)
        if kind == "iframe":
            return [("Page.addScriptToEvaluateOnNewDocument", {"source": source})]
        if kind == "service_worker":
            self._worker_scripts[session_id] = source
            return []
        self._held_scripts[session_id] = source
        return [
            ("Debugger.enable", {}),
            ("Debugger.setInstrumentationBreakpoint", {"instrumentation": "beforeScriptExecution"}),
        ]

    def on_realm_paused(self, event: Mapping[str, Any], session_id: str) -> None:
        """Debugger.paused in a dedicated worker of this page, before its first script: evaluate the
        pinned clock and seeded randomness in its scope, then stop debugging it and let it run."""
        source = self._held_scripts.pop(session_id, None)
        frames = event.get("callFrames") or []

        async def install_and_go() -> None:
            with suppress(RuntimeError, ConnectionError):
                if source is not None and frames:
                    params = {"callFrameId": frames[0]["callFrameId"], "expression": source, "silent": True}
                    await self.client.send_raw("Debugger.evaluateOnCallFrame", params, session_id)
                await self.client.send_raw("Debugger.disable", {}, session_id)  # also resumes it

        self._spawn(install_and_go)

    def on_websocket(self, event: Mapping[str, Any]) -> None:
        """Network.webSocketCreated: record a WebSocket to anywhere but the page's own server.

        Interception does not see WebSockets; the jail's network refuses the connection."""
        url = str(event.get("url", ""))
        own = "ws" + self.origin[len("http") :]
        if url == own or url.startswith(own + "/"):
            return
        self._add(
            self.blocked,
            BlockedRequest(url=_short(url), resource_type="WebSocket", reason=self._refusal(url)),
        )

    def on_dialog(self, event: Mapping[str, Any]) -> None:
        """Page.javascriptDialogOpening: accept alerts/confirms/beforeunload, dismiss prompts."""
        kind = str(event.get("type", "alert"))
        accept = kind != "prompt"
        self._add(
            self.dialogs,
            DialogRecord(type=kind, message=_short(str(event.get("message", ""))), accepted=accept),
        )
        self._reply("Page.handleJavaScriptDialog", {"accept": accept, "promptText": ""})

    def on_popup(self, target_id: str, url: str, session_id: str) -> None:
        """A window this page opened (held at start): record it, refuse all its requests, close it.

        Closing a held popup while its opener is still loading stalls the opener, so the popup is
        released first with every request it makes refused.
        """
        record = PopupRecord(url=_short(url))
        named = anyio.Event()
        self._popup_records[session_id] = record
        self._popup_named[session_id] = named
        self._add(self.popups, record)

        async def close() -> None:
            try:
                await self.client.send_raw("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, session_id)
                await self.client.send_raw("Runtime.runIfWaitingForDebugger", {}, session_id)
                # A popup opened with a URL starts blank; its first (refused) document request names
                # the URL. Give it a moment to arrive before closing, so the record says where it went.
                if not record.url:
                    with anyio.move_on_after(1.0):
                        await named.wait()
                await self.client.send.Target.closeTarget(params={"targetId": target_id})
            except (RuntimeError, ConnectionError):
                return

        self._spawn(close)

    def on_popup_request(self, event: Mapping[str, Any], session_id: str) -> None:
        """A request from a popup of this page: refuse it and record it."""
        url = str(event["request"]["url"])
        kind = str(event.get("resourceType", "Other"))
        self._add(
            self.blocked, BlockedRequest(url=_short(url), resource_type=kind, reason="popup", source="popup")
        )
        record = self._popup_records.get(session_id)
        if record is not None and not record.url and kind == "Document":
            record.url = _short(url)
            self._popup_named[session_id].set()

        async def refuse() -> None:
            try:
                params = {"requestId": event["requestId"], "errorReason": "BlockedByClient"}
                await self.client.send_raw("Fetch.failRequest", params, session_id)
            except (RuntimeError, ConnectionError):
                return

        self._spawn(refuse)

    def on_console(self, event: Mapping[str, Any]) -> None:
        """Runtime.consoleAPICalled: keep errors."""
        if event.get("type") not in ("error", "assert"):
            return
        parts = [str(a.get("value", a.get("description", ""))) for a in event.get("args", [])]
        self._add(self.console_errors, ConsoleRecord(source="console", text=_short(" ".join(parts))))

    def on_log(self, event: Mapping[str, Any]) -> None:
        """Log.entryAdded: keep errors (blocked loads, refused schemes)."""
        entry = event.get("entry", {})
        if entry.get("level") == "error":
            text = str(entry.get("text", ""))
            if entry.get("url"):
                text = f"{text} ({entry['url']})"
            self._add(self.console_errors, ConsoleRecord(source="log", text=_short(text)))

    def on_exception(self, event: Mapping[str, Any]) -> None:
        """Runtime.exceptionThrown: keep uncaught errors."""
        details = event.get("exceptionDetails", {})
        desc = details.get("exception", {}).get("description") or details.get("text", "")
        self._add(self.page_errors, ConsoleRecord(source="exception", text=_short(str(desc))))

    def on_load(self) -> None:
        """Page.loadEventFired."""
        self.loaded.set()

    def _reply(self, method: str, params: dict[str, Any], session_id: str | None = None) -> None:
        session = session_id or self.session_id

        async def send() -> None:
            try:
                await self.client.send_raw(method, params, session)
            except (RuntimeError, ConnectionError):
                return

        self._spawn(send)
