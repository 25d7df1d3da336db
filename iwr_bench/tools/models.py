"""Configuration and result models of the browser tools."""

from __future__ import annotations

import re
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

_RESOLUTION = re.compile(r"^\s*(\d+)\s*[xX*]\s*(\d+)\s*$")


class Viewport(BaseModel):
    """Size of the page viewport in CSS pixels (device scale factor is always 1)."""

    model_config = ConfigDict(frozen=True)

    width: int = Field(default=1280, ge=64, le=7680)
    """Viewport width."""
    height: int = Field(default=720, ge=64, le=4320)
    """Viewport height."""

    @classmethod
    def parse(cls, text: str) -> Viewport:
        """Parse ``"1280x720"``; raises ``ValueError`` on anything else."""
        match = _RESOLUTION.match(text)
        if match is None:
            raise ValueError(f"resolution must look like 1280x720, got {text!r}")
        return cls(width=int(match.group(1)), height=int(match.group(2)))


class SettleConfig(BaseModel):
    """How to wait for a page to settle after loading or acting on it."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["stable", "fixed"] = "stable"
    """``stable``: wait until the pixels stop changing (see :attr:`quiet`);
    ``fixed``: sleep the published waits (1 s after load, 0.5 s after an action, 1 s after a scroll)."""
    interval: float = Field(default=0.05, gt=0, le=5)
    """Seconds between screenshots in ``stable`` mode."""
    quiet: float = Field(default=0.5, ge=0, le=10)
    """``stable`` mode: seconds the screenshots must stay byte-identical to count as settled. A
    state shown for less (a 300 ms "+4" toast) is never the one captured, so the capture does not
    depend on timing; the default is the published wait after an action."""
    tolerant_after: float = Field(default=1.0, ge=0, le=60)
    """``stable`` mode: past this many seconds a page that keeps moving (a spinner, a carousel)
    counts as settled once :attr:`stable_frames` consecutive shots have equal perceptual hashes."""
    stable_frames: int = Field(default=2, ge=2, le=20)
    """Number of consecutive perceptually equal screenshots that settle a moving page."""
    max_wait: float = Field(default=3.0, gt=0, le=60)
    """Upper bound on a ``stable`` wait, in seconds."""
    after_load: float = Field(default=1.0, ge=0)
    """``fixed`` mode: sleep after the page loads."""
    after_action: float = Field(default=0.5, ge=0)
    """``fixed`` mode: sleep after a click, type, press or hover."""
    after_scroll: float = Field(default=1.0, ge=0)
    """``fixed`` mode: sleep after a scroll."""


class Limits(BaseModel):
    """Time and memory bounds of one sandboxed page."""

    model_config = ConfigDict(frozen=True)

    action_timeout: float = Field(default=10.0, gt=0)
    """Seconds one tool call (action plus settling) may take before the page counts as hung."""
    load_timeout: float = Field(default=15.0, gt=0)
    """Seconds the initial load may take."""
    close_timeout: float = Field(default=5.0, gt=0)
    """Seconds closing a tab may take before its browser is restarted."""
    js_heap_mb: int = Field(default=512, ge=64)
    """V8 old-space cap per renderer (``--js-flags=--max-old-space-size``)."""
    page_memory_mb: int = Field(default=1024, ge=128)
    """Resident memory one page's renderer may use (everything: JS heap, ArrayBuffers, canvas, WASM,
    workers); a renderer above it is killed and the page fails as ``page_crashed``."""
    max_string_chars: int = Field(default=200, ge=16)
    """Longest title, label, placeholder, href or other string ``observe`` returns per field."""
    max_elements: int = Field(default=400, ge=1)
    """Most interactive elements ``observe`` returns."""
    max_text_chars: int = Field(default=8000, ge=0)
    """Most characters of visible text ``observe`` returns."""


class Determinism(BaseModel):
    """What the sandbox pins so that a page renders the same way every time."""

    model_config = ConfigDict(frozen=True)

    timezone: str = "UTC"
    """IANA timezone the page sees."""
    locale: str = "en-US"
    """Locale the page sees."""
    seed: int | None = None
    """Seed of ``Math.random``; ``None`` derives it from the page's HTML bytes."""
    clock: Literal["real", "fixed_start"] = "fixed_start"
    """``fixed_start``: ``Date`` starts at :attr:`epoch_ms` when the document starts and advances
    with real elapsed time; ``real``: the machine clock."""
    epoch_ms: int = 1_704_067_200_000
    """Start of the page clock in ``fixed_start`` mode (2024-01-01T00:00:00Z)."""
    clock_step_ms: int | None = Field(default=None, ge=1, le=600_000)
    """A stepped page clock for every page (a page's own :attr:`PageSpec.clock_step_ms` wins): page
    time (``Date``, ``performance.now``, timers, animation frames) stands still and moves on this
    many ms after the load and after each action, whatever the machine took. ``None``: real time."""
    hide_caret: bool = True
    """Make the text caret transparent (it blinks and would break screenshot equality)."""
    hide_scrollbars: bool = True
    """Hide scrollbars (``Emulation.setScrollbarsHidden``)."""


class PageSpec(BaseModel):
    """One page to open in the sandbox."""

    model_config = ConfigDict(frozen=True)

    page: str
    """Path of the HTML file, or of a folder holding ``index.html``."""
    assets_dir: str | None = None
    """Folder whose files the page refers to as ``__PLACEHOLDER_ASSETS_BASE_DIR__/<file>``."""
    viewport: Viewport = Viewport()
    """Viewport size (the task resolution)."""
    random_seed: int | None = None
    """Seed of ``Math.random`` for this page (the task's recorded seed); None: the pool's rule."""
    clock_start_ms: int | None = None
    """Start of the page clock for this page (the task's recorded one); None: the pool's setting."""
    clock_step_ms: int | None = Field(default=None, ge=1, le=600_000)
    """Run this page on a stepped clock moving this many ms per action (the task's recorded one, see
    :attr:`Determinism.clock_step_ms`); None: the pool's setting."""
    loading: Literal["http", "file"] = "http"
    """``http``: the page's folder served as a site, assets also answered under the placeholder,
    ``/assets/`` and any path ending ``assets/<file>``. ``file``: as the official scripts open a page
    (``file://``, ``--protocol official``): every URL is the file's own absolute path, so only the
    paths a ``file://`` load resolves are answered (files in the page's folder or the task's assets
    folder), and ``fetch``/XHR/EventSource of local files fail, as Chromium refuses them on
    ``file://``."""

    @field_validator("page")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("page path is empty")
        return value


class BoundingBox(BaseModel):
    """A rectangle in viewport CSS pixels."""

    x: float
    """Left edge."""
    y: float
    """Top edge."""
    width: float
    """Width."""
    height: float
    """Height."""


class Element(BaseModel):
    """One interactive element of the page, as ``observe`` lists it."""

    index: int
    """Index to pass to ``click``, ``type`` and ``hover``; valid until the next ``observe``."""
    tag: str
    """Lower-case tag name."""
    text: str = ""
    """Visible text, trimmed and shortened."""
    role: str | None = None
    """Explicit or implicit ARIA role."""
    hidden: bool = False
    """Not drawn (``display: none`` under a drawn parent, whose box it then gets; ``visibility:
    hidden``; or an opacity near 0 with its ancestors'): a control a page shows on hover or focus.
    The heuristic grounder scores it a little lower than a drawn one, and the judge hovers it into
    view before acting on it."""
    name: str | None = None
    """Accessible name, as a screen reader finds it: ``aria-labelledby``, ``aria-label``, its
    ``<label>``, an image's ``alt`` or an SVG ``<title>``, ``title``, ``placeholder`` (the first found)."""
    icon: str | None = None
    """For a control with no text: what its icon-font or sprite icon depicts, from the icon's class
    or reference (``bi bi-eye-slash`` -> "eye slash", ``<use href="#icon-gear">`` -> "gear")."""
    aria_label: str | None = None
    """``aria-label`` attribute."""
    placeholder: str | None = None
    """``placeholder`` attribute."""
    input_type: str | None = None
    """``type`` of an ``input`` element."""
    href: str | None = None
    """``href`` of a link."""
    context: str = ""
    """Text around the element: its form labels, then the nearest enclosing block's text (shortened)."""
    box: BoundingBox
    """Bounding box in the viewport."""
    in_viewport: bool
    """Whether the box intersects the viewport."""


class Observation(BaseModel):
    """What the page shows: its interactive elements and its visible text."""

    url: str
    """Current URL."""
    title: str
    """``document.title``."""
    elements: list[Element]
    """Interactive elements in document order."""
    elements_truncated: bool = False
    """True when more elements existed than the limit."""
    width: float = 0.0
    """Viewport width in CSS px, as the page measured it (0: not measured)."""
    height: float = 0.0
    """Viewport height in CSS px (0: not measured)."""
    text: str
    """Visible text of the page (``document.body.innerText``), shortened."""
    text_truncated: bool = False
    """True when the text was shortened."""


class ActionResult(BaseModel):
    """Outcome of ``click``, ``type``, ``press`` and ``hover``."""

    action: str
    """Which tool ran."""
    detail: str = ""
    """What it acted on."""
    settle_seconds: float
    """Time spent waiting for the page to settle."""
    settled: bool
    """False when settling hit its maximum wait (the page kept changing)."""


class ScrollResult(ActionResult):
    """Outcome of ``scroll``."""

    moved_px: float
    """Pixels the page or its main scroll container actually moved (absolute value)."""
    target: Literal["document", "container", "none"]
    """What scrolled."""
    scroll_x: float
    """Horizontal position of the target after scrolling."""
    scroll_y: float
    """Vertical position of the target after scrolling."""


class BlockedRequest(BaseModel):
    """A request the sandbox refused."""

    url: str
    """Requested URL (shortened)."""
    resource_type: str
    """CDP resource type (Document, Script, Image, Fetch, XHR, ...)."""
    reason: str
    """Why it was refused."""
    source: Literal["page", "worker", "frame", "popup"] = "page"
    """What made it: the page's own documents, one of its workers, an out-of-process frame, a popup."""


class DialogRecord(BaseModel):
    """A JavaScript dialog the sandbox answered."""

    type: str
    """alert, confirm, prompt or beforeunload."""
    message: str
    """Dialog text."""
    accepted: bool
    """How it was answered."""


class PopupRecord(BaseModel):
    """A window the page opened; the sandbox closes it."""

    url: str
    """URL of the new window when it was created."""


class NavigationRecord(BaseModel):
    """A navigation of the page's main frame after its first load."""

    url: str
    """Destination."""
    blocked: bool
    """True when the sandbox cancelled it (other origin); the page stays where it was."""


class ConsoleRecord(BaseModel):
    """A console error or uncaught page error."""

    source: Literal["console", "log", "exception"]
    """``console.error``, a browser log entry, or an uncaught exception."""
    text: str
    """Message (shortened)."""


class PageState(BaseModel):
    """Where the page is and everything the sandbox has recorded about it."""

    url: str
    """Current URL."""
    scroll_x: float
    """Document horizontal scroll position."""
    scroll_y: float
    """Document vertical scroll position."""
    container_scroll_y: float | None = None
    """Vertical position of the main scroll container, if the page has one."""
    viewport: Viewport
    """Viewport size."""
    blocked_requests: list[BlockedRequest] = []
    """Requests refused by the sandbox."""
    dialogs: list[DialogRecord] = []
    """Dialogs answered."""
    popups: list[PopupRecord] = []
    """Windows opened and closed."""
    navigations: list[NavigationRecord] = []
    """Main-frame navigations after the first load."""
    console_errors: list[ConsoleRecord] = []
    """Console errors and browser log errors."""
    page_errors: list[ConsoleRecord] = []
    """Uncaught exceptions."""
    failure: str | None = None
    """Set once the page has failed (timeout, crash)."""
    containment: Literal["netns", "intercept-only"] = "netns"
    """What kept the page's connections in: a network namespace holding only loopback and the page's
    server (``netns``), or CDP request interception alone (``intercept-only``, when namespaces are
    unavailable)."""


class Frame(BaseModel):
    """What draws around one box: its border, outline, shadow and background colours ("r,g,b")."""

    border: str | None = None
    """Colour of its first visible border side."""
    outline: str | None = None
    """Colour of its outline, when it has one."""
    shadow: str | None = None
    """Colour of its first box shadow."""
    bg: str | None = None
    """Its own background colour (None: transparent)."""
    width: float = 0.0
    """Top border width in px."""


class PartLook(BaseModel):
    """An inline part of a block with an element of its own (a badge, a pill, a struck word)."""

    text: str
    """Its visible text."""
    label: str = ""
    """Its tag, id, classes and naming attributes."""
    look: RunLook
    """How it looks (its own frame only)."""


class RunLook(BaseModel):
    """How a block of text looks: what the offline judge checks claims about looks against."""

    color: str | None = None
    """Text colour, "r,g,b" (None: transparent)."""
    bg: str = "255,255,255"
    """The background it sits on (the nearest opaque one up its ancestors)."""
    strike: bool = False
    """Drawn struck through (its own or an ancestor's ``text-decoration``)."""
    frames: list[Frame] = []
    """The block's frame, then its three nearest ancestors' (nearest first)."""
    on: bool | None = None
    """State of the toggle it belongs to (a checkbox, radio, ``aria-checked``/``pressed``/``selected``)."""
    size: float = 0.0
    """Font size in px."""
    weight: int = 400
    """Font weight."""
    italic: bool = False
    """Set in italics (or oblique)."""
    parts: list[PartLook] = []
    """Inline parts with an element of their own, in order (up to eight)."""
    marks: list[Frame] = []
    """Small textless shapes in the block or its short row (a switch's track, a tick box, a dot),
    up to two: what shows a setting's state when the page keeps it in no ARIA attribute."""


PartLook.model_rebuild()


class TextRun(BaseModel):
    """Text a person can see in one block of the page (an element and its inline descendants)."""

    text: str
    """The visible text, whitespace collapsed (hidden, covered or transparent parts left out)."""
    label: str = ""
    """Who holds it: tag, id, classes and naming attributes of the block and two ancestors."""
    tag: str = ""
    """Lower-case tag name of the block."""
    containers: list[int] = []
    """Ids of the block itself and its ancestors, nearest first (up to five), to find its neighbours."""
    box: BoundingBox
    """Union of the visible parts, in viewport pixels."""
    on_screen: bool = True
    """Inside the viewport and on top; False for text on the page that only scrolling would show."""
    role: str | None = None
    """Role of the block (ARIA, or implied by its tag: heading, paragraph, listitem, ...); ``control``
    for an interactive element that holds no text (an input, a select). Only in a text snapshot."""
    index: int | None = None
    """Index (from ``observe``) of the interactive element that holds this text. Only in a text snapshot."""
    state: str | None = None
    """That element's state when it has one (``checked``, ``disabled``, ``expanded=true``)."""
    look: RunLook | None = None
    """How the block looks (colours, line-through, frames, toggle state, size)."""


class FormField(BaseModel):
    """A form field a person can see: what it is called and what it shows (its value, else its
    placeholder). Kept apart from the text runs, so text typed into a box is never taken for text
    the page wrote."""

    tag: str
    """``input``, ``textarea`` or ``select``."""
    type: str = ""
    """The input's type (``text``, ``search``, ``email``, ...; empty for a textarea or select)."""
    name: str = ""
    """Its accessible name: aria-labelledby, aria-label, its labels, title, placeholder, name, id."""
    value: str = ""
    """What it holds (a password as dots; a select's chosen option's text)."""
    placeholder: str = ""
    """The hint it shows while empty."""
    box: BoundingBox
    """Where it is, in viewport pixels."""


class VisibleText(BaseModel):
    """What the viewport shows as text, block by block, in document order."""

    runs: list[TextRun]
    """Visible text runs."""
    fields: list[FormField] = []
    """Visible form fields (text-like inputs, text areas, selects), in document order."""
    text: str
    """The on-screen runs' texts joined by newlines."""
    truncated: bool = False
    """True when the page held more text than the limits."""
    background: str | None = None
    """The page's background colour ("r,g,b": the body's, else the root's, else white)."""
    height: float | None = None
    """The viewport's height in CSS pixels (run boxes below it are below the fold)."""


class TextSnapshot(BaseModel):
    """The page as text: what a person sees in the viewport, block by block in reading order.

    Each line is ``[index] role: text`` for text inside an interactive element (the index is the
    one ``click``/``type``/``hover`` take, from the ``observe`` the snapshot made) and ``role: text``
    for the rest. Hidden, covered and off-screen text is left out.
    """

    url: str
    """Current URL."""
    title: str
    """``document.title``."""
    text: str
    """The snapshot, one block per line (cut at ``max_chars``, with a note saying so)."""
    lines: int
    """Blocks shown."""
    off_screen: int = 0
    """Blocks on the page that only scrolling would show (not in ``text``)."""
    truncated: bool = False
    """True when the snapshot was cut to its size limit (or the page held more text than the limits)."""


PAGE_ORIGIN = "http://page.local"
"""The origin judge models read for the page server's (whose port changes from run to run)."""


def stable_origin(value: Any, origin: str) -> Any:
    """``value`` (text, or JSON-like data) with ``origin`` written as :data:`PAGE_ORIGIN`."""
    if isinstance(value, str):
        return value.replace(origin, PAGE_ORIGIN) if origin else value
    if isinstance(value, dict):
        return {k: stable_origin(v, origin) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [stable_origin(v, origin) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def url_origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url`` ("" for a URL without a host, such as ``about:blank``)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else ""
