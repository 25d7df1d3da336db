"""Per-image values (embeddings, OCR text) are computed once per pixel digest and kept in the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from iwr_bench.metrics.cache import MetricCache
from iwr_bench.metrics.embed import EffNetLite0Embedder, pair_cosines
from iwr_bench.metrics.image_features import ImageFeatureCache, decode_vector, encode_vector
from iwr_bench.metrics.pair import ThreadedMetric, embedding_metric, text_metric

pytestmark = pytest.mark.anyio


def _features(metric: ThreadedMetric) -> ImageFeatureCache[Any]:
    assert metric.features is not None
    return metric.features


async def test_a_checkpoint_is_embedded_once_for_every_candidate_and_run(
    images: dict[str, Image.Image], tmp_path: Path
) -> None:
    store = MetricCache(tmp_path / "metrics.sqlite")
    embedder = EffNetLite0Embedder(device="cpu")
    metric = embedding_metric(embedder, store)
    ref = images["a"]
    candidates = [images["b"], images["blank"], images["a2"]]
    values = await metric([(ref, c) for c in candidates])
    # the same cosines as embedding every pair's two images afresh
    expected = pair_cosines(embedder, [ref] * len(candidates), candidates)
    assert values == pytest.approx(expected, abs=1e-6)
    features = _features(metric)
    assert features.computed == 3  # the reference once; a2 has a's pixels
    # another model judged against the same checkpoint embeds only its own screenshot
    other = Image.new("RGB", ref.size, "black")
    await metric([(ref, other)])
    assert features.computed == 4
    # a later run (another design instance on the same store) embeds nothing it has seen
    again = embedding_metric(EffNetLite0Embedder(device="cpu"), MetricCache(tmp_path / "metrics.sqlite"))
    assert await again([(ref, c) for c in candidates]) == values
    assert _features(again).computed == 0


async def test_text_is_read_once_per_image_and_another_backend_reads_again(
    images: dict[str, Image.Image], tmp_path: Path
) -> None:
    from counting_designs import READ, backend, grey_text

    store = MetricCache(tmp_path / "metrics.sqlite")
    READ.clear()
    metric = text_metric(backend(), grey_text, store)
    await metric([(images["a"], images["b"]), (images["a"], images["blank"])])
    assert len(READ) == 3
    await text_metric(backend(), grey_text, store)([(images["a"], images["b"])])
    assert len(READ) == 3  # from the store
    await text_metric(backend("counting-reader 2"), grey_text, store)([(images["a"], images["b"])])
    assert len(READ) == 5  # another namespace: read again


def test_vectors_round_trip_exactly_and_bad_ones_are_refused() -> None:
    vector = np.random.default_rng(3).standard_normal(768).astype(np.float32)
    encoded = encode_vector(vector)
    assert encoded["dim"] == 768
    decoded = decode_vector(encoded)
    assert decoded is not None and decoded.dtype == np.float32 and np.array_equal(decoded, vector)
    assert decode_vector({"dim": 769, "b64": encoded["b64"]}) is None  # length disagrees
    assert decode_vector({"dim": 768, "b64": "not base64!"}) is None
    assert decode_vector("text") is None and decode_vector(None) is None


def test_seeded_values_answer_first_are_counted_and_never_stored(tmp_path: Path) -> None:
    store = MetricCache(tmp_path / "metrics.sqlite")
    store.put("ns|text", "d1", "stored")
    store.seed("ns|text", {"d1": "seeded", "d2": "two"})
    assert store.get("ns|text", "d1") == "seeded" and store.get("ns|text", "d1") == "seeded"
    assert store.served("ns|text") == 1  # distinct keys
    assert MetricCache(tmp_path / "metrics.sqlite").get("ns|text", "d2") is None
    memory = MetricCache.memory()
    memory.put("ns|text", "d3", "kept nowhere")
    memory.seed("ns|text", {"d2": "two"})
    assert memory.get("ns|text", "d3") is None and memory.get("ns|text", "d2") == "two"
