"""Replay policies: how a Scroll or a Press is performed, and what counts as success.

A policy is the ``replay`` role (:class:`ReplayPolicy`). The executor hands it every Scroll and
Press; it acts through the page's tools and answers :class:`Performed`. Two capabilities, declared
in the Protocol, settle the other rules where the protocols differ: which text a Type enters and
whether an assertion the judge could not answer counts as a pass.

- ``default`` (:class:`DefaultReplay`): a Scroll scrolls the page or its main scroll container in
  the recorded direction and succeeds when the target moved more than ``min_scroll_px``; a Press
  sends the recorded key (a name the key table does not know fails).
- ``official`` (:class:`OfficialReplay`, protocol.md section 6): a Scroll goes down half
  ``window.innerHeight`` in the nearest scroll container around the focus that is at least half
  the window high, else the first such container, else the window, and succeeds when
  ``window.scrollY`` moved more than 5 px (so a page that scrolls in such a container fails); a
  Press succeeds once a key is sent (an unknown name goes out as a raw key event); Type enters the
  record's text, else the text the grounder read from the description; an ``error`` or
  ``undetermined`` verdict passes.

Under both, an action that names no key fails: no key is sent.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, Field

from iwr_bench.agents.judge.records import FailureClass
from iwr_bench.dataset.models import Action, pressed_key, scroll_direction, scroll_region
from iwr_bench.protocol import EvalProtocol
from iwr_bench.registry import create, register
from iwr_bench.tools.errors import ToolRetry
from iwr_bench.tools.surface import PageToolsProtocol


class Performed(BaseModel):
    """What a policy did for one Scroll or Press."""

    ok: bool
    """Whether the action counts as performed."""
    failure: FailureClass | None = None
    """Why not (``action_error``, ``no_scroll``)."""
    message: str = ""
    """Details of the failure."""
    tool_calls: list[str] = Field(default_factory=list[str])
    """Tool calls made, in order (recorded with the action)."""
    scroll_moved_px: float | None = None
    """For a Scroll, how far the page moved."""


class ReplayPolicy(Protocol):
    """The ``replay`` role: performs Scroll and Press actions and says whether they succeeded."""

    name: str
    """Recorded in the run manifest."""
    text_from_grounder: bool = False
    """Capability: Type enters the text the grounder read from the description (``Grounding.text``), not the
    action's ``parameters.text``."""
    unsure_verdict_passes: bool = False
    """Capability: an assertion answered ``error`` or ``undetermined`` counts as a pass, whatever the run's
    ``judge_error``/``undetermined`` policies say."""
    acts_unseen: bool = False
    """Capability: a Click or Type acts on a control no person could see or reach (drawn as nothing
    even when hovered, or under another element), as the official scripts' browser does; the step
    is marked (``ActionRecord.unseen``) and the report flags the page. Without it such an action
    fails (``element_not_found``, or ``action_error`` "covered")."""

    async def __call__(self, tools: PageToolsProtocol, action: Action) -> Performed:
        """Perform ``action`` (a Scroll or a Press) on the page; never raise for a failed action
        (a :class:`~iwr_bench.tools.errors.PageFailure` of the page itself may propagate)."""
        ...


def _no_key() -> Performed:
    return Performed(ok=False, failure="action_error", message="no key named by the action")


class DefaultReplay:
    """This engine's rules (see the module doc)."""

    name = "default"
    text_from_grounder = False
    unsure_verdict_passes = False
    acts_unseen = False

    def __init__(self, min_scroll_px: float = 5.0) -> None:
        self.min_scroll_px = min_scroll_px

    async def __call__(self, tools: PageToolsProtocol, action: Action) -> Performed:
        """Scroll in the recorded direction, or press the recorded key."""
        if action.type == "Press":
            key = pressed_key(action)
            if key is None:
                return _no_key()
            calls = [f"press({key!r})"]
            try:
                await tools.press(key)
            except ToolRetry as exc:
                return Performed(ok=False, failure="action_error", message=str(exc), tool_calls=calls)
            return Performed(ok=True, tool_calls=calls)
        direction = scroll_direction(action) or "down"
        region = scroll_region(action)  # "scroll down inside the Recent orders list"
        result = await tools.scroll(direction, region=region)
        call = f"scroll({direction!r}{f', region={region!r}' if region else ''})"
        return self._moved([call], result.moved_px)

    def _moved(self, calls: list[str], moved: float) -> Performed:
        if moved <= self.min_scroll_px:
            message = f"the page moved {moved:g} px (needs > {self.min_scroll_px:g})"
            return Performed(
                ok=False, failure="no_scroll", message=message, tool_calls=calls, scroll_moved_px=moved
            )
        return Performed(ok=True, tool_calls=calls, scroll_moved_px=moved)


class OfficialReplay(DefaultReplay):
    """The official scripts' rules (see the module doc)."""

    name = "official"
    text_from_grounder = True
    unsure_verdict_passes = True
    acts_unseen = True

    async def __call__(self, tools: PageToolsProtocol, action: Action) -> Performed:
        """Scroll as the official scripts do (a large container, else the window, down half the
        window's height; judged on the window), or send the key (raw when the name is unknown)."""
        if action.type == "Press":
            key = pressed_key(action)
            if key is None:
                return _no_key()
            calls = [f"press({key!r})"]
            try:
                await tools.press(key)
            except ToolRetry:
                await _press_raw(tools, key)  # a key sent is a key pressed
                calls.append(f"press_raw({key!r})")
            return Performed(ok=True, tool_calls=calls)
        result = await tools.scroll_window()
        return self._moved(["scroll_window()"], result.moved_px)


async def _press_raw(tools: PageToolsProtocol, key: str) -> None:
    """Send ``key`` as a bare key-down/key-up pair (a name the key table does not know), then settle."""
    await tools.tab.key("rawKeyDown", {"key": key})
    await tools.tab.key("keyUp", {"key": key})
    await tools.wait_settled("action", tick=True)


@register("replay", "default")
def default_replay(min_scroll_px: float = 5.0) -> DefaultReplay:
    """Scroll in the recorded direction (page or main container), press the recorded key."""
    if min_scroll_px < 0:
        raise ValueError("min_scroll_px must not be negative")
    return DefaultReplay(min_scroll_px)


@register("replay", "official")
def official_replay() -> OfficialReplay:
    """The official scripts' rules: window scroll, any key sent counts, unsure verdicts pass."""
    return OfficialReplay()


def policy_for(protocol: EvalProtocol, min_scroll_px: float = 5.0) -> ReplayPolicy:
    """The built-in policy of an evaluation protocol."""
    if protocol == EvalProtocol.official:
        policy, _ = create("replay", "official")
    else:
        policy, _ = create("replay", "default", min_scroll_px=min_scroll_px)
    return policy
