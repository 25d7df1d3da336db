"""Metric models load lazily, once per process, and only for values the cache does not hold."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from PIL import Image

from iwr_bench.metrics import models
from iwr_bench.metrics.cache import MetricCache
from iwr_bench.metrics.pair import CachedMetric
from iwr_bench.registry import create

pytestmark = pytest.mark.anyio


async def test_an_embedder_loads_only_on_a_cache_miss_and_once_per_process(
    images: dict[str, Image.Image], tmp_path: Path
) -> None:
    cache = MetricCache(tmp_path / "metrics.sqlite")
    models.forget()
    before = models.load_count()
    inner, _ = create("metric", "effnet-lite0", device="cpu")
    metric = CachedMetric(inner, cache)
    # pixel-identical pairs: 1.0 without the model
    assert await metric([(images["a"], images["a2"]), (images["blank"], images["blank"])]) == [1.0, 1.0]
    assert models.load_count() == before
    (computed,) = await metric([(images["a"], images["b"])])
    assert models.load_count() == before + 1
    # a second metric in the same process shares the loaded model
    other, _ = create("metric", "effnet-lite0", device="cpu")
    await other([(images["b"], images["blank"])])
    assert models.load_count() == before + 1
    # a later "process" (models dropped) whose values are all cached loads nothing
    models.forget()
    fresh, _ = create("metric", "effnet-lite0", device="cpu")
    again = CachedMetric(fresh, MetricCache(tmp_path / "metrics.sqlite"))
    assert await again([(images["a"], images["b"]), (images["b"], images["b"])]) == [computed, 1.0]
    assert models.load_count() == before + 1


async def test_building_the_dino_metric_loads_no_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Whether DINOv2 can load is decided without loading it (or its substitute)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    before = models.load_count()
    metric, _ = create("metric", "dino", device="cpu")
    assert metric.backend.substitute and "not in the local model cache" in metric.backend.note
    assert models.load_count() == before


def test_models_take_every_core_once_the_browsers_are_done(monkeypatch: pytest.MonkeyPatch) -> None:
    """Half the cores while replays are left, all of them after, applied at the next model use."""
    import torch

    monkeypatch.delenv("IWR_METRIC_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    try:
        models.browsers_done()
        models.sync_threads()
        assert models.metric_threads() == torch.get_num_threads() == cores
        models.browsers_done(False)
        models.sync_threads()
        assert models.metric_threads() == torch.get_num_threads() == max(1, cores // 2)
        monkeypatch.setenv("IWR_METRIC_THREADS", "3")
        models.browsers_done()
        models.sync_threads()
        assert torch.get_num_threads() == 3  # a fixed count stays fixed
    finally:
        monkeypatch.delenv("IWR_METRIC_THREADS", raising=False)
        models.browsers_done(False)
        models.sync_threads()


class _ThreadNoting(MetricCache):
    """The real store, noting the thread of every read and write."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.threads: set[int] = set()

    def get(self, ns: str, key: str) -> object | None:
        self.threads.add(threading.get_ident())
        return super().get(ns, key)

    def put(self, ns: str, key: str, value: object) -> None:
        self.threads.add(threading.get_ident())
        super().put(ns, key, value)


async def test_the_cache_is_read_and_written_off_the_event_loop(
    images: dict[str, Image.Image], tmp_path: Path
) -> None:
    """Hashing pixels and SQLite would hold the loop that drives the browsers and the TUI."""
    store = _ThreadNoting(tmp_path / "metrics.sqlite")
    inner, _ = create("metric", "phash")
    metric = CachedMetric(inner, store)
    pairs = [(images["a"], images["b"]), (images["a"], images["a2"]), (images["b"], images["blank"])]
    first = await metric(pairs)
    assert await CachedMetric(inner, store)(pairs) == first  # the second one reads them back
    assert store.threads and threading.get_ident() not in store.threads
