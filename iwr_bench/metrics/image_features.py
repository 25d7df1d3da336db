"""Per-image values a metric design computes once: the text OCR reads, an image's embedding.

A pair metric compares a reference with a candidate, but its costly part depends on one image at a
time. :class:`ImageFeatureCache` keeps that part by pixel digest, so a checkpoint is read or
embedded once for every model judged against it. A value is looked up in this order: this
process's recent values, the :class:`~iwr_bench.metrics.cache.MetricCache` (values seeded from a
task's feature file, then the persistent cache), and only then computed, the missing images of
one call together. Values are stored as JSON under ``namespace(backend) + "|" + kind``: text as
is, an embedding as :func:`encode_vector` writes it.
"""

from __future__ import annotations

import base64
import binascii
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from PIL import Image

from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.cache import MetricCache, namespace
from iwr_bench.metrics.hashing import pixel_digest

V = TypeVar("V")

TEXT = "text"
"""Kind of the text an OCR design reads."""
EMBEDDING = "embedding"
"""Kind of an image embedding (a unit float32 vector)."""


def encode_vector(vector: np.ndarray) -> dict[str, Any]:
    """A float32 vector as JSON: ``{"dim": n, "b64": base64 of its little-endian bytes}`` (exact)."""
    row = np.ascontiguousarray(vector, dtype="<f4").reshape(-1)
    return {"dim": int(row.shape[0]), "b64": base64.b64encode(row.tobytes()).decode("ascii")}


def decode_vector(value: Any) -> np.ndarray | None:
    """The vector :func:`encode_vector` wrote, or None for anything else (a length that disagrees)."""
    if not isinstance(value, dict):
        return None
    dim, data = value.get("dim"), value.get("b64")  # pyright: ignore[reportUnknownMemberType,reportUnknownVariableType]
    if not isinstance(dim, int) or dim <= 0 or not isinstance(data, str):
        return None
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) != 4 * dim:
        return None
    return np.frombuffer(raw, dtype="<f4").astype(np.float32)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Codec(Generic[V]):
    """How one kind of value is written as JSON and read back (None: not a value of this kind)."""

    encode: Callable[[V], Any]
    decode: Callable[[Any], V | None]


TEXT_CODEC: Codec[str] = Codec(encode=lambda text: text, decode=_text)
VECTOR_CODEC: Codec[np.ndarray] = Codec(encode=encode_vector, decode=decode_vector)


class ImageFeatureCache(Generic[V]):
    """One value per image, computed once per pixel digest (thread-safe).

    Args:
        kind: what the value is (:data:`TEXT`, :data:`EMBEDDING`); part of the store namespace.
        backend: what computes it; its :func:`~iwr_bench.metrics.cache.namespace` keys the store.
        compute: values of several images, in order (runs on the calling thread).
        codec: the value as JSON and back.
        store: where values are looked up and kept (default: one that keeps nothing).
        keep: most values held in memory (least recently used go first; None: all).
    """

    def __init__(
        self,
        kind: str,
        backend: Backend,
        compute: Callable[[list[Image.Image]], Sequence[V]],
        codec: Codec[V],
        store: MetricCache | None = None,
        keep: int | None = None,
    ) -> None:
        self.kind = kind
        self.backend_namespace = namespace(backend)
        """The namespace of the backend alone (a task feature file groups values by it)."""
        self.namespace = f"{self.backend_namespace}|{kind}"
        """Where the values are kept in the store."""
        self.codec = codec
        self.store = store if store is not None else MetricCache.memory()
        self._compute = compute
        self._keep = keep
        self._lock = threading.Lock()
        self._values: OrderedDict[str, V] = OrderedDict()
        self.computed = 0
        """Images whose value was computed here (not found in memory or the store)."""

    def __call__(self, images: Sequence[Image.Image]) -> list[V]:
        """The value of each image, computing those not known (together, once per digest)."""
        return self.by_digest(images, [pixel_digest(img) for img in images])

    def by_digest(self, images: Sequence[Image.Image], digests: Sequence[str]) -> list[V]:
        """As calling it, with the images' pixel digests already known."""
        found: dict[str, V] = {}
        todo: dict[str, Image.Image] = {}
        for digest, img in zip(digests, images, strict=True):
            if digest in found or digest in todo:
                continue
            value = self._known(digest)
            if value is None:
                todo[digest] = img
            else:
                found[digest] = value
        if todo:
            values = list(self._compute(list(todo.values())))
            if len(values) != len(todo):
                raise ValueError(f"{self.kind}: {len(values)} values for {len(todo)} images")
            for digest, value in zip(todo, values, strict=True):
                found[digest] = value
                self._remember(digest, value)
                self.store.put(self.namespace, digest, self.codec.encode(value))
            with self._lock:
                self.computed += len(todo)
        return [found[d] for d in digests]

    def _known(self, digest: str) -> V | None:
        with self._lock:
            if digest in self._values:
                self._values.move_to_end(digest)
                return self._values[digest]
        value = self.codec.decode(self.store.get(self.namespace, digest))
        if value is not None:
            self._remember(digest, value)
        return value

    def _remember(self, digest: str, value: V) -> None:
        with self._lock:
            self._values[digest] = value
            self._values.move_to_end(digest)
            while self._keep is not None and len(self._values) > self._keep:
                self._values.popitem(last=False)
