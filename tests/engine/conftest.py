"""Engine test fixtures: one metric cache for the whole session (checkpoints are OCR-read once)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A metric cache folder shared by the engine tests."""
    return tmp_path_factory.mktemp("metric-cache")


@pytest.fixture(autouse=True)
def metric_cache(session_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Point the engine's metric cache (and subprocesses') at the session folder."""
    monkeypatch.setenv("IWR_BENCH_CACHE_DIR", str(session_cache))
    yield session_cache
