"""A cheap text design that counts what it reads: the OCR machinery of ``text_metric`` with a fake
reader (the grey level of each image), registered as ``counting-text``.

Tests import it (or name it with ``--plugin counting_designs``) and look at :data:`READ`: the
pixel digests of every image the design had to read, in order.
"""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image, ImageStat

from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.cache import MetricCache
from iwr_bench.metrics.hashing import pixel_digest
from iwr_bench.metrics.pair import ThreadedMetric, text_metric
from iwr_bench.registry import register

READ: list[str] = []
"""Pixel digest of each image a ``counting-text`` design read, in order."""


def grey_text(images: Sequence[Image.Image]) -> list[str]:
    """A 'text' for each image: its mean grey level in words (counted in :data:`READ`)."""
    READ.extend(pixel_digest(img) for img in images)
    return [f"grey {round(ImageStat.Stat(img.convert('L')).mean[0])}" for img in images]


def backend(engine: str = "counting-reader 1") -> Backend:
    """The backend of the design (another ``engine`` is another namespace)."""
    return Backend(metric="ocr", engine=engine, model="mean-grey", weights="none")


@register("metric", "counting-text")
def counting_text(store: MetricCache | None = None) -> ThreadedMetric:
    """Text similarity of the grey levels, each image read once, kept in ``store`` as OCR text is."""
    return text_metric(backend(), grey_text, store)
