"""Action scripts for ``iwr record``: the official task fields plus recording-only hints.

A script (YAML or JSON) holds everything that goes into the ``data.jsonl`` record, with the
action list under ``actions``. Each action may carry a ``record`` block that is used while
recording and never written to the task: the CSS selector (or viewport coordinates) to act on,
and text that must be visible after the action (optional: an assertion no text can check is kept,
with a warning). ``recording_details.random_seed`` and ``recording_details.clock_start_ms`` may pin
the page's randomness and clock; by default the seed comes from the site's entry page, as when
judging, and the clock from the sandbox's fixed start. Both are stored with the task.
``recording_details.clock_step_ms`` runs the page on a stepped clock (time moves that many ms per
action, not with the machine: a countdown behaves the same however slowly the recording goes); it
is stored too, and every judging of the task uses the same clock.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from iwr_bench.dataset.models import Action, TaskRecord
from iwr_bench.errors import UserError


class RecordHints(BaseModel):
    """How the recorder performs and checks one action."""

    model_config = ConfigDict(extra="forbid")

    selector: str | None = None
    """CSS selector of the element to click, type into, or scroll (a scroll container)."""
    x: float | None = None
    """Viewport x to click at, when there is no selector."""
    y: float | None = None
    """Viewport y to click at, when there is no selector."""
    expect_text: str | None = None
    """Text that must be visible on the page after the action (checks the assertion holds).
    Optional: an assertion without it is kept, and the recorder warns that it could not check it."""
    wait: float = Field(default=0.0, ge=0, le=10)
    """Extra seconds to wait after the action, for pages with a short transition."""

    @model_validator(mode="after")
    def _coordinates_together(self) -> RecordHints:
        if (self.x is None) != (self.y is None):
            raise ValueError("give both x and y, or neither")
        return self


class ScriptAction(Action):
    """An official action plus its recording hints."""

    record: RecordHints = Field(default_factory=RecordHints)
    """Recording-only hints; stripped from data.jsonl."""

    @model_validator(mode="after")
    def _target_known(self) -> ScriptAction:
        hints = self.record
        if self.type in ("Click", "Type") and hints.selector is None and hints.x is None:
            raise ValueError(f"a {self.type} action needs record.selector or record.x/record.y")
        return self

    @property
    def unchecked_assertion(self) -> bool:
        """The action asserts something the recorder cannot check (no ``record.expect_text``)."""
        return self.has_assertion and not self.record.expect_text


class ActionScript(BaseModel):
    """A whole script: the task record with ``actions`` holding :class:`ScriptAction`."""

    model_config = ConfigDict(extra="allow")

    id: int
    """Task id."""
    actions: list[ScriptAction] = Field(min_length=1)
    """Actions, in order."""

    def task_record(self) -> TaskRecord:
        """The ``data.jsonl`` record: every field but ``actions``, whose hints are dropped."""
        data: dict[str, Any] = self.model_dump(exclude={"actions"}, exclude_none=True)
        data["action_sequence"] = [
            a.model_dump(exclude={"record"}, exclude_none=True, exclude_defaults=False) for a in self.actions
        ]
        for action in data["action_sequence"]:
            params = action["parameters"]
            for key in [k for k, v in params.items() if v is None]:
                del params[key]
        return TaskRecord.model_validate(data)


def load_script(path: Path) -> ActionScript:
    """Read a YAML or JSON action script.

    Raises:
        UserError: when the file is missing, unreadable or not a valid script.
    """
    if not path.is_file():
        raise UserError(f"action script {path} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as exc:
        raise UserError(f"cannot read action script {path}: {exc}") from exc
    try:
        return ActionScript.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{path}: {loc}: {first['msg']} ({exc.error_count()} problem(s) in all)") from exc
