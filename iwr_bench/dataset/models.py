"""Typed records for an IWR-Bench task, as the official ``data.jsonl`` describes it.

Reading follows the rule "nothing the official scripts accept is rejected": only a record without
an ``id``, or with values of the wrong kind, fails to parse. The published records' habits are
read as they are (every action parameter a string, empty when unused; ``environment`` values such
as ``tablet``; empty descriptions on Scroll and Press; a missing resolution), and every departure
from the documented format is a warning from the validator, naming the task, the action and the
field. Fields this version does not know are kept (``extra="allow"``) and listed as warnings.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)

ActionType = Literal["Click", "Type", "Scroll", "Press"]
ACTION_TYPES: tuple[str, ...] = ("Click", "Type", "Scroll", "Press")

_RESOLUTION = re.compile(r"^\s*(\d{2,5})\s*[xX×*]\s*(\d{2,5})\s*$")


class Record(BaseModel):
    """Base of every task-file record: unknown keys are kept, not dropped."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Resolution(BaseModel):
    """A viewport size in CSS pixels."""

    model_config = ConfigDict(frozen=True)

    width: int = Field(gt=0)
    """Viewport width in CSS pixels."""
    height: int = Field(gt=0)
    """Viewport height in CSS pixels."""

    @classmethod
    def parse(cls, text: str) -> Resolution:
        """Parse ``"WxH"`` (``x``, ``X``, ``*`` or ``×`` between the numbers).

        Raises:
            ValueError: when the text is not of that form.
        """
        m = _RESOLUTION.match(text)
        if m is None:
            raise ValueError(f"resolution {text!r} is not of the form WIDTHxHEIGHT (e.g. 1920x1080)")
        return cls(width=int(m.group(1)), height=int(m.group(2)))

    def __str__(self) -> str:
        return f"{self.width}x{self.height}"


class Classification(Record):
    """The task's place in the IWR-Bench taxonomy."""

    interaction_complexity: str = ""
    """L1 static display, L2 simple state change, L3 multi-step workflow, L4 algorithmic/game logic."""
    visual_complexity: str = ""
    """V1 minimal to V4 dense."""
    domain: str = ""
    """Broad site category, e.g. "E-commerce"."""
    sub_domain: str = ""
    """Finer category inside the domain."""

    @property
    def level(self) -> str:
        """The interaction level code (``L1``..``L4``) or ``""`` when absent."""
        return _level_code(self.interaction_complexity, "L")

    @property
    def visual_level(self) -> str:
        """The visual level code (``V1``..``V4``) or ``""`` when absent."""
        return _level_code(self.visual_complexity, "V")


def _level_code(text: str, letter: str) -> str:
    m = re.search(rf"\b{letter}\s*([1-4])\b", text, flags=re.IGNORECASE)
    return f"{letter}{m.group(1)}" if m else ""


ENVIRONMENTS: tuple[str, ...] = ("desktop", "mobile")
"""Device classes the benchmark defines; other values are kept as given (with a warning)."""

DEFAULT_RESOLUTION = "1920x1080"
"""Resolution of a task whose record and ``metadata.json`` give none (the official default)."""


class RecordingDetails(Record):
    """How the screen recording was made."""

    resolution: str | None = None
    """Viewport size as ``"WxH"``; the generated page is judged at this size. ``None`` when the
    record gives none: the task folder's ``metadata.json`` is read then, as the official generator
    does, and 1920x1080 after that (see :attr:`iwr_bench.dataset.layout.Task.resolution`)."""
    environment: str = "desktop"
    """``desktop`` or ``mobile``, lower-cased; any other value (``tablet``) is kept as given. The
    official scripts never read it; only the report's device breakdown does."""
    random_seed: int | None = None
    """Seed of the page's ``Math.random`` while recording (ours; None in the official data: derived
    from the page's HTML as before). Every page judged for the task runs with it."""
    clock_start_ms: int | None = None
    """Where the page clock (``Date``) started while recording, in ms since the epoch (ours)."""
    clock_step_ms: int | None = Field(default=None, ge=1, le=600_000)
    """The page ran on a stepped clock while recording (ours): page time (``Date``, timers,
    animation frames) stood still and moved on this many ms after the load and after each action,
    however long the action took. Every page judged for the task runs on the same clock. None: the
    page clock followed real time."""

    @field_validator("environment", mode="before")
    @classmethod
    def _lower_environment(cls, value: Any) -> Any:
        return value.strip().lower() or "desktop" if isinstance(value, str) else value

    @field_validator("resolution", mode="before")
    @classmethod
    def _check_resolution(cls, value: Any) -> Any:
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if isinstance(value, str):
            Resolution.parse(value)
        return value

    @property
    def size(self) -> Resolution:
        """The parsed resolution (1920x1080 when the record gives none)."""
        return Resolution.parse(self.resolution or DEFAULT_RESOLUTION)


def _empty_is_none(value: Any) -> Any:
    """The published records carry every parameter as a string, empty when unused: "" means not given."""
    return None if isinstance(value, str) and not value.strip() else value


class ActionParameters(Record):
    """What to act on and how.

    The published records declare every parameter as a string and leave the unused ones empty
    (``"key": ""``); an empty or blank string is read as "not given" (``None``).
    """

    description: str = ""
    """Natural-language description of the target element; the judge grounds from this text only.
    Empty is tolerated (the official scripts never read it for Scroll and Press; a Click or Type with
    none cannot be grounded and fails when replayed); the validator warns."""
    key: str | None = None
    """Key name for ``Press`` (e.g. ``Enter``); derived from the description when absent."""
    direction: str | None = None
    """``up`` or ``down`` for ``Scroll`` (default down)."""
    scroll_page: str | float | bool | None = None
    """Scroll distance as recorded, when given (kept as given; the judge scrolls half a viewport)."""
    text: str | None = None
    """Text to type for ``Type``; otherwise it is quoted inside the description."""
    element_index: str | int | None = None
    """Index of the recorded element in the official annotation tool (carried, never used to judge)."""

    @field_validator("key", "direction", "scroll_page", "text", "element_index", mode="before")
    @classmethod
    def _not_given(cls, value: Any) -> Any:
        return _empty_is_none(value)

    @field_validator("description", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value


class Action(Record):
    """One recorded user action."""

    type: str
    """``Click``, ``Type``, ``Scroll`` or ``Press`` (normalised from any case). Any other value is
    kept as given, as the official scripts do: such an action fails when replayed."""
    parameters: ActionParameters = Field(default_factory=ActionParameters)
    """Target description and type-specific parameters."""
    visual_evaluation_flag: bool = False
    """When set, the state after this action is compared with a checkpoint image."""
    logical_assertion: str = ""
    """A postcondition checked on the before/after screenshots; empty when there is none."""

    _given: dict[str, Any] = PrivateAttr(default_factory=dict[str, Any])

    @model_validator(mode="wrap")
    @classmethod
    def _keep_given(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        """Keep the type and flag as the record spells them (the official scripts read those)."""
        action = handler(data)
        if isinstance(data, dict) and isinstance(action, Action):
            action._given = {k: data[k] for k in ("type", "visual_evaluation_flag") if k in data}
        return action

    @property
    def official_type(self) -> str:
        """The type as the official scripts read it: the record's value unchanged, so ``click`` or
        ``" Click"`` is no type they know and the step fails there."""
        given = self._given.get("type", self.type)
        return given if isinstance(given, str) else repr(given)

    @property
    def official_flag(self) -> bool:
        """The visual flag as the official scripts read it: Python truth of the record's value, so
        the string ``"false"`` is set and ``0`` or ``""`` is not."""
        return bool(self._given.get("visual_evaluation_flag", self.visual_evaluation_flag))

    @property
    def read_otherwise_officially(self) -> list[str]:
        """What of this action the official scripts read otherwise than we do (empty: nothing)."""
        found: list[str] = []
        if self.official_type != self.type:
            found.append(
                f"type {self.official_type!r} is read as {self.type}; the official scripts know no such "
                "type and fail the step"
            )
        if self.official_flag != self.visual_evaluation_flag:
            given = self._given.get("visual_evaluation_flag")
            found.append(
                f"visual_evaluation_flag {given!r} is read as {self.visual_evaluation_flag}; the official "
                f"scripts read it as {self.official_flag}"
            )
        return found

    @field_validator("type", mode="before")
    @classmethod
    def _normalise_type(cls, value: Any) -> Any:
        if isinstance(value, str):
            for name in ACTION_TYPES:
                if value.strip().lower() == name.lower():
                    return name
            return value.strip()
        return value

    @field_validator("logical_assertion", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value

    @property
    def known_type(self) -> bool:
        """Whether the type is one of the four the benchmark defines."""
        return self.type in ACTION_TYPES

    @property
    def has_assertion(self) -> bool:
        """True when the action carries a non-blank logical assertion."""
        return bool(self.logical_assertion.strip())


MAX_TASK_ID = 2**63 - 1
"""Largest task id (a signed 64-bit integer, as SQLite stores it)."""


class TaskRecord(Record):
    """One line of ``data.jsonl``."""

    id: int = Field(strict=True, ge=0, le=MAX_TASK_ID)
    """Task id; also the name of the task's folder. A whole number from 0 to 2^63 - 1 (what the run
    store keeps); ``true`` or ``"12"`` are refused, not read as 1 or 12."""
    source_website: str = ""
    """Where the recording was made (anonymised in the official release)."""
    classification: Classification = Field(default_factory=Classification)
    """Interaction/visual levels and domain."""
    recording_details: RecordingDetails = Field(default_factory=RecordingDetails)
    """Resolution and device class."""
    action_sequence: list[Action] = Field(default_factory=list[Action])
    """The recorded actions, in order (a record without any is kept and scores IFS 0, as officially)."""

    @property
    def resolution(self) -> Resolution:
        """Viewport size the record gives (1920x1080 when it gives none; a task folder's
        ``metadata.json`` can say more, see :attr:`iwr_bench.dataset.layout.Task.resolution`)."""
        return self.recording_details.size

    @property
    def is_mobile(self) -> bool:
        """True for tasks recorded on a mobile device."""
        return self.recording_details.environment == "mobile"

    @property
    def flagged_indices(self) -> list[int]:
        """0-based indices of the actions whose visual flag is set."""
        return [i for i, a in enumerate(self.action_sequence) if a.visual_evaluation_flag]

    @property
    def assertion_count(self) -> int:
        """Number of actions with a logical assertion."""
        return sum(a.has_assertion for a in self.action_sequence)

    def unknown_fields(self) -> list[str]:
        """Dotted paths of keys this version does not know (kept, but reported)."""
        found: list[str] = []

        def visit(model: BaseModel, prefix: str) -> None:
            for key in model.model_extra or {}:
                found.append(f"{prefix}{key}")
            for name in type(model).model_fields:
                value = getattr(model, name)
                if isinstance(value, BaseModel):
                    visit(value, f"{prefix}{name}.")
                elif isinstance(value, list):
                    for i, item in enumerate(value):  # pyright: ignore[reportUnknownArgumentType]
                        if isinstance(item, BaseModel):
                            visit(item, f"{prefix}{name}[{i}].")

        visit(self, "")
        return found


_QUOTED = re.compile(r"[\"“'‘«]([^\"”'’»]+)[\"”'’»]")
_KEYS: dict[str, str] = {
    "enter": "Enter",
    "return": "Enter",
    "escape": "Escape",
    "esc": "Escape",
    "tab": "Tab",
    "backspace": "Backspace",
    "delete": "Delete",
    "space": " ",
    "spacebar": " ",
    "arrowup": "ArrowUp",
    "arrowdown": "ArrowDown",
    "arrowleft": "ArrowLeft",
    "arrowright": "ArrowRight",
    "up arrow": "ArrowUp",
    "down arrow": "ArrowDown",
    "left arrow": "ArrowLeft",
    "right arrow": "ArrowRight",
    "pagedown": "PageDown",
    "page down": "PageDown",
    "pageup": "PageUp",
    "page up": "PageUp",
    "home": "Home",
    "end": "End",
}


def typed_text(action: Action) -> str | None:
    """The text a ``Type`` action enters: ``parameters.text``, else the first quoted span."""
    if action.parameters.text is not None:
        return action.parameters.text
    m = _QUOTED.search(action.parameters.description)
    return m.group(1) if m else None


def text_to_type(action: Action, from_grounder: bool) -> str | None:
    """The text a ``Type`` action enters when the replay knows it before grounding: the record's
    own text under every protocol; without one, :func:`typed_text` (ours), or None where the
    grounder reads it from the description (``from_grounder``, the official rules)."""
    if from_grounder:
        return action.parameters.text
    return typed_text(action)


def pressed_key(action: Action) -> str | None:
    """The key a ``Press`` action sends: ``parameters.key``, else a key named in the description.

    Returns the DOM ``KeyboardEvent.key`` value (``Enter``, ``ArrowUp``, ``" "`` ...), or None.
    """
    if action.parameters.key:
        raw = action.parameters.key.strip()
        return _KEYS.get(raw.lower().replace("_", ""), raw)
    text = action.parameters.description.lower()
    best: tuple[int, str] | None = None
    for name, key in _KEYS.items():
        m = re.search(rf"(?<![a-z]){re.escape(name)}(?![a-z])", text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), key)
    return best[1] if best else None


def scroll_direction(action: Action) -> Literal["up", "down"] | None:
    """``down`` unless ``direction`` (or failing that, the description) says up; None if unreadable."""
    raw = (action.parameters.direction or "").strip().lower()
    if raw in ("", "down", "d"):
        if not raw and re.search(r"\bup(ward)?s?\b", action.parameters.description.lower()):
            return "up"
        return "down"
    if raw in ("up", "u"):
        return "up"
    return None


_REGION = re.compile(r"\b(?:inside|within|in)\s+(?:the\s+|a\s+|an\s+)?(.+)$")
_GENERIC = frozenset(
    [
        "page",
        "window",
        "screen",
        "site",
        "document",
        "view",
        "list",
        "panel",
        "box",
        "area",
        "pane",
        "section",
        "container",
        "table",
        "menu",
        "sidebar",
        "feed",
        "column",
        "card",
        "the",
        "of",
        "and",
        "with",
        "on",
        "to",
    ]
)
"""Words that say what kind of region, not which one."""


def scroll_region(action: Action) -> list[str]:
    """Words naming the region a Scroll happens in ("scroll down inside the Recent orders list" gives
    ``["recent", "orders"]``); empty when the description names none ("scroll down the page",
    "scroll down to the footer": the page itself scrolls).

    Only a region introduced by *inside*, *within* or *in* counts; generic words (list, panel,
    page, ...) are dropped, so "scroll inside the page" names nothing."""
    found = _REGION.search(action.parameters.description.lower())
    if found is None:
        return []
    words = re.findall(r"[a-z0-9]{3,}", found.group(1))
    return list(dict.fromkeys(w for w in words if w not in _GENERIC))
