"""JavaScript the sandbox injects into pages.

Two worlds. The page's own world gets only :func:`determinism_script` (seeded ``Math.random``, a
clock that starts at a fixed instant, no WebRTC), written so the page cannot tell: the replaced
functions print as native code, have native names, lengths and no ``prototype``, and the script
uses only built-ins it captured before any page script ran. Everything else (the judge's element
list and scroll container, caret hiding, the on-demand snippets below) runs in the isolated world
:data:`JUDGE_WORLD`, which shares the DOM but not the JavaScript globals: the page cannot see or
change ``window.__iwr__`` or the functions there.

The longer scripts live in ``js/`` beside this module, one file each, read once at import. A value
this module fills in stands in its file as a slot, an upper-case name between double underscores
(``const MAX = __MAX__;``, a line ``__SEEN__`` where another script goes in), so every file parses
as JavaScript as it is (``tests/tools/test_page_scripts.py`` and ``make lint`` check that). The
slots are filled in one pass, so a value put in is never read for slots itself.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources

JUDGE_WORLD = "iwr-judge"
"""Name of the isolated world the judge's scripts run in."""

_SLOT = re.compile(r"\b__([A-Z][A-Z0-9_]*?)__\b")
"""A slot in a script file: ``__NAME__`` (``window.__iwr__`` is lower-case, so never one)."""

SOURCES: dict[str, str] = {}
"""Every file of ``js/`` this module uses, by file name, as read (the lint test checks that none is
left unused)."""


def _source(name: str, *slots: str) -> str:
    """The script in ``js/<name>``, which must hold exactly the slots ``slots`` (a file edited out
    of step with this module fails at import, not in a page). Each script begins with a newline,
    as it did when it was written here as a Python string, so what pages get is unchanged."""
    text = (resources.files("iwr_bench.tools") / "js" / name).read_text(encoding="utf-8")
    found = set(_SLOT.findall(text))
    if found != set(slots):
        raise RuntimeError(f"js/{name} holds the slots {sorted(found)}, not {sorted(slots)}")
    SOURCES[name] = text
    return "\n" + text


def _fill(script: str, **values: str) -> str:
    """``script`` with each slot ``__NAME__`` replaced by ``values["NAME"]``, in one pass."""
    return _SLOT.sub(lambda m: values[m[1]], script)


_DETERMINISM = _source("determinism.js", "CFG")


def determinism_script(
    seed: int,
    epoch_ms: int | None,
    no_webrtc: bool = True,
    clock: SteppedClock | None = None,
    popup_seed: int | None = None,
    window_size: tuple[int, int] | None = None,
) -> str:
    """The script for every realm a page creates (its documents, frames, popups and workers):
    seeded ``Math.random``, the fixed clock start (``Date``, ``performance.timeOrigin``, ``Intl``'s
    formatting of "now", ``document.lastModified``), no WebRTC when ``no_webrtc``, and with
    ``clock`` a stepped page clock in the top document (``epoch_ms`` is then required). With
    ``popup_seed``, each window the page opens gets the same script at once, seeded so. With
    ``window_size`` (the outer size the judge gave the window), ``outerWidth``/``outerHeight`` read
    it while a new renderer still reads 0 there."""
    if clock is not None and epoch_ms is None:
        raise ValueError("a stepped clock needs a fixed start (epoch_ms)")
    stepped = None if clock is None else {"name": clock.name, "step": clock.step_ms}
    popup = None if popup_seed is None else determinism_script(popup_seed, epoch_ms, no_webrtc)
    window = None if window_size is None else list(window_size)
    cfg = json.dumps(
        {
            "seed": seed,
            "epoch": epoch_ms,
            "noWebrtc": no_webrtc,
            "clock": stepped,
            "popup": popup,
            "window": window,
        }
    )
    return _fill(_DETERMINISM, CFG=cfg)


@dataclass(frozen=True)
class SteppedClock:
    """A page clock that moves only when the judge says so, ``step_ms`` at a time. ``name`` is the
    secret event type the judge's world signals the page's world with (a fresh one per tab)."""

    name: str
    step_ms: int


ADVANCE_CLOCK = _source("advance-clock.js")
"""Judge-world script: move a stepped page clock on by one step and wait until the timers that fell
due have run; returns the step in ms (0 when the page runs on the real clock)."""


_JUDGE_INIT = _source("judge-init.js", "CFG")


def judge_init_script(hide_caret: bool, clock: SteppedClock | None = None) -> str:
    """The judge-world script run at every new document: its state (with the stepped clock's
    event name and step), caret hiding."""
    stepped = None if clock is None else {"name": clock.name, "step": clock.step_ms}
    return _fill(_JUDGE_INIT, CFG=json.dumps({"hideCaret": hide_caret, "clock": stepped}))


SEEN_JS = _source("seen.js")
"""JavaScript defining ``seen``: ``seen.opacity(el)`` (what opacity, ``filter: opacity()``, an
all-transparent mask and an empty ``clip-path`` leave of ``el``, along its ancestors),
``seen.legible(el, x, y, height)`` (text that stands out from the plain colour behind it, at least
4 px high), ``seen.draws(el)`` (``el`` or what it holds shows anything at all), ``seen.css(el)``
(computed styles, cached for one script run) and ``seen.textClip(el)`` (gradient text). The
observe and visible-text scripts use it, so the judge finds and reads only what a person could
see."""

_OBSERVE = _source("observe.js", "MAX", "MAX_TEXT", "MAX_STRING", "SEEN")


def observe_script(max_elements: int, max_text: int, max_string: int = 200) -> str:
    """Script returning the :class:`~iwr_bench.tools.models.Observation` fields as JSON.

    Every string is capped (``max_string`` for titles, labels, placeholders and hrefs; 80 for element
    text, 340 for context, ``max_text`` for the page text), so a page cannot flood the caller.
    """
    return _fill(
        _OBSERVE,
        MAX=str(int(max_elements)),
        MAX_TEXT=str(int(max_text)),
        MAX_STRING=str(int(max_string)),
        SEEN=SEEN_JS,
    )


def element_click_script(index: int) -> str:
    """Script focusing element ``index`` of the last observe and sending it a click event (whatever
    lies on top of it); true when the element was there."""
    return (
        f"(() => {{ const st = window.__iwr__; const el = st && st.els[{int(index)}];"
        " if (!el || !el.isConnected) return false;"
        " if (typeof el.focus === 'function') el.focus(); el.click(); return true; })()"
    )


AIM_JS = _source("aim.js")
"""JavaScript defining ``aim(el)``: the box to point at to reach ``el`` (the click tools and the
recorder use it)."""

_POINT = _source("point.js", "AIM", "INDEX", "SELECT", "HIT")


def point_script(index: int, select: bool = False, hit: bool = False) -> str:
    """Script returning the click point of element ``index`` (or ``{error: ...}``).

    ``hit``: the point must hit the element (or a descendant or one of its labels): the centre
    when it does, else the first of a grid of points over its visible box that does; when none
    does, ``{error: 'covered', by: ...}`` names what lies on top.
    """
    return _fill(
        _POINT,
        AIM=AIM_JS,
        INDEX=str(int(index)),
        SELECT="true" if select else "false",
        HIT="true" if hit else "false",
    )


_SCROLL_PROBE = _source("scroll-probe.js", "WORDS")


def scroll_probe_script(region: list[str] | tuple[str, ...] = ()) -> str:
    """Script measuring document and container scroll positions and remembering the container.

    The container is the scrollable element best named by ``region`` (lower-case words matched in
    its id, label, class, text and the headings just before it; it is brought into view), else
    the largest visible one. ``named`` says whether ``region`` picked it."""
    words = [w for w in region if re.fullmatch(r"[a-z0-9]+", w)]
    return _fill(_SCROLL_PROBE, WORDS=json.dumps(words))


SCROLL_PROBE = scroll_probe_script()
"""Script measuring document and main-container scroll positions (and remembering the container)."""

SCROLL_AFTER = _source("scroll-after.js")
"""Script measuring positions again after two animation frames."""


def scroll_fallback_script(target: str, dx: float, dy: float) -> str:
    """Script scrolling the document or remembered container by (dx, dy) without animation."""
    el = (
        "window.__iwr__.scroller"
        if target == "container"
        else "(document.scrollingElement||document.documentElement)"
    )
    body = f"el.scrollBy({{left: {dx}, top: {dy}, behavior: 'instant'}})"
    return f"(() => {{ const el = {el}; if (el) {body}; }})()"


STATE_PROBE = _source("state-probe.js")
"""Script returning the URL and scroll positions."""

WAIT_FRAME = "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"
"""Resolves after two animation frames (the page has painted)."""


_VISIBLE_TEXT = _source("visible-text.js", "MAX_RUNS", "MAX_TEXT", "ANNOTATE", "SEEN")


def visible_text_script(max_runs: int, max_text: int, annotate: bool = False) -> str:
    """Script returning the :class:`~iwr_bench.tools.models.VisibleText` fields as JSON.

    With ``annotate`` each run also carries its role (ARIA or implied by its tag), the index of the
    interactive element from the last ``observe`` that holds it (with that control's state), and
    the visible controls that hold no text of their own (inputs, selects, icon buttons) are added
    as runs, everything in document order.

    Only text a person can see counts: rendered, inside the viewport, not hidden or transparent
    along its ancestor chain, not clipped away by an ``overflow`` box, and on top at its own
    position (hit-tested with ``elementsFromPoint``; elements that paint nothing are looked through).
    """
    return _fill(
        _VISIBLE_TEXT,
        MAX_RUNS=str(int(max_runs)),
        MAX_TEXT=str(int(max_text)),
        ANNOTATE="true" if annotate else "false",
        SEEN=SEEN_JS,
    )
