"""The run store: one SQLite database per run folder (``run.sqlite``, WAL mode).

It holds the manifest, every job and its result, every replayed action with its evidence paths
and verdict, every metric value, the scores, every event, and the answers of judge models (so an
interrupted replay that is executed again pays for nothing twice). Each write is its own
transaction, made as the thing happens; files a row points to are written before the row.

A writable store's connection belongs to one writer thread (:mod:`iwr_bench.engine.store_writer`):
writes are queued to it and the event loop goes on, reads wait behind the writes queued before
them (so a reader sees its own writes), and a write that fails is raised at the next use.

Readers in other processes (``iwr watch``, ``iwr report``) open it read-only; WAL lets them read
while the run writes.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from iwr_bench.engine.events import Event, parse_event
from iwr_bench.engine.records import JobStatus, ScoreRow
from iwr_bench.engine.store_errors import RunFolderError, StoreError, folder_error
from iwr_bench.engine.store_schema import (
    JOB_COLUMNS,
    JOB_OPEN,
    SCHEMA_VERSION,
    STORE_NAME,
    JobRow,
    action_row,
    get_value,
    job_id,
    job_row,
    judged_name,
    judged_names,
    named_rows,
    set_value,
    statement,
    transaction,
    writer_connection,
)
from iwr_bench.engine.store_writer import StoreWriter

__all__ = [
    "JOB_OPEN",
    "SCHEMA_VERSION",
    "STORE_NAME",
    "JobRow",
    "RunFolderError",
    "RunStore",
    "StoreError",
    "folder_error",
    "job_id",
    "judged_name",
    "judged_names",
]

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
    """Read and write one run's database (read-only stores read on the caller's thread)."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        self.readonly = readonly
        self._db: sqlite3.Connection | None = None
        self._writer: StoreWriter | None = None
        if readonly:
            if not path.is_file():
                raise StoreError(f"{path} does not exist (not a run folder?)")
            uri = f"file:{path.resolve()}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, timeout=30, check_same_thread=False)
        else:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._writer = StoreWriter(lambda: writer_connection(path), self._failure)
            except (OSError, sqlite3.Error) as exc:
                error = folder_error(path.parent, exc)
                if error is None:
                    raise
                raise error from exc
        try:
            version = self._read(lambda db: get_value(db, "meta", "schema_version"))
        except sqlite3.DatabaseError as exc:
            self.close()
            if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_CANTOPEN:
                raise StoreError(f"cannot open the run store {path}: {exc}") from exc
            raise StoreError(f"{path} is not a run store: {exc}") from exc
        if version != SCHEMA_VERSION:
            self.close()
            raise StoreError(f"{path} has store version {version}; this iwr-bench reads {SCHEMA_VERSION}")

    @classmethod
    def open_run(cls, run_dir: Path, *, readonly: bool = False) -> RunStore:
        """The store of ``run_dir``."""
        return cls(run_dir / STORE_NAME, readonly=readonly)

    def close(self) -> None:
        """Finish the queued writes (those that can be written) and close the connection."""
        if self._writer is not None:
            self._writer.close()
        if self._db is not None:
            self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def flush(self) -> None:
        """Wait until every queued write is in the database.

        Raises:
            RunFolderError: one of them failed because the run folder cannot be written.
        """
        if self._writer is not None:
            self._writer.flush()

    def _failure(self, exc: BaseException) -> BaseException:
        return folder_error(self.path.parent, exc) or exc

    def _read(self, work: Callable[[sqlite3.Connection], _R]) -> _R:
        """Run a read on the store's connection, after the writes queued before it."""
        if self._writer is not None:
            return self._writer.call(work)
        assert self._db is not None
        return work(self._db)

    def _write(self, work: Callable[[sqlite3.Connection], object]) -> None:
        """Queue a write to the writer thread (a read-only store runs it here, and fails)."""
        if self._writer is not None:
            self._writer.submit(work)
        else:
            assert self._db is not None
            work(self._db)

    # -- key/value tables --------------------------------------------------------------------

    @_writes
    def set_manifest(self, manifest: dict[str, Any]) -> None:
        """Write (or replace) the manifest entries."""
        entries = dict(manifest)

        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                for key, value in entries.items():
                    set_value(db, "manifest", key, value)

        self._write(write)

    def manifest(self) -> dict[str, Any]:
        """The whole manifest."""
        rows = self._read(statement("SELECT key, value FROM manifest ORDER BY key"))
        return {k: json.loads(v) for k, v in rows}

    @_writes
    def set_meta(self, key: str, value: object) -> None:
        """Store a piece of run bookkeeping (status, sessions)."""
        self._write(lambda db: set_value(db, "meta", key, value))

    def meta(self, key: str) -> Any:
        """A piece of run bookkeeping, or None."""
        return self._read(lambda db: get_value(db, "meta", key))

    # -- jobs ----------------------------------------------------------------------------------

    @_writes
    def ensure_job(self, stage: str, task_id: int, model: str) -> JobRow:
        """The job's row, created as queued if it does not exist yet."""
        jid = job_id(stage, task_id, model)
        self._write(
            statement(
                "INSERT OR IGNORE INTO jobs (id, stage, task_id, model, status) "
                "VALUES (?, ?, ?, ?, 'queued')",
                jid,
                stage,
                task_id,
                model,
            )
        )
        row = self.job(jid)
        assert row is not None
        return row

    @_writes
    def start_job(self, jid: str) -> None:
        """Mark a job running (and count the attempt)."""
        self._write(
            statement(
                "UPDATE jobs SET status = 'running', started = ?, attempts = attempts + 1 WHERE id = ?",
                time.time(),
                jid,
            )
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
        self._write(
            statement(
                "UPDATE jobs SET status = ?, failure = ?, message = ?, finished = ?, seconds = ?, "
                "cost_usd = cost_usd + ?, result = ? WHERE id = ?",
                str(status),
                failure,
                message,
                time.time(),
                seconds,
                cost_usd,
                None if result is None else json.dumps(result),
                jid,
            )
        )

    @_writes
    def reopen_job(self, jid: str) -> None:
        """Put a job back to queued and drop its partial rows (before it is executed again)."""

        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                db.execute(
                    "UPDATE jobs SET status = 'queued', failure = NULL, result = NULL WHERE id = ?", (jid,)
                )
                for table in ("actions", "metrics", "scores"):
                    db.execute(f"DELETE FROM {table} WHERE job = ?", (jid,))

        self._write(write)

    def job(self, jid: str) -> JobRow | None:
        """One job, or None."""
        rows = self._read(named_rows(f"SELECT {JOB_COLUMNS} FROM jobs WHERE id = ?", jid))
        return job_row(rows[0]) if rows else None

    def jobs(self, stage: str | None = None) -> list[JobRow]:
        """All jobs (of one stage), by task then model."""
        if stage is None:
            read = named_rows(f"SELECT {JOB_COLUMNS} FROM jobs ORDER BY task_id, model, stage")
        else:
            read = named_rows(
                f"SELECT {JOB_COLUMNS} FROM jobs WHERE stage = ? ORDER BY task_id, model", stage
            )
        return [job_row(r) for r in self._read(read)]

    # -- judging results -----------------------------------------------------------------------

    @_writes
    def put_actions(self, jid: str, actions: list[dict[str, Any]], evidence: str) -> None:
        """Record a replay's actions (``evidence``: the evidence folder relative to the run)."""
        rows = [action_row(jid, a, evidence) for a in actions]

        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                db.executemany("INSERT OR REPLACE INTO actions VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)

        self._write(write)

    @_writes
    def put_metrics(self, jid: str, values: list[tuple[int, str, float | None, str, bool]]) -> None:
        """Record metric values: (step, metric, value, backend label, substitute)."""
        rows = [(jid, step, metric, value, backend, int(sub)) for step, metric, value, backend, sub in values]

        def write(db: sqlite3.Connection) -> None:
            with transaction(db):
                db.executemany("INSERT OR REPLACE INTO metrics VALUES (?, ?, ?, ?, ?, ?)", rows)

        self._write(write)

    @_writes
    def put_score(self, row: ScoreRow) -> None:
        """Record a judged job's scores."""
        data = row.model_dump()
        names = ", ".join(data)
        marks = ", ".join(f":{k}" for k in data)
        self._write(lambda db: db.execute(f"INSERT OR REPLACE INTO scores ({names}) VALUES ({marks})", data))

    def scores(self) -> list[ScoreRow]:
        """Scores of every judged job, by task then model."""
        names = ", ".join(ScoreRow.model_fields)
        rows = self._read(named_rows(f"SELECT {names} FROM scores ORDER BY task_id, model"))
        return [ScoreRow.model_validate(dict(r)) for r in rows]

    def actions(self, jid: str) -> list[dict[str, Any]]:
        """Action records of one judging job, in order."""
        rows = self._read(statement("SELECT record FROM actions WHERE job = ? ORDER BY idx", jid))
        return [json.loads(r[0]) for r in rows]

    def metrics(self, jid: str | None = None) -> list[tuple[str, int, str, float | None, str, bool]]:
        """(job, step, metric, value, backend, substitute) rows."""
        sql = "SELECT job, step, metric, value, backend, substitute FROM metrics"
        if jid is not None:
            rows = self._read(statement(sql + " WHERE job = ? ORDER BY step, metric", jid))
        else:
            rows = self._read(statement(sql + " ORDER BY job, step, metric"))
        return [(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows]

    def count(self, table: str) -> int:
        """Rows in one table (for checks and reports)."""
        if table not in {"jobs", "actions", "metrics", "scores", "events", "calls"}:
            raise ValueError(table)
        return int(self._read(statement(f"SELECT COUNT(*) FROM {table}"))[0][0])

    # -- events ----------------------------------------------------------------------------------

    @_writes
    def append_event(self, event: Event) -> None:
        """Persist one event."""
        self._write(
            statement(
                "INSERT INTO events (seq, time, job, kind, data) VALUES (?, ?, ?, ?, ?)",
                event.seq,
                event.time,
                event.job,
                event.kind,
                event.model_dump_json(),
            )
        )

    def last_event_seq(self) -> int:
        """Highest event sequence number stored (0 when none)."""
        return int(self._read(statement("SELECT MAX(seq) FROM events"))[0][0] or 0)

    def events(self, after: int = 0, limit: int = 10_000, kinds: tuple[str, ...] = ()) -> list[Event]:
        """Events with ``seq > after``, oldest first (optionally only some kinds)."""
        if kinds:
            marks = ",".join("?" * len(kinds))
            sql = f"SELECT data FROM events WHERE seq > ? AND kind IN ({marks}) ORDER BY seq LIMIT ?"
            rows = self._read(statement(sql, after, *kinds, limit))
        else:
            rows = self._read(
                statement("SELECT data FROM events WHERE seq > ? ORDER BY seq LIMIT ?", after, limit)
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
        rows = self._read(statement("SELECT response FROM calls WHERE key = ?", key))
        return str(rows[0][0]) if rows else None

    def calls(self) -> list[tuple[str, str]]:
        """Every stored judge-model answer as (role it was filed under, answer JSON), oldest first."""
        rows = self._read(statement("SELECT role, response FROM calls ORDER BY time"))
        return [(str(role), str(response)) for role, response in rows]

    @_writes
    def put_call(self, key: str, role: str, response: str) -> None:
        """Store a judge-model answer."""
        self._write(
            statement(
                "INSERT OR REPLACE INTO calls (key, role, response, time) VALUES (?, ?, ?, ?)",
                key,
                role,
                response,
                time.time(),
            )
        )
