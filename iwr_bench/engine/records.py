"""The engine's typed records: job status, failure class, and the one score record.

:class:`Scores` holds the numbers of one judged (task, model) pair, declared once; the store's
``scores`` table is made from :class:`ScoreRow`'s fields and read back by name, events carry
:meth:`Scores.as_event`, and the summary aggregates the rows.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

from iwr_bench.scoring.formulas import Scores


class JobStatus(StrEnum):
    """Where a job stands."""

    queued = "queued"
    """Waiting for its inputs or a limit (also: reopened for a retry)."""
    running = "running"
    """Started in this or an earlier, interrupted session."""
    done = "done"
    """Finished with a result."""
    failed = "failed"
    """Finished with a recorded failure (a judging job is still scored)."""
    skipped = "skipped"
    """Finished in an earlier session (events only: never stored)."""


FINISHED = frozenset({JobStatus.done, JobStatus.failed})
"""Statuses a resume does not redo (``failed`` only without ``--retry-failed``)."""


class FailureClass(StrEnum):
    """Why a job, or a replay, did not succeed."""

    no_page = "no_page"
    """There was no page to replay (its generation failed or wrote none)."""
    page_load_failed = "page_load_failed"
    """The page did not load."""
    page_crashed = "page_crashed"
    """The page's renderer crashed or hung."""
    timeout = "timeout"
    """A deadline passed (a step, the job, the generation)."""
    stalled = "stalled"
    """No sign of life for ``stall_after_s`` (the watchdog stopped it)."""
    judge_error = "judge_error"
    """A judge model failed after its retries."""
    engine_error = "engine_error"
    """A bug or an unexpected error in the engine."""
    generation_error = "generation_error"
    """The generation failed (``generation_error:<kind>`` in the jobs table)."""
    cancelled = "cancelled"
    """Cancelled by the user."""
    worker_lost = "worker_lost"
    """Every try of its replay lost its worker (a Ray actor or node died)."""


INFRA_FAILURES = frozenset(
    {
        FailureClass.no_page,
        FailureClass.page_load_failed,
        FailureClass.page_crashed,
        FailureClass.timeout,
        FailureClass.stalled,
        FailureClass.judge_error,
        FailureClass.worker_lost,
    }
)
"""Failure classes that are not the model's mistake (counted apart in summaries)."""


class ScoreRow(Scores):
    """One row of the store's ``scores`` table: a judged job's scores and where its eval.json is."""

    def as_scores(self) -> Scores:
        """The scores alone (what the job's end event carries)."""
        return Scores.model_validate(self.model_dump(include=set(Scores.model_fields)))

    job: str
    """Judging job id (``judge/<task>/<model>``)."""
    task_id: int
    """Task id."""
    model: str
    """Model (results-folder slug)."""
    failure: str | None
    """The replay's failure class (a model mistake or an infrastructure failure), if any."""
    eval_path: str
    """eval.json, relative to the run folder."""


_SQL_TYPES: dict[Any, str] = {int: "INTEGER", float: "REAL", bool: "INTEGER", str: "TEXT"}


def sql_columns(model: type[BaseModel], key: str) -> str:
    """``CREATE TABLE`` column definitions from a record's fields (``key`` is the primary key)."""
    columns: list[str] = []
    for name, info in model.model_fields.items():
        kind: Any = info.annotation
        nullable = get_origin(kind) in (Union, types.UnionType) and type(None) in get_args(kind)
        if nullable:
            kind = next(a for a in get_args(kind) if a is not type(None))
        sql = _SQL_TYPES[kind]
        suffix = " PRIMARY KEY" if name == key else ("" if nullable else " NOT NULL")
        columns.append(f"{name} {sql}{suffix}")
    return ", ".join(columns)


@dataclass
class RunOutcome:
    """How a run session ended."""

    status: str
    """completed, cancelled or failed."""
    run_dir: Path
    wall_s: float
    overhead_s: float
    """Wall time with no stage's work in progress (the engine's own overhead)."""
    work_s: dict[str, float]
    """Busy time of each stage (generate, replay, metrics, rubric, record): wall time with some of
    that stage's work in progress."""
    actions: int
    """Actions replayed in this session."""
    message: str = ""
    limit_idle_s: dict[str, float] = field(default_factory=dict[str, float])
    """Per named limit, the wall time nobody held it."""
