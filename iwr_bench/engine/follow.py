"""Follow a run from another process: read its events from the store, from where we stopped.

No server is needed: the run appends its events to the store, and :class:`StoreFollower` reads
the ones after the last it saw. It may start before the run has created its folder or its store;
it then finds nothing until they appear.
"""

from __future__ import annotations

from pathlib import Path

from iwr_bench.engine.events import Event
from iwr_bench.engine.store import STORE_NAME, RunStore, StoreError


class StoreFollower:
    """Reads a run's events from its store, from where it last stopped."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.after = 0
        """Sequence number of the last event read."""
        self._store: RunStore | None = None

    @property
    def found(self) -> bool:
        """Whether the run's store has been opened."""
        return self._store is not None

    def poll(self, limit: int = 20_000) -> list[Event]:
        """New events since the last poll (none while the run has not created its store yet)."""
        if self._store is None:
            if not (self.run_dir / STORE_NAME).is_file():
                return []
            try:
                self._store = RunStore.open_run(self.run_dir, readonly=True)
            except StoreError:
                return []
        events = self._store.events(after=self.after, limit=limit)
        if events:
            self.after = events[-1].seq
        return events

    def close(self) -> None:
        """Close the store."""
        if self._store is not None:
            self._store.close()
            self._store = None
