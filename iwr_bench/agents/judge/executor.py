"""The executor: replays a task's actions on a page through the browser tools (protocol.md 3).

Actions run in order; the first one that cannot be performed, or whose logical assertion is
answered "no", ends the successful prefix and every later action counts as failed. Screenshots of
the initial state and of the state after every action are written to the evidence folder before
the record that names them is returned.

Under ``protocol="official"`` (protocol.md section 6) four rules change, each on its own:

- Scroll always scrolls the window down by half ``window.innerHeight`` and succeeds iff
  ``window.scrollY`` moved more than 5 px (no scroll container is looked for, ``direction`` is
  ignored).
- Press succeeds whenever a key is sent: a key name our key table does not know is sent as a raw
  key event instead of failing. (An action that names no key at all, in ``key`` or in its
  description, still fails: no key is sent.)
- An assertion answered "error" or "undetermined" counts as a pass, whatever the run's policies say.
- Type enters the text the grounder read from the description (``Grounding.text``), not
  ``parameters.text``.

The fixed waits of the official scripts are a property of the page pool (``SettleConfig``).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from iwr_bench.agents.events import Emit, emitting
from iwr_bench.agents.grounding import Grounder, GroundingRequest
from iwr_bench.agents.judge.records import (
    ActionRecord,
    AssertionJudge,
    AssertionRequest,
    FailureClass,
    Replay,
)
from iwr_bench.dataset.layout import Task
from iwr_bench.dataset.models import Action, pressed_key, scroll_direction, scroll_region, typed_text
from iwr_bench.protocol import EvalProtocol
from iwr_bench.tools.errors import PageFailure, ToolRetry
from iwr_bench.tools.models import PageSpec, Viewport, VisibleText
from iwr_bench.tools.pool import PagePool
from iwr_bench.tools.tools import PageTools

Policy = Literal["pass", "fail"]


class ExecutorConfig(BaseModel):
    """Run settings of the executor (written into the run manifest)."""

    judge_error_policy: Policy = "fail"
    """What a failed assertion judgement counts as (the published code passed it)."""
    undetermined_policy: Policy = "pass"
    """What an assertion the judge cannot decide counts as."""
    scroll_min_px: float = 5.0
    """A scroll succeeds only if the page moved more than this."""
    retries_on_stale: int = 1
    """Re-observe and retry this many times when an element list went stale."""
    protocol: EvalProtocol = EvalProtocol.default
    """``official``: the official scripts' scroll, press, assertion and typed-text rules (module doc)."""


class _Failed(Exception):
    def __init__(self, failure: FailureClass, message: str) -> None:
        super().__init__(message)
        self.failure: FailureClass = failure


def _no_emit(kind: str, data: dict[str, object]) -> None:
    del kind, data


class Executor:
    """Replays tasks on pages with a grounder and an assertion judge."""

    def __init__(
        self,
        pool: PagePool,
        grounder: Grounder,
        assertions: AssertionJudge,
        config: ExecutorConfig | None = None,
        emit: Emit | None = None,
    ) -> None:
        self.pool = pool
        self.grounder = grounder
        self.assertions = assertions
        self.config = config or ExecutorConfig()
        self.emit = emit or _no_emit

    async def replay(self, task: Task, page: Path | None, evidence: Path) -> Replay:
        """Replay ``task`` on ``page`` (a folder with index.html, or None when there is none)."""
        actions = task.record.action_sequence
        if page is None or not (page if page.is_file() else page / "index.html").is_file():
            return _page_failure(actions, "no_page", "no generated page")
        evidence.mkdir(parents=True, exist_ok=True)
        size = task.resolution
        spec = PageSpec(
            page=str(page),
            assets_dir=str(task.assets_dir) if task.assets_dir.is_dir() else None,
            viewport=Viewport(width=size.width, height=size.height),
            **task.record.recording_details.model_dump(include={"random_seed", "clock_start_ms"}),
        )
        try:
            with emitting(self.emit):
                async with self.pool.page(spec) as tools:
                    return await self._run(tools, task, evidence)
        except PageFailure as exc:
            return _page_failure(actions, "page_load_failed", str(exc))

    async def _run(self, tools: PageTools, task: Task, evidence: Path) -> Replay:
        actions = task.record.action_sequence
        screenshots = {0: _save(evidence, "step_0.png", await tools.screenshot())}
        records: list[ActionRecord] = []
        success = 0
        judge_errors = undetermined = 0
        for i, action in enumerate(actions):
            if success < i:
                records.append(_not_run(i, action))
                continue
            start = time.perf_counter()
            record = ActionRecord(
                index=i, type=action.type, description=action.parameters.description, status="ok"
            )
            record.before = f"step_{i}.png"  # the state after the previous action (or the initial one)
            self.emit(
                "action_started",
                {"index": i, "total": len(actions), "type": action.type, "description": record.description},
            )
            try:
                before_text = (await tools.observe()).text if action.has_assertion else None
                before = (before_text, await tools.visible_text() if action.has_assertion else None)
                await self._perform(tools, action, record)
                shot = await tools.screenshot()
                record.after = _save(evidence, f"step_{i + 1}.png", shot)
                if action.has_assertion:
                    outcome = await self._assert(tools, action, record, before, shot, evidence)
                    judge_errors += outcome == "error"
                    undetermined += outcome == "undetermined"
            except _Failed as exc:
                record.status, record.failure, record.message = "failed", exc.failure, str(exc)
            except PageFailure as exc:
                failure: FailureClass = "timeout" if exc.reason == "timeout" else "page_crashed"
                record.status, record.failure, record.message = "failed", failure, str(exc)
            record.seconds = round(time.perf_counter() - start, 3)
            records.append(record)
            self.emit(
                "action_finished",
                {
                    **record.model_dump(include={"index", "status", "failure", "message"}),
                    "screenshot": record.after or record.before,  # a failed action: the state it met
                    "checkpoint": _checkpoint(task, i),
                },
            )
            if record.status == "ok":
                success += 1
                if action.visual_evaluation_flag and record.after:
                    screenshots[i + 1] = record.after
        state = await _final_state(tools)
        return Replay(
            total_steps=len(actions),
            success_steps=success,
            actions=records,
            screenshots=screenshots,
            blocked_requests=state[0],
            console_errors=state[1],
            judge_errors=judge_errors,
            undetermined=undetermined,
        )

    @property
    def official(self) -> bool:
        """Whether the official scripts' rules apply."""
        return self.config.protocol == EvalProtocol.official

    async def _perform(self, tools: PageTools, action: Action, record: ActionRecord) -> None:
        match action.type:
            case "Click" | "Type":
                await self._click_or_type(tools, action, record)
            case "Press":
                key = pressed_key(action)
                if key is None:
                    raise _Failed("action_error", "no key named by the action")
                record.tool_calls.append(f"press({key!r})")
                try:
                    await tools.press(key)
                except ToolRetry as exc:
                    if not self.official:
                        raise _Failed("action_error", str(exc)) from exc
                    await _press_raw(tools, key)  # official: a key sent is a key pressed
                    record.tool_calls.append(f"press_raw({key!r})")
            case "Scroll":
                if self.official:
                    record.tool_calls.append("scroll_window()")
                    result = await tools.scroll_window()
                else:
                    direction = scroll_direction(action) or "down"
                    region = scroll_region(action)  # "inside the Recent orders list"
                    record.tool_calls.append(
                        f"scroll({direction!r}{f', region={region!r}' if region else ''})"
                    )
                    result = await tools.scroll(direction, region=region)
                record.scroll_moved_px = result.moved_px
                if result.moved_px <= self.config.scroll_min_px:
                    raise _Failed("no_scroll", f"the page moved {result.moved_px:g} px (needs > 5)")
            case _:  # kept by the loader, as the official scripts keep it: it fails here
                raise _Failed("action_error", f"unknown action type {action.type!r}")

    async def _click_or_type(self, tools: PageTools, action: Action, record: ActionRecord) -> None:
        typing = action.type == "Type"
        text = typed_text(action) if typing and not self.official else None
        if typing and not self.official and text is None:
            raise _Failed("action_error", "the Type action gives no text to type")
        for attempt in range(self.config.retries_on_stale + 1):
            index = await self._ground(tools, action, record)
            if typing and self.official:
                text = record.grounding.text if record.grounding else None
                if text is None:
                    raise _Failed("action_error", "the grounder found no text to type in the description")
            try:
                if text is None:
                    record.tool_calls.append(f"click({index})")
                    await tools.click(index)
                else:
                    record.tool_calls.append(f"type({index}, {text!r})")
                    await tools.type(index, text)
                return
            except ToolRetry as exc:
                if attempt == self.config.retries_on_stale:
                    raise _Failed("action_error", str(exc)) from exc

    async def _ground(self, tools: PageTools, action: Action, record: ActionRecord) -> int:
        observation = await tools.observe()
        record.tool_calls.append("observe()")
        screenshot = None
        if getattr(self.grounder, "wants_screenshot", False):
            screenshot = await tools.screenshot()
            record.tool_calls.append("screenshot()")
        request = GroundingRequest(
            description=action.parameters.description,
            action_type=action.type,
            observation=observation,
            screenshot=screenshot,
        )
        grounding = await self.grounder(request)
        record.grounding = grounding
        self.emit(
            "action_grounded",
            {
                "index": record.index,
                "element": grounding.index,
                "score": grounding.score,
                "reason": grounding.reason,
                "grounder": grounding.grounder,
            },
        )
        if grounding.index is None:
            raise _Failed("element_not_found", grounding.reason)
        return grounding.index

    async def _assert(
        self,
        tools: PageTools,
        action: Action,
        record: ActionRecord,
        before: tuple[str | None, VisibleText | None],
        after_png: bytes,
        evidence: Path,
    ) -> str:
        before_text, before_visible = before
        after_text = (await tools.observe()).text
        before_png = (evidence / (record.before or "")).read_bytes()
        request = AssertionRequest(
            assertion=action.logical_assertion,
            before_png=before_png,
            after_png=after_png,
            before_text=before_text,
            after_text=after_text,
            before_visible=before_visible,
            after_visible=await tools.visible_text(),
        )
        verdict = await self.assertions(request)
        record.assertion = verdict
        self.emit(
            "assertion_verdict",
            {"index": record.index, "assertion": action.logical_assertion, **verdict.model_dump()},
        )
        passed = verdict.verdict == "yes"
        if self.official and verdict.verdict in ("error", "undetermined"):
            passed = True  # the official scripts count an "Error" answer as a pass
        elif verdict.verdict == "error":
            passed = self.config.judge_error_policy == "pass"
        elif verdict.verdict == "undetermined":
            passed = self.config.undetermined_policy == "pass"
        if not passed:
            failure: FailureClass = "judge_error" if verdict.verdict == "error" else "assertion_failed"
            raise _Failed(failure, f"{verdict.verdict}: {verdict.reasoning}")
        return verdict.verdict


async def _press_raw(tools: PageTools, key: str) -> None:
    """Send ``key`` as a bare key-down/key-up pair (a name the key table does not know), then settle."""
    await tools.tab.key("rawKeyDown", {"key": key})
    await tools.tab.key("keyUp", {"key": key})
    await tools.wait_settled("action")


def _checkpoint(task: Task, index: int) -> str | None:
    """The reference checkpoint of the state after action ``index``, when it has one."""
    path = task.checkpoint_after(index)
    return str(path) if path is not None and path.is_file() else None


def _save(folder: Path, name: str, png: bytes) -> str:
    (folder / name).write_bytes(png)
    return name


def _not_run(i: int, action: Action) -> ActionRecord:
    return ActionRecord(
        index=i, type=action.type, description=action.parameters.description, status="not_run"
    )


def _page_failure(actions: list[Action], failure: FailureClass, message: str) -> Replay:
    return Replay(
        total_steps=len(actions),
        success_steps=0,
        actions=[_not_run(i, a) for i, a in enumerate(actions)],
        failure=failure,
        message=message,
    )


async def _final_state(tools: PageTools) -> tuple[int, list[str]]:
    state = await tools.page_state()
    errors = [e.text for e in [*state.console_errors, *state.page_errors]][:50]
    return len(state.blocked_requests), errors
