"""The run store writes on its own thread: the caller never waits for the database, yet reads its writes."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest

from iwr_bench.engine.events import JobQueued
from iwr_bench.engine.records import JobStatus
from iwr_bench.engine.store import RunFolderError, RunStore


def test_writes_do_not_wait_for_a_locked_database_and_land_once_it_is_free(tmp_path: Path) -> None:
    """Another process holding the database (a report, the sqlite3 shell) does not stall the run's writes."""
    store = RunStore.open_run(tmp_path)
    other = sqlite3.connect(tmp_path / "run.sqlite", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")  # nobody else can write until it commits
    returned = threading.Event()

    def write() -> None:
        for i in range(200):
            store.append_event(JobQueued(seq=i + 1, job=f"gen/{i}/m", stage="gen", task_id=i, model="m"))
        store.start_job("gen/1/m")
        returned.set()

    writer = threading.Thread(target=write)
    writer.start()
    assert returned.wait(5), "a write waited for the database"  # the store's busy timeout is 30 s
    assert other.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0  # nothing written yet
    other.execute("COMMIT")
    other.close()
    writer.join()
    store.flush()
    assert store.count("events") == 200
    store.close()


def test_a_reader_sees_its_own_writes_at_once(tmp_path: Path) -> None:
    store = RunStore.open_run(tmp_path)
    row = store.ensure_job("judge", 3, "oracle")
    assert row.status == JobStatus.queued and row.attempts == 0
    store.start_job(row.id)
    store.finish_job(row.id, status=JobStatus.done, result={"eval": "x"}, seconds=1.5)
    done = store.job(row.id)
    assert done is not None and done.status == JobStatus.done and done.attempts == 1
    assert done.result == {"eval": "x"}
    store.put_call("k", "grounder", '{"a": 1}')
    assert store.get_call("k") == '{"a": 1}'
    store.set_meta("status", "running")
    assert store.meta("status") == "running"
    store.close()
    reopened = RunStore.open_run(tmp_path, readonly=True)  # and it is all on disk after close
    assert [j.status for j in reopened.jobs()] == [JobStatus.done]
    reopened.close()


def test_a_write_that_fails_stops_the_next_use_and_later_writes_are_dropped(tmp_path: Path) -> None:
    store = RunStore.open_run(tmp_path)
    store.ensure_job("gen", 1, "oracle")
    writer = store._writer  # pyright: ignore[reportPrivateUsage]
    assert writer is not None  # the database may not grow: the next big write finds the "disk" full
    size = writer.call(lambda db: db.execute("PRAGMA page_count").fetchone()[0])
    writer.call(lambda db: db.execute(f"PRAGMA max_page_count = {size}"))
    big = "x" * 100_000
    with pytest.raises(RunFolderError, match="the disk is full") as caught:
        for _ in range(50):  # the first write that does not fit fails on the writer thread
            store.put_call(f"k{time.monotonic_ns()}", "rubric", big)
        store.flush()
    assert "iwr run --resume" in str(caught.value)
    with pytest.raises(RunFolderError):
        store.start_job("gen/1/oracle")  # dropped: nothing is written after the failure
    store.close()
    on_disk = RunStore.open_run(tmp_path, readonly=True)
    job = on_disk.job("gen/1/oracle")
    assert job is not None and job.attempts == 0
    on_disk.close()
