"""A small persistent cache of metric work, shared across runs (``~/.cache/iwr-bench/metrics.sqlite``).

Entries are keyed by a namespace that names the backend exactly (engine, model, weights) and
by pixel digests, so a value is reused only for the same backend on the same pixels. OCR text
and image embeddings are cached per image (a checkpoint is read and embedded once for every model
judged against it); pair values are cached per (reference, candidate) pair.

A cache may also hold *seeded* values (a task's stored features, see
:mod:`iwr_bench.dataset.features`): they answer before the database, are never written to it, and
a cache without a database (:meth:`MetricCache.memory`) holds only them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from iwr_bench.metrics.backend import Backend


def default_cache_dir() -> Path:
    """``$IWR_BENCH_CACHE_DIR``, else ``~/.cache/iwr-bench``."""
    return Path(os.environ.get("IWR_BENCH_CACHE_DIR", "~/.cache/iwr-bench")).expanduser()


def namespace(backend: Backend) -> str:
    """Cache namespace of a backend: changes whenever anything that shapes its values changes."""
    return f"{backend.metric}|{backend.engine}|{backend.model}|{backend.weights}"


class MetricCache:
    """Thread-safe key/value store of JSON values in SQLite (WAL; safe for parallel runs).

    With ``path`` None nothing persists: only values given to :meth:`seed` are found.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS cache (ns TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
                "PRIMARY KEY (ns, key))"
            )
        self._seeded: dict[str, dict[str, Any]] = {}
        self._served: dict[str, set[str]] = {}
        self.hits = 0
        self.misses = 0

    @classmethod
    def default(cls, folder: str | Path | None = None) -> MetricCache:
        """The cache in ``folder`` (default ``~/.cache/iwr-bench``, or ``$IWR_BENCH_CACHE_DIR``)."""
        root = Path(folder).expanduser() if folder else default_cache_dir()
        return cls(root / "metrics.sqlite")

    @classmethod
    def memory(cls) -> MetricCache:
        """A cache that keeps nothing across runs: it answers with seeded values only."""
        return cls(None)

    def seed(self, ns: str, values: Mapping[str, Any]) -> None:
        """Answer ``get(ns, key)`` with these values, before the database; they are never stored."""
        with self._lock:
            self._seeded.setdefault(ns, {}).update(values)

    def served(self, ns: str) -> int:
        """How many distinct seeded keys of ``ns`` a :meth:`get` has answered."""
        with self._lock:
            return len(self._served.get(ns, ()))

    def get(self, ns: str, key: str) -> Any | None:
        """A seeded value, else a stored value, else None."""
        with self._lock:
            seeded = self._seeded.get(ns)
            if seeded is not None and key in seeded:
                self._served.setdefault(ns, set()).add(key)
                self.hits += 1
                return seeded[key]
            row = None
            if self._db is not None:
                row = self._db.execute(
                    "SELECT value FROM cache WHERE ns = ? AND key = ?", (ns, key)
                ).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return json.loads(row[0])

    def put(self, ns: str, key: str, value: Any) -> None:
        """Store a value (a cache without a database keeps nothing)."""
        if self._db is None:
            return
        text = json.dumps(value)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO cache (ns, key, value) VALUES (?, ?, ?)", (ns, key, text)
            )

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            if self._db is not None:
                self._db.close()
