"""A run's metric is a stack (batching over the cache over the design); callers ask its top for what
they need of the design, with no walk over ``.inner``."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from PIL import Image

from iwr_bench.engine.batching import BatchingMetric
from iwr_bench.engine.limits import NamedLimit
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.cache import MetricCache
from iwr_bench.metrics.pair import CachedMetric, Pair, design_of, run_exclusive, text_reader
from iwr_bench.registry import create

pytestmark = pytest.mark.anyio


class _Reader:
    """A design that reads text: an image's width, as text."""

    backend = Backend(metric="reader", engine="test")

    async def __call__(self, pairs: list[Pair]) -> list[float]:
        return [1.0 for _ in pairs]

    def read_text(self, image: Image.Image) -> str:
        return str(image.width)


async def test_the_top_of_a_stack_answers_for_its_design(tmp_path: Path) -> None:
    design = _Reader()
    limit = NamedLimit("metric workers", 1)
    stack = BatchingMetric(CachedMetric(design, MetricCache(tmp_path / "m.sqlite")), limit)
    assert design_of(stack) is design and stack.design is design and design_of(design) is design
    assert stack.backend == design.backend
    reader = text_reader(stack)
    assert reader is not None and reader(Image.new("RGB", (7, 3))) == "7"
    phash, _ = create("metric", "phash")
    assert text_reader(CachedMetric(phash)) is None and text_reader(phash) is None  # reads no text

    seen: list[tuple[int, int]] = []

    def work() -> str:
        seen.append((threading.get_ident(), limit.in_use))
        return "read"

    assert await run_exclusive(stack, work) == "read"  # under the batching's limit, on a thread
    assert await run_exclusive(design, work) == "read"  # a bare design: on a thread
    assert all(thread != threading.get_ident() for thread, _ in seen)
    assert seen[0][1] == 1 and seen[1][1] == 0
