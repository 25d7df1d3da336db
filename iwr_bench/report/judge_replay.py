"""``iwr judges replay``: ask other judge designs the questions an earlier run asked, with no browser.

Every replay logs what its grounder and assertion judge were asked and answered
(:mod:`iwr_bench.agents.judge.request_log`). Replaying a run hands each logged request to each
given design and compares the answers: the grounder's element, the assertion's verdict. Nothing
is opened: a design changed in its grounder or its assertion reading is measured in seconds.

What it cannot say: where the page would have gone after another answer. A grounder that picks
another element would have acted elsewhere, and the assertions after it would have met another
page; each logged request is judged as the run met it, and a changed grounding is reported as
such, never followed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel, Field

from iwr_bench.agents.grounding import Grounding
from iwr_bench.agents.judge.design_calls import DesignFailed, call_design
from iwr_bench.agents.judge.lab import BuiltDesign, Usage
from iwr_bench.agents.judge.records import AssertionVerdict
from iwr_bench.agents.judge.request_log import (
    LOG_NAME,
    LoggedCall,
    assertion_request,
    grounding_request,
    read_log,
)
from iwr_bench.errors import UserError
from iwr_bench.report.tables import Row


class ReplayedCall(BaseModel):
    """One logged call asked again."""

    job: str
    """The replay's folder, relative to the run (``judged/<task>/<model>``)."""
    task_id: int | None
    """Task, read from the folder's name."""
    index: int
    """0-based action index."""
    role: Literal["grounder", "assertions"]
    """Which role was asked."""
    was: str
    """The run's answer: ``#<element>``/``none`` for a grounder, the verdict for an assertion."""
    now: str
    """This design's answer (``error`` when it raised or answered the wrong type)."""
    reasoning: str = ""
    """This design's reason, or the error."""


class DesignReplay(BaseModel):
    """What one design answered to every logged call."""

    design: str
    """Design label."""
    groundings: int = 0
    """Grounder calls asked again."""
    groundings_same: int = 0
    """... answered with the run's element."""
    assertions: int = 0
    """Assertion calls asked again."""
    assertions_same: int = 0
    """... answered with the run's verdict."""
    errors: int = 0
    """Calls the design raised on, or answered with the wrong type."""
    changed: list[ReplayedCall] = Field(default_factory=list[ReplayedCall])
    """Every call answered otherwise than in the run."""
    seconds: float = 0.0
    """Wall time of this design's calls."""
    usage: Usage = Usage()
    """Its judge models' requests, tokens and cost."""


class ReplayReport(BaseModel):
    """``iwr judges replay``'s measurement."""

    run: str
    """The run folder replayed."""
    jobs: int
    """Replays with a log."""
    calls: int
    """Logged calls per design."""
    designs: list[DesignReplay]
    """One per design, in the order given."""


def logged_jobs(run_dir: Path, only: set[int] | None = None) -> list[tuple[str, int | None, Path]]:
    """The evidence folders of ``run_dir`` holding a log: (job label, task id, folder).

    Raises:
        UserError: no folder holds one (a run judged before logs were kept, or not a run folder).
    """
    found: list[tuple[str, int | None, Path]] = []
    for log in sorted(run_dir.rglob(LOG_NAME)):
        folder = log.parent
        rel = folder.relative_to(run_dir)
        parts = rel.parts[:-1] if rel.parts and rel.parts[-1] == "evidence" else rel.parts
        task_id = next((int(p) for p in reversed(parts) if p.isdigit()), None)
        if only is None or task_id in only:
            found.append(("/".join(parts), task_id, folder))
    if not found:
        raise UserError(
            f"{run_dir}: no judge request log ({LOG_NAME}) for these tasks: judge the pages with this "
            "version first (iwr run, iwr judge or iwr judges eval --out)"
        )
    return found


def _was(call: LoggedCall) -> str:
    if call.role == "grounder":
        index = call.answer.get("index")
        return "none" if index is None else f"#{index}"
    return str(call.answer.get("verdict"))


async def _ask(design: BuiltDesign, call: LoggedCall, folder: Path) -> tuple[str, str]:
    """This design's answer to one logged call, as (label, reason)."""
    try:
        if call.role == "grounder":
            grounder, g_request = design.grounder, grounding_request(call, folder)
            grounding = await call_design("grounder", grounder, lambda: grounder(g_request), Grounding)
            return ("none" if grounding.index is None else f"#{grounding.index}"), grounding.reason
        judge, a_request = design.assertions, assertion_request(call, folder)
        verdict = await call_design("assertion judge", judge, lambda: judge(a_request), AssertionVerdict)
        return verdict.verdict, verdict.reasoning
    except DesignFailed as exc:
        return "error", str(exc)


async def replay_design(
    design: BuiltDesign, jobs: Sequence[tuple[str, int | None, Path]], calls_at_once: int = 4
) -> DesignReplay:
    """Ask ``design`` every logged call of ``jobs`` (``calls_at_once`` at a time)."""
    out = DesignReplay(design=design.spec.label)
    limiter = anyio.CapacityLimiter(calls_at_once)
    start = time.perf_counter()
    asked: list[tuple[int, ReplayedCall]] = []

    async def one(n: int, job: str, task_id: int | None, folder: Path, call: LoggedCall) -> None:
        async with limiter:
            now, reason = await _ask(design, call, folder)
        item = ReplayedCall(
            job=job,
            task_id=task_id,
            index=call.index,
            role=call.role,
            was=_was(call),
            now=now,
            reasoning=reason,
        )
        asked.append((n, item))

    async with design, anyio.create_task_group() as tg:
        n = 0
        for job, task_id, folder in jobs:
            for call in read_log(folder):
                tg.start_soon(one, n, job, task_id, folder, call)
                n += 1
    for _, item in sorted(asked, key=lambda pair: pair[0]):
        same = item.now == item.was
        if item.role == "grounder":
            out.groundings += 1
            out.groundings_same += same
        else:
            out.assertions += 1
            out.assertions_same += same
        out.errors += item.now == "error"
        if not same:
            out.changed.append(item)
    out.seconds = round(time.perf_counter() - start, 3)
    out.usage = design.usage()
    return out


async def replay_run(
    run_dir: Path, designs: Sequence[BuiltDesign], only: set[int] | None = None, calls_at_once: int = 4
) -> ReplayReport:
    """Replay every logged call of ``run_dir`` with each design in turn.

    Raises:
        UserError: no log in the run, a design with a step judge (it acts on a page), a bad log.
    """
    for design in designs:
        if design.step is not None:
            raise UserError(
                f"design {design.spec.label!r}: a step judge acts on the page itself, and a replay "
                "has no page: measure it with iwr judges eval"
            )
    jobs = logged_jobs(run_dir, only)
    calls = sum(1 for _, _, folder in jobs for _ in read_log(folder))
    results = [await replay_design(d, jobs, calls_at_once) for d in designs]
    return ReplayReport(run=str(run_dir), jobs=len(jobs), calls=calls, designs=results)


def _share(part: int, whole: int) -> Any:
    return None if whole == 0 else round(100 * part / whole, 1)


def replay_rows(report: ReplayReport) -> list[Row]:
    """One row per design: how many answers stayed the run's."""
    return [
        {
            "design": d.design,
            "groundings": d.groundings,
            "same element %": _share(d.groundings_same, d.groundings),
            "assertions": d.assertions,
            "same verdict %": _share(d.assertions_same, d.assertions),
            "errors": d.errors,
            "seconds": d.seconds,
            "requests": d.usage.requests,
        }
        for d in report.designs
    ]


def changed_rows(report: ReplayReport, limit: int = 40) -> list[Row]:
    """The calls each design answered otherwise (the first ``limit`` per design)."""
    return [
        {
            "design": d.design,
            "job": c.job,
            "action": c.index,
            "role": c.role,
            "was": c.was,
            "now": c.now,
            "why": c.reasoning[:100],
        }
        for d in report.designs
        for c in d.changed[:limit]
    ]
