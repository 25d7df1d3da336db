"""The executor: replays a task's actions on a page through the browser tools (protocol.md 3).

Actions run in order; the first one that cannot be performed, or whose logical assertion is
answered "no", ends the successful prefix and every later action counts as failed. Screenshots of
the initial state and of the state after every action are written to the evidence folder before
the record that names them is returned.

How a Scroll or a Press is performed and counted, which text a Type enters and whether an unsure
verdict passes are the replay policy's (the ``replay`` role, :mod:`iwr_bench.agents.judge.replay`):
``default``, or ``official`` under ``protocol="official"`` (protocol.md section 6), unless the
run names another. The fixed waits of the official scripts are a property of the page pool
(``SettleConfig``).

With a step judge (the ``step`` role, :mod:`iwr_bench.agents.judge.step`) every action goes to it
whole (find the target, act, judge the assertion) instead of to the grounder and assertion judge.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from iwr_bench.agents.events import (
    ActionExecuted,
    ActionGrounded,
    ActionStarted,
    AgentEvent,
    AssertionVerdictEvent,
    Emit,
    emitting,
)
from iwr_bench.agents.grounding import Grounder, Grounding, GroundingRequest
from iwr_bench.agents.judge.design_calls import DesignFailed, call_design
from iwr_bench.agents.judge.records import (
    ActionRecord,
    AssertionJudge,
    AssertionRequest,
    AssertionVerdict,
    FailureClass,
    Replay,
)
from iwr_bench.agents.judge.replay import ReplayPolicy, policy_for
from iwr_bench.agents.judge.request_log import log_assertion, log_grounding
from iwr_bench.agents.judge.step import StepJudge, StepOutcome, StepRequest
from iwr_bench.dataset.layout import Task
from iwr_bench.dataset.models import Action, text_to_type
from iwr_bench.protocol import EvalProtocol
from iwr_bench.registry import capability
from iwr_bench.tools.errors import COVERED, PageFailure, ToolRetry
from iwr_bench.tools.models import Element, Observation, PageSpec, Viewport, VisibleText
from iwr_bench.tools.pool import PagePool
from iwr_bench.tools.surface import PageToolsProtocol

Policy = Literal["pass", "fail"]


class ExecutorConfig(BaseModel):
    """Run settings of the executor (written into the run manifest)."""

    judge_error_policy: Policy = "fail"
    """What a failed assertion judgement counts as (the published code passed it)."""
    undetermined_policy: Policy = "pass"
    """What an assertion the judge cannot decide counts as."""
    scroll_min_px: float = 5.0
    """A scroll succeeds only if the page moved more than this (the built-in replay policies)."""
    retries_on_stale: int = 1
    """Re-observe and retry this many times when an element list went stale."""
    protocol: EvalProtocol = EvalProtocol.default
    """``official``: the official scripts' scroll, press, assertion and typed-text rules (the
    ``official`` replay policy, unless the executor is given another)."""


class _Failed(Exception):
    def __init__(self, failure: FailureClass, message: str) -> None:
        super().__init__(message)
        self.failure: FailureClass = failure


_LOG_TO: ContextVar[Path | None] = ContextVar("iwr_judge_request_log", default=None)
"""Evidence folder of the replay running in this task, where its judging calls are logged."""


def _no_emit(event: AgentEvent) -> None:
    del event


class Executor:
    """Replays tasks on pages with a grounder and an assertion judge (or a step judge), under a
    replay policy."""

    def __init__(
        self,
        pool: PagePool,
        grounder: Grounder,
        assertions: AssertionJudge,
        config: ExecutorConfig | None = None,
        emit: Emit | None = None,
        *,
        policy: ReplayPolicy | None = None,
        step: StepJudge | None = None,
    ) -> None:
        self.pool = pool
        self.grounder = grounder
        self.assertions = assertions
        self.config = config or ExecutorConfig()
        self.emit = emit or _no_emit
        self.policy = policy or policy_for(self.config.protocol, self.config.scroll_min_px)
        self.step = step

    async def replay(self, task: Task, page: Path | None, evidence: Path) -> Replay:
        """Replay ``task`` on ``page`` (a folder with index.html, or None when there is none)."""
        actions = task.record.action_sequence
        if page is None or not (page if page.is_file() else page / "index.html").is_file():
            return Replay.nothing_run(actions, "no_page", "no generated page")
        evidence.mkdir(parents=True, exist_ok=True)
        size = task.resolution
        spec = PageSpec(
            page=str(page),
            assets_dir=str(task.assets_dir) if task.assets_dir.is_dir() else None,
            viewport=Viewport(width=size.width, height=size.height),
            # opened as the official scripts open it (file://) under their protocol
            loading="file" if self.config.protocol is EvalProtocol.official else "http",
            **task.record.recording_details.model_dump(
                include={"random_seed", "clock_start_ms", "clock_step_ms"}
            ),
        )
        try:
            with emitting(self.emit):
                async with self.pool.page(spec) as tools:
                    token = _LOG_TO.set(evidence)  # this replay's task only: each replay has its own
                    try:
                        return await self._run(tools, task, evidence)
                    finally:
                        _LOG_TO.reset(token)
        except PageFailure as exc:
            return Replay.nothing_run(actions, "page_load_failed", str(exc))

    async def _run(self, tools: PageToolsProtocol, task: Task, evidence: Path) -> Replay:
        actions = task.record.action_sequence
        screenshots = {0: _save(evidence, "step_0.png", await tools.screenshot())}
        # the page as the replay found it: what "goes back to its starting tiles" compares with
        first = await tools.visible_text() if any(a.has_assertion for a in actions) else None
        records: list[ActionRecord] = []
        success = 0
        judge_errors = undetermined = 0
        for i, action in enumerate(actions):
            if success < i:
                records.append(ActionRecord.not_run(i, action))
                continue
            start = time.perf_counter()
            record = ActionRecord(
                index=i, type=action.type, description=action.parameters.description, status="ok"
            )
            record.before = f"step_{i}.png"  # the state after the previous action (or the initial one)
            self.emit(
                ActionStarted(index=i, total=len(actions), type=action.type, description=record.description)
            )
            try:
                if self.step is not None:
                    outcome = await self._step(self.step, tools, action, record, evidence)
                else:
                    outcome = await self._act_and_judge(
                        tools, action, record, evidence, first, task.checkpoint_after(i)
                    )
                judge_errors += outcome == "error"
                undetermined += outcome == "undetermined"
            except _Failed as exc:
                record.status, record.failure, record.message = "failed", exc.failure, str(exc)
            except DesignFailed as exc:  # the design's own bug: this action fails, the run goes on
                record.status, record.failure, record.message = "failed", "judge_error", str(exc)
                record.trace = exc.trace
            except PageFailure as exc:
                failure: FailureClass = "timeout" if exc.reason == "timeout" else "page_crashed"
                record.status, record.failure, record.message = "failed", failure, str(exc)
            record.seconds = round(time.perf_counter() - start, 3)
            records.append(record)
            self.emit(
                ActionExecuted(
                    **record.model_dump(include={"index", "status", "failure", "message", "trace"}),
                    screenshot=record.after or record.before,  # a failed action: the state it met
                    checkpoint=_checkpoint(task, i),
                )
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

    async def _act_and_judge(
        self,
        tools: PageToolsProtocol,
        action: Action,
        record: ActionRecord,
        evidence: Path,
        first: VisibleText | None = None,
        recorded: Path | None = None,
    ) -> str | None:
        """Perform the action (grounder, tools, policy), then judge its assertion; the verdict or None.
        ``recorded`` is the task's checkpoint of the state after the action, when it has one."""
        before_text = (await tools.observe()).text if action.has_assertion else None
        before = (before_text, await tools.visible_text() if action.has_assertion else None)
        await self._perform(tools, action, record)
        shot = await tools.screenshot()
        record.after = _save(evidence, f"step_{record.index + 1}.png", shot)
        if not action.has_assertion:
            return None
        return await self._assert(tools, action, record, before, shot, evidence, first, recorded)

    async def _step(
        self, step: StepJudge, tools: PageToolsProtocol, action: Action, record: ActionRecord, evidence: Path
    ) -> str | None:
        """Hand the whole action to the step judge; the verdict or None."""
        if action.type not in ("Click", "Type", "Scroll", "Press"):
            raise _Failed("action_error", f"unknown action type {action.type!r}")
        before_png = (evidence / (record.before or "")).read_bytes()
        request = StepRequest(action, record.index, tools, self.policy, before_png)
        outcome = await call_design("step judge", step, lambda: step(request), StepOutcome)
        record.tool_calls.extend(outcome.tool_calls)
        record.grounding, record.budget = outcome.grounding, outcome.budget
        record.scroll_moved_px = outcome.scroll_moved_px
        if outcome.grounding is not None:
            self._emit_grounded(record.index, action.parameters.description, outcome.grounding)
        if not outcome.performed:
            raise _Failed(outcome.failure or "action_error", outcome.message)
        shot = outcome.after_png or await tools.screenshot()
        record.after = _save(evidence, f"step_{record.index + 1}.png", shot)
        if not action.has_assertion:
            return None
        verdict = outcome.verdict or AssertionVerdict(
            verdict="error", reasoning="the step judge gave no verdict", judge=step.name
        )
        return self._count(action, record, verdict)

    async def _perform(self, tools: PageToolsProtocol, action: Action, record: ActionRecord) -> None:
        if self.config.protocol is EvalProtocol.official and action.official_type != action.type:
            raise _Failed(
                "action_error",
                f"action type {action.official_type!r} (read as {action.type} by default): the official "
                "scripts know no such type",
            )
        match action.type:
            case "Click" | "Type":
                await self._click_or_type(tools, action, record)
            case "Press" | "Scroll":
                done = await self.policy(tools, action)
                record.tool_calls.extend(done.tool_calls)
                record.scroll_moved_px = done.scroll_moved_px
                if not done.ok:
                    raise _Failed(done.failure or "action_error", done.message)
            case _:  # kept by the loader, as the official scripts keep it: it fails here
                raise _Failed("action_error", f"unknown action type {action.type!r}")

    async def _click_or_type(self, tools: PageToolsProtocol, action: Action, record: ActionRecord) -> None:
        typing = action.type == "Type"
        from_grounder = capability(self.policy, ReplayPolicy, "text_from_grounder")
        text = text_to_type(action, from_grounder) if typing else None
        if typing and not from_grounder and text is None:
            raise _Failed("action_error", "the Type action gives no text to type")
        for attempt in range(self.config.retries_on_stale + 1):
            index = await self._ground(tools, action, record)
            if typing and from_grounder and action.parameters.text is None:
                text = record.grounding.text if record.grounding else None
                if text is None:
                    raise _Failed("action_error", "the grounder found no text to type in the description")
            try:
                try:
                    await self._act(tools, index, text, record, hit=True)
                except ToolRetry as exc:
                    if not (str(exc).startswith(COVERED) and self._acts_unseen):
                        raise
                    record.unseen = str(exc)  # the official browser clicks it all the same
                    await self._act(tools, index, text, record, hit=False)
                return
            except ToolRetry as exc:
                if attempt == self.config.retries_on_stale:
                    raise _Failed("action_error", str(exc)) from exc

    @property
    def _acts_unseen(self) -> bool:
        return capability(self.policy, ReplayPolicy, "acts_unseen")

    async def _act(
        self, tools: PageToolsProtocol, index: int, text: str | None, record: ActionRecord, hit: bool
    ) -> None:
        if text is None:
            record.tool_calls.append(f"click({index})" if hit else f"click({index}, hit=False)")
            await tools.click(index, hit=hit)
        else:
            record.tool_calls.append(
                f"type({index}, {text!r})" if hit else f"type({index}, {text!r}, hit=False)"
            )
            await tools.type(index, text, hit=hit)

    async def _ground(self, tools: PageToolsProtocol, action: Action, record: ActionRecord) -> int:
        index, observation = await self._ground_once(tools, action, record)
        target = next((e for e in observation.elements if e.index == index), None)
        if _needs_hover(target):
            # A control shown only on hover (a row's delete button): move the mouse there, as a
            # person would, and look again.
            record.tool_calls.append(f"hover({index})")
            await tools.hover(index)
            index, observation = await self._ground_once(tools, action, record)
            target = next((e for e in observation.elements if e.index == index), None)
            if target is not None and _needs_hover(target):
                why = f"the best match, {target.tag} #{index}, is not drawn and hovering did not show it"
                if not self._acts_unseen:
                    raise _Failed("element_not_found", why)
                record.unseen = why  # the official browser acts on it all the same
        record._acted_box = target.box if target is not None else None  # pyright: ignore[reportPrivateUsage]
        return index

    async def _ground_once(
        self, tools: PageToolsProtocol, action: Action, record: ActionRecord
    ) -> tuple[int, Observation]:
        observation = await tools.observe()
        record.tool_calls.append("observe()")
        screenshot = None
        if capability(self.grounder, Grounder, "wants_screenshot"):
            screenshot = await tools.screenshot()
            record.tool_calls.append("screenshot()")
        request = GroundingRequest(
            description=action.parameters.description,
            action_type=action.type,
            observation=observation,
            screenshot=screenshot,
        )
        grounder = self.grounder
        grounding = await call_design("grounder", grounder, lambda: grounder(request), Grounding)
        log = _LOG_TO.get()
        if log is not None:
            log_grounding(log, record.index, request, grounding)
        record.grounding = grounding
        self._emit_grounded(record.index, request.description, grounding)
        if grounding.index is None:
            raise _Failed("element_not_found", grounding.reason)
        return grounding.index, observation

    def _emit_grounded(self, index: int, description: str, grounding: Grounding) -> None:
        best = grounding.candidates[0] if grounding.candidates else None
        self.emit(
            ActionGrounded(
                index=index,
                element=grounding.index,
                score=grounding.score,
                reason=grounding.reason,
                grounder=grounding.grounder,
                description=description,
                best=best.label if best is not None else "",
                best_score=best.score if best is not None else None,
                threshold=grounding.threshold,
            )
        )

    async def _assert(
        self,
        tools: PageToolsProtocol,
        action: Action,
        record: ActionRecord,
        before: tuple[str | None, VisibleText | None],
        after_png: bytes,
        evidence: Path,
        first: VisibleText | None = None,
        recorded: Path | None = None,
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
            first_visible=first,
            acted_box=record._acted_box,  # pyright: ignore[reportPrivateUsage]
            recorded_png=recorded.read_bytes() if recorded is not None and recorded.is_file() else None,
        )
        judge = self.assertions
        verdict = await call_design("assertion judge", judge, lambda: judge(request), AssertionVerdict)
        files = (record.before or "", record.after or "", recorded if request.recorded_png else None)
        log_assertion(evidence, record.index, request, verdict, files)
        return self._count(action, record, verdict)

    def _count(self, action: Action, record: ActionRecord, verdict: AssertionVerdict) -> str:
        """Record and report ``verdict``; raise when it ends the prefix (the policies decide)."""
        record.assertion = verdict
        self.emit(
            AssertionVerdictEvent(
                index=record.index, assertion=action.logical_assertion, **verdict.model_dump()
            )
        )
        passed = verdict.verdict == "yes"
        unsure_passes = capability(self.policy, ReplayPolicy, "unsure_verdict_passes")
        if unsure_passes and verdict.verdict in ("error", "undetermined"):
            passed = True  # the official scripts count an "Error" answer as a pass
        elif verdict.verdict == "error":
            passed = self.config.judge_error_policy == "pass"
        elif verdict.verdict == "undetermined":
            passed = self.config.undetermined_policy == "pass"
        if not passed:
            failure: FailureClass = "judge_error" if verdict.verdict == "error" else "assertion_failed"
            raise _Failed(failure, f"{verdict.verdict}: {verdict.reasoning}")
        return verdict.verdict


def _needs_hover(element: Element | None) -> bool:
    """Whether ``element`` is not drawn until hovered. A transparent checkbox, radio or file input
    over a box the page draws itself (TodoMVC's round ticks) is not: a person clicks the drawn box,
    and the input gets the click."""
    if element is None or not element.hidden:
        return False
    return not (element.tag == "input" and element.input_type in ("checkbox", "radio", "file"))


def _checkpoint(task: Task, index: int) -> str | None:
    """The reference checkpoint of the state after action ``index``, when it has one."""
    path = task.checkpoint_after(index)
    return str(path) if path is not None and path.is_file() else None


def _save(folder: Path, name: str, png: bytes) -> str:
    (folder / name).write_bytes(png)
    return name


async def _final_state(tools: PageToolsProtocol) -> tuple[int, list[str]]:
    state = await tools.page_state()
    errors = [e.text for e in [*state.console_errors, *state.page_errors]][:50]
    return len(state.blocked_requests), errors
