"""Registered image-pair metrics: each maps (reference, candidate) pairs to similarities in [0, 1].

The heavy work runs on a worker thread (``anyio.to_thread``), never on the event loop; set
``metric.limiter`` to the engine's named "metric workers" limit to bound how many run at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.to_thread
import numpy as np
from PIL import Image

from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.cache import MetricCache, namespace
from iwr_bench.metrics.embed import (
    DINO_DEFAULT,
    ClipEmbedder,
    DinoEmbedder,
    EffNetLite0Embedder,
    EmbedderUnavailable,
    ImageEmbedder,
    row_cosines,
)
from iwr_bench.metrics.hashing import RASTER_NOISE, RasterBound, phash_similarity, pixel_digest
from iwr_bench.metrics.image_features import EMBEDDING, TEXT, TEXT_CODEC, VECTOR_CODEC, ImageFeatureCache
from iwr_bench.metrics.ocr import EasyOcr
from iwr_bench.metrics.text import text_similarity
from iwr_bench.registry import register

Pair = tuple[Image.Image, Image.Image]
PairKey = tuple[str, str]
"""The exact pixel digests of a pair's two images (:func:`~iwr_bench.metrics.hashing.pixel_digest`)."""
Found = Literal["exact", "stored", "raster"]
"""How a pair's value was found without the model: same pixels, the store, or within the raster bound."""


class PairMetric(Protocol):
    """A similarity between a reference image and a candidate image."""

    @property
    def backend(self) -> Backend:
        """What computes it."""
        ...

    async def __call__(self, pairs: Sequence[Pair]) -> list[float]:
        """One similarity in [0, 1] per pair, in order."""
        ...


class ThreadedMetric:
    """Runs a synchronous batch function on a worker thread."""

    def __init__(
        self,
        backend: Backend,
        batch: Callable[[Sequence[Pair]], list[float]],
        limiter: anyio.CapacityLimiter | None = None,
    ) -> None:
        self._backend = backend
        self._batch = batch
        self.limiter = limiter
        self.read_text: Callable[[Image.Image], str] | None = None
        """For an OCR metric: the text it reads from one image (cached), else None."""
        self.features: ImageFeatureCache[Any] | None = None
        """For a design with a per-image value (OCR text, an embedding): where it keeps them, else None
        (task feature files store these values, see :mod:`iwr_bench.dataset.features`)."""

    @property
    def backend(self) -> Backend:
        """What computes it."""
        return self._backend

    async def __call__(self, pairs: Sequence[Pair]) -> list[float]:
        """Similarities of the pairs, computed off the event loop."""
        if not pairs:
            return []
        return await anyio.to_thread.run_sync(self._batch, list(pairs), limiter=self.limiter)


_R = TypeVar("_R")

TextReader = Callable[[Image.Image], str]
"""An OCR design's reader: the text it sees in one image (``read_text``)."""


class MetricWrapper:
    """Base of the metrics that wrap another (the cache, the engine's batching): a run's metric is a
    stack of them over the registered design, and what callers need of the design is asked of the
    top of the stack, which answers for the design at its bottom."""

    inner: PairMetric
    """What this one wraps (a wrapper or the design)."""

    @property
    def backend(self) -> Backend:
        """What computes it (the design's record)."""
        return self.inner.backend

    @property
    def design(self) -> PairMetric:
        """The design at the bottom of the stack."""
        return design_of(self.inner)

    def text_reader(self) -> TextReader | None:
        """The design's OCR text reader, if it reads text (``read_text``)."""
        return text_reader(self.design)

    async def exclusive(self, work: Callable[[], _R]) -> _R:
        """Run other work of the design's backend (reading OCR text for eval.json) on a worker
        thread; a wrapper that owns a limit and a clock (the engine's batching) runs it under them."""
        if isinstance(self.inner, MetricWrapper):
            return await self.inner.exclusive(work)
        return await anyio.to_thread.run_sync(work)


def design_of(metric: PairMetric) -> PairMetric:
    """The design at the bottom of a metric stack (a bare design is its own)."""
    return metric.design if isinstance(metric, MetricWrapper) else metric


def text_reader(metric: PairMetric) -> TextReader | None:
    """The OCR text reader of a metric stack's design, or None for a design that reads no text."""
    if isinstance(metric, MetricWrapper):
        return metric.text_reader()
    reader: TextReader | None = getattr(metric, "read_text", None)  # a design's optional capability
    return reader if callable(reader) else None


async def run_exclusive(metric: PairMetric, work: Callable[[], _R]) -> _R:
    """``work`` as the metric's stack runs other work of its backend (see :meth:`MetricWrapper.exclusive`)."""
    if isinstance(metric, MetricWrapper):
        return await metric.exclusive(work)
    return await anyio.to_thread.run_sync(work)


class CachedMetric(MetricWrapper):
    """Reuses values for pairs whose pixels were seen before (identical screenshots are common).

    Digests, look-ups and the store's writes run on worker threads (hashing full-resolution pixels
    and SQLite would otherwise hold the event loop that drives the browsers and the terminal UI).
    A pair whose two images are pixel-identical scores 1.0 without running the inner metric:
    identical inputs give identical outputs (the same OCR text, a cosine of 1). So does a pair that
    differs only by raster noise, within ``bound`` (default
    :data:`~iwr_bench.metrics.hashing.RASTER_NOISE`; None: exact pixels only): the bound is checked
    on the pair before the model, and the cache stays keyed by the exact pixel digests of the two
    images. Both kinds are counted in :attr:`identical`, the second also in
    :attr:`raster_identical`. With ``store`` values persist across runs (see
    :mod:`iwr_bench.metrics.cache`): computed and pixel-identical ones in the pair namespace, the
    ones the bound decided in a namespace that names the bound, so they are served only under the
    same bound.
    """

    def __init__(
        self, inner: PairMetric, store: MetricCache | None = None, bound: RasterBound | None = RASTER_NOISE
    ) -> None:
        self.inner = inner
        self.store = store
        self.bound = bound
        self._values: dict[PairKey, float] = {}
        self.hits = 0
        self.identical = 0
        self.raster_identical = 0

    async def __call__(self, pairs: Sequence[Pair]) -> list[float]:
        """Similarities, computing only pairs not already known and not identical (within the bound)."""
        if not pairs:
            return []
        keys, found = await anyio.to_thread.run_sync(self._look_up, list(pairs))
        for key, (value, how) in found.items():
            if key in self._values:  # another call settled it meanwhile
                continue
            self._values[key] = value
            if how != "stored":
                self.identical += 1
            if how == "raster":
                self.raster_identical += 1
        todo = {k: p for k, p in zip(keys, pairs, strict=True) if k not in self._values}
        self.hits += len(pairs) - len(todo)
        if todo:
            computed = dict(zip(todo, await self.inner(list(todo.values())), strict=True))
            self._values.update(computed)
            await anyio.to_thread.run_sync(self._put_all, computed)  # SQLite, off the event loop
        return [self._values[k] for k in keys]

    def _pair_ns(self) -> str:
        return namespace(self.inner.backend) + "|pair"

    def _bound_ns(self, bound: RasterBound) -> str:
        return f"{self._pair_ns()}|{bound.label}"

    def _put(self, ns: str, key: PairKey, value: float) -> None:
        if self.store is not None:
            self.store.put(ns, f"{key[0]}:{key[1]}", value)

    def _put_all(self, values: dict[PairKey, float]) -> None:
        for key, value in values.items():
            self._put(self._pair_ns(), key, value)

    def _stored(self, ns: str, key: PairKey) -> float | None:
        known = self.store.get(ns, f"{key[0]}:{key[1]}") if self.store is not None else None
        return float(known) if isinstance(known, (int, float)) else None

    def _look_up(self, pairs: list[Pair]) -> tuple[list[PairKey], dict[PairKey, tuple[float, Found]]]:
        """Digests of the pairs, and the values of those not yet known that need no model, with how
        each was found: ``exact`` (same pixels), ``stored`` (computed before) or ``raster`` (within
        the bound, now or before). Runs on a worker thread (hashing and comparing pixels is CPU work)."""
        keys = [(pixel_digest(a), pixel_digest(b)) for a, b in pairs]
        found: dict[PairKey, tuple[float, Found]] = {}
        for key, (a, b) in zip(keys, pairs, strict=True):
            if key in self._values or key in found:
                continue
            if key[0] == key[1]:
                found[key] = (1.0, "exact")
                self._put(self._pair_ns(), key, 1.0)
            elif (known := self._stored(self._pair_ns(), key)) is not None:
                found[key] = (known, "stored")
            elif self._within_bound(key, a, b):
                found[key] = (1.0, "raster")
        return keys, found

    def _within_bound(self, key: PairKey, a: Image.Image, b: Image.Image) -> bool:
        """Whether the pair is raster-identical: as decided under this bound before, else checked
        now (and the decision stored when it holds)."""
        if self.bound is None:
            return False
        ns = self._bound_ns(self.bound)
        if self._stored(ns, key) is not None:
            return True
        if not self.bound.holds(a, b):
            return False
        self._put(ns, key, 1.0)
        return True


EMBEDDINGS_KEPT = 4096
"""Embeddings an embedding design holds in memory (about 5 KB each); older ones come from the store."""


def _store(store: MetricCache | None, cache_dir: str | None) -> MetricCache | None:
    """The store a design was given, else the persistent cache in ``cache_dir`` (None: none)."""
    if store is not None:
        return store
    return MetricCache.default(cache_dir) if cache_dir is not None else None


def embedding_metric(embedder: ImageEmbedder, store: MetricCache | None = None) -> ThreadedMetric:
    """Cosine of image embeddings, each image embedded once (by pixel digest, kept in ``store``)."""
    backend = embedder.backend
    vectors = ImageFeatureCache(
        EMBEDDING,
        backend,
        lambda images: list(embedder.embed(images)),
        VECTOR_CODEC,
        store,
        keep=EMBEDDINGS_KEPT,
    )

    def batch(pairs: Sequence[Pair]) -> list[float]:
        rows = vectors([*(a for a, _ in pairs), *(b for _, b in pairs)])
        return row_cosines(np.stack(rows[: len(pairs)]), np.stack(rows[len(pairs) :]))

    metric = ThreadedMetric(backend, batch)
    metric.features = vectors
    return metric


def text_metric(
    backend: Backend,
    read_many: Callable[[list[Image.Image]], Sequence[str]],
    store: MetricCache | None = None,
) -> ThreadedMetric:
    """Text similarity (1 - normalised Levenshtein) of what ``read_many`` reads, each image read once
    (by pixel digest, kept in ``store``)."""
    texts = ImageFeatureCache(TEXT, backend, read_many, TEXT_CODEC, store)

    def read(img: Image.Image) -> str:
        return texts([img])[0]

    def batch(pairs: Sequence[Pair]) -> list[float]:
        found = texts([img for pair in pairs for img in pair])
        return [text_similarity(found[2 * i], found[2 * i + 1]) for i in range(len(pairs))]

    metric = ThreadedMetric(backend, batch)
    metric.read_text = read  # eval.json's ``all_ocr_texts`` reads the same (cached) text
    metric.features = texts
    return metric


@register("metric", "ocr")
def ocr_metric(
    device: str = "auto",
    cache_dir: str | None = None,
    runtime: str = "auto",
    store: MetricCache | None = None,
) -> ThreadedMetric:
    """EasyOCR text similarity (1 - normalised Levenshtein).

    ``runtime`` (see :data:`iwr_bench.metrics.ocr.RUNTIMES`): ``auto`` runs the detector under
    OpenVINO on the CPU (the same boxes as PyTorch, about twice as fast) and EasyOCR's PyTorch on
    a GPU. Each image is read once per run (by pixel digest), the images of a batch together;
    with ``store`` (a run's) or ``cache_dir`` the text also persists across runs, so a checkpoint
    is read once for every model judged against it.
    """
    reader = EasyOcr(device=device, runtime=runtime)
    return text_metric(reader.backend, reader.read_many, _store(store, cache_dir))


@register("metric", "ocr-torch")
def ocr_torch_metric(
    device: str = "auto", cache_dir: str | None = None, store: MetricCache | None = None
) -> ThreadedMetric:
    """EasyOCR as published, detector and recogniser in PyTorch: the reference ``ocr`` agrees with."""
    return ocr_metric(device=device, cache_dir=cache_dir, runtime="torch", store=store)


@register("metric", "ocr-bf16")
def ocr_bf16_metric(cache_dir: str | None = None, store: MetricCache | None = None) -> ThreadedMetric:
    """EasyOCR with its detector in bf16 under OpenVINO (CPU): several times faster, a labelled
    substitute (boxes, and so text, differ from the reference now and then)."""
    return ocr_metric(device="cpu", cache_dir=cache_dir, runtime="openvino-bf16", store=store)


@register("metric", "dino")
def dino_metric(
    model: str = DINO_DEFAULT,
    device: str = "auto",
    fallback: str | None = "effnet-lite0",
    cache_dir: str | None = None,
    store: MetricCache | None = None,
) -> ThreadedMetric:
    """DINOv2 CLS cosine; when its weights cannot load and ``fallback`` is set, a labelled substitute.

    Whether the weights can load is decided without loading them (the first pair that needs a
    value loads the model), so a run whose values are all cached loads none.

    Raises:
        EmbedderUnavailable: the weights are not available here and there is no fallback.
    """
    embedder = DinoEmbedder(model, device=device)
    reason = embedder.unavailable()
    store = _store(store, cache_dir)
    if reason is None:
        return embedding_metric(embedder, store)
    if fallback != "effnet-lite0":
        raise EmbedderUnavailable(reason)
    substitute = EffNetLite0Embedder(device=device)
    metric = embedding_metric(substitute, store)
    metric.backend.note = f"{substitute.backend.note}: {reason[:200]}"
    return metric


@register("metric", "effnet-lite0")
def effnet_metric(
    device: str = "auto", cache_dir: str | None = None, store: MetricCache | None = None
) -> ThreadedMetric:
    """ImageNet EfficientNet-Lite0 feature cosine (offline DINO substitute)."""
    return embedding_metric(EffNetLite0Embedder(device=device), _store(store, cache_dir))


@register("metric", "clip")
def clip_metric(
    model: str = "ViT-B-32",
    pretrained: str = "laion2b_s34b_b79k",
    device: str = "auto",
    cache_dir: str | None = None,
    store: MetricCache | None = None,
) -> ThreadedMetric:
    """open_clip image-image cosine from a pretrained tag or a local checkpoint."""
    return embedding_metric(ClipEmbedder(model, pretrained, device=device), _store(store, cache_dir))


@register("metric", "phash")
def phash_metric(hash_size: int = 16) -> ThreadedMetric:
    """Perceptual-hash similarity (1 - normalised Hamming distance)."""

    def batch(pairs: Sequence[Pair]) -> list[float]:
        return [phash_similarity(a, b, hash_size) for a, b in pairs]

    backend = Backend(metric="phash", engine=f"imagehash {version('imagehash')}", model=f"phash-{hash_size}")
    return ThreadedMetric(backend, batch)
