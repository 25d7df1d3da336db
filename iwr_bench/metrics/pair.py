"""Registered image-pair metrics: each maps (reference, candidate) pairs to similarities in [0, 1].

The heavy work runs on a worker thread (``anyio.to_thread``), never on the event loop; set
``metric.limiter`` to the engine's named "metric workers" limit to bound how many run at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import Protocol

import anyio
import anyio.to_thread
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
    pair_cosines,
)
from iwr_bench.metrics.hashing import phash_similarity, pixel_digest
from iwr_bench.metrics.ocr import EasyOcr
from iwr_bench.metrics.text import text_similarity
from iwr_bench.registry import register

Pair = tuple[Image.Image, Image.Image]


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

    @property
    def backend(self) -> Backend:
        """What computes it."""
        return self._backend

    async def __call__(self, pairs: Sequence[Pair]) -> list[float]:
        """Similarities of the pairs, computed off the event loop."""
        if not pairs:
            return []
        return await anyio.to_thread.run_sync(self._batch, list(pairs), limiter=self.limiter)


class CachedMetric:
    """Reuses values for pairs whose pixels were seen before (identical screenshots are common).

    A pair whose two images are pixel-identical scores 1.0 without running the inner metric:
    identical inputs give identical outputs (the same OCR text, a cosine of 1). Such values are
    counted in :attr:`identical` and stored like computed ones. With ``store`` the values also
    persist across runs (see :mod:`iwr_bench.metrics.cache`).
    """

    def __init__(self, inner: PairMetric, store: MetricCache | None = None) -> None:
        self.inner = inner
        self.store = store
        self._values: dict[tuple[str, str], float] = {}
        self.hits = 0
        self.identical = 0

    @property
    def backend(self) -> Backend:
        """What computes it."""
        return self.inner.backend

    async def __call__(self, pairs: Sequence[Pair]) -> list[float]:
        """Similarities, computing only pairs not already known and not pixel-identical."""
        keys = [(pixel_digest(a), pixel_digest(b)) for a, b in pairs]
        ns = namespace(self.inner.backend) + "|pair"
        for key in keys:
            if key in self._values:
                continue
            if key[0] == key[1]:
                self._values[key] = 1.0
                self.identical += 1
                if self.store is not None:
                    self.store.put(ns, f"{key[0]}:{key[1]}", 1.0)
            elif self.store is not None:
                known = self.store.get(ns, f"{key[0]}:{key[1]}")
                if isinstance(known, (int, float)):
                    self._values[key] = float(known)
        todo = {k: p for k, p in zip(keys, pairs, strict=True) if k not in self._values}
        self.hits += len(pairs) - len(todo)
        if todo:
            for key, value in zip(todo, await self.inner(list(todo.values())), strict=True):
                self._values[key] = value
                if self.store is not None:
                    self.store.put(ns, f"{key[0]}:{key[1]}", value)
        return [self._values[k] for k in keys]


def _embedding_metric(embedder: ImageEmbedder) -> ThreadedMetric:
    def batch(pairs: Sequence[Pair]) -> list[float]:
        return pair_cosines(embedder, [a for a, _ in pairs], [b for _, b in pairs])

    return ThreadedMetric(embedder.backend, batch)


@register("metric", "ocr")
def ocr_metric(device: str = "auto", cache_dir: str | None = None, runtime: str = "auto") -> ThreadedMetric:
    """EasyOCR text similarity (1 - normalised Levenshtein).

    ``runtime`` (see :data:`iwr_bench.metrics.ocr.RUNTIMES`): ``auto`` runs the detector under
    OpenVINO on the CPU (the same boxes as PyTorch, about twice as fast) and EasyOCR's PyTorch on
    a GPU. Each image is read once per run (by pixel digest), the images of a batch together;
    with ``cache_dir`` the text also persists across runs, so a checkpoint is read once for every
    model judged against it.
    """
    reader = EasyOcr(device=device, runtime=runtime)
    store = MetricCache.default(cache_dir) if cache_dir is not None else None
    texts: dict[str, str] = {}
    ns = namespace(reader.backend) + "|text"

    def read_all(images: Sequence[Image.Image]) -> list[str]:
        digests = [pixel_digest(img) for img in images]
        todo: dict[str, Image.Image] = {}
        for digest, img in zip(digests, images, strict=True):
            if digest in texts or digest in todo:
                continue
            known = store.get(ns, digest) if store is not None else None
            if isinstance(known, str):
                texts[digest] = known
            else:
                todo[digest] = img
        if todo:
            for digest, text in zip(todo, reader.read_many(list(todo.values())), strict=True):
                texts[digest] = text
                if store is not None:
                    store.put(ns, digest, text)
        return [texts[d] for d in digests]

    def read(img: Image.Image) -> str:
        return read_all([img])[0]

    def batch(pairs: Sequence[Pair]) -> list[float]:
        read_all([img for pair in pairs for img in pair])
        return [text_similarity(read(a), read(b)) for a, b in pairs]

    metric = ThreadedMetric(reader.backend, batch)
    metric.read_text = read  # eval.json's ``all_ocr_texts`` reads the same (cached) text
    return metric


@register("metric", "ocr-torch")
def ocr_torch_metric(device: str = "auto", cache_dir: str | None = None) -> ThreadedMetric:
    """EasyOCR as published, detector and recogniser in PyTorch: the reference ``ocr`` agrees with."""
    return ocr_metric(device=device, cache_dir=cache_dir, runtime="torch")


@register("metric", "ocr-bf16")
def ocr_bf16_metric(cache_dir: str | None = None) -> ThreadedMetric:
    """EasyOCR with its detector in bf16 under OpenVINO (CPU): several times faster, a labelled
    substitute (boxes, and so text, differ from the reference now and then)."""
    return ocr_metric(device="cpu", cache_dir=cache_dir, runtime="openvino-bf16")


@register("metric", "dino")
def dino_metric(
    model: str = DINO_DEFAULT,
    device: str = "auto",
    fallback: str | None = "effnet-lite0",
) -> ThreadedMetric:
    """DINOv2 CLS cosine; when its weights cannot load and ``fallback`` is set, a labelled substitute.

    Whether the weights can load is decided without loading them (the first pair that needs a
    value loads the model), so a run whose values are all cached loads none.

    Raises:
        EmbedderUnavailable: the weights are not available here and there is no fallback.
    """
    embedder = DinoEmbedder(model, device=device)
    reason = embedder.unavailable()
    if reason is None:
        return _embedding_metric(embedder)
    if fallback != "effnet-lite0":
        raise EmbedderUnavailable(reason)
    substitute = EffNetLite0Embedder(device=device)
    metric = _embedding_metric(substitute)
    metric.backend.note = f"{substitute.backend.note}: {reason[:200]}"
    return metric


@register("metric", "effnet-lite0")
def effnet_metric(device: str = "auto") -> ThreadedMetric:
    """ImageNet EfficientNet-Lite0 feature cosine (offline DINO substitute)."""
    return _embedding_metric(EffNetLite0Embedder(device=device))


@register("metric", "clip")
def clip_metric(
    model: str = "ViT-B-32",
    pretrained: str = "laion2b_s34b_b79k",
    device: str = "auto",
) -> ThreadedMetric:
    """open_clip image-image cosine from a pretrained tag or a local checkpoint."""
    return _embedding_metric(ClipEmbedder(model, pretrained, device=device))


@register("metric", "phash")
def phash_metric(hash_size: int = 16) -> ThreadedMetric:
    """Perceptual-hash similarity (1 - normalised Hamming distance)."""

    def batch(pairs: Sequence[Pair]) -> list[float]:
        return [phash_similarity(a, b, hash_size) for a, b in pairs]

    backend = Backend(metric="phash", engine=f"imagehash {version('imagehash')}", model=f"phash-{hash_size}")
    return ThreadedMetric(backend, batch)
