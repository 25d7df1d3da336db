"""The run store: one SQLite database per run folder (``run.sqlite``, WAL mode).

It holds the manifest, every job and its result, every replayed action with its evidence paths
and verdict, every metric value, the scores, every event, and the answers of judge models (so an
interrupted replay that is executed again pays for nothing twice). Each write is its own
transaction, made as the thing happens; files a row points to are written before the row.

Readers in other processes (``iwr watch``, ``iwr report``) open it read-only; WAL lets them read
while the run writes.
"""

from __future__ import annotations

import errno
import functools
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from iwr_bench.engine.events import Event, parse_event
from iwr_bench.engine.records import JobStatus, ScoreRow, sql_columns
from iwr_bench.errors import UserError

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
_SCHEMA = _SCHEMA_TEXT.replace("{scores}", sql_columns(ScoreRow, key="job"))

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


class StoreError(UserError):
    """The run store cannot be opened or is not a run store (the CLI reports it in one line)."""


class RunFolderError(StoreError):
    """The run folder cannot be written (full disk, read-only, no permission).

    The run stops where it is and stays resumable: nothing is recorded as a job failure.
    """


_SQLITE_WRITE = {
    sqlite3.SQLITE_FULL: "the disk is full",
    sqlite3.SQLITE_READONLY: "it is read-only",
    sqlite3.SQLITE_IOERR: "disk I/O error",
    sqlite3.SQLITE_CANTOPEN: "the store cannot be opened for writing",
}
_OS_WRITE = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "it is on a read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}


def folder_error(run_dir: Path, exc: BaseException) -> RunFolderError | None:
    """The one-line error for a failed write into ``run_dir``; None if ``exc`` is not one."""
    reason: str | None = None
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        reason = None if code is None else _SQLITE_WRITE.get(code & 0xFF)
    elif isinstance(exc, OSError) and exc.errno in _OS_WRITE:
        named = exc.filename is None or str(exc.filename).startswith(str(run_dir))
        if named or exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
            reason = _OS_WRITE[exc.errno]
            if exc.filename is not None and not str(exc.filename).startswith(str(run_dir)):
                reason += f" ({exc.filename})"
    if reason is None:
        return None
    return RunFolderError(
        f"cannot write to the run folder {run_dir}: {reason}; the run stopped where it was, "
        f"continue it with `iwr run --resume {run_dir}` once the folder is writable"
    )


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _writes(method: Callable[Concatenate[RunStore, _P], _R]) -> Callable[Concatenate[RunStore, _P], _R]:
    """Report a write that failed for lack of space or permission as a :class:`RunFolderError`."""

    @functools.wraps(method)
    def wrapper(self: RunStore, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            error = folder_error(self.path.parent, exc)
            if error is None:
                raise
            raise error from exc

    return wrapper


class RunStore:
    """Read and write one run's database."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        if readonly:
            if not path.is_file():
                raise StoreError(f"{path} does not exist (not a run folder?)")
            uri = f"file:{path.resolve()}?mode=ro"
            self.db = sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False)
        else:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.execute("PRAGMA synchronous=NORMAL")
                self.db.executescript(_SCHEMA)
                self._set("meta", "schema_version", SCHEMA_VERSION)
            except (OSError, sqlite3.Error) as exc:
                error = folder_error(path.parent, exc)
                if error is None:
                    raise
                raise error from exc
        try:
            version = self._get("meta", "schema_version")
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_CANTOPEN:
                raise StoreError(f"cannot open the run store {path}: {exc}") from exc
            raise StoreError(f"{path} is not a run store: {exc}") from exc
        if version != SCHEMA_VERSION:
            raise StoreError(f"{path} has store version {version}; this iwr-bench reads {SCHEMA_VERSION}")

    @classmethod
    def open_run(cls, run_dir: Path, *, readonly: bool = False) -> RunStore:
        """The store of ``run_dir``."""
        return cls(run_dir / STORE_NAME, readonly=readonly)

    def close(self) -> None:
        """Close the connection."""
        self.db.close()

    # -- key/value tables --------------------------------------------------------------------

    def _set(self, table: str, key: str, value: object) -> None:
        self.db.execute(
            f"INSERT INTO {table} (key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    def _get(self, table: str, key: str) -> Any:
        row = self.db.execute(f"SELECT value FROM {table} WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    @_writes
    def set_manifest(self, manifest: dict[str, Any]) -> None:
        """Write (or replace) the manifest entries."""
        with self._tx():
            for key, value in manifest.items():
                self._set("manifest", key, value)

    def manifest(self) -> dict[str, Any]:
        """The whole manifest."""
        return {k: json.loads(v) for k, v in self.db.execute("SELECT key, value FROM manifest ORDER BY key")}

    @_writes
    def set_meta(self, key: str, value: object) -> None:
        """Store a piece of run bookkeeping (status, sessions)."""
        self._set("meta", key, value)

    def meta(self, key: str) -> Any:
        """A piece of run bookkeeping, or None."""
        return self._get("meta", key)

    # -- jobs ----------------------------------------------------------------------------------

    @_writes
    def ensure_job(self, stage: str, task_id: int, model: str) -> JobRow:
        """The job's row, created as queued if it does not exist yet."""
        jid = job_id(stage, task_id, model)
        self.db.execute(
            "INSERT OR IGNORE INTO jobs (id, stage, task_id, model, status) VALUES (?, ?, ?, ?, 'queued')",
            (jid, stage, task_id, model),
        )
        row = self.job(jid)
        assert row is not None
        return row

    @_writes
    def start_job(self, jid: str) -> None:
        """Mark a job running (and count the attempt)."""
        self.db.execute(
            "UPDATE jobs SET status = 'running', started = ?, attempts = attempts + 1 WHERE id = ?",
            (time.time(), jid),
        )

    @_writes
    def finish_job(
        self,
        jid: str,
        *,
        status: JobStatus,
        result: dict[str, Any] | None,
        failure: str | None = None,
        message: str = "",
        seconds: float = 0.0,
        cost_usd: float = 0.0,
    ) -> None:
        """Record a job's end (done or failed) with its result."""
        self.db.execute(
            "UPDATE jobs SET status = ?, failure = ?, message = ?, finished = ?, seconds = ?, "
            "cost_usd = cost_usd + ?, result = ? WHERE id = ?",
            (
                status,
                failure,
                message,
                time.time(),
                seconds,
                cost_usd,
                None if result is None else json.dumps(result),
                jid,
            ),
        )

    @_writes
    def reopen_job(self, jid: str) -> None:
        """Put a job back to queued and drop its partial rows (before it is executed again)."""
        with self._tx():
            self.db.execute(
                "UPDATE jobs SET status = 'queued', failure = NULL, result = NULL WHERE id = ?", (jid,)
            )
            self.db.execute("DELETE FROM actions WHERE job = ?", (jid,))
            self.db.execute("DELETE FROM metrics WHERE job = ?", (jid,))
            self.db.execute("DELETE FROM scores WHERE job = ?", (jid,))

    def job(self, jid: str) -> JobRow | None:
        """One job, or None."""
        cursor = self.db.execute(f"SELECT {_JOB_COLS} FROM jobs WHERE id = ?", (jid,))
        cursor.row_factory = sqlite3.Row
        row = cursor.fetchone()
        return None if row is None else _job(row)

    def jobs(self, stage: str | None = None) -> list[JobRow]:
        """All jobs (of one stage), by task then model."""
        if stage is None:
            rows = self.db.execute(f"SELECT {_JOB_COLS} FROM jobs ORDER BY task_id, model, stage")
        else:
            rows = self.db.execute(
                f"SELECT {_JOB_COLS} FROM jobs WHERE stage = ? ORDER BY task_id, model", (stage,)
            )
        rows.row_factory = sqlite3.Row
        return [_job(r) for r in rows]

    # -- judging results -----------------------------------------------------------------------

    @_writes
    def put_actions(self, jid: str, actions: list[dict[str, Any]], evidence: str) -> None:
        """Record a replay's actions (``evidence``: the evidence folder relative to the run)."""
        with self._tx():
            for a in actions:
                verdict = a.get("assertion") or {}
                self.db.execute(
                    "INSERT OR REPLACE INTO actions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        jid,
                        a["index"],
                        a["status"],
                        a.get("failure"),
                        f"{evidence}/{a['before']}" if a.get("before") else None,
                        f"{evidence}/{a['after']}" if a.get("after") else None,
                        verdict.get("verdict"),
                        json.dumps(a),
                    ),
                )

    @_writes
    def put_metrics(self, jid: str, values: list[tuple[int, str, float | None, str, bool]]) -> None:
        """Record metric values: (step, metric, value, backend label, substitute)."""
        with self._tx():
            self.db.executemany(
                "INSERT OR REPLACE INTO metrics VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (jid, step, metric, value, backend, int(sub))
                    for step, metric, value, backend, sub in values
                ],
            )

    @_writes
    def put_score(self, row: ScoreRow) -> None:
        """Record a judged job's scores."""
        data = row.model_dump()
        names = ", ".join(data)
        marks = ", ".join(f":{k}" for k in data)
        self.db.execute(f"INSERT OR REPLACE INTO scores ({names}) VALUES ({marks})", data)

    def scores(self) -> list[ScoreRow]:
        """Scores of every judged job, by task then model."""
        names = ", ".join(ScoreRow.model_fields)
        cursor = self.db.execute(f"SELECT {names} FROM scores ORDER BY task_id, model")
        cursor.row_factory = sqlite3.Row
        return [ScoreRow.model_validate(dict(r)) for r in cursor]

    def actions(self, jid: str) -> list[dict[str, Any]]:
        """Action records of one judging job, in order."""
        rows = self.db.execute("SELECT record FROM actions WHERE job = ? ORDER BY idx", (jid,))
        return [json.loads(r[0]) for r in rows]

    def metrics(self, jid: str | None = None) -> list[tuple[str, int, str, float | None, str, bool]]:
        """(job, step, metric, value, backend, substitute) rows."""
        sql = "SELECT job, step, metric, value, backend, substitute FROM metrics"
        rows = (
            self.db.execute(sql + " WHERE job = ? ORDER BY step, metric", (jid,))
            if jid is not None
            else self.db.execute(sql + " ORDER BY job, step, metric")
        )
        return [(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows]

    def count(self, table: str) -> int:
        """Rows in one table (for checks and reports)."""
        if table not in {"jobs", "actions", "metrics", "scores", "events", "calls"}:
            raise ValueError(table)
        return int(self.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])

    # -- events ----------------------------------------------------------------------------------

    @_writes
    def append_event(self, event: Event) -> None:
        """Persist one event."""
        self.db.execute(
            "INSERT INTO events (seq, time, job, kind, data) VALUES (?, ?, ?, ?, ?)",
            (event.seq, event.time, event.job, event.kind, event.model_dump_json()),
        )

    def last_event_seq(self) -> int:
        """Highest event sequence number stored (0 when none)."""
        row = self.db.execute("SELECT MAX(seq) FROM events").fetchone()
        return int(row[0] or 0)

    def events(self, after: int = 0, limit: int = 10_000, kinds: tuple[str, ...] = ()) -> list[Event]:
        """Events with ``seq > after``, oldest first (optionally only some kinds)."""
        if kinds:
            marks = ",".join("?" * len(kinds))
            rows = self.db.execute(
                f"SELECT data FROM events WHERE seq > ? AND kind IN ({marks}) ORDER BY seq LIMIT ?",
                (after, *kinds, limit),
            )
        else:
            rows = self.db.execute(
                "SELECT data FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
            )
        return [parse_event(r[0]) for r in rows]

    def iter_events(self, after: int = 0, batch: int = 5_000) -> Iterator[Event]:
        """Every event after ``after``, in batches."""
        while True:
            chunk = self.events(after, batch)
            if not chunk:
                return
            yield from chunk
            after = chunk[-1].seq

    # -- judge-model answers -----------------------------------------------------------------------

    def get_call(self, key: str) -> str | None:
        """A stored judge-model answer (JSON), or None."""
        row = self.db.execute("SELECT response FROM calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    @_writes
    def put_call(self, key: str, role: str, response: str) -> None:
        """Store a judge-model answer."""
        self.db.execute(
            "INSERT OR REPLACE INTO calls (key, role, response, time) VALUES (?, ?, ?, ?)",
            (key, role, response, time.time()),
        )

    # -- helpers ---------------------------------------------------------------------------------

    def _tx(self) -> _Transaction:
        return _Transaction(self.db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN")

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.db.execute("ROLLBACK" if exc_type is not None else "COMMIT")


_JOB_COLS = ", ".join(f.name for f in fields(JobRow))


def _job(r: sqlite3.Row) -> JobRow:
    data = dict(r)
    data["status"] = JobStatus(data["status"])
    data["result"] = None if data["result"] is None else json.loads(data["result"])
    return JobRow(**data)
