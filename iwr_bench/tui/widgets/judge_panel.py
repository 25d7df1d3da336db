"""The judge panel: each judge call of a job as its own block, its prose streaming in.

A block names who asks (grounder, assertion judge with its vote, rubric judge, step agent) and
the request in one line, then the model's reasoning as prose while it streams, retries with the
feedback the model got, tool calls, and once complete the structured answer as fields (index and
element, verdict, score) or why there is none. Blocks are grouped under the action they were made
for; the rubric's come after the replay. The panel follows the newest text; scrolling up (keys or
mouse) pauses following, ``f`` or End resumes it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.events import MouseScrollUp
from textual.message import Message
from textual.widgets import Static

from iwr_bench.engine.run_state import ActionView, CallView, JobView

ROLE_STYLE = {"grounder": "cyan", "assertions": "magenta", "rubric": "yellow", "step": "green"}


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else str(value)


def call_block(call: CallView, text: Text, *, live: bool = True) -> None:
    """Append one call's block to ``text`` (``live``: its job still runs, so an open call streams)."""
    style = ROLE_STYLE.get(call.role, "white")
    text.append(f"▌ {call.who or call.role}", style=f"bold {style}")
    if call.request:
        text.append(f" · {call.request}", style=style)
    text.append("\n")
    for entry in call.entries:
        if entry.kind == "prose":
            text.append("  " + entry.text.strip().replace("\n", "\n  ") + "\n")
        elif entry.kind == "retry":
            text.append(f"  ↻ {entry.text}\n", style="bold yellow")
        else:
            text.append(f"  ⚙ {entry.text}\n", style="dim")
    if call.fields is not None:
        fields = " · ".join(f"{k}: {_value(v)}" for k, v in call.fields.items())
        text.append(f"  → {fields}\n", style="bold")
    elif call.error:
        text.append(f"  ✗ no answer: {call.error}\n", style="bold red")
    elif not call.done and live:
        text.append("  …\n", style="dim")


def _action_head(action: ActionView, text: Text) -> None:
    text.append(f"action {action.index + 1} · {action.type}: {action.description}\n", style="bold underline")
    if action.grounding:
        failed = action.element is None
        text.append(f"  {action.grounding}\n", style="red" if failed else "dim")


def job_blocks(job: JobView, action: int | None = None) -> Text:
    """Every judge call of ``job``, grouped by action (only those of action ``action`` if given)."""
    text = Text()
    live = job.status in ("judging", "generating", "pending")
    for shown in job.actions:
        if (not shown.calls and not shown.grounding) or action not in (None, shown.index):
            continue
        _action_head(shown, text)
        for call in shown.calls:
            call_block(call, text, live=live)
    after = job.after_replay if action is None else []
    if after:
        text.append("after the replay\n", style="bold underline")
        for call in after:
            call_block(call, text, live=live)
    if not text.plain:
        what = "this job" if action is None else f"action {action + 1}"
        text.append(f"(no judge model output for {what})", style="dim")
    return text


class JudgePanel(VerticalScroll):
    """Scrolling judge call blocks (see the module doc)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f,end", "follow", "Follow", show=False),
        Binding("up", "back(1)", "Scroll up", show=False),
        Binding("pageup", "back(10)", "Page up", show=False),
        Binding("home", "back(100000)", "Top", show=False),
    ]

    class FollowChanged(Message):
        """Following the newest text was paused or resumed."""

        def __init__(self, following: bool) -> None:
            super().__init__()
            self.following = following
            """Whether the panel follows now."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(Static(id="stream-text"), **kwargs)  # type: ignore[arg-type]
        self.border_title = "judge calls"
        self.following = True

    def show(self, job: JobView | None, action: int | None = None) -> None:
        """Redraw the blocks of ``job`` (of its action ``action`` only, if given); keep at the end
        while following."""
        body = job_blocks(job, action) if job is not None else Text("no job yet", style="dim")
        self.border_title = "judge calls" if action is None else f"judge calls · action {action + 1}"
        self.query_one("#stream-text", Static).update(body)
        if self.following:  # once the new text is laid out
            self.call_after_refresh(self._to_end)

    def _to_end(self) -> None:
        if self.following:
            self.scroll_end(animate=False)

    def _set_following(self, following: bool) -> None:
        if following != self.following:
            self.following = following
            self.border_subtitle = "" if following else "paused: f follows"
            self.post_message(self.FollowChanged(following))

    def action_follow(self) -> None:
        """Follow the newest text again."""
        self._set_following(True)
        self.scroll_end(animate=False)

    def action_back(self, lines: int) -> None:
        """Scroll back, which pauses following."""
        self._set_following(False)
        self.scroll_to(y=max(0, self.scroll_y - lines), animate=False)

    def on_mouse_scroll_up(self, event: MouseScrollUp) -> None:
        """Scrolling up with the mouse pauses following."""
        del event
        self._set_following(False)
