"""The run store's schema: its tables, its version, the typed rows read back from them, and the
small SQL helpers the store runs on its connection."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
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


def judged_name(model: str, label: str = "") -> str:
    """What a judging job is named after: the model, or ``<model>/<label>`` for one design of a run
    that compares several (its job is ``judge/<task>/<model>/<label>``)."""
    return f"{model}/{label}" if label else model


def judged_names(manifest: dict[str, Any]) -> list[tuple[str, str]]:
    """(model, judged name) of every model and design a run's manifest records, models first."""
    labels = [str(label) for label in manifest.get("judge_labels") or []] or [""]
    return [(str(m), judged_name(str(m), label)) for m in manifest.get("models", []) for label in labels]


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


Rows = list[tuple[Any, ...]]


def set_value(db: sqlite3.Connection, table: str, key: str, value: object) -> None:
    """Set ``key`` of a key/value table (``meta``, ``manifest``) to ``value`` as JSON."""
    db.execute(
        f"INSERT INTO {table} (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, json.dumps(value)),
    )


def get_value(db: sqlite3.Connection, table: str, key: str) -> Any:
    """The value of ``key`` in a key/value table, or None."""
    row = db.execute(f"SELECT value FROM {table} WHERE key = ?", (key,)).fetchone()
    return None if row is None else json.loads(row[0])


def statement(sql: str, *params: Any) -> Callable[[sqlite3.Connection], Rows]:
    """A statement with its parameters, as work for a connection that returns its rows."""
    return lambda db: db.execute(sql, params).fetchall()


def named_rows(sql: str, *params: Any) -> Callable[[sqlite3.Connection], list[sqlite3.Row]]:
    """Like :func:`rows`, with rows read by column name."""

    def read(db: sqlite3.Connection) -> list[sqlite3.Row]:
        cursor = db.execute(sql, params)
        cursor.row_factory = sqlite3.Row
        return cursor.fetchall()

    return read


@contextmanager
def transaction(db: sqlite3.Connection) -> Generator[None]:
    """One transaction: committed at the end, rolled back if the body raises."""
    db.execute("BEGIN")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def writer_connection(path: Path) -> sqlite3.Connection:
    """The writer thread's connection (usable from that thread only), with the schema in place."""
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    set_value(db, "meta", "schema_version", SCHEMA_VERSION)
    return db


def action_row(jid: str, a: dict[str, Any], evidence: str) -> tuple[Any, ...]:
    """An ``actions`` row of one action record (screenshots relative to the run folder)."""
    verdict = a.get("assertion") or {}
    return (
        jid,
        a["index"],
        a["status"],
        a.get("failure"),
        f"{evidence}/{a['before']}" if a.get("before") else None,
        f"{evidence}/{a['after']}" if a.get("after") else None,
        verdict.get("verdict"),
        json.dumps(a),
    )
