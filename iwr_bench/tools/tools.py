"""The browser tools: small typed async functions over one sandboxed tab.

``observe``, ``visible_text``, ``text_snapshot``, ``click``, ``type``, ``press``, ``scroll``,
``hover``, ``screenshot`` and ``page_state`` are methods of :class:`PageTools`, which implements
:class:`~iwr_bench.tools.surface.PageToolsProtocol` (what judge code calls). Each call runs under
the page's action timeout: a page that does not answer in time is marked failed (``timeout``) and
the call raises
:class:`~iwr_bench.tools.errors.PageFailure`; misuse the agent can fix raises
:class:`~iwr_bench.tools.errors.ToolRetry`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

import anyio

from iwr_bench.tools import scripts
from iwr_bench.tools.browser import Tab
from iwr_bench.tools.errors import COVERED, PageFailure, ToolRetry
from iwr_bench.tools.keys import key_events
from iwr_bench.tools.models import (
    ActionResult,
    Limits,
    Observation,
    PageState,
    ScrollResult,
    SettleConfig,
    TextRun,
    TextSnapshot,
    VisibleText,
)
from iwr_bench.tools.settle import SettleAfter, settle
from iwr_bench.tools.surface import Direction

T = TypeVar("T")
_OFFICIAL_SCROLL = """(() => {
  // the official scroll's choice of what to scroll: the nearest scroll container around the focus
  // that can scroll down and is at least half the window high, else the first such container in
  // the document, else the window; it moves by half the window's inner height
  const step = Math.trunc(window.innerHeight * 0.5);
  const scrolls = (el) => !!el && el.clientHeight >= window.innerHeight * 0.5 &&
    el.scrollHeight > el.clientHeight && /(auto|scroll|overlay)/.test(getComputedStyle(el).overflowY);
  let el = document.activeElement;
  while (el && el !== document.body && !scrolls(el)) el = el.parentElement;
  if (!scrolls(el)) el = Array.from(document.querySelectorAll('*')).find(scrolls) || null;
  const root = !el || el === document.scrollingElement || el === document.documentElement ||
    el === document.body;
  if (root) window.scrollBy({ left: 0, top: step, behavior: 'instant' });
  else el.scrollBy({ top: step, behavior: 'instant' });
  return root ? 'document' : 'container';
})()"""
"""The official scroll: a large scroll container if the page has one, else the window, down by half
the window's inner height (success is then judged on the window alone)."""


class PageTools:
    """The tools bound to one open tab (a :class:`~iwr_bench.tools.surface.PageToolsProtocol`)."""

    def __init__(
        self, tab: Tab, settle_config: SettleConfig | None = None, limits: Limits | None = None
    ) -> None:
        self.tab = tab
        self.settle_config = settle_config or SettleConfig()
        self.limits = limits or Limits()
        self._last_shot: bytes | None = None

    async def _guard(self, name: str, body: Callable[[], Awaitable[T]]) -> T:
        if self.tab.failure is not None:
            raise self.tab.failure
        try:
            with anyio.fail_after(self.limits.action_timeout):
                return await body()
        except TimeoutError:
            failure = self.tab.failure or PageFailure(
                "timeout",
                f"{name} did not finish within {self.limits.action_timeout:g} s (the page may hang)",
            )
            self.tab.fail(failure)
            raise failure from None

    async def _settled(self, name: str, detail: str, after: SettleAfter, tick: bool = True) -> ActionResult:
        # A stepped page clock moves on one step (its due timers run) before the wait: once per
        # input (click, type, key, scroll) and at load, never for a hover or a plain wait.
        if tick:
            await self.tab.evaluate(scripts.ADVANCE_CLOCK, await_promise=True)
        waited, ok, shot = await settle(self.tab, self.settle_config, after)
        self._last_shot = shot
        return ActionResult(action=name, detail=detail, settle_seconds=round(waited, 4), settled=ok)

    async def wait_settled(self, after: SettleAfter = "load", tick: bool | None = None) -> ActionResult:
        """Wait for the page to settle (used after loading).

        ``tick``: move a stepped page clock on one step first (default: only after a load); pass
        True after an input sent straight to the tab, which no tool here has counted.
        """
        ticks = after == "load" if tick is None else tick
        return await self._guard("settle", lambda: self._settled("settle", "", after, ticks))

    async def observe(self) -> Observation:
        """List the interactive elements (indexed) and the visible text of the page."""

        async def body() -> Observation:
            script = scripts.observe_script(
                self.limits.max_elements, self.limits.max_text_chars, self.limits.max_string_chars
            )
            value = await self.tab.evaluate(script)
            if not isinstance(value, dict):
                raise ToolRetry("the page did not return an element list; try again")
            return Observation.model_validate(value)

        return await self._guard("observe", body)

    async def visible_text(self, max_runs: int = 400) -> VisibleText:
        """The text a person sees in the viewport, as runs with their boxes (hidden text left out)."""

        async def body() -> VisibleText:
            value = await self.tab.evaluate(scripts.visible_text_script(max_runs, self.limits.max_text_chars))
            if not isinstance(value, dict):
                raise ToolRetry("the page did not return its text; try again")
            return VisibleText.model_validate(value)

        return await self._guard("visible_text", body)

    async def text_snapshot(self, max_chars: int = 4000) -> TextSnapshot:
        """The visible text as ``[index] role: text`` lines in reading order (see :class:`TextSnapshot`).

        Observes first, so the indices are current; at most ``max_chars`` characters (then a note).
        """
        observation = await self.observe()

        async def body() -> VisibleText:
            script = scripts.visible_text_script(400, self.limits.max_text_chars, annotate=True)
            value = await self.tab.evaluate(script)
            if not isinstance(value, dict):
                raise ToolRetry("the page did not return its text; try again")
            return VisibleText.model_validate(value)

        visible = await self._guard("text_snapshot", body)
        roles = {e.index: e.role or e.tag for e in observation.elements}
        shown = [r for r in visible.runs if r.on_screen]
        text, cut = _snapshot_text([_snapshot_line(r, roles) for r in shown], max_chars)
        off = len(visible.runs) - len(shown)
        if off:
            text += f"\n({off} more text block(s) on the page outside the viewport: scroll to read them)"
        return TextSnapshot(
            url=observation.url,
            title=observation.title,
            text=text,
            lines=len(shown),
            off_screen=off,
            truncated=cut or visible.truncated,
        )

    async def _point(self, index: int, select: bool = False, hit: bool = False) -> tuple[float, float, str]:
        if index < 0:
            raise ToolRetry(f"index {index} is negative")
        value: Any = await self.tab.evaluate(scripts.point_script(index, select, hit))
        if not isinstance(value, dict):
            raise ToolRetry("the element list is gone (the page reloaded); call observe")
        error = value.get("error")
        if error == "no_observation":
            raise ToolRetry("no element list yet; call observe first")
        if error == "out_of_range":
            raise ToolRetry(
                f"index {index} is out of range (0..{int(value.get('count', 0)) - 1}); call observe"
            )
        if error == "stale":
            raise ToolRetry(f"element {index} is no longer on the page; call observe again")
        if error == "covered":
            raise ToolRetry(
                f"{COVERED}{value.get('tag', '')}#{index} is under {value.get('by', 'something')} at every "
                "point of it on screen, so a click there would reach that instead"
            )
        return float(value["x"]), float(value["y"]), str(value.get("tag", ""))

    async def _click_at(self, x: float, y: float) -> None:
        await self.tab.mouse("mouseMoved", x, y)
        await self.tab.mouse("mousePressed", x, y, button="left", clicks=1)
        await self.tab.mouse("mouseReleased", x, y, button="left", clicks=1)

    async def _press_on(self, index: int, hit: bool) -> tuple[float, float, str]:
        """Click element ``index``: with the mouse where it is on top, or (``hit=False``) with a
        click event sent to the element itself; (x, y, tag) of the point aimed at."""
        x, y, tag = await self._point(index, hit=hit)
        if hit:
            await self._click_at(x, y)
        else:  # a click event sent to the element itself, as a script would send it
            await self.tab.evaluate(scripts.element_click_script(index))
        return x, y, tag

    async def click(self, index: int, hit: bool = True) -> ActionResult:
        """Click element ``index`` from the last ``observe`` where it is on top (its centre when
        nothing covers that), then wait to settle; a covered element raises :class:`ToolRetry`.
        ``hit=False`` sends the click to the element itself whatever lies on top, as the official
        scripts' browser does when its click is intercepted."""

        async def body() -> ActionResult:
            x, y, tag = await self._press_on(index, hit)
            return await self._settled("click", f"{tag}#{index} at ({x:.0f}, {y:.0f})", "action")

        return await self._guard("click", body)

    async def type(self, index: int, text: str, hit: bool = True) -> ActionResult:
        """Focus element ``index``, replace its content with ``text`` key by key, then settle (the
        element is clicked first, where it is on top, as :meth:`click`)."""

        async def body() -> ActionResult:
            _, _, tag = await self._press_on(index, hit)
            await self.tab.evaluate(scripts.point_script(index, select=True))
            for char in text:
                if char == "\n":
                    down, up = key_events("Enter")
                    await self.tab.key("keyDown", down)
                    await self.tab.key("keyUp", up)
                else:
                    await self.tab.key("keyDown", {"key": char, "text": char, "unmodifiedText": char})
                    await self.tab.key("keyUp", {"key": char})
            return await self._settled("type", f"{len(text)} chars into {tag}#{index}", "action")

        return await self._guard("type", body)

    async def press(self, key: str) -> ActionResult:
        """Press a key or combination (``Enter``, ``Escape``, ``Control+a``) at the focus, then settle."""
        down, up = key_events(key)

        async def body() -> ActionResult:
            await self.tab.key("keyDown" if "text" in down else "rawKeyDown", down)
            await self.tab.key("keyUp", up)
            return await self._settled("press", key, "action")

        return await self._guard("press", body)

    async def hover(self, index: int) -> ActionResult:
        """Move the mouse over element ``index``, then settle."""

        async def body() -> ActionResult:
            x, y, tag = await self._point(index)
            await self.tab.mouse("mouseMoved", x, y)
            return await self._settled("hover", f"{tag}#{index}", "action", tick=False)

        return await self._guard("hover", body)

    async def scroll(
        self, direction: Direction = "down", amount: float | None = None, region: Sequence[str] = ()
    ) -> ScrollResult:
        """Scroll the page or its main scroll container; ``amount`` defaults to half the viewport.

        ``region``: words naming the scrollable part to scroll ("recent", "orders" for "inside the
        Recent orders list"); the container they name best is scrolled even when the page could
        scroll too. Returns how far the target actually moved (the judge counts a scroll as done
        above 5 px).
        """
        if direction not in ("down", "up", "left", "right"):
            raise ToolRetry(f"direction must be up, down, left or right, not {direction!r}")
        vp = self.tab.viewport
        step = amount if amount is not None else (vp.height if direction in ("up", "down") else vp.width) / 2
        dx = step if direction == "right" else -step if direction == "left" else 0.0
        dy = step if direction == "down" else -step if direction == "up" else 0.0
        words = tuple(region)
        return await self._guard("scroll", lambda: self._scroll(direction, dx, dy, words))

    async def _scroll(
        self, direction: str, dx: float, dy: float, region: tuple[str, ...] = ()
    ) -> ScrollResult:
        before: dict[str, Any] = await self.tab.evaluate(scripts.scroll_probe_script(region))
        container = before.get("container")
        vp = self.tab.viewport
        use_container = container is not None and (bool(before.get("named")) or not before.get("canDoc"))
        x, y = (
            (container["cx"], container["cy"])
            if use_container and container
            else (vp.width / 2, vp.height / 2)
        )
        await self.tab.wheel(x, y, dx, dy)
        after: dict[str, Any] = await self.tab.evaluate(scripts.SCROLL_AFTER, await_promise=True)
        moved, target = self._moved(before, after)
        if moved < 1:
            fallback = "container" if use_container else "document"
            await self.tab.evaluate(scripts.scroll_fallback_script(fallback, dx, dy))
            after = await self.tab.evaluate(scripts.SCROLL_AFTER, await_promise=True)
            moved, target = self._moved(before, after)
        settled = await self._settled("scroll", direction, "scroll")
        is_container = target == "container"
        return ScrollResult(
            **settled.model_dump(),
            moved_px=round(moved, 2),
            target=target,
            scroll_x=float((after["cx"] if is_container else after["docX"]) or 0),
            scroll_y=float((after["cy"] if is_container else after["docY"]) or 0),
        )

    async def scroll_window(self) -> ScrollResult:
        """The official scripts' scroll, then settle: down half ``window.innerHeight``, in the
        nearest large scroll container around the focus, else the document's first, else the
        window (:data:`_OFFICIAL_SCROLL`).

        ``moved_px`` is the change of ``window.scrollY`` alone, which the official rule needs above
        5 px: when an inner container scrolled, the window did not move and the step fails, as it
        does officially.
        """

        async def body() -> ScrollResult:
            before = float(await self.tab.evaluate("window.scrollY") or 0)
            scrolled = str(await self.tab.evaluate(_OFFICIAL_SCROLL) or "document")
            after = float(
                await self.tab.evaluate(
                    scripts.WAIT_FRAME + ".then(() => window.scrollY)", await_promise=True
                )
                or 0
            )
            settled = await self._settled("scroll", f"down ({scrolled}, half innerHeight)", "scroll")
            moved = abs(after - before)
            return ScrollResult(
                **settled.model_dump(),
                moved_px=round(moved, 2),
                target="container" if scrolled == "container" else "document" if moved > 0 else "none",
                scroll_x=float(await self.tab.evaluate("window.scrollX") or 0),
                scroll_y=after,
            )

        return await self._guard("scroll", body)

    @staticmethod
    def _moved(
        before: dict[str, Any], after: dict[str, Any]
    ) -> tuple[float, Literal["document", "container", "none"]]:
        doc = abs(after["docY"] - before["docY"]) + abs(after["docX"] - before["docX"])
        cont = 0.0
        container = before.get("container")
        if container is not None and after.get("cy") is not None:
            cont = abs(after["cy"] - container["y"]) + abs(after["cx"] - container["x"])
        if doc <= 0 and cont <= 0:
            return 0.0, "none"
        return (doc, "document") if doc >= cont else (cont, "container")

    async def screenshot(self) -> bytes:
        """PNG of the viewport."""
        return await self._guard("screenshot", self.tab.screenshot)

    async def page_state(self) -> PageState:
        """Scroll position, URL and everything the sandbox recorded (blocked requests, dialogs, ...)."""
        if self.tab.failure is not None:
            return self.tab.state("", 0.0, 0.0, None)

        async def body() -> PageState:
            probe: dict[str, Any] = await self.tab.evaluate(scripts.STATE_PROBE)
            cy = probe.get("cy")
            return self.tab.state(
                str(probe["url"]), float(probe["x"]), float(probe["y"]), None if cy is None else float(cy)
            )

        return await self._guard("page_state", body)


def _snapshot_line(run: TextRun, roles: dict[int, str]) -> str:
    if run.index is None:
        return f"{run.role or run.tag}: {run.text}"
    role = roles.get(run.index) or run.role or run.tag
    text = f": {run.text}" if run.text else ""
    state = f" ({run.state})" if run.state else ""
    return f"[{run.index}] {role}{text}{state}"


def _snapshot_text(lines: list[str], max_chars: int) -> tuple[str, bool]:
    """The lines joined, cut to ``max_chars`` at a line end when possible, with a note when cut."""
    text = "\n".join(lines)
    if len(text) <= max_chars:
        return text, False
    kept = text[:max_chars]
    if "\n" in kept:
        kept = kept[: kept.rindex("\n")]
    shown = kept.count("\n") + 1 if kept else 0
    return f"{kept}\n[... cut at {max_chars} characters: {len(lines) - shown} more line(s) not shown]", True
