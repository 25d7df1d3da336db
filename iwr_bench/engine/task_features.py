"""A run starts from its tasks' stored features: prepared checkpoints are never read or embedded again.

Before any pair is measured, :func:`seed_task_features` reads each task's feature file
(:mod:`iwr_bench.dataset.features`) and seeds the values whose backend namespace is the run's into
the store its metric designs look values up in (the same keys, so nothing else changes), also
with ``cache = false``. :class:`TaskFeatureUse` says, per metric role, how many reference images
the files offered and how many of them a design then took from them; the run manifest records it
under ``task_features`` (``iwr runs show`` prints it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from iwr_bench.dataset.features import feature_cache, feature_root, load_features
from iwr_bench.dataset.layout import Task
from iwr_bench.engine.settings import MetricSettings
from iwr_bench.metrics.cache import MetricCache
from iwr_bench.metrics.pair import design_of
from iwr_bench.scoring.evaluation import VisualMetrics

ROLES = ("ocr", "dino")


class RoleFeatures(BaseModel):
    """How one metric role of a run used the tasks' stored features."""

    namespace: str = ""
    """Store namespace of the role's per-image values (backend namespace and kind)."""
    tasks: int = 0
    """Tasks whose feature file holds values for it."""
    images: int = 0
    """Reference images whose value the files offered."""
    served: int = 0
    """Of those, images a design took from them instead of computing (this session)."""
    note: str = ""
    """Why the role uses none (it keeps no per-image value, or it computes elsewhere)."""


class TaskFeatureUse:
    """The roles' use of the task features in this session."""

    def __init__(self) -> None:
        self.roles: dict[str, RoleFeatures] = {}
        self._stores: dict[str, MetricCache] = {}

    def add(self, role: str, use: RoleFeatures, store: MetricCache | None = None) -> None:
        """Record a role (and the store whose look-ups count what it served)."""
        self.roles[role] = use
        if store is not None:
            self._stores[role] = store

    def describe(self) -> dict[str, Any]:
        """Per role, its figures now (served counted up to this moment)."""
        for role, store in self._stores.items():
            self.roles[role].served = store.served(self.roles[role].namespace)
        return {role: use.model_dump() for role, use in self.roles.items()}


def innermost(metric: Any) -> Any:
    """The design at the bottom of a metric's stack (see :class:`~iwr_bench.metrics.pair.MetricWrapper`)."""
    return design_of(metric)


def seed_task_features(
    metrics: VisualMetrics, tasks: Sequence[Task], settings: MetricSettings
) -> TaskFeatureUse:
    """Seed the stored features of ``tasks`` that fit the run's designs into their stores.

    Reads every task's files (call it off the event loop); a file that cannot be used is ignored
    with a warning.
    """
    use = TaskFeatureUse()
    designs = {role: innermost(getattr(metrics, role)) for role in ROLES}
    caches = {role: feature_cache(design) for role, design in designs.items()}
    if not any(caches.values()):
        for role, design in designs.items():
            use.add(role, RoleFeatures(note=_why_none(design)))
        return use
    root = feature_root(settings.cache_dir or None)
    stored = [load_features(task, root) for task in tasks]
    for role, cache in caches.items():
        if cache is None:
            use.add(role, RoleFeatures(note=_why_none(designs[role])))
            continue
        values: dict[str, Any] = {}
        with_values = 0
        for features in stored:
            found = features.values(cache.backend_namespace, cache.kind)
            usable = {d: v for d, v in found.items() if cache.codec.decode(v) is not None}
            with_values += bool(usable)
            values.update(usable)
        cache.store.seed(cache.namespace, values)
        use.add(
            role, RoleFeatures(namespace=cache.namespace, tasks=with_values, images=len(values)), cache.store
        )
    return use


def _why_none(design: Any) -> str:
    if hasattr(design, "features"):
        return "its design keeps no per-image value"
    return "its design exposes no per-image values here (it runs on Ray workers, or is a design of its own)"
