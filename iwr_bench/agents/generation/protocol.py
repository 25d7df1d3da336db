"""The generator role: a task in, a generated page (as a result record) out."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Protocol, runtime_checkable

from iwr_bench.agents.generation.records import GenerationResult
from iwr_bench.dataset.layout import Task


@runtime_checkable
class Generator(Protocol):
    """Writes one page for one task.

    Implementations never raise for a failed generation: they return a result with
    ``status="failed"`` and the error class, so the task is scored 0 and counted.
    """

    name: str
    """Model (or baseline) name; the results folder is its slug."""

    async def __call__(self, task: Task) -> GenerationResult:
        """Generate the page for ``task``."""
        ...


@asynccontextmanager
async def opened(generators: Sequence[Generator]) -> AsyncGenerator[Sequence[Generator]]:
    """Enter every generator that is an async context manager (model clients), exit them all after."""
    async with AsyncExitStack() as stack:
        for generator in generators:
            if isinstance(generator, AbstractAsyncContextManager):
                scope: AbstractAsyncContextManager[Any] = generator
                await stack.enter_async_context(scope)
        yield generators
