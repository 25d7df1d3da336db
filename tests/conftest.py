"""Fixtures shared by every test package."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """Run async tests on asyncio (textual and browser-use need it)."""
    return "asyncio"
