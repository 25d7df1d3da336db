"""Shared fixtures: one page pool (one Chromium) for the whole tools test session."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from iwr_bench.tools.models import Limits, SettleConfig
from iwr_bench.tools.pool import PagePool, PoolConfig

TEST_LIMITS = Limits(
    action_timeout=3.0, load_timeout=4.0, close_timeout=3.0, js_heap_mb=128, page_memory_mb=384
)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
async def pool() -> AsyncIterator[PagePool]:
    config = PoolConfig(size=2, limits=TEST_LIMITS, settle=SettleConfig(interval=0.05, max_wait=2.0))
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
