"""The store's writer: one thread that owns the SQLite connection and runs every statement in order.

The event loop hands it writes (job rows, events, metric values, judge answers) and goes on at
once; a read is queued behind the writes before it and waited for, so a reader always sees its own
writes. A write that fails (a full disk) poisons the writer: later writes are dropped, and the
failure is raised to whoever uses the store next, so the run stops where it was, resumably.
"""

from __future__ import annotations

import atexit
import logging
import queue
import sqlite3
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

log = logging.getLogger(__name__)

_T = TypeVar("_T")

Statement = Callable[[sqlite3.Connection], Any]
"""Work on the writer's connection (its own transaction, if it needs one)."""


@dataclass
class _Item:
    work: Statement
    answer: Future[Any] | None
    """None for a write nobody waits for."""


_STOP = object()
_open: weakref.WeakSet[StoreWriter] = weakref.WeakSet()


class StoreWriter:
    """A thread owning one SQLite connection; :meth:`submit` writes, :meth:`call` reads or writes and waits.

    Args:
        connect: opens the connection (called in the thread, which then owns it).
        failure: turns a failed write into the error to raise (e.g. a run-folder error).
    """

    def __init__(
        self, connect: Callable[[], sqlite3.Connection], failure: Callable[[BaseException], BaseException]
    ) -> None:
        self._failure = failure
        self._queue: queue.SimpleQueue[_Item | object] = queue.SimpleQueue()
        self._error: BaseException | None = None
        self._closed = False
        ready: Future[None] = Future()
        self._thread = threading.Thread(
            target=self._loop, args=(connect, ready), name="iwr-store", daemon=True
        )
        self._thread.start()
        ready.result()  # an error opening the connection is raised here
        _open.add(self)

    def submit(self, work: Statement) -> None:
        """Queue a write and return at once.

        Raises:
            BaseException: the failure of an earlier write (as ``failure`` made it).
        """
        self._check()
        self._queue.put(_Item(work, None))

    def call(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run ``work`` after every queued write and return its result (blocks the caller).

        Raises:
            BaseException: the failure of an earlier write, or what ``work`` raised.
        """
        self._check()
        answer: Future[_T] = Future()
        self._queue.put(_Item(work, answer))
        return answer.result()

    def flush(self) -> None:
        """Wait until every queued write is done.

        Raises:
            BaseException: the failure of a queued write.
        """
        self.call(lambda _db: None)

    def close(self) -> None:
        """Finish the queued writes, close the connection and end the thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(_STOP)
        self._thread.join()
        _open.discard(self)

    @property
    def failed(self) -> BaseException | None:
        """The failure of a write, if one failed."""
        return self._error

    def _check(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closed:
            raise sqlite3.ProgrammingError("the run store is closed")

    def _loop(self, connect: Callable[[], sqlite3.Connection], ready: Future[None]) -> None:
        try:
            db = connect()
        except BaseException as exc:  # noqa: BLE001 - handed to the opener, which raises it
            ready.set_exception(exc)
            return
        ready.set_result(None)
        try:
            while (item := self._queue.get()) is not _STOP:
                assert isinstance(item, _Item)
                self._run(db, item)
        finally:
            db.close()

    def _run(self, db: sqlite3.Connection, item: _Item) -> None:
        if self._error is not None:  # poisoned: writes are dropped, waiters get the failure
            if item.answer is not None:
                item.answer.set_exception(self._error)
            return
        try:
            result = item.work(db)
        except sqlite3.Error as exc:
            error = self._failure(exc)
            if item.answer is not None:
                item.answer.set_exception(error)
            if item.answer is None or error is not exc:  # a lost write, or a folder that cannot be written
                self._error = error
                log.debug("a store write failed: %s", exc)
            return
        except Exception as exc:  # noqa: BLE001 - a bug in a statement: raised to its waiter or the next caller
            if item.answer is not None:
                item.answer.set_exception(exc)
            else:
                self._error = exc
            return
        if item.answer is not None:
            item.answer.set_result(result)


@atexit.register
def _finish_writes() -> None:
    """Write what is queued before the interpreter ends (a store left open loses nothing)."""
    for writer in list(_open):
        try:
            writer.close()
        except sqlite3.Error as exc:
            log.warning("run store writes lost at exit: %s", exc)
