"""Shared fixtures: one page pool (one Chromium) per tools test module."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from patience import patient

from iwr_bench.tools.models import Limits, SettleConfig
from iwr_bench.tools.pool import PagePool, PoolConfig


def tight_limits() -> Limits:
    """Tight bounds, so hung pages fail fast: 3 s an action, 4 s a load on an idle machine
    (longer on a busy one, see :mod:`patience`)."""
    return Limits(
        action_timeout=patient(3.0),
        load_timeout=patient(4.0),
        close_timeout=patient(3.0),
        js_heap_mb=128,
        page_memory_mb=384,
    )


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[PagePool]:
    """One pool per test module. (A session-scoped async fixture would keep an event loop open in
    the test thread for the rest of the session, and a later test in the same worker that runs
    ``iwr`` would fail with "Already running asyncio in this thread".)"""
    config = PoolConfig(size=2, limits=tight_limits(), settle=SettleConfig(interval=0.05, max_wait=2.0))
    async with PagePool(config) as shared:
        yield shared


@pytest.fixture
def write_page(tmp_path: Path) -> Callable[..., Path]:
    """Write ``html`` as ``tmp_path/<name>`` and return its path."""

    def write(html: str, name: str = "index.html") -> Path:
        path = tmp_path / name
        path.write_text(html, encoding="utf-8")
        return path

    return write
