"""How far the metric stage is: images done and left, their rate and an ETA, published as events.

The metric stage is the slowest by design (EasyOCR reads a 1280x720 screenshot in 2-8 s on a
CPU), so a run can spend many minutes in it with no job event. :class:`MetricProgressReporter`
counts its work in *images*, per metric design (the OCR and the image-embedding one):

- A pair whose value is known (computed earlier in this run, or stored by an earlier one) or
  whose two images are pixel-identical costs nothing: its two images count as skipped.
- Otherwise a design that keeps a value per image (the text OCR reads, an embedding) has work
  for each image whose value is neither stored (by an earlier run, or seeded from the task's
  feature file) nor counted already in this run; a design without one computes both images of
  every pair, so both count.

Each :class:`~iwr_bench.engine.batching.BatchingMetric` tells its :class:`DesignTally` when a
request arrives, when its batch starts and how it ends. A
:class:`~iwr_bench.engine.rate.RateMeter` measures the rate on the batches that finished
recently, less the time they spent loading a metric model (the first batch of a design loads it:
tens of seconds that no later image pays); the ETA is the images left over that rate, unknown
(None) until a batch of the design has finished. Progress travels as
:class:`~iwr_bench.engine.events.MetricProgress` events, at most one a second, so ``iwr watch``
shows from the store what the running process shows.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import anyio.to_thread

from iwr_bench.engine.batching import BatchingMetric
from iwr_bench.engine.events import DesignProgress, Event, MetricProgress
from iwr_bench.engine.rate import RateMeter
from iwr_bench.metrics import models
from iwr_bench.metrics.backend import Backend
from iwr_bench.metrics.cache import MetricCache, namespace
from iwr_bench.metrics.hashing import pixel_digest
from iwr_bench.metrics.pair import CachedMetric, Pair, PairMetric
from iwr_bench.scoring.evaluation import VisualMetrics


def combined_eta(designs: Iterable[DesignProgress]) -> float | None:
    """Seconds until every design's images are done: the sum of the designs' ETAs (they share the
    metric workers, and each pair goes through one design after the other); None while a design
    with images left has no rate yet."""
    total = 0.0
    for d in designs:
        if d.left <= 0:
            continue
        if d.eta_s is None:
            return None
        total += d.eta_s
    return total


class LoadTimer:
    """Seconds during which some metric model was loading, told from the loading threads."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._lock = threading.Lock()
        self._loading = 0
        self._since = 0.0
        self._total = 0.0

    def loading(self, key: Hashable, started: bool) -> None:
        """A model load started (True) or ended (a :func:`iwr_bench.metrics.models.on_loading` listener)."""
        del key
        with self._lock:
            now = self.clock()
            if started:
                self._since = now if self._loading == 0 else self._since
                self._loading += 1
            elif self._loading > 0:
                self._loading -= 1
                if self._loading == 0:
                    self._total += now - self._since

    def seconds(self) -> float:
        """Loading time so far (a load under way included)."""
        with self._lock:
            return self._total + (self.clock() - self._since if self._loading else 0.0)


@dataclass(frozen=True)
class BatchStart:
    """When a batch started, on the meter's clock, and the loading time by then."""

    at: float
    loading: float


WorkState = Literal["waiting", "running", "done", "failed", "dropped"]


@dataclass(eq=False)
class Work:
    """The images one request brings to a design's metric stage, and where they are."""

    images: int = 0
    """Images it counted as work."""
    keys: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    """Pixel digests of the pairs it counted."""
    digests: list[str] = field(default_factory=list[str])
    """Pixel digests of the images it counted (a design with per-image values only)."""
    state: WorkState = "waiting"


@dataclass(frozen=True)
class _Facts:
    key: tuple[str, str]
    known: bool
    """The pair's value is stored, or its images are identical."""
    stored: tuple[bool, bool]
    """Each image's value is stored (a design with per-image values only)."""


ImageLookup = Callable[[str], bool]
"""Whether the value of the image with this pixel digest is stored (called on a worker thread)."""


def image_lookup(design: object, pair_store: MetricCache | None) -> ImageLookup | None:
    """How to tell that a design already has an image's value, or None for a design that keeps no
    value per image.

    A design with per-image values exposes them as ``features`` (a store and its namespace); an
    OCR design that only exposes ``read_text`` keeps its text under ``<namespace>|text`` in the
    run's metric cache.
    """
    features: object = getattr(design, "features", None)
    store, ns = getattr(features, "store", None), getattr(features, "namespace", None)
    if isinstance(store, MetricCache) and isinstance(ns, str):
        return _lookup(store, ns)
    if getattr(design, "read_text", None) is not None:
        backend = getattr(design, "backend", None)
        if pair_store is None or not isinstance(backend, Backend):
            return lambda digest: False
        return _lookup(pair_store, f"{namespace(backend)}|text")
    return None


def _lookup(store: MetricCache, ns: str) -> ImageLookup:
    return lambda digest: store.get(ns, digest) is not None


class DesignTally:
    """The images of one metric design: counted on arrival, moved along as their batches go."""

    def __init__(
        self,
        metric: str,
        *,
        on_change: Callable[[], None],
        meter: RateMeter,
        store: MetricCache | None = None,
        cache_namespace: str = "",
        per_image: ImageLookup | None = None,
        loads: LoadTimer | None = None,
    ) -> None:
        self.metric = metric
        self.on_change = on_change
        self.meter = meter
        self.loads = loads
        self.store = store
        self.per_image = per_image
        """Tells a stored image value (None: the design keeps no value per image)."""
        self._pair_ns = f"{cache_namespace}|pair"  # the key CachedMetric keeps pair values under
        self.done = 0
        self.skipped = 0
        self.waiting = 0
        self.running = 0
        self.failed = 0
        self._pairs: set[tuple[str, str]] = set()
        self._images: set[str] = set()

    async def submitted(self, pairs: Sequence[Pair]) -> Work:
        """Count a request's images (digests and cache look-ups on a worker thread)."""
        facts = await anyio.to_thread.run_sync(self._facts, list(pairs))
        work = self._count(facts)
        self.on_change()
        return work

    def started(self, works: Sequence[Work | None]) -> BatchStart:
        """Their batch started; returns when (to hand to :meth:`finished`)."""
        for w in works:
            if w is not None and w.state == "waiting":
                w.state = "running"
                self.waiting -= w.images
                self.running += w.images
        self.on_change()
        return BatchStart(self.meter.clock(), self.loads.seconds() if self.loads is not None else 0.0)

    def finished(self, works: Sequence[Work | None], *, ok: bool, started: BatchStart | None = None) -> None:
        """Their batch ended: measured (``ok``), or failed or timed out. Works already ended are left."""
        measured = 0
        for w in works:
            if w is None or not self._leave(w):
                continue
            if ok:
                w.state = "done"
                self.done += w.images
                measured += w.images
            else:
                w.state = "failed"
                self.failed += w.images
                self._forget(w)
        if ok and started is not None:
            loading = self.loads.seconds() - started.loading if self.loads is not None else 0.0
            self.meter.record(measured, started.at, excluded=loading)
        self.on_change()

    def requeued(self, works: Sequence[Work | None]) -> None:
        """Their batch was cancelled before it ended: they wait again."""
        for w in works:
            if w is not None and w.state == "running":
                w.state = "waiting"
                self.running -= w.images
                self.waiting += w.images
        self.on_change()

    def dropped(self, work: Work | None) -> None:
        """Its caller withdrew before its batch started: the images leave the count."""
        if work is not None and self._leave(work):
            work.state = "dropped"
            self._forget(work)
            self.on_change()

    def progress(self) -> DesignProgress:
        """The design's figures now."""
        left = self.waiting + self.running
        rate, eta = self.meter.rate(), self.meter.eta(left)
        return DesignProgress(
            metric=self.metric,
            done=self.done,
            skipped=self.skipped,
            left=left,
            running=self.running,
            failed=self.failed,
            rate=None if rate is None else round(rate, 4),
            eta_s=None if eta is None else round(eta, 3),
        )

    def _facts(self, pairs: list[Pair]) -> list[_Facts]:
        facts: list[_Facts] = []
        for a, b in pairs:
            key = (pixel_digest(a), pixel_digest(b))
            known = key[0] == key[1] or self._stored(self._pair_ns, f"{key[0]}:{key[1]}")
            stored = (False, False)
            if self.per_image is not None and not known:
                stored = (self.per_image(key[0]), self.per_image(key[1]))
            facts.append(_Facts(key, known, stored))
        return facts

    def _stored(self, ns: str, key: str) -> bool:
        return self.store is not None and self.store.get(ns, key) is not None

    def _count(self, facts: list[_Facts]) -> Work:
        work = Work()
        for f in facts:
            if f.known or f.key in self._pairs:
                self.skipped += 2
                continue
            self._pairs.add(f.key)
            work.keys.append(f.key)
            if self.per_image is None:
                work.images += 2
                continue
            for digest, stored in zip(f.key, f.stored, strict=True):
                if stored or digest in self._images:
                    self.skipped += 1
                else:
                    self._images.add(digest)
                    work.digests.append(digest)
                    work.images += 1
        self.waiting += work.images
        return work

    def _leave(self, w: Work) -> bool:
        if w.state == "waiting":
            self.waiting -= w.images
        elif w.state == "running":
            self.running -= w.images
        else:
            return False
        return True

    def _forget(self, w: Work) -> None:
        """Images that were not measured: a later request of the same pixels counts them again."""
        self._pairs.difference_update(w.keys)
        self._images.difference_update(w.digests)


class MetricProgressReporter:
    """Publishes the metric stage's progress: at most one event per ``every_s``, the latest state
    always published by :meth:`flush_due` (call it on a timer) or :meth:`flush` (at the end)."""

    def __init__(
        self,
        publish: Callable[[Event], object],
        *,
        every_s: float = 1.0,
        window_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.publish = publish
        self.every_s = every_s
        self.window_s = window_s
        self.clock = clock
        self.tallies: dict[str, DesignTally] = {}
        self.loads = LoadTimer(clock)
        """Time spent loading metric models (not held against the rate)."""
        self._dirty = False
        self._last = -math.inf
        self._remove: Callable[[], None] | None = None

    def start(self) -> None:
        """Listen for metric model loads."""
        if self._remove is None:
            self._remove = models.on_loading(self.loads.loading)

    def stop(self) -> None:
        """Stop listening."""
        if self._remove is not None:
            self._remove()
            self._remove = None

    def attach(self, metrics: VisualMetrics) -> None:
        """Count the work of the run's batched metrics (any other metric is not counted)."""
        for role in ("ocr", "dino"):
            metric = getattr(metrics, role)
            if isinstance(metric, BatchingMetric):
                metric.progress = self.tally(role, metric.inner)

    def tally(self, metric: str, inner: PairMetric) -> DesignTally:
        """A new tally for the design behind ``inner`` (a :class:`CachedMetric`, usually)."""
        cached = inner if isinstance(inner, CachedMetric) else None
        design = cached.inner if cached is not None else inner
        store = cached.store if cached is not None else None
        tally = DesignTally(
            metric,
            on_change=self.changed,
            meter=RateMeter(window_s=self.window_s, clock=self.clock),
            store=store,
            cache_namespace=namespace(inner.backend),
            per_image=image_lookup(design, store),
            loads=self.loads,
        )
        self.tallies[metric] = tally
        return tally

    def changed(self) -> None:
        """Something moved: publish now, unless an event went out less than ``every_s`` ago."""
        self._dirty = True
        self.flush_due()

    def flush_due(self) -> None:
        """Publish what changed, if ``every_s`` passed since the last event."""
        if self._dirty and self.clock() - self._last >= self.every_s:
            self.flush()

    def flush(self) -> None:
        """Publish what changed since the last event."""
        if not self._dirty:
            return
        self._dirty = False
        self._last = self.clock()
        self.publish(self.event())

    def event(self) -> MetricProgress:
        """The progress now."""
        designs = [t.progress() for t in self.tallies.values()]
        eta = combined_eta(designs)
        return MetricProgress(designs=designs, eta_s=None if eta is None else round(eta, 3))
