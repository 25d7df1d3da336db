"""Screenshots that differ only by raster noise count as identical; changes a person sees do not."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from raster_noise import NoiseCase, checkpoint, noise_cases, noisy_replay, visible_changes

from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.cache import MetricCache, namespace
from iwr_bench.metrics.hashing import RASTER_NOISE, RasterBound, pixel_digest, raster_identical
from iwr_bench.metrics.pair import CachedMetric, Pair, ThreadedMetric

CASES = noise_cases()


@pytest.fixture(scope="module")
def page() -> Image.Image:
    """A real 1280x720 checkpoint (task 103's step_2) to draw changes on."""
    return checkpoint(CASES[0])


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"task{c.task}")
def test_noise_seen_on_the_suite_is_within_the_bound(case: NoiseCase) -> None:
    recorded, replayed = checkpoint(case), noisy_replay(case)
    assert pixel_digest(recorded) != pixel_digest(replayed)  # not the same bytes
    diff = RASTER_NOISE.difference(recorded, replayed)
    assert diff is not None and raster_identical(recorded, replayed)
    assert (diff.max_level, diff.pixels) == (case.max_level, len(case.replay_pixels))


def test_the_noise_measured_sets_the_bound() -> None:
    """The cases are the noisiest pairs measured on 103, 107, 115 (and 109, a 390x844 page)."""
    assert [c.task for c in CASES] == [103, 107, 115, 109]
    assert max(c.max_level for c in CASES) == 7 < RASTER_NOISE.levels
    sizes = [checkpoint(c).size for c in CASES]
    worst_share = max(len(c.replay_pixels) / (w * h) for c, (w, h) in zip(CASES, sizes, strict=True))
    assert worst_share < RASTER_NOISE.share


@pytest.mark.parametrize("change", list(visible_changes(Image.new("RGB", (1, 1)))))
def test_changes_a_person_sees_are_outside_the_bound(page: Image.Image, change: str) -> None:
    before, after = visible_changes(page)[change]
    assert pixel_digest(before) != pixel_digest(after)
    assert not raster_identical(before, after)


def test_noise_does_not_hide_a_real_change(page: Image.Image) -> None:
    before, after = visible_changes(page)["one character of dark text"]
    assert not raster_identical(before, noisy_replay(CASES[0], after))
    assert raster_identical(before, noisy_replay(CASES[0], before))


def _shifted(img: Image.Image, count: int, by: int) -> Image.Image:
    """``img`` with the red channel of its first ``count`` pixels (row by row) moved by ``by`` levels."""
    pixels = np.array(img)
    red = pixels.reshape(-1, 3)[:count, 0].astype(np.int16)
    pixels.reshape(-1, 3)[:count, 0] = np.where(red >= by, red - by, red + by)
    return Image.fromarray(pixels)


def test_the_bound_is_exact_at_its_edges(page: Image.Image) -> None:
    bound = RasterBound(levels=10, share=0.001)
    most = bound.max_pixels(*page.size)
    assert most == 921  # 0.1% of 1280x720
    assert bound.holds(page, _shifted(page, 3, 10))
    assert not bound.holds(page, _shifted(page, 3, 11))
    assert bound.holds(page, _shifted(page, most, 1))
    assert not bound.holds(page, _shifted(page, most + 1, 1))
    assert not bound.holds(page, page.resize((1280, 719)))


def _counting_metric(calls: list[int]) -> ThreadedMetric:
    def batch(pairs: Sequence[Pair]) -> list[float]:
        calls.append(len(pairs))
        return [0.5 for _ in pairs]

    return ThreadedMetric(Backend(metric="ocr", engine="counting", model="fake"), batch)


@pytest.mark.anyio
async def test_cached_metric_scores_a_noisy_pair_one_without_the_model(
    page: Image.Image, tmp_path: Path
) -> None:
    recorded, replayed = checkpoint(CASES[0]), noisy_replay(CASES[0])
    before, after = visible_changes(page)["one character of dark text"]
    store = MetricCache(tmp_path / "metrics.sqlite")
    calls: list[int] = []
    metric = CachedMetric(_counting_metric(calls), store)
    assert await metric([(recorded, replayed), (before, after)]) == [1.0, 0.5]
    assert calls == [1]  # only the real change reached the model
    assert (metric.identical, metric.raster_identical) == (1, 1)

    # Keys stay exact digests; the bound's decision is stored apart from computed values.
    pair_ns = namespace(metric.backend) + "|pair"
    noisy_key = f"{pixel_digest(recorded)}:{pixel_digest(replayed)}"
    assert store.get(pair_ns, noisy_key) is None
    assert store.get(f"{pair_ns}|{RASTER_NOISE.label}", noisy_key) == 1.0
    assert store.get(pair_ns, f"{pixel_digest(before)}:{pixel_digest(after)}") == 0.5

    again = CachedMetric(_counting_metric(calls), store)  # a later run: decided by the store
    assert await again([(recorded, replayed)]) == [1.0] and again.raster_identical == 1 and calls == [1]
    exact = CachedMetric(_counting_metric(calls), store, bound=None)  # no bound: the model decides
    assert await exact([(recorded, replayed)]) == [0.5] and calls == [1, 1]
