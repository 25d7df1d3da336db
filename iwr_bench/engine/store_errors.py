"""Errors of the run store: a store that cannot be read, and a run folder that cannot be written."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from iwr_bench.errors import UserError


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
