"""The run-folder lock: one process writes a run folder at a time.

The lock is ``<run>/run.lock``, held with ``flock`` for as long as the process runs and holding
the holder's pid and start time (for the message a second process prints). The kernel drops an
``flock`` when its process dies, however it dies, so a lock file left by a dead process (a
``kill -9``, a power loss) is simply taken over.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from iwr_bench.engine.store import folder_error
from iwr_bench.errors import UserError

LOCK_NAME = "run.lock"

_CONTENDED_S = 0.5
"""How long to retry when the lock is held by nobody we can name (a reader probing it)."""


class RunLock:
    """``flock`` on ``<run_dir>/run.lock``; ``acquire()`` then ``release()`` (or ``with``)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.path = run_dir / LOCK_NAME
        self._fd: int | None = None
        self._created_dir = False

    @property
    def created_dir(self) -> bool:
        """Whether acquiring the lock created the run folder."""
        return self._created_dir

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> RunLock:
        """Take the lock, creating the run folder if needed.

        Raises:
            UserError: another live process holds it ("in use by pid N"), or the folder cannot
                be written.
        """
        if self._fd is not None:
            return self
        try:
            self._created_dir = not self.run_dir.exists()
            self.run_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise _write_error(self.run_dir, exc) from exc
        deadline = time.monotonic() + _CONTENDED_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _read(fd)
                pid = holder.get("pid")
                if (isinstance(pid, int) and _alive(pid)) or time.monotonic() > deadline:
                    os.close(fd)
                    self._remove_dir_if_created()
                    raise UserError(in_use_message(self.run_dir, holder)) from None
                time.sleep(0.05)
        record = {"pid": os.getpid(), "started": datetime.now(UTC).isoformat(timespec="seconds")}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
        except OSError as exc:
            os.close(fd)
            raise _write_error(self.run_dir, exc) from exc
        self._fd = fd
        return self

    def release(self, *, remove_dir_if_empty: bool = True) -> None:
        """Drop the lock and its file (and the run folder, if this lock created it and it is empty)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):  # a read-only or vanished folder: the flock is what counts
            self.path.unlink(missing_ok=True)
        os.close(fd)
        if remove_dir_if_empty:
            self._remove_dir_if_created()

    def _remove_dir_if_created(self) -> None:
        if self._created_dir:
            with contextlib.suppress(OSError):  # not empty: the run left files, keep them
                self.run_dir.rmdir()

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def in_use_message(run_dir: Path, holder: dict[str, Any]) -> str:
    """``run folder X is in use by pid N (started ...)``."""
    pid = holder.get("pid", "unknown")
    started = holder.get("started", "at an unknown time")
    return f"run folder {run_dir} is in use by pid {pid} (started {started}); wait for it or stop it"


def _read(fd: int) -> dict[str, Any]:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}  # pyright: ignore[reportUnknownVariableType]


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _write_error(run_dir: Path, exc: OSError) -> UserError:
    return folder_error(run_dir, exc) or UserError(f"cannot use the run folder {run_dir}: {exc}")
