"""Typed records for an IWR-Bench task, as the official ``data.jsonl`` describes it.

Required fields are strict (a task without an ``id`` or with an unknown action type is
rejected); optional fields take the documented defaults. Fields this version does not know
are kept (``extra="allow"``) so that nothing in a task file is silently lost; the validator
lists them as warnings.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

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


class Environment(StrEnum):
    """Device class the recording was made on."""

    desktop = "desktop"
    mobile = "mobile"


class RecordingDetails(Record):
    """How the screen recording was made."""

    resolution: str = "1920x1080"
    """Viewport size as ``"WxH"``; the generated page is judged at this size."""
    environment: Environment = Environment.desktop
    """``desktop`` or ``mobile``."""
    random_seed: int | None = None
    """Seed of the page's ``Math.random`` while recording (ours; None in the official data: derived
    from the page's HTML as before). Every page judged for the task runs with it."""
    clock_start_ms: int | None = None
    """Where the page clock (``Date``) started while recording, in ms since the epoch (ours)."""

    @field_validator("environment", mode="before")
    @classmethod
    def _lower_environment(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("resolution")
    @classmethod
    def _check_resolution(cls, value: str) -> str:
        Resolution.parse(value)
        return value

    @property
    def size(self) -> Resolution:
        """The parsed resolution."""
        return Resolution.parse(self.resolution)


class ActionParameters(Record):
    """What to act on and how."""

    description: str = Field(min_length=1)
    """Natural-language description of the target element; the judge grounds from this text only."""
    key: str | None = None
    """Key name for ``Press`` (e.g. ``Enter``); derived from the description when absent."""
    direction: str | None = None
    """``up`` or ``down`` for ``Scroll`` (default down)."""
    scroll_page: float | bool | None = None
    """Scroll distance in viewports for ``Scroll``, when given."""
    text: str | None = None
    """Text to type for ``Type``; otherwise it is quoted inside the description."""


class Action(Record):
    """One recorded user action."""

    type: ActionType
    """``Click``, ``Type``, ``Scroll`` or ``Press``."""
    parameters: ActionParameters
    """Target description and type-specific parameters."""
    visual_evaluation_flag: bool = False
    """When set, the state after this action is compared with a checkpoint image."""
    logical_assertion: str = ""
    """A postcondition checked on the before/after screenshots; empty when there is none."""

    @field_validator("type", mode="before")
    @classmethod
    def _normalise_type(cls, value: Any) -> Any:
        if isinstance(value, str):
            for name in ACTION_TYPES:
                if value.strip().lower() == name.lower():
                    return name
        return value

    @field_validator("logical_assertion", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return "" if value is None else value

    @property
    def has_assertion(self) -> bool:
        """True when the action carries a non-blank logical assertion."""
        return bool(self.logical_assertion.strip())


class TaskRecord(Record):
    """One line of ``data.jsonl``."""

    id: int
    """Task id; also the name of the task's folder."""
    source_website: str = ""
    """Where the recording was made (anonymised in the official release)."""
    classification: Classification = Field(default_factory=Classification)
    """Interaction/visual levels and domain."""
    recording_details: RecordingDetails = Field(default_factory=RecordingDetails)
    """Resolution and device class."""
    action_sequence: list[Action]
    """The recorded actions, in order."""

    @property
    def resolution(self) -> Resolution:
        """Viewport size the task is judged at."""
        return self.recording_details.size

    @property
    def is_mobile(self) -> bool:
        """True for tasks recorded on a mobile device."""
        return self.recording_details.environment is Environment.mobile

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
