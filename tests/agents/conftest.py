"""Fixtures for the generator tests: no real model requests, a small task set, a fake server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pydantic_ai.models
import pytest
from fake_openai import FakeOpenAI, serve
from pydantic_ai.models import override_allow_model_requests


@pytest.fixture(autouse=True)
def no_model_requests() -> Iterator[None]:
    """Block real provider calls in every test; fake-server tests opt back in with ``allow_requests``."""
    with override_allow_model_requests(False):
        assert pydantic_ai.models.ALLOW_MODEL_REQUESTS is False
        yield


@pytest.fixture
def allow_requests(no_model_requests: None) -> Iterator[None]:
    """Allow requests: only used with the fake server on 127.0.0.1 (the OpenAI model checks the flag)."""
    with override_allow_model_requests(True):
        yield


@pytest.fixture
async def fake(allow_requests: None) -> AsyncIterator[FakeOpenAI]:
    """A running fake OpenAI-compatible server; script it through ``fake.replies``."""
    async with serve(FakeOpenAI()) as server:
        yield server
