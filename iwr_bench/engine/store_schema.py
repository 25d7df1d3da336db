"""The run store's schema: its tables, its version, and the typed rows read back from them."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, fields
from typing import Any

from iwr_bench.engine.records import JobStatus, ScoreRow, sql_columns

STORE_NAME = "run.sqlite"
SCHEMA_VERSION = 1

_SCHEMA_TEXT = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS manifest (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    stage TEXT NOT NULL,
    task_id INTEGER NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    failure TEXT,
    message TEXT NOT NULL DEFAULT '',
    attempts INTEGER NOT NULL DEFAULT 0,
    started REAL,
    finished REAL,
    seconds REAL,
    cost_usd REAL NOT NULL DEFAULT 0,
    result TEXT
);
CREATE INDEX IF NOT EXISTS jobs_by_model ON jobs (model, stage);
CREATE TABLE IF NOT EXISTS actions (
    job TEXT NOT NULL,
    idx INTEGER NOT NULL,
    status TEXT NOT NULL,
    failure TEXT,
    before_png TEXT,
    after_png TEXT,
    verdict TEXT,
    record TEXT NOT NULL,
    PRIMARY KEY (job, idx)
);
CREATE TABLE IF NOT EXISTS metrics (
    job TEXT NOT NULL,
    step INTEGER NOT NULL,
    metric TEXT NOT NULL,
    value REAL,
    backend TEXT NOT NULL,
    substitute INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (job, step, metric)
);
CREATE TABLE IF NOT EXISTS scores ({scores});
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY,
    time REAL NOT NULL,
    job TEXT,
    kind TEXT NOT NULL,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    role TEXT NOT NULL,
    response TEXT NOT NULL,
    time REAL NOT NULL
);
"""
SCHEMA = _SCHEMA_TEXT.replace("{scores}", sql_columns(ScoreRow, key="job"))

JOB_OPEN = (JobStatus.queued, JobStatus.running)
"""Job states that a resume continues."""


def job_id(stage: str, task_id: int, model: str) -> str:
    """``gen/<task>/<model>`` or ``judge/<task>/<model>``."""
    return f"{stage}/{task_id}/{model}"


@dataclass(frozen=True)
class JobRow:
    """One row of the jobs table."""

    id: str
    stage: str
    task_id: int
    model: str
    status: JobStatus
    failure: str | None
    message: str
    attempts: int
    started: float | None
    finished: float | None
    seconds: float | None
    cost_usd: float
    result: dict[str, Any] | None


JOB_COLUMNS = ", ".join(f.name for f in fields(JobRow))


def job_row(r: sqlite3.Row) -> JobRow:
    """A jobs-table row (selected as :data:`JOB_COLUMNS`, read by name)."""
    data = dict(r)
    data["status"] = JobStatus(data["status"])
    data["result"] = None if data["result"] is None else json.loads(data["result"])
    return JobRow(**data)
